"""Properties over random cluster states: placements never over-commit, and never give up
on a job that fits."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from envs.schedulers import ClusterView, RandomPlacement
from envs.schedulers.capacity import server_capacity
from envs.schedulers.registry import PLACEMENTS
from envs.sim import Simulator
from envs.sim.fits import workload_fits
from envs.topology import build_cluster
from envs.workload import Workload

CLUSTERS = [
    build_cluster("flat", servers=3, gpus_per_server=4),  # 2 sockets x one 2-GPU group
    build_cluster("flat", servers=2, gpus_per_server=3),  # 1 socket, one 3-GPU group
    build_cluster("flat", servers=2, server="minsky"),  # 2 sockets x two 1-GPU groups
    build_cluster("flat", servers=2, server="asymmetric"),  # 16 cores/4 GPUs + 8 cores/2
    build_cluster("fat-tree", k=2, server="dgx1"),  # 2 x 8 GPUs under edge switches
]

task_shape = st.tuples(st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 6.0]))


@st.composite
def cluster_states(draw):
    """A cluster, a job of random shape (job 0) and random fillers already running."""
    cluster = draw(st.sampled_from(CLUSTERS))
    workers = draw(st.integers(1, 6))
    worker_gpus, worker_cpus = draw(task_shape)
    num_ps = draw(st.integers(0, 2))
    ps_cpus = draw(st.sampled_from([0.0, 1.0, 3.0]))
    fillers = draw(st.lists(task_shape, max_size=12))
    seed = draw(st.integers(0, 2**16))
    # The simulator refuses jobs that could never fit: clip the shapes to the cluster.
    largest_group = int(cluster.group_gpus.max())
    shapes = [
        (min(gpus, largest_group), cpus) for gpus, cpus in [(worker_gpus, worker_cpus), *fillers]
    ]
    workers = min(workers, cluster.num_gpus // max(shapes[0][0], 1))
    count = len(shapes)

    def workload_of(workers: int) -> Workload:
        return Workload(
            arrival_time=np.zeros(count),
            model=np.zeros(count, np.int64),
            num_workers=np.array([workers] + [1] * len(fillers)),
            worker_demand=np.array(shapes, dtype=float),
            num_ps=np.array([num_ps] + [0] * len(fillers)),
            ps_demand=np.tile([0.0, ps_cpus], (count, 1)),
            epochs=np.ones(count),
            iterations_per_epoch=np.full(count, 1000),
            catalog_name="marl",
        )

    # ... and to what fits the empty cluster as a whole (envs.sim.fits), or nothing is left.
    workload = workload_of(workers)
    while workers > 1 and not workload_fits(cluster, workload).all():
        workers -= 1
        workload = workload_of(workers)
    assume(workload_fits(cluster, workload).all())
    sim = Simulator(cluster, workload)
    assert sim.run_until_decision()
    occupy = RandomPlacement(np.random.default_rng(seed))
    for filler in range(1, count):
        groups = occupy.place(sim, filler, ClusterView(sim))
        if groups is not None:
            sim.place(filler, groups)
    return sim


def check_fits(sim, groups):
    """The placement's GPUs per group and cores per socket are free right now."""
    gpus, cpus = sim.task_demands(0)
    groups = np.asarray(groups)
    assert len(groups) == len(gpus)
    cluster = sim.cluster
    gpu_need = np.bincount(groups, weights=gpus, minlength=cluster.num_gpu_groups)
    cpu_need = np.bincount(
        cluster.group_socket[groups], weights=cpus, minlength=cluster.num_sockets
    )
    assert (gpu_need <= sim.free_gpus).all()
    assert (cpu_need <= sim.free_cores + 1e-9).all()
    assert sim.fits(0, groups)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_states(), st.integers(0, 1000))
def test_no_placement_exceeds_free_gpus_or_cores(sim, seed):
    for name, factory in PLACEMENTS.items():
        before = (sim.free_gpus.copy(), sim.free_cores.copy())
        view = ClusterView(sim)
        groups = factory(np.random.default_rng(seed)).place(sim, 0, view)
        if groups is not None:
            check_fits(sim, groups)
        # A placement only proposes: neither the simulator nor the view changed.
        assert (sim.free_gpus == before[0]).all() and (sim.free_cores == before[1]).all(), name
        assert (view.free_gpus == before[0]).all() and (view.free_cores == before[1]).all(), name


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_states(), st.integers(0, 1000))
def test_a_job_of_identical_tasks_is_placed_exactly_when_it_fits(sim, seed):
    """For workers only, the closed-form capacity is exact, and every placement fills it.

    (With parameter servers too, the two kinds compete for cores and only the safety
    property above is guaranteed.)
    """
    if sim.num_ps[0]:
        return
    capacity = server_capacity(
        sim.cluster,
        sim.free_gpus,
        sim.free_cores,
        int(sim.worker_gpus[0]),
        float(sim.worker_cpus[0]),
    )
    fits = int(capacity.sum()) >= int(sim.num_workers[0])
    for name, factory in PLACEMENTS.items():
        groups = factory(np.random.default_rng(seed)).place(sim, 0, ClusterView(sim))
        assert (groups is not None) == fits, name
