"""The simulator's FIFO (strict and backfilling), SJF and LAS against an event loop written
here, job by job (issue 20: baselines that agree with an independent simulator).

One-GPU jobs on a flat cluster in the ``ideal`` performance model: a job runs exactly its
trace duration wherever it is placed, so only the order of service matters and a reference
fits in one function. The rules it encodes are the textbook ones, stated independently of
the code under test:

- a decision happens when a job arrives or finishes (and, for LAS, when a running job's
  attained GPU-seconds cross a queue threshold);
- FIFO serves waiting jobs by arrival; SJF by trace duration (ties by arrival); with
  one-GPU jobs a strict and a backfilling FIFO coincide (a job that does not fit means no
  GPU is free, so nothing behind it fits either);
- discretized LAS (Tiresias) ranks every active job by its queue (the number of thresholds
  its attained GPU-seconds have reached), then by arrival; the ``capacity`` best-ranked
  jobs run, the others wait (preempted ones resume where they stopped; no restart cost,
  no minimum run time).
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import SimulatorConfig, perf_switches
from envs.sim.runner import simulate
from envs.topology import build_cluster
from envs.workload import Workload

SERVERS, GPUS_PER_SERVER = 2, 4
THRESHOLDS = (1800.0, 7200.0)
# Times are sums of a few hundred floats of about 1e4-1e5 s; the engine completes a job
# within 1e-9 x now of its end. 1e-6 s absolute is far above both.
TOLERANCE_S = 1e-6


def one_gpu_workload(seed: int, num_jobs: int) -> Workload:
    """Poisson-like arrivals of one-GPU jobs with heavy-tailed durations (queues build up)."""
    rng = np.random.default_rng(seed)
    return Workload(
        arrival_time=np.cumsum(rng.exponential(400.0, num_jobs)),
        model=rng.integers(0, 3, num_jobs),
        num_workers=np.ones(num_jobs, dtype=np.int64),
        worker_demand=np.tile([1.0, 1.0], (num_jobs, 1)),
        duration=np.round(rng.lognormal(7.5, 1.2, num_jobs), 1),
    )


def reference_finish_times(
    arrival: np.ndarray, duration: np.ndarray, capacity: int, policy: str
) -> np.ndarray:
    """Finish time of every job under ``policy`` ("fifo", "sjf", "las"): an event loop."""
    n = len(arrival)
    attained = np.zeros(n)  # GPU-seconds served (= seconds, one GPU each)
    finish = np.full(n, np.nan)
    running: set[int] = set()
    now = 0.0
    while np.isnan(finish).any():
        active = [j for j in range(n) if arrival[j] <= now + TOLERANCE_S and np.isnan(finish[j])]
        if policy == "las":
            queue = {j: sum(attained[j] >= t - TOLERANCE_S for t in THRESHOLDS) for j in active}
            ranked = sorted(active, key=lambda j: (queue[j], arrival[j], j))
            running = set(ranked[:capacity])  # preemptive: the best-ranked run
        else:
            key = (
                (lambda j: (arrival[j], j))
                if policy == "fifo"
                else (lambda j: (duration[j], arrival[j], j))
            )
            waiting = sorted((j for j in active if j not in running), key=key)
            running |= set(waiting[: capacity - len(running)])
        # The next event: an arrival, a completion, or (LAS) a threshold crossing.
        upcoming = [arrival[j] for j in range(n) if arrival[j] > now + TOLERANCE_S]
        upcoming += [now + duration[j] - attained[j] for j in running]
        if policy == "las":
            upcoming += [
                now + t - attained[j]
                for j in running
                for t in THRESHOLDS
                if t > attained[j] + TOLERANCE_S
            ]
        step = min(upcoming) - now
        for j in running:
            attained[j] += step
        now += step
        for j in list(running):
            if attained[j] >= duration[j] - TOLERANCE_S:
                finish[j] = now
                running.discard(j)
    return finish


def simulated_jobs(workload: Workload, policy: str, backfill: bool = True) -> dict:
    """The simulator's per-job records of ``policy`` in the ideal model (no restart cost,
    no minimum run time, the reference's LAS thresholds)."""
    cluster = build_cluster("flat", servers=SERVERS, gpus_per_server=GPUS_PER_SERVER)
    preemption = PreemptionSettings(min_run_s=0.0, las_thresholds_gpu_s=THRESHOLDS)
    scheduler = make_scheduler(policy, rng=0, backfill=backfill, preemption=preemption)
    config = SimulatorConfig(restart_cost_s=0.0, **perf_switches("ideal")._asdict())
    return simulate(cluster, workload, scheduler, policy, config).jobs


@pytest.mark.parametrize(
    ("policy", "backfill", "reference"),
    [
        ("fifo+packing", False, "fifo"),
        ("fifo+packing", True, "fifo"),
        ("sjf+packing", True, "sjf"),
        ("las+packing", True, "las"),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_finish_times_match_the_reference_job_by_job(
    policy: str, backfill: bool, reference: str, seed: int
) -> None:
    workload = one_gpu_workload(seed, num_jobs=80)
    expected = reference_finish_times(
        workload.arrival_time, workload.duration, SERVERS * GPUS_PER_SERVER, reference
    )
    simulated = simulated_jobs(workload, policy, backfill)["finish"]
    np.testing.assert_allclose(simulated, expected, rtol=0, atol=TOLERANCE_S)


def test_the_workloads_make_the_policies_differ() -> None:
    """The comparison above is only worth something if queues build up: on these
    workloads jobs wait under FIFO, the three schedules differ, and LAS preempts."""
    workload = one_gpu_workload(0, num_jobs=80)
    capacity = SERVERS * GPUS_PER_SERVER
    fifo, sjf, las = (
        reference_finish_times(workload.arrival_time, workload.duration, capacity, policy)
        for policy in ("fifo", "sjf", "las")
    )
    assert not np.allclose(fifo, sjf) and not np.allclose(fifo, las)
    assert (fifo - workload.arrival_time > workload.duration + 1.0).sum() >= 10
    assert np.mean(sjf - workload.arrival_time) < np.mean(fifo - workload.arrival_time)
    assert simulated_jobs(workload, "las+packing")["preemptions"].sum() > 0
