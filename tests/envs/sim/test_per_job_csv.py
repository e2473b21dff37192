"""The per-job CSV (``write_per_job_csv``) and the engine's ``servers_spanned``.

Every expected value is derived by hand from a three-job workload on 2 servers x 2 GPUs
(one GPU per GPU group; groups 0, 1 on server 0, groups 2, 3 on server 1), under the
``ideal`` performance model so each job runs exactly its duration:

- job 0 (id 7): arrives at 0, 2 GPUs, 100 s;
- job 1 (id 8): arrives at 20, 1 GPU, 10 s;
- job 2 (id 9): arrives at 30, 4 GPUs, 10 s (the whole cluster: always 2 servers).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import Simulator, SimulatorConfig, perf_switches
from envs.sim.metrics import JOBS_CSV_COLUMNS, SimulationResult, write_per_job_csv
from envs.sim.runner import simulate
from envs.topology import build_cluster
from envs.workload import Workload

CLUSTER = build_cluster("flat", servers=2, gpus_per_server=2)
WORKLOAD = Workload(
    arrival_time=np.array([0.0, 20.0, 30.0]),
    model=np.zeros(3, dtype=np.int64),
    num_workers=np.array([2, 1, 4]),
    worker_demand=np.tile([1.0, 1.0], (3, 1)),
    duration=np.array([100.0, 10.0, 10.0]),
    job_id=np.array([7, 8, 9]),
)
# LAS with one threshold at 50 GPU-seconds and no guard: job 0 has attained 60 GPU-s when
# job 2 arrives at 30, so job 2 (0 GPU-s, and only 40 by its end) outranks and preempts it.
PREEMPTION = PreemptionSettings(min_run_s=0.0, las_thresholds_gpu_s=(50.0,))


def run(policy: str, horizon_s: float = np.inf) -> SimulationResult:
    config = SimulatorConfig(
        restart_cost_s=0.0, horizon_s=horizon_s, **perf_switches("ideal")._asdict()
    )
    scheduler = make_scheduler(policy, rng=0, preemption=PREEMPTION)
    return simulate(CLUSTER, WORKLOAD, scheduler, policy, config)


def read_rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


def test_rows_derived_by_hand_for_packing_spreading_and_las(tmp_path: Path) -> None:
    results = [run("fifo+packing"), run("fifo+load-balancing"), run("las+packing")]
    path = tmp_path / "jobs.csv"
    write_per_job_csv(results, path)
    rows = read_rows(path)
    assert (
        rows[0]
        == list(JOBS_CSV_COLUMNS)
        == [
            *("policy", "job", "job_id", "arrival", "first_start", "finish", "gpus", "servers"),
            *("preemptions", "gpu_seconds", "ideal_gpu_seconds"),
        ]
    )
    assert rows[1:] == [
        # FIFO, packing: job 0 on one server 0-100; job 1 on a free GPU 20-30; job 2
        # needs all four GPUs and waits for job 0: 100-110.
        ["fifo+packing", "0", "7", "0.0", "0.0", "100.0", "2", "1", "0", "200.0", "200.0"],
        ["fifo+packing", "1", "8", "20.0", "20.0", "30.0", "1", "1", "0", "10.0", "10.0"],
        ["fifo+packing", "2", "9", "30.0", "100.0", "110.0", "4", "2", "0", "40.0", "40.0"],
        # Load balancing spreads job 0's two workers over both servers; times unchanged.
        ["fifo+load-balancing", "0", "7", "0.0", "0.0", "100.0", "2", "2", "0", "200.0", "200.0"],
        ["fifo+load-balancing", "1", "8", "20.0", "20.0", "30.0", "1", "1", "0", "10.0", "10.0"],
        ["fifo+load-balancing", "2", "9", "30.0", "100.0", "110.0", "4", "2", "0", "40.0", "40.0"],
        # LAS: job 2 preempts job 0 at 30 (60 of its 200 GPU-s done), runs 30-40; job 0
        # resumes at 40 for its last 70 s: finish 110, one preemption, still 200 GPU-s.
        ["las+packing", "0", "7", "0.0", "0.0", "110.0", "2", "1", "1", "200.0", "200.0"],
        ["las+packing", "1", "8", "20.0", "20.0", "30.0", "1", "1", "0", "10.0", "10.0"],
        ["las+packing", "2", "9", "30.0", "30.0", "40.0", "4", "2", "0", "40.0", "40.0"],
    ]
    for result in results:
        column = [float(row[9]) for row in rows[1:] if row[0] == result.policy]
        assert sum(column) == result.metrics()["gpu_seconds"] == 250.0


def test_unfinished_and_never_started_jobs_have_empty_times(tmp_path: Path) -> None:
    # Cut at 50 s: job 0 is running (50 s x 2 GPUs consumed), job 2 never started.
    result = run("fifo+packing", horizon_s=50.0)
    path = tmp_path / "jobs.csv"
    write_per_job_csv([result], path)
    assert read_rows(path)[1:] == [
        ["fifo+packing", "0", "7", "0.0", "0.0", "", "2", "1", "0", "100.0", "200.0"],
        ["fifo+packing", "1", "8", "20.0", "20.0", "30.0", "1", "1", "0", "10.0", "10.0"],
        ["fifo+packing", "2", "9", "30.0", "", "", "4", "0", "0", "0.0", "40.0"],
    ]
    assert result.metrics()["gpu_seconds"] == 110.0


def test_servers_spanned_keeps_the_widest_placement() -> None:
    sim = Simulator(CLUSTER, WORKLOAD)
    assert sim.run_until_decision()  # job 0 arrives
    assert sim.servers_spanned.tolist() == [0, 0, 0]
    sim.place(0, [0, 1])  # both workers on server 0
    assert sim.servers_spanned.tolist() == [1, 0, 0]
    sim.preempt(0)
    sim.place(0, [1, 2])  # resumed across servers 0 and 1
    assert sim.servers_spanned.tolist() == [2, 0, 0]
    sim.preempt(0)
    sim.place(0, [2, 3])  # back on one server: the widest placement stays
    assert sim.servers_spanned.tolist() == [2, 0, 0]
    assert sim.preemptions.tolist() == [2, 0, 0]


@pytest.mark.parametrize("policy", ["fifo+packing", "las+packing"])
def test_job_records_carry_servers_and_job_ids(policy: str) -> None:
    jobs = run(policy).jobs
    assert jobs["job_id"].tolist() == [7, 8, 9]
    assert jobs["servers"].tolist() == [1.0, 1.0, 2.0]
