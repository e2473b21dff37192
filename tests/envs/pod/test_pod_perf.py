"""``pod_scheduling_v0``'s ``perf`` key: a shorthand for the two speed-model switches."""

from __future__ import annotations

import pytest

import envs
from envs.pod.config import PodSchedulingConfig
from envs.sim import PerfSwitches


@pytest.mark.parametrize(
    ("fields", "switches"),
    [
        ({}, (True, True)),  # today's default: the contention model
        ({"perf": "contention"}, (True, True)),
        ({"perf": "ideal"}, (False, False)),
        ({"interference": False}, (False, True)),
        ({"communication": False}, (True, False)),
        ({"perf": "ideal", "interference": False, "communication": False}, (False, False)),
        ({"perf": "contention", "interference": True}, (True, True)),
    ],
)
def test_perf_and_switches_resolve(fields: dict, switches: tuple[bool, bool]) -> None:
    assert PodSchedulingConfig(**fields).speed_switches == PerfSwitches(*switches)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"perf": "ideal", "interference": True},
            "perf='ideal' sets interference=False but interference=True was given; "
            "drop one of the two",
        ),
        (
            {"perf": "contention", "communication": False},
            "perf='contention' sets communication=True but communication=False was given; "
            "drop one of the two",
        ),
        ({"perf": "fast"}, "perf must be one of ideal, contention, got 'fast'"),
        ({"interference": "no"}, "interference must be true, false or unset, got 'no'"),
    ],
)
def test_contradictions_and_bad_values_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        PodSchedulingConfig(**fields)
    assert str(error.value) == message


def test_ideal_environment_simulates_without_interference_or_communication() -> None:
    env = envs.make_env("pod_scheduling_v0", perf="ideal", num_jobs=4)
    env.reset(seed=0)
    assert (env.sim.config.interference, env.sim.config.communication) == (False, False)
    default = envs.make_env("pod_scheduling_v0", num_jobs=4)
    default.reset(seed=0)
    assert (default.sim.config.interference, default.sim.config.communication) == (True, True)
