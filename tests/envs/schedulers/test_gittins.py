"""Tiresias' Gittins-index ordering (``gittins``): the index on a tiny distribution, worked
by hand, and a schedule on one GPU derived by hand against LAS's."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.schedulers.gittins import GittinsIndex, gittins_index, index_grid
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import build_cluster

from .conftest import JobSpec, build_workload


def test_the_index_on_a_tiny_distribution():
    # Samples 1, 2, 4 GPU-s. G(a) = max_k k / (T_1 + ... + T_k + (m - k) T_k) over the
    # excesses T of the samples above a:
    # a = 0:   T = 1, 2, 4: 1/(1+2) = 1/3, 2/(3+2) = 2/5, 3/7 -> 3/7
    # a = 1:   T = 1, 3:    1/(1+1) = 1/2, 2/4 = 1/2         -> 1/2
    # a = 1.5: T = 0.5, 2.5: 1/(0.5+0.5) = 1, 2/3            -> 1
    # a = 2:   T = 2:       1/2
    # a = 3:   T = 1:       1
    # a = 4, 5: no sample above: 0
    index = gittins_index([4.0, 1.0, 2.0], np.array([0.0, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0]))
    assert index.tolist() == pytest.approx([3 / 7, 1 / 2, 1.0, 1 / 2, 1.0, 0.0, 0.0], rel=1e-12)


def test_the_index_is_tabulated_at_zero_and_the_samples():
    assert index_grid(np.array([4.0, 1.0, 2.0, 2.0])).tolist() == [0.0, 1.0, 2.0, 4.0]
    # More distinct samples than points: their quantiles, 0 first.
    grid = index_grid(np.arange(1.0, 1001.0), points=5)
    # (at levels 0, 1/3, 2/3, 1 of the 1,000 sorted samples: positions 0, 333, 666, 999)
    assert grid.tolist() == [0.0, 1.0, 334.0, 667.0, 1000.0]


def test_a_job_reads_the_index_of_the_grid_point_below_its_service():
    # One finished job of 8 GPU-s: grid 0, 8; G(0) = 1/8, G(8) = 0. Job 1 attained 12
    # GPU-s (grid point 8: index 0), job 2 nothing (1/8).
    specs = [JobSpec(iterations=50), JobSpec(iterations=500), JobSpec(iterations=5000)]
    sim = Simulator(build_cluster("flat", servers=1, gpus_per_server=1), build_workload(specs))
    sim.run_until_decision()
    sim.place(0, [0])
    sim.run_until_decision()  # job 0 ends at 8 s
    assert sim.finished_count == 1
    sim.place(1, [0])
    sim.request_decision(20.0)
    sim.run_until_decision()
    gittins = GittinsIndex((10_000.0,))
    assert sim.attained_gpu_seconds[1] == pytest.approx(12.0)
    assert gittins.index(sim, np.array([0, 1, 2])).tolist() == pytest.approx([0.0, 0.0, 1 / 8])
    # Queue first (all in queue 0 here), then the higher index: job 2 before job 1.
    queue, negative_index = gittins.priority_keys(sim, np.array([1, 2]))
    assert queue.tolist() == [0, 0] and negative_index.tolist() == pytest.approx([0.0, -1 / 8])


def one_gpu_jobs() -> list[JobSpec]:
    """ResNet-50 (0.16 s per mini-batch) on one GPU: A 8 s and B 80 s at 0, C 800 s at 20."""
    return [
        JobSpec(iterations=50),
        JobSpec(iterations=500),
        JobSpec(iterations=5000, arrival=20.0),
    ]


def run(policy: str) -> Simulator:
    cluster = build_cluster("flat", servers=1, gpus_per_server=1)
    config = SimulatorConfig(interference=False, communication=False)
    sim = Simulator(cluster, build_workload(one_gpu_jobs()), config)
    settings = PreemptionSettings(min_run_s=0.0, las_thresholds_gpu_s=(10_000.0,))
    sim.run(make_scheduler(policy, preemption=settings))
    assert (sim.status == JobStatus.FINISHED).all()
    return sim


def test_a_fresh_job_preempts_one_whose_index_fell():
    # A runs 0-8 and finishes: the distribution is {8 GPU-s}, G(0) = 1/8, G(>= 8) = 0.
    # B starts at 8. At 20 C arrives fresh (index 1/8) while B has 12 GPU-s (index 0):
    # same queue, higher index, so C preempts B and runs 20-820. B, with 68 s left,
    # resumes at C's end: 820 + 68 = 888.
    sim = run("gittins+packing")
    assert sim.first_start.tolist() == pytest.approx([0.0, 8.0, 20.0])
    assert sim.finish_time.tolist() == pytest.approx([8.0, 888.0, 820.0])
    assert sim.preemptions.tolist() == [0, 1, 0]


def test_las_keeps_the_same_jobs_in_arrival_order():
    # One LAS queue (threshold 10,000 GPU-s): FIFO, no preemption. B runs 8-88, C 88-888.
    sim = run("las+packing")
    assert sim.first_start.tolist() == pytest.approx([0.0, 8.0, 88.0])
    assert sim.finish_time.tolist() == pytest.approx([8.0, 88.0, 888.0])
    assert sim.preemptions.tolist() == [0, 0, 0]


def test_the_registry_builds_it_with_las_settings():
    settings = PreemptionSettings(min_run_s=60.0, las_thresholds_gpu_s=(100.0, 1000.0))
    ordering = make_scheduler("gittins+packing", preemption=settings).ordering
    assert isinstance(ordering, GittinsIndex) and ordering.name == "gittins"
    assert ordering.preemptive and ordering.min_run_s == 60.0
    assert ordering.thresholds.tolist() == [100.0, 1000.0]
    assert repr(ordering).startswith("GittinsIndex((100.0, 1000.0), preemptive=True")


def test_the_index_without_queues_is_refused():
    with pytest.raises(ValueError, match="the Gittins index needs LAS's queues"):
        GittinsIndex(None, preemptive=True)  # type: ignore[arg-type]
