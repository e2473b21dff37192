"""sweep.py's exit status says how the sweep ended: a failed trial is not a success."""

from __future__ import annotations

from tune.sweep import exit_status


def summary(status: str, errors: list[str | None]) -> dict:
    trials = [{"trial": f"PPO_{index}", "error": error} for index, error in enumerate(errors)]
    return {"status": status, "trials": trials}


def test_every_trial_finished() -> None:
    assert exit_status(summary("FINISHED", [None, None])) == (0, None)


def test_a_failed_trial_fails_the_sweep_and_is_named() -> None:
    status, line = exit_status(summary("FINISHED", [None, "RuntimeError: boom", None]))
    assert status == 1
    assert line == "1 of 3 trials failed (PPO_1); the best is the best of the others"


def test_no_trial_reported_the_metric() -> None:
    assert exit_status(summary("FAILED", ["RuntimeError: a", "RuntimeError: b"]))[0] == 1
    assert exit_status(summary("FAILED", [None])) == (1, "no trial reported the sweep's metric")


def test_an_interrupted_sweep_says_how_to_go_on() -> None:
    assert exit_status(summary("KILLED", [None, None])) == (
        130,
        "interrupted; continue with --resume",
    )


def test_a_parent_run_mlflow_was_not_told_of_fails_the_exit_status_only() -> None:
    """The summary is complete (printed), but MLflow may show the parent run RUNNING:
    exit 1, the warning line already said why; an interruption still says how to go on."""
    lost = {**summary("FINISHED", [None, None]), "parent_run_error": "MLflow parent run ..."}
    assert exit_status(lost) == (1, None)
    assert exit_status({**summary("FINISHED", [None]), "parent_run_error": None}) == (0, None)
    assert exit_status({**lost, "status": "KILLED"})[0] == 130
    assert exit_status({**summary("FINISHED", [None, "boom"]), "parent_run_error": "x"}) == (
        1,
        "1 of 2 trials failed (PPO_1); the best is the best of the others",
    )
