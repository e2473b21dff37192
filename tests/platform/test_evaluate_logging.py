"""platform/evaluate.py --mlflow: a tracking server that fails after the evaluation played
loses nothing -- the results are kept in a file, named in one line, and the exit is 1;
a server that takes them gets one run per row."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.platform.programs import load_program
from tune.experiment import config_from_dict

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = {
    "name": "tiny",
    "environment": {"name": "pod_scheduling_v0", "config": {"num_jobs": 6}},
    "evaluation": {"seeds": [1000], "baselines": ["fifo+packing", "sjf+packing"]},
}


@pytest.fixture
def program() -> ModuleType:
    return load_program("evaluate")


def _played() -> tuple[Any, dict, dict, dict]:
    """A real evaluation of two heuristics on one small workload, and its payload."""
    from tune.evaluation import evaluate_experiment, statistics_table, summary

    experiment = config_from_dict(EXPERIMENT)
    table = evaluate_experiment(experiment)
    info = summary(experiment, table)
    payload = {"evaluation": statistics_table(table), "summary": info}
    return experiment, table, info, payload


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the probe closes


def test_an_unreachable_server_keeps_the_results_and_says_where(
    program: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from envs.sim.report import json_safe
    from tune.mlflow_retry import Deadline

    monkeypatch.setenv("PODSCHED_RESULTS", str(tmp_path))
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    experiment, table, info, payload = _played()
    uri = f"http://127.0.0.1:{_closed_port()}"
    # No waiting out the outage: the first failure is the last.
    status = program.log_or_keep(
        experiment, uri, table, info, "", payload, deadline=Deadline(uri, retry_for_s=0)
    )
    assert status == 1
    kept = sorted((tmp_path / "unlogged-evaluations").glob("*/tiny.json"))
    assert len(kept) == 1
    assert json.loads(kept[0].read_text()) == json.loads(json.dumps(json_safe(payload)))
    lines = capsys.readouterr().err.strip().splitlines()
    # The outage notice of every program that logs evaluations, then the one error line.
    assert lines[0].startswith(f"MLflow: cannot reach {uri}")
    assert lines[-1].startswith(
        f"evaluate.py: error: the evaluation runs were not logged to {uri} ("
    )
    assert lines[-1].endswith(f"); the results are in {kept[0]}")
    assert sum(line.startswith("evaluate.py: error:") for line in lines) == 1


def test_a_logged_evaluation_exits_0_with_a_run_per_row(
    program: ModuleType, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    experiment, table, info, payload = _played()
    assert program.log_or_keep(experiment, sqlite_uri, table, info, "", payload) == 0
    client = MlflowClient(tracking_uri=sqlite_uri)
    logged = client.get_experiment_by_name(experiment.experiment_name)
    runs = client.search_runs([logged.experiment_id])
    assert sorted(run.data.tags["policy"] for run in runs) == ["fifo+packing", "sjf+packing"]


def test_seeds_that_a_config_keeps_for_validation_can_be_evaluated(
    program: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docstring's and README's commands evaluate on seeds 2000-2004, the shipped
    configs' validation seeds: they choose among training checkpoints, which an evaluation
    of one policy never does, so they do not stand in the way."""
    import ray

    config = ROOT / "tune" / "configs" / "demo.yaml"
    try:
        status = program.main(
            [
                *("--config", str(config), "--baselines", "fifo+packing", "--seeds", "2000,2001"),
                *("--set", "environment.config.num_jobs=6", "--json"),
            ]
        )
    finally:
        # The program plays its episodes as tasks of a local Ray, which its process's end
        # would stop; here the test's process goes on.
        ray.shutdown()
    out, err = capsys.readouterr()
    assert status == 0, err
    assert json.loads(out)["summary"]["seeds"] == [2000, 2001]
