"""Tetris, load balancing, LIF, depth-/breadth-first, locality and random on small clusters.

Unless said otherwise the cluster is flat, 3 servers x 4 GPUs: server s has sockets 2s and
2s+1 (8 cores each) with one 2-GPU group each, groups 2s and 2s+1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.schedulers import (
    BreadthFirst,
    ClusterView,
    DepthFirst,
    LeastInterference,
    LoadBalancing,
    LocalityFirst,
    Packing,
    RandomPlacement,
    Tetris,
)
from envs.schedulers.tasks import JobTasks
from envs.schedulers.tentative import Tentative
from envs.sim import InterferenceCoefficients
from envs.topology import build_cluster


def place(placement, sim, job):
    groups = placement.place(sim, job, ClusterView(sim))
    return None if groups is None else groups.tolist()


@pytest.fixture
def three_servers(setup_sim, job_spec):
    """Group 0 has one GPU (and 1 core) busy; socket 2 has 6 cores busy.

    Job 0: two tasks of (1 GPU, 2 cores). Job 1: five tasks of (1 GPU, 1 core).
    """
    cluster = build_cluster("flat", servers=3, gpus_per_server=4)
    specs = [job_spec(workers=2, cpus=2), job_spec(workers=5, cpus=1)]
    setup = setup_sim(cluster, specs, gpu_fillers=1, cpu_fillers=[1, 6])
    setup.occupy(0, gpus=1, cpus=1)
    setup.sim.place(setup.cpu_filler(6), [2])
    return setup.sim


def test_tetris_fills_the_best_aligned_server_that_holds_the_job(three_servers):
    """Servers are filled one at a time (001: maximally packed). Free per server (GPUs of
    4, cores of 16): server 0 3 and 15, server 1 4 and 10, server 2 4 and 16. Job 0 asks
    2 GPUs and 4 cores in all; alignment (2/4)(GPUs/4) + (4/16)(cores/16): server 0
    0.375 + 0.234 = 0.609, server 1 0.5 + 0.156 = 0.656, server 2 0.5 + 0.25 = 0.75.
    Every server holds it, so server 2, both tasks in its first group (4)."""
    assert place(Tetris(), three_servers, 0) == [4, 4]


def test_tetris_fills_a_server_then_the_next_when_none_holds_the_job(three_servers):
    """Job 1 asks 5 GPUs and 5 cores: no server holds it. Alignment (5/4)(GPUs/4) +
    (5/16)(cores/16): server 0 0.9375 + 0.293, server 1 1.25 + 0.195, server 2 1.25 +
    0.3125 (best): server 2 takes four tasks, groups 4, 4, 5, 5. The last task (1 GPU,
    1 core): server 0 0.25 x 3/4 + (1/16)(15/16) = 0.246, server 1 0.25 + (1/16)(10/16) =
    0.289: server 1, the tightest group there (its first, 2). The per-task alignment of
    the earlier version put job 0 on groups 1 and 3, two servers."""
    assert place(Tetris(), three_servers, 1) == [4, 4, 5, 5, 2]


def test_load_balancing_takes_the_least_loaded_server(three_servers):
    """Server load = GPUs used/4 + cores used/16: server 0 1/4 + 1/16 = 0.3125, server 1
    6/16 = 0.375, server 2 0. The first task goes to server 2 (group 4: both of its groups
    are idle, lower index). Server 2 is then at 1/4 + 2/16 = 0.375, so the second task
    goes to server 0, into its less loaded group 1 (group 0: 1/2 + 1/8; group 1: 0)."""
    assert place(LoadBalancing(), three_servers, 0) == [4, 1]


def test_depth_first_uses_the_fewest_servers(three_servers):
    # Five tasks of (1 GPU, 1 core); free GPUs per server 3, 4, 4: none holds the job, so
    # the first with the most free GPUs (server 1) is filled: groups 2 (its socket has 2
    # free cores) and 3, two each. The last task fits servers 0 and 2 whole: the first,
    # its tightest group 0.
    assert place(DepthFirst(), three_servers, 1) == [2, 2, 3, 3, 0]


def test_depth_first_takes_one_server_where_one_holds_the_job(setup_sim, job_spec):
    # Server 0 has 1 free GPU (group 1), server 1 all 4: a 4-task job goes to server 1
    # alone, where first fit in index order began on server 0 and needed both.
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=4, cpus=1)], gpu_fillers=3)
    setup.occupy(0, gpus=2)
    setup.occupy(1, gpus=1)
    assert place(DepthFirst(), setup.sim, 0) == [2, 2, 3, 3]


def test_breadth_first_spreads_round_robin(three_servers):
    # Round 1: one task on each of servers 0, 1, 2 (groups 0, 2, 4); round 2: server 0
    # (group 0 is now full: group 1), then server 1 (group 2 holds the job).
    assert place(BreadthFirst(), three_servers, 1) == [0, 2, 4, 1, 2]


def test_packing_differs_from_depth_first(three_servers):
    # Packing: no server holds 5; the emptiest (server 1, 4 free, before server 2) takes 4
    # and the last task goes to the tightest server that holds 1: server 0 (group 0).
    assert place(Packing(), three_servers, 1) == [2, 2, 3, 3, 0]


def test_random_placement_fits_and_repeats_with_its_seed(three_servers):
    first = place(RandomPlacement(np.random.default_rng(3)), three_servers, 1)
    again = place(RandomPlacement(np.random.default_rng(3)), three_servers, 1)
    assert first == again
    assert three_servers.fits(1, first)


# ---------------------------------------------------------------------------- LIF
def excess(coefficients, shared_cpu, own_cpu, shared_pcie, own_pcie):
    """001 §V's S(U) - S(0), written out by hand."""
    c = coefficients
    cpu = c.a1 * (math.exp(c.a2 * shared_cpu + c.a3 * own_cpu) - math.exp(c.a3 * own_cpu))
    return max(cpu + c.b1 * shared_pcie, 0.0)


@pytest.fixture
def two_single_socket_servers(setup_sim, job_spec):
    """Flat 2 servers x 3 GPUs: one socket (8 cores), one 3-GPU group per server.

    Running: a VGG-16 worker (3 cores busy, 3.9 GB/s PCIe) on group 0 and a ResNeXt-110
    worker (1 core, 0.3 GB/s) on group 1. Job 0: two ResNet-50 workers (4 cores, 1.4 GB/s).
    """
    cluster = build_cluster("flat", servers=2, gpus_per_server=3)
    specs = [
        job_spec(workers=2, model="ResNet-50"),
        job_spec(workers=1, model="VGG-16", iterations=10**9),
        job_spec(workers=1, model="ResNeXt-110", iterations=10**9),
    ]
    setup = setup_sim(cluster, specs)
    setup.sim.place(1, [0])
    setup.sim.place(2, [1])
    return setup.sim


def test_lif_scores_are_the_servers_interference_after_the_task(two_single_socket_servers):
    sim = two_single_socket_servers
    coefficients = sim.config.coefficients
    profiles = {"ResNet-50": (4.0, 1.4), "VGG-16": (3.0, 3.9), "ResNeXt-110": (1.0, 0.3)}
    for job, name in enumerate(profiles):
        assert (sim.cpu_use[job], sim.pcie_use[job]) == profiles[name]

    def hurt(victim, cpu, pcie):
        """Slowdown of ``victim`` under ``cpu`` cores and ``pcie`` GB/s of others."""
        own_cpu, own_pcie = profiles[victim]
        return excess(coefficients, cpu, own_cpu, pcie, own_pcie)

    lif = LeastInterference()
    view = ClusterView(sim)
    tasks = JobTasks.of(sim, 0)
    context = lif.prepare(sim, tasks, view)
    attempt = Tentative.on(view, tasks)
    # On group 0 the VGG worker suffers the new worker's 4 cores and 1.4 GB/s, and the new
    # worker the VGG worker's 3 cores and 3.9 GB/s; likewise on group 1 with ResNeXt.
    on_vgg = hurt("VGG-16", 4.0, 1.4) + hurt("ResNet-50", 3.0, 3.9)  # 0.327
    on_resnext = hurt("ResNeXt-110", 4.0, 1.4) + hurt("ResNet-50", 1.0, 0.3)  # 0.159
    np.testing.assert_allclose(lif.levels_after(context, attempt, 0), [on_vgg, on_resnext])

    # The first worker goes to group 1. For the second, group 1 would put the ResNeXt
    # worker under 8 cores and 2.8 GB/s (its sibling's slowdown is unchanged and the
    # sibling does not slow it): 0.446 > 0.327, so it goes to group 0.
    attempt.assign(0, 1)
    lif.assigned(context, attempt, 0, 1)
    crowded = hurt("ResNeXt-110", 8.0, 2.8) + hurt("ResNet-50", 1.0, 0.3)  # 0.446
    np.testing.assert_allclose(lif.levels_after(context, attempt, 1), [on_vgg, crowded])
    assert place(lif, sim, 0) == [1, 0]


def test_lif_places_where_nobody_interferes_and_consolidates_on_ties(setup_sim, job_spec):
    """Flat 2 x 4 GPUs (two sockets per server). A worker on group 0 is hurt by a task on
    group 0 (same socket and PCIe switch) but not on group 1 (other socket, no spill over
    its 8 cores), so the 0-interference groups 1, 2, 3 tie and the lowest, on the server
    already in use, wins; the second worker joins the first."""
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=2), job_spec(workers=1, iterations=10**9)])
    setup.sim.place(1, [0])
    assert place(LeastInterference(), setup.sim, 0) == [1, 1]


def test_lif_follows_the_simulators_coefficients(setup_sim, job_spec):
    from envs.sim import SimulatorConfig

    cluster = build_cluster("flat", servers=2, gpus_per_server=3)
    specs = [
        job_spec(workers=1, model="ResNet-50"),
        job_spec(workers=1, model="VGG-16", iterations=10**9),
        job_spec(workers=1, model="ResNeXt-110", iterations=10**9),
    ]
    # PCIe interference only, heavily weighted, no CPU term: VGG's 3.9 GB/s dominates.
    coefficients = InterferenceCoefficients(a1=0.0, b1=1.0)
    setup = setup_sim(cluster, specs, config=SimulatorConfig(coefficients=coefficients))
    setup.sim.place(1, [0])
    setup.sim.place(2, [1])
    assert place(LeastInterference(), setup.sim, 0) == [1]


# ---------------------------------------------------------------------------- locality
@pytest.fixture
def fat_tree(setup_sim, job_spec):
    """Fat-tree k=4 of Power8 servers (2 sockets x one 2-GPU group): 16 servers, 2 per
    edge switch, 4 per pod; server s has groups 2s, 2s+1. One GPU of server 0 is busy.

    Job 0: 8 one-GPU workers (an edge switch's two servers); job 1: 16 (a pod)."""
    cluster = build_cluster("fat-tree", k=4)
    setup = setup_sim(cluster, [job_spec(workers=8), job_spec(workers=16)], gpu_fillers=1)
    setup.occupy(0)
    return setup.sim


def test_locality_keeps_a_job_under_one_edge_switch(fat_tree):
    # Edge 0 (servers 0, 1) has 7 free GPUs; edge 1 (servers 2, 3) holds all 8.
    assert place(LocalityFirst(), fat_tree, 0) == [4, 4, 5, 5, 6, 6, 7, 7]
    # Packing alone fills server 1 (the first with 4 free) and then server 2: the job
    # spans edges 0 and 1 and talks through an aggregation switch.
    assert place(Packing(), fat_tree, 0) == [2, 2, 3, 3, 4, 4, 5, 5]


def test_locality_keeps_a_job_inside_one_pod(fat_tree):
    # Pod 0 has 15 free GPUs; pod 1 (servers 4..7, groups 8..15) holds all 16.
    assert place(LocalityFirst(), fat_tree, 1) == [g for g in range(8, 16) for _ in range(2)]


def test_locality_picks_the_tightest_domain_that_holds_the_job(setup_sim, job_spec):
    """Flat 3 x 4 GPUs (one switch): servers are the only finer domain. A 2-GPU job fits
    servers 1 (4 free) and 2 (2 free, group 4 busy): server 2."""
    cluster = build_cluster("flat", servers=3, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=2)], gpu_fillers=5)
    setup.occupy(0, gpus=2)
    setup.occupy(1, gpus=1)
    setup.occupy(4, gpus=2)
    # Server 0 has 1 free GPU: too few. Servers 1 and 2 hold the job; 2 is tighter.
    assert place(LocalityFirst(), setup.sim, 0) == [5, 5]
