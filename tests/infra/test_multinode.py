"""Training on a multi-node Ray cluster that loses a node and a trial process, and a sweep
over its nodes: ``ray.cluster_utils.Cluster`` on this machine (a head without CPUs and
worker nodes of one CPU each, separate raylets; tests/infra/ray_cluster_helper.py),
platform/train.py and tune/sweep.py joining it through RAY_ADDRESS as on a real cluster.

One CPU per worker node makes placement observable: one trial of the demo
(tune/configs/demo.yaml: its network, its 16 environments per runner, its advice) with two
remote env runners and a one-CPU learner takes three bundles of one CPU, so the trial and
each env runner sit on a node of their own. The sweep runs the tiny config (two trials of
one CPU). The cluster and every process it started are stopped by their ids.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.infra.test_team_mlflow import DEMO_TRAINING_IN_SECONDS
from tune.env_runner import LeanMultiAgentEnvRunner

ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).with_name("ray_cluster_helper.py")
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"
DEMO = ROOT / "tune" / "configs" / "demo.yaml"
# The demo's training at a budget of seconds on 1-CPU nodes: two remote env runners, a
# one-CPU learner, a checkpoint every iteration (evaluation is skipped).
DEMO_ON_SMALL_NODES = (
    *DEMO_TRAINING_IN_SECONDS,
    "resources.num_env_runners=2",
    "resources.env_processes=1",
    "resources.num_cpus_per_learner=1",
    "checkpoint.frequency=1",
    "checkpoint.max_failures=1",
)
#: The env runner actor class tune installs for the multi-agent environment
#: (pod_scheduling_v0; tune/env_runner.py).
ENV_RUNNER = LeanMultiAgentEnvRunner.__name__


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalCluster:
    """The helper process and its cluster: ``info`` (address, head, workers), ``ask``."""

    def __init__(self, process: subprocess.Popen, info: dict[str, Any], env: dict[str, str]):
        self.process = process
        self.info = info
        self.env = env

    def ask(self, command: str) -> dict[str, Any]:
        """Send one command, return its JSON answer."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def actors(self, class_name: str) -> list[dict[str, Any]]:
        return self.ask(f"actors {class_name}")["actors"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A head (0 CPUs, dashboard for the state API) and three 1-CPU worker nodes."""
    # Ray's folders (short: unix socket paths) and its address file, private to this test:
    # a plain ray.init() elsewhere on the machine must not find and join this cluster.
    ray_tmp = Path(tempfile.mkdtemp(prefix="rmn-", dir="/tmp"))
    env = {
        **os.environ,
        "RAY_TMPDIR": str(ray_tmp),
        "RAY_ADDRESS": "",
        # The nodes and the drivers address each other on 127.0.0.1 (Ray otherwise swaps
        # 127.0.0.1 for the machine's address); no token on this single-machine test
        # cluster, the deployed ones use token auth.
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "disabled",
        "RAY_DEDUP_LOGS": "0",
    }
    process = subprocess.Popen(
        [
            *(sys.executable, str(HELPER), "--workers", "3", "--worker-cpus", "1"),
            *("--dashboard-port", str(free_port())),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(ray_tmp / "helper.log").open("w"),
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first, (ray_tmp / "helper.log").read_text()[-3000:]
        info = json.loads(first)
        yield LocalCluster(process, info, {**env, "RAY_ADDRESS": info["address"]})
        assert process.stdin is not None
        process.stdin.write("quit\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline()) == {"stopped": True}
        assert process.wait(timeout=120) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def wait_for(path_glob: str, base: Path, driver: subprocess.Popen, timeout: float = 300) -> Path:
    """The first path under ``base`` matching ``path_glob``, once the driver wrote it."""
    deadline = time.monotonic() + timeout
    while True:
        found = sorted(base.glob(path_glob))
        if found:
            return found[0]
        assert driver.poll() is None, f"training ended before {path_glob}"
        assert time.monotonic() < deadline, f"no {path_glob} in {timeout:.0f} s"
        time.sleep(0.5)


def mlflow_runs(uri: str, experiment: str) -> list[Any]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return client.search_runs([found.experiment_id])


@pytest.mark.integration
def test_training_survives_a_lost_node_and_a_crashed_trial(
    cluster: LocalCluster, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    head, workers = cluster.info["head"], set(cluster.info["workers"])
    storage = tmp_path / "results"
    uri = sqlite_uri
    log = tmp_path / "driver.log"
    driver = subprocess.Popen(
        [
            *(sys.executable, str(ROOT / "platform" / "train.py"), "--config", str(DEMO)),
            *("--storage", str(storage), "--skip-evaluation", "--json", "--stop-iters", "5"),
            *(arg for override in DEMO_ON_SMALL_NODES for arg in ("--set", override)),
            *("--set", f"tracking.tracking_uri={uri}"),
        ],
        cwd=ROOT,
        env=cluster.env,
        stdout=(tmp_path / "driver.out").open("w"),
        stderr=log.open("w"),
        start_new_session=True,
    )
    try:
        wait_for("demo/PPO_*/checkpoint_000000", storage, driver)
        # Where the trial and its env runners run: each on a worker node of its own.
        [trial] = [a for a in cluster.actors("PPO") if a["state"] == "ALIVE"]
        runners = [a for a in cluster.actors(ENV_RUNNER) if a["state"] == "ALIVE"]
        assert len(runners) == 2
        placed = {trial["node_id"], *(runner["node_id"] for runner in runners)}
        assert placed == workers and head not in placed
        # A machine is lost: the node of one env runner goes (the trial's stays), and a
        # replacement joins as an autoscaler would bring one.
        lost = runners[0]["node_id"]
        assert cluster.ask(f"remove {lost}") == {"removed": lost}
        replacement = cluster.ask("add")["added"]
        # Training goes on; then the trial's own process crashes after a later checkpoint.
        wait_for("demo/PPO_*/checkpoint_000002", storage, driver)
        os.kill(trial["pid"], signal.SIGKILL)
        assert driver.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    trial_dir = next(storage.glob("demo/PPO_*"))
    results = [json.loads(line) for line in (trial_dir / "result.json").open()]
    iterations = [result["training_iteration"] for result in results]
    healthy = [result["fault_tolerance"]["num_healthy_workers"] for result in results]
    # Every iteration, in order: the retried trial went on from its last checkpoint (an
    # iteration past it may repeat), never from the start.
    assert set(iterations) == {1, 2, 3, 4, 5} and iterations == sorted(iterations)
    # Two env runners, then one after the node was lost (RLlib went on with the other),
    # two again in the retried trial.
    assert healthy[0] == 2 and 1 in healthy and healthy[-1] == 2
    # The crashed trial was retried once (FailureConfig), in a new process.
    trials = cluster.actors("PPO")
    assert len(trials) == 2 and {a["state"] for a in trials} == {"DEAD"}
    assert trial["id"] in {a["id"] for a in trials}
    # The env runner on the lost node died with it; every env runner ran on a worker.
    all_runners = cluster.actors(ENV_RUNNER)
    # (Ray may restart that actor under its own id on another node, so its record moves.)
    assert not any(r["node_id"] == lost and r["state"] == "ALIVE" for r in all_runners)
    assert {r["node_id"] for r in all_runners} <= workers | {replacement}
    # One MLflow run, finished, with every iteration's metrics.
    [run] = mlflow_runs(uri, "podsched-demo")
    assert run.info.status == "FINISHED"
    # (Not the return: the demo's first 40-job episodes end after a few iterations.)
    history = MlflowClient(tracking_uri=uri).get_metric_history(run.info.run_id, "time_this_iter_s")
    assert {metric.step for metric in history} == {1, 2, 3, 4, 5}


@pytest.mark.integration
def test_sweep_spreads_its_trials_over_the_nodes(
    cluster: LocalCluster, tmp_path: Path, sqlite_uri: str
) -> None:
    before = {actor["id"] for actor in cluster.actors("PPO")}
    uri = sqlite_uri
    result = subprocess.run(
        [
            *(sys.executable, str(ROOT / "tune" / "sweep.py"), "--config", str(TINY)),
            *("--storage", str(tmp_path / "results"), "--json"),
            *("--set", "stop.training_iteration=1", "--set", f"tracking.tracking_uri={uri}"),
            # Two trials over PPO's step size, all at once, under population based
            # training (issue 16's PBT test: a perturbation interval of one iteration).
            "--set",
            "sweep={space: {algorithm.lr: {loguniform: [1.0e-4, 1.0e-3]}}, num_samples: 2, "
            "scheduler: pbt, scheduler_config: {perturbation_interval: 1}}",
        ],
        cwd=ROOT,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "FINISHED" and len(payload["trials"]) == 2
    assert all(row["error"] is None for row in payload["trials"])
    assert [row["training_iteration"] for row in payload["trials"]] == [1, 1]
    assert all(
        1e-4 / 1.2 <= row["params"]["algorithm.lr"] <= 1e-3 * 1.2 for row in payload["trials"]
    )
    trials = [actor for actor in cluster.actors("PPO") if actor["id"] not in before]
    # Two trials of one CPU each on nodes of one CPU: one trial per worker node.
    assert len(trials) == 2
    nodes = {actor["node_id"] for actor in trials}
    assert len(nodes) == 2 and cluster.info["head"] not in nodes
    runs = mlflow_runs(uri, "tiny")
    [parent] = [run for run in runs if run.data.tags.get("stage") == "sweep"]
    assert parent.data.tags["scheduler"] == "pbt"
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId")]
    assert len(children) == 2 and all(run.info.status == "FINISHED" for run in children)
