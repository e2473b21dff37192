"""``platform/train.py``'s output: a reader that stops reading (``| head``) stops neither
the training nor its evaluation and MLflow runs, and the program ends quietly with 141."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.platform.programs import load_program
from tune.cli import STDOUT_CLOSED_STATUS

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"
PAYLOAD = {"checkpoint": "/results/tiny/checkpoint_000001", "training_s": 1.5}


@pytest.fixture
def program() -> ModuleType:
    return load_program("train")


@contextlib.contextmanager
def stdout_to_a_closed_pipe() -> Iterator[None]:
    """sys.stdout a pipe whose reader is already gone (``| head`` once head has exited).
    Set in the test itself: pytest puts its own capture back before a test's body."""
    read, write = os.pipe()
    os.close(read)
    stream = os.fdopen(write, "w")
    saved, sys.stdout = sys.stdout, stream
    try:
        yield
    finally:
        sys.stdout = saved
        stream.close()  # what was buffered goes to the null device now, without raising


def fake_training(done: list[str], status: int = 0) -> Any:
    """A stand-in for train_and_evaluate: Tune's progress, the MLflow runs, the report."""

    def train_and_evaluate(*_: Any) -> tuple[int, dict[str, Any]]:
        print("Trial status: 1 RUNNING", flush=True)  # Tune's progress table, first line
        done.append("trained and logged")
        print("Held-out evaluation (1 seeds):\n" + "policy  avg JCT\n" * 500)
        done.append("reported")
        return status, PAYLOAD

    return train_and_evaluate


@pytest.mark.parametrize("json_output", [False, True])
def test_a_reader_that_left_stops_no_training(
    program: ModuleType, monkeypatch: pytest.MonkeyPatch, json_output: bool
) -> None:
    """``train.py ... | head``: Tune's first progress line raised BrokenPipeError before
    any trial ran (no training at all); with ``--json`` the final object raised it after
    the training, in a traceback with status 1. Now the run finishes, status 141."""
    done: list[str] = []
    monkeypatch.setattr(program, "train_and_evaluate", fake_training(done))
    args = argparse.Namespace(json=json_output)
    with stdout_to_a_closed_pipe():
        assert program.train_and_print(args, None, "", "") == STDOUT_CLOSED_STATUS
        print("later output is dropped", flush=True)  # the real stdout is silenced too
    assert done == ["trained and logged", "reported"]


def test_a_failed_run_keeps_its_status_when_the_reader_left(
    program: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Status 1 (the evaluation not logged) says more than a closed pipe."""
    monkeypatch.setattr(program, "train_and_evaluate", fake_training([], status=1))
    with stdout_to_a_closed_pipe():
        assert program.train_and_print(argparse.Namespace(json=True), None, "", "") == 1


def test_a_reader_that_stays_gets_everything(
    program: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done: list[str] = []
    monkeypatch.setattr(program, "train_and_evaluate", fake_training(done))
    assert program.train_and_print(argparse.Namespace(json=True), None, "", "") == 0
    # --json: stdout is the one object; what the run printed went to stderr.
    out, err = capsys.readouterr()
    assert json.loads(out) == PAYLOAD and "Trial status" in err


@pytest.mark.integration
def test_a_closed_stdout_loses_no_training_run(
    tmp_path: Path, sqlite_uri: str, run_into_closed_pipe
) -> None:
    """The real thing on the tiny config, its progress on stdout: the training and
    evaluation runs are in MLflow, the exit status is 141 and there is no traceback."""
    from mlflow.tracking import MlflowClient

    result = run_into_closed_pipe(
        [
            sys.executable,
            str(ROOT / "platform" / "train.py"),
            *("--config", str(TINY), "--storage", str(tmp_path / "results")),
            *("--set", f"tracking.tracking_uri={sqlite_uri}"),
        ],
        timeout=600,
    )
    assert result.returncode == STDOUT_CLOSED_STATUS, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr
    client = MlflowClient(tracking_uri=sqlite_uri)
    experiment = client.get_experiment_by_name("tiny")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    stages = sorted(run.data.tags.get("stage", "training") for run in runs)
    assert stages == ["evaluation"] * 3 + ["training"]
    assert all(run.info.status == "FINISHED" for run in runs)
