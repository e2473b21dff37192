"""tune/mlflow_retry.py against a real MLflow server cut off by a gate (tests/conftest.py):
the held-out comparison's runs wait out an outage, once each, and give up at the deadline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tune.experiment import config_from_dict
from tune.mlflow_retry import Deadline, log_run_retrying, outage_errors
from tune.runs import log_evaluation_runs

TABLE = {
    "learned-greedy": {
        "kind": "learned",
        "metrics": {"jobs_total": 3.0, "avg_jct": 100.0},
        "ci95": {"avg_jct": 5.0},
    },
    "fifo+packing": {"kind": "heuristic", "metrics": {"avg_jct": 120.0}, "ci95": {"avg_jct": 6.0}},
    "sjf+packing": {"kind": "heuristic", "metrics": {"avg_jct": 130.0}, "ci95": {"avg_jct": 7.0}},
}
INFO = {"learned": "learned-greedy", "best_heuristic": "fifo+packing"}


class ReopenAfterWaits(Deadline):
    """A deadline that ends the outage itself: the gate reopens after the client has
    waited ``waits`` times (whatever the machine's speed, the outage is met)."""

    def __init__(self, uri: str, gate, waits: int) -> None:
        super().__init__(uri, 120.0)
        self.gate, self.waits = gate, waits

    def wait_or_raise(self, error: BaseException, pause: float) -> float:
        self.waits -= 1
        if self.waits == 0:
            self.gate.open()
        return super().wait_or_raise(error, pause)


def runs(uri: str, experiment: str, every: bool = False) -> list:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    view = ViewType.ALL if every else ViewType.ACTIVE_ONLY
    return [] if found is None else client.search_runs([found.experiment_id], run_view_type=view)


@pytest.mark.integration
def test_the_comparison_waits_out_an_outage(gated_mlflow, tmp_path: Path, capsys) -> None:
    gate, uri = gated_mlflow
    experiment = config_from_dict({"tracking": {"experiment": "outage"}})
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "policy.json").write_text("{}")
    gate.close()  # MLflow is down when the comparison is logged
    log_evaluation_runs(
        experiment,
        uri,
        TABLE,
        INFO,
        params={"evaluation.seeds": "1"},
        artifacts=[policy],
        deadline=ReopenAfterWaits(uri, gate, waits=2),
    )
    logged = {run.data.tags["policy"]: run for run in runs(uri, "outage", every=True)}
    assert sorted(logged) == sorted(TABLE)  # one run per policy, none half-made
    assert all(run.info.status == "FINISHED" for run in logged.values())
    assert logged["sjf+packing"].data.metrics == {"avg_jct": 130.0, "avg_jct_ci95": 7.0}
    # The server keeps the logged order, which MLflow's compare view follows.
    assert list(logged["learned-greedy"].data.metrics)[:2] == ["avg_jct", "avg_jct_ci95"]
    learned = logged["learned-greedy"].info.run_id
    assert logged["fifo+packing"].data.tags["policy_artifacts"] == f"runs:/{learned}/policy"
    err = capsys.readouterr().err
    assert f"MLflow: cannot reach {uri} (" in err and "reachable again after" in err


@pytest.mark.integration
def test_a_run_cut_off_half_made_is_deleted(gated_mlflow, capsys) -> None:
    gate, uri = gated_mlflow
    tries: list[str] = []

    def cut_off_once(run_id: str) -> None:
        # The worst moment: the run exists, its metrics are not sent yet.
        tries.append(run_id)
        if len(tries) == 1:
            gate.close()

    run_id = log_run_retrying(
        uri,
        "half-made",
        "eval-x",
        ReopenAfterWaits(uri, gate, waits=1),
        on_created=cut_off_once,
        metrics={"avg_jct": 1.0},
    )
    assert len(tries) == 2 and tries[1] == run_id
    [live] = runs(uri, "half-made")
    assert live.info.run_id == run_id and live.data.metrics == {"avg_jct": 1.0}
    stages = {run.info.run_id: run.info.lifecycle_stage for run in runs(uri, "half-made", True)}
    assert stages == {tries[0]: "deleted", run_id: "active"}


@pytest.mark.integration
def test_an_outage_longer_than_the_deadline_raises(gated_mlflow, capsys) -> None:
    gate, uri = gated_mlflow
    gate.close()
    with pytest.raises(outage_errors()):
        log_run_retrying(uri, "never", "eval-x", Deadline(uri, 2.0), metrics={"avg_jct": 1.0})
    assert "retried for up to 2 s" in capsys.readouterr().err
    gate.open()
    assert runs(uri, "never") == []


def test_a_refused_request_is_not_waited_for(tmp_path: Path, sqlite_uri: str, capsys) -> None:
    """A malformed request (a comma in a param name) fails the same way on every try: it
    is raised at once, with no outage reported (sqlite store, no server needed)."""
    from mlflow.exceptions import MlflowException

    uri = sqlite_uri
    deadline = Deadline(uri, 120.0)
    with pytest.raises(MlflowException, match="Invalid value"):
        log_run_retrying(uri, "refused", "eval-x", deadline, params={"a,b": 1})
    assert deadline.outage_since is None
    assert "cannot reach" not in capsys.readouterr().err
    [half_made] = runs(uri, "refused")  # created before its params were refused
    assert half_made.info.status == "FAILED"


def test_a_row_cut_off_by_the_step_cap_is_tagged_not_compared(sqlite_uri: str) -> None:
    """The comparison does not rank a row cut off on some seeds (tune.evaluation); its
    MLflow run says so, and on how many seeds (sqlite store, no server needed)."""
    experiment = config_from_dict({"tracking": {"experiment": "cut-off"}})
    info = {**INFO, "truncated_rows": {"sjf+packing": 2}}
    log_evaluation_runs(experiment, sqlite_uri, TABLE, info, params={})
    tags = {run.data.tags["policy"]: run.data.tags for run in runs(sqlite_uri, "cut-off")}
    assert tags["sjf+packing"]["compared"] == "false"
    assert tags["sjf+packing"]["truncated_seeds"] == "2"
    for policy in ("learned-greedy", "fifo+packing"):
        assert tags[policy]["compared"] == "true" and "truncated_seeds" not in tags[policy]
