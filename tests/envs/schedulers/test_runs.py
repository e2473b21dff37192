"""Every ``ordering+placement`` runs whole workloads through ``Simulator.run``."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import make_scheduler, scheduler_names
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import build_cluster
from envs.workload import make_workload

CLUSTER = build_cluster("fat-tree", k=4)  # 16 Power8 servers, 64 GPUs
NAMES = scheduler_names().combinations()
PREEMPTIVE = ("las", "srtf", "gittins")


def workloads():
    """Parameter-server jobs spread over time (with users), and a burst of AllReduce jobs
    up to 32 GPUs all arriving at once (a long queue: backfilling, delays, fragmentation)."""
    rng = np.random.default_rng(11)
    spread = make_workload("uniform", num_jobs=16, rng=rng)
    spread = spread.replace(user=rng.integers(0, 3, len(spread)), user_names=("a", "b", "c"))
    burst = make_workload("deepshare", num_jobs=16, rng=rng, gpu_choices=(1, 2, 4, 8, 16, 32))
    return {"spread": spread, "burst": burst}


WORKLOADS = workloads()


def run(name, workload, config=None, seed=0):
    sim = Simulator(CLUSTER, workload, config)
    starts = np.zeros(len(workload), dtype=np.int64)
    place = sim.place

    def counting(job, groups, *args, **kwargs):
        starts[job] += 1
        return place(job, groups, *args, **kwargs)

    sim.place = counting
    sim.run(make_scheduler(name, rng=seed))
    return sim, starts


@pytest.mark.parametrize("workload_name", list(WORKLOADS))
@pytest.mark.parametrize("name", NAMES)
def test_every_scheduler_finishes_every_job_exactly_once(name, workload_name):
    workload = WORKLOADS[workload_name]
    sim, starts = run(name, workload)
    assert (sim.status == JobStatus.FINISHED).all()
    # One start per job, plus one per preemption; only LAS, SRTF and Gittins preempt.
    assert (starts == 1 + sim.preemptions).all()
    if name.split("+")[0] not in PREEMPTIVE:
        assert (sim.preemptions == 0).all()
    assert np.isfinite(sim.finish_time).all()
    assert np.array_equal(sim.work_done, sim.work_total)
    jct = sim.finish_time - workload.arrival_time
    assert (jct >= sim.ideal_duration * (1 - 1e-9)).all()


@pytest.mark.parametrize("name", ["fifo+packing", "dsif+locality", "drf+lif", "saf+tetris"])
def test_schedulers_run_in_fixed_intervals(name):
    config = SimulatorConfig(interval_s=600.0)
    sim, starts = run(name, WORKLOADS["burst"], config)
    assert (sim.status == JobStatus.FINISHED).all() and (starts == 1).all()
    # Jobs start only on interval ticks.
    assert np.allclose(np.mod(sim.first_start, 600.0), 0.0)


@pytest.mark.parametrize("name", ["random+random", "random+packing", "sjf+random"])
def test_same_seed_same_results(name):
    workload = WORKLOADS["burst"]
    first, _ = run(name, workload, seed=7)
    again, _ = run(name, workload, seed=7)
    np.testing.assert_array_equal(first.finish_time, again.finish_time)
    np.testing.assert_array_equal(first.first_start, again.first_start)


def test_a_scheduler_can_be_reused_for_a_new_simulation():
    scheduler = make_scheduler("dsif+packing")
    workload = WORKLOADS["burst"]
    results = []
    for _ in range(2):
        sim = Simulator(CLUSTER, workload)
        sim.run(scheduler)
        results.append(sim.finish_time.copy())
    np.testing.assert_array_equal(*results)
