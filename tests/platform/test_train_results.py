"""platform/train.py's choice of the best trial, on a real Tune ResultGrid: several trials
none of which reported a mean episode return (episodes longer than a short run) still
give a trial, where Tune's own choice raises after the training finished."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.platform.programs import load_program

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def program() -> ModuleType:
    return load_program("train")


def _fit(tmp_path: Path, returns: list[float | None]) -> object:
    """A real Tune run of one trial per entry: each reports its return (None: not)."""
    from ray import tune as ray_tune

    from tune.runs import BEST_METRIC

    def trainable(config: dict) -> None:
        metrics = {"iteration_done": 1.0}
        if config["value"] is not None:
            metrics[BEST_METRIC] = config["value"]
        ray_tune.report(metrics)

    tuner = ray_tune.Tuner(
        trainable,
        param_space={"value": ray_tune.grid_search(returns)},
        run_config=ray_tune.RunConfig(storage_path=str(tmp_path), verbose=0),
    )
    return tuner.fit()


@pytest.mark.integration
def test_the_best_trial_with_and_without_reported_returns(
    program: ModuleType, tmp_path: Path, ray_local: object
) -> None:
    silent = _fit(tmp_path / "silent", [None, None])
    with pytest.raises(RuntimeError):  # what train.py called before
        silent.get_best_result(metric=program.BEST_METRIC, mode="max")
    assert program.best_trial(silent).config == silent[0].config
    reported = _fit(tmp_path / "reported", [1.0, 3.0, 2.0])
    assert program.best_trial(reported).config == {"value": 3.0}
