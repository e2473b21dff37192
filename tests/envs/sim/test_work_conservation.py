"""GPU-seconds consumed: conserved under the ideal model, inflated by contention.

The expected GPU-seconds are computed here from the workload's own arrays (GPUs x trace
duration per job), never from the simulator or the metrics under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import SimulatorConfig, perf_switches
from envs.sim.runner import simulate
from envs.topology import build_cluster
from envs.workload import Workload

# Jobs finish when their remaining time is within 1e-9 x now of zero (the engine's
# completion tolerance), and times are sums of floats; a relative error of 1e-9 on the
# total covers both with room to spare on a run of about a day.
RELATIVE_TOLERANCE = 1e-9


def fixed_duration_workload(seed: int, num_jobs: int, worker_choices: tuple[int, ...]) -> Workload:
    """Jobs of one-GPU workers with random arrivals, worker counts and trace durations."""
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0.0, 4 * 3600.0, num_jobs))
    workers = rng.choice(worker_choices, num_jobs)
    return Workload(
        arrival_time=arrivals,
        model=rng.integers(0, 3, num_jobs),
        num_workers=workers,
        worker_demand=np.tile([1.0, 1.0], (num_jobs, 1)),
        duration=rng.uniform(600.0, 3 * 3600.0, num_jobs),
    )


# Small LAS thresholds and a one-minute guard: the preemptive policies do preempt.
PREEMPTION = PreemptionSettings(min_run_s=60.0, las_thresholds_gpu_s=(1800.0, 7200.0))


def run(workload: Workload, policy: str, perf: str, backfill: bool = True):
    cluster = build_cluster("flat", servers=4, gpus_per_server=8)
    scheduler = make_scheduler(policy, rng=0, backfill=backfill, preemption=PREEMPTION)
    config = SimulatorConfig(restart_cost_s=0.0, **perf_switches(perf)._asdict())
    return simulate(cluster, workload, scheduler, policy, config)


@pytest.mark.parametrize(
    ("policy", "backfill"),
    [
        ("fifo+packing", False),
        ("fifo+packing", True),
        ("sjf+packing", True),
        ("las+packing", True),
        ("srtf+packing", True),
        ("gittins+packing", True),
    ],
)
def test_ideal_mode_conserves_gpu_seconds(policy: str, backfill: bool) -> None:
    workload = fixed_duration_workload(seed=7, num_jobs=60, worker_choices=(1, 1, 2, 4, 8, 12))
    per_job = workload.num_workers * workload.duration  # one GPU per worker
    result = run(workload, policy, "ideal", backfill)
    metrics = result.metrics()

    assert metrics["jobs_finished"] == 60
    if make_scheduler(policy, preemption=PREEMPTION).ordering.preemptive:
        assert metrics["preemptions"] > 0  # work conserved across preemption and resume
    np.testing.assert_allclose(result.jobs["gpu_seconds"], per_job, rtol=RELATIVE_TOLERANCE)
    assert metrics["gpu_seconds"] == pytest.approx(per_job.sum(), rel=RELATIVE_TOLERANCE)
    assert metrics["ideal_gpu_seconds"] == pytest.approx(per_job.sum(), rel=RELATIVE_TOLERANCE)
    assert metrics["gpu_time_inflation"] == pytest.approx(1.0, rel=RELATIVE_TOLERANCE)


def test_contention_inflates_gpu_time_of_jobs_spread_over_servers() -> None:
    # Twelve-worker jobs never fit one 8-GPU server: their workers talk over the network.
    workload = fixed_duration_workload(seed=3, num_jobs=20, worker_choices=(12,))
    per_job = workload.num_workers * workload.duration

    contended = run(workload, "fifo+packing", "contention").metrics()
    ideal = run(workload, "fifo+packing", "ideal").metrics()

    assert contended["jobs_finished"] == ideal["jobs_finished"] == 20
    assert contended["ideal_gpu_seconds"] == pytest.approx(per_job.sum(), rel=RELATIVE_TOLERANCE)
    assert contended["gpu_time_inflation"] > 1.0
    assert contended["gpu_seconds"] == pytest.approx(
        contended["gpu_time_inflation"] * per_job.sum(), rel=RELATIVE_TOLERANCE
    )
    assert ideal["gpu_time_inflation"] == pytest.approx(1.0, rel=RELATIVE_TOLERANCE)
