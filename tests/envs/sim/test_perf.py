"""The performance model by name: ``ideal`` and ``contention`` and their switches."""

from __future__ import annotations

import pytest

from envs.sim import DEFAULT_PERF, PERF_MODELS, PerfSwitches, SimulatorConfig, perf_switches


def test_models_and_their_switches() -> None:
    assert PERF_MODELS == ("ideal", "contention") and DEFAULT_PERF == "contention"
    assert perf_switches("ideal") == PerfSwitches(interference=False, communication=False)
    assert perf_switches("contention") == PerfSwitches(interference=True, communication=True)


def test_default_model_is_the_simulators_default() -> None:
    default = SimulatorConfig()
    assert perf_switches(DEFAULT_PERF) == (default.interference, default.communication)


@pytest.mark.parametrize("bad", ["Ideal", "idael", "", None, 1])
def test_unknown_model_names_the_value_and_the_choices(bad: object) -> None:
    with pytest.raises(ValueError) as error:
        perf_switches(bad)  # type: ignore[arg-type]
    assert str(error.value) == f"perf must be one of ideal, contention, got {bad!r}"
