"""Metrics of a tiny run whose every number is derived by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from envs.sim import Simulator, SimulatorConfig
from envs.sim.metrics import SimulationResult, concatenate_job_times
from envs.topology import build_cluster

nan = float("nan")


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
    # It ran all its 10 s (no wait so far), 10 s of its 160 ideal (a lower bound of its
    # slowdown; both were null, over finished jobs only); NTAT is over finished jobs.
    assert payload["metrics"]["avg_wait"] == pytest.approx(0.0)
    assert payload["metrics"]["avg_slowdown"] == pytest.approx(10.0 / 160.0)
    assert payload["metrics"]["avg_ntat"] is None
    assert payload["metrics"]["execution_effectiveness"] is None
    # At least the 10 s the run lasted (it was NaN, over finished jobs only), and the job's
    # 10 s alone on one GPU give its CS of 1 (it was NaN: no job finished).
    assert payload["metrics"]["makespan"] == pytest.approx(10.0)
    assert payload["metrics"]["avg_contention"] == 1.0
    assert SimulationResult.from_simulator(sim, "cut").job_times() == {
        "seconds": [10.0],
        "unfinished": [True],
    }


@pytest.fixture
def cut(make_workload) -> SimulationResult:
    # The two ResNet-50 jobs of `result` (160 ideal seconds each, one at a time on one GPU
    # of 4) and a third arriving at 300 s, all cut at a 200 s horizon: job 0 ran 0-160 s,
    # job 1 ran from 160 s and had 40 s done, job 2 never arrived.
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    workload = make_workload([0.0, 0.0, 300.0], [0, 0, 0], [1, 1, 1])
    sim = Simulator(cluster, workload, SimulatorConfig(horizon_s=200.0))
    sim.run(OneAtATime())
    return SimulationResult.from_simulator(sim, "cut")


def test_a_run_cut_at_its_horizon_counts_the_unfinished_job(cut: SimulationResult) -> None:
    assert cut.end_time == 200.0
    np.testing.assert_allclose(cut.jobs["finish"], [160.0, np.nan, np.nan])
    metrics = cut.metrics()
    assert (metrics["jobs_finished"], metrics["jobs_total"]) == (1, 3)
    assert metrics["avg_jct"] == pytest.approx(180.0)  # (160 + 200 so far) / 2 arrived
    # Job 1 waited 160 s behind job 0 and is 200 s in, of 160 ideal: lower bounds of its
    # wait and slowdown count with job 0's (0 s, 1.0). NTAT and 002's effectiveness are
    # job 0's alone (finished jobs only).
    assert metrics["avg_wait"] == pytest.approx((0.0 + 160.0) / 2)
    assert metrics["avg_slowdown"] == pytest.approx((1.0 + 200.0 / 160.0) / 2)
    assert metrics["avg_ntat"] == pytest.approx(1.0)
    assert metrics["execution_effectiveness"] == pytest.approx(1.0)
    # The run lasted 200 s and job 1 is still running: the makespan is at least 200 s
    # (it was 160 s, the finished job's alone, under jobs_finished < jobs_total).
    assert metrics["makespan"] == pytest.approx(200.0)
    # Both jobs that ran, job 1 for its 40 s so far; each ran alone on one GPU (CS 1).
    assert metrics["avg_contention"] == pytest.approx(1.0)
    assert metrics["p90_contention"] == pytest.approx(1.0)
    # The jobs that arrived, the one cut marked: the values avg JCT averages.
    times = cut.job_times()
    assert times == {"seconds": [160.0, 200.0], "unfinished": [False, True]}
    assert np.mean(times["seconds"]) == pytest.approx(metrics["avg_jct"])


def hand_built(
    finish: list[float],
    run_time: list[float],
    contention: list[float],
    end_time: float,
    arrival: tuple[float, ...] = (0.0, 100.0, 200.0),
) -> SimulationResult:
    """Jobs arriving at ``arrival`` (by default 0, 100 and 200 s) on 8 GPUs, one GPU and
    1000 ideal seconds each, the run ended at ``end_time``."""
    count = len(finish)
    jobs = {
        "arrival": np.array(arrival[:count]),
        "first_start": np.where(np.asarray(run_time) > 0, 0.0, np.nan),
        "finish": np.array(finish),
        "ideal_duration": np.full(count, 1000.0),
        "run_time": np.array(run_time),
        "gpus": np.ones(count),
        "contention": np.array(contention),
        "preemptions": np.zeros(count),
        "gpu_seconds": np.array(run_time),
        "servers": np.ones(count),
        "job_id": np.arange(count),
    }
    timeline_keys = ("time", "busy_gpus", "queue_length", "running", "fragmentation")
    timeline = {key: np.zeros(1) for key in (*timeline_keys, "mean_contention")}
    return SimulationResult("hand", jobs, timeline, 8, end_time)


def test_contention_counts_every_job_that_ran_to_the_end() -> None:
    # Job 0 finished with CS 1.0; job 1 ran 500 s unfinished at CS 1.5 on average (the
    # slow job a truncated run leaves); job 2 never ran (no placement, no CS: NaN).
    result = hand_built([1000.0, nan, nan], [1000.0, 500.0, 0.0], [1.0, 1.5, nan], 3000.0)
    metrics = result.metrics()
    assert metrics["avg_contention"] == pytest.approx(1.25)  # (1.0 + 1.5) / 2; was 1.0
    assert metrics["p90_contention"] == pytest.approx(1.45)  # 1.0 + 0.9 * 0.5; was 1.0
    assert metrics["makespan"] == pytest.approx(3000.0)  # 3000 - 0; was 1000 (finished)
    assert metrics["avg_jct"] == pytest.approx((1000.0 + 2900.0 + 2800.0) / 3)
    # Waits so far: 0 (finished, ran all its time), 2900 - 500 and 2800 - 0; slowdowns so
    # far against 1000 ideal seconds. Over finished jobs only, both read 0 and 1.
    assert metrics["avg_wait"] == pytest.approx((0.0 + 2400.0 + 2800.0) / 3)
    assert metrics["avg_slowdown"] == pytest.approx((1.0 + 2.9 + 2.8) / 3)


def test_makespan_is_undefined_only_without_arrivals_and_cs_without_runs() -> None:
    # Nothing ran: no CS to average (NaN), but the run lasted 3000 s: makespan >= that.
    idle = hand_built([nan, nan], [0.0, 0.0], [nan, nan], 3000.0).metrics()
    assert idle["makespan"] == pytest.approx(3000.0) and np.isnan(idle["avg_contention"])
    assert idle["avg_jct"] == pytest.approx((3000.0 + 2900.0) / 2)
    # The run ended before the first arrival: no job arrived, nothing is defined.
    early = hand_built([nan], [0.0], [nan], 50.0, arrival=(60.0,))
    empty = early.metrics()
    assert np.isnan(empty["makespan"]) and np.isnan(empty["avg_jct"])
    assert early.job_times() == {"seconds": [], "unfinished": []}
    # Every job finished: last finish - first arrival, as before.
    done = hand_built([1000.0, 1100.0], [1000.0, 1000.0], [1.0, 1.2], 1100.0).metrics()
    assert done["makespan"] == pytest.approx(1100.0)
    assert done["avg_contention"] == pytest.approx(1.1)


def test_job_times_concatenate_in_order() -> None:
    first = {"seconds": [1.0, 2.0], "unfinished": [False, True]}
    second = {"seconds": [3.0], "unfinished": [False]}
    assert concatenate_job_times([first, second]) == {
        "seconds": [1.0, 2.0, 3.0],
        "unfinished": [False, True, False],
    }
    assert concatenate_job_times([]) == {"seconds": [], "unfinished": []}


def test_a_wait_below_zero_by_rounding_is_zero_and_prints_as_0_00() -> None:
    """A job that never waited came out a few ulps below zero (its run time summed event
    by event, its JCT one subtraction): avg_wait -1.2e-14 printed as "wait h -0.00"."""
    from envs.sim.report import format_comparison

    rounded = hand_built([1000.0 + 100.0], [1000.0 + 1.8e-12], [1.0], 1100.0, arrival=(100.0,))
    metrics = rounded.metrics()
    assert metrics["avg_wait"] == 0.0 and not np.signbit(metrics["avg_wait"])
    table = format_comparison({"fifo": {"avg_wait": metrics["avg_wait"]}})
    assert table.splitlines()[2].split() == ["fifo", "0.00"]
    # A wait below zero by more than rounding is a bug, and stays visible.
    broken = hand_built([1100.0], [1060.0], [1.0], 1100.0, arrival=(100.0,)).metrics()
    assert broken["avg_wait"] == pytest.approx(-60.0)


def test_negative_zero_prints_without_its_sign() -> None:
    from envs.sim.report import format_comparison

    row = format_comparison({"fifo": {"avg_wait": -0.0, "avg_slowdown": -0.0}}).splitlines()[2]
    assert row.split() == ["fifo", "0.00", "0.00"]
