"""Metrics of a tiny run whose every number is derived by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from envs.sim import Simulator
from envs.sim.metrics import SimulationResult
from envs.topology import build_cluster


class OneAtATime:
    def schedule(self, sim: Simulator) -> None:
        if not len(sim.running_jobs()):
            sim.place(int(sim.waiting_jobs()[0]), [0])


@pytest.fixture
def result(make_workload) -> SimulationResult:
    # One server, 4 GPUs; two ResNet-50 jobs of 160 ideal seconds, run one after the other.
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    sim = Simulator(cluster, make_workload([0.0, 0.0], [0, 0], [1, 1]))
    sim.run(OneAtATime())
    return SimulationResult.from_simulator(sim, "one-at-a-time")


def test_metrics_by_hand(result: SimulationResult) -> None:
    metrics = result.metrics()
    assert metrics["jobs_finished"] == metrics["jobs_total"] == 2
    assert metrics["avg_jct"] == pytest.approx(240.0)  # (160 + 320) / 2
    assert metrics["median_jct"] == pytest.approx(240.0)
    assert metrics["p90_jct"] == pytest.approx(304.0)  # 160 + 0.9 * 160
    assert metrics["makespan"] == pytest.approx(320.0)
    assert metrics["avg_wait"] == pytest.approx(80.0)  # (0 + 160) / 2
    assert metrics["avg_slowdown"] == pytest.approx(1.5)  # (1 + 2) / 2
    assert metrics["avg_ntat"] == pytest.approx(1.5)
    assert metrics["execution_effectiveness"] == pytest.approx(0.75)  # (1 + 1/2) / 2
    assert metrics["gpu_utilization"] == pytest.approx(0.25)  # 1 of 4 GPUs all along
    assert metrics["avg_queue_length"] == pytest.approx(0.5)  # 1 waiting for half the time
    assert metrics["max_queue_length"] == 1
    # One busy GPU of four with remaining time r: 1 - r^2 / (4 r^2) = 0.75.
    assert metrics["fragmentation"] == pytest.approx(0.75)
    assert metrics["avg_contention"] == 1.0
    assert metrics["preemptions"] == 0
    # One GPU busy for 320 s; each job asks 1 GPU x 160 s and took exactly that.
    assert metrics["gpu_seconds"] == pytest.approx(320.0)
    assert metrics["ideal_gpu_seconds"] == pytest.approx(320.0)
    assert metrics["gpu_time_inflation"] == pytest.approx(1.0)
    np.testing.assert_allclose(result.jobs["gpu_seconds"], [160.0, 160.0])


def test_exports(result: SimulationResult, tmp_path) -> None:
    result.write_json(tmp_path / "run.json")
    loaded = json.loads((tmp_path / "run.json").read_text())
    assert loaded["policy"] == "one-at-a-time"
    assert loaded["metrics"]["avg_jct"] == pytest.approx(240.0)
    assert loaded["jobs"]["finish"] == [160.0, 320.0]
    result.write_jobs_csv(tmp_path / "jobs.csv")
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert lines[0].split(",")[-1] == "jct" and len(lines) == 3
    assert lines[2].split(",")[-1] == "320.0"


def test_unfinished_jobs_are_null_in_json(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    sim = Simulator(cluster, make_workload([0.0], [0], [1]))
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim._advance(10.0)
    payload = SimulationResult.from_simulator(sim, "cut").to_json()
    assert payload["jobs"]["finish"] == [None]
    # The unfinished job counts with its 10 s in the system so far (a lower bound of its
    # JCT): leaving jobs unfinished cannot make a policy's JCT look better.
    assert payload["metrics"]["avg_jct"] == pytest.approx(10.0)
    assert payload["metrics"]["p90_jct"] == pytest.approx(10.0)
    assert payload["metrics"]["jobs_finished"] == 0
    # 10 s on one GPU consumed; no job finished, so no ideal to compare with.
    assert payload["metrics"]["gpu_seconds"] == pytest.approx(10.0)
    assert payload["metrics"]["ideal_gpu_seconds"] == 0.0
    assert payload["metrics"]["gpu_time_inflation"] is None
    assert payload["metrics"]["avg_wait"] is None  # finished jobs only
    assert np.isnan(SimulationResult.from_simulator(sim, "cut").metrics()["makespan"])
