"""002's packing rule (§II-B, Fig. 2) on hand-made states.

The text of 002 states the rule and refers to Fig. 2 for an example whose numbers are not
in the text; the example here follows the rule on 002's servers of 8 GPUs. Cluster: flat,
4 servers x 8 GPUs, each server two sockets of 8 cores with one 4-GPU group: server s has
groups 2s and 2s+1. Busy GPUs leave free = [3, 6, 2, 8] GPUs on servers 0..3:

    server 0: group 0 full (4 busy), group 1 one busy      -> free 0 + 3
    server 1: group 2 two busy                              -> free 2 + 4
    server 2: group 4 full, group 5 two busy                -> free 0 + 2
    server 3: nothing busy                                  -> free 4 + 4
"""

from __future__ import annotations

import pytest

from envs.schedulers import ClusterView, Packing, QuietPacking
from envs.topology import build_cluster

FREE = [3, 6, 2, 8]


@pytest.fixture
def fig2(setup_sim, job_spec):
    cluster = build_cluster("flat", servers=4, gpus_per_server=8)
    specs = [
        job_spec(workers=2),  # 0: 2 GPUs
        job_spec(workers=4),  # 1: 4 GPUs
        job_spec(workers=12),  # 2: 12 GPUs
        job_spec(workers=16),  # 3: 16 GPUs
        job_spec(workers=1, gpus=3),  # 4: one 3-GPU task
        job_spec(workers=20),  # 5: 20 GPUs > 19 free
    ]
    setup = setup_sim(cluster, specs, gpu_fillers=13)
    for group, busy in ((0, 4), (1, 1), (2, 2), (4, 4), (5, 2)):
        setup.occupy(group, gpus=busy)
    sim = setup.sim
    assert (sim.free_gpus.reshape(4, 2).sum(axis=1) == FREE).all()
    return sim


def place(sim, job, rule=None):
    """``rule``'s (default: packing's) task groups for ``job`` now, as a list, or None."""
    groups = (rule or Packing()).place(sim, job, ClusterView(sim))
    return None if groups is None else groups.tolist()


def test_the_tightest_server_that_holds_the_whole_job(fig2):
    # 2 GPUs fit every server; server 2 has the fewest free (2).
    assert place(fig2, 0) == [5, 5]
    # 4 GPUs fit servers 1 (6 free) and 3 (8 free): server 1. Inside it the tightest group
    # first (group 2, 2 free), then group 3; a group holding the job is preferred.
    assert place(fig2, 1) == [2, 2, 3, 3]


def test_no_server_holds_the_job_so_the_emptiest_takes_its_share(fig2):
    # 12 GPUs: no server holds them; server 3 (8 free) takes 8, and the remaining 4 go
    # to the tightest server that holds 4: server 1.
    assert place(fig2, 2) == [6] * 4 + [7] * 4 + [2, 2, 3, 3]


def test_the_rule_repeats_until_the_job_is_placed(fig2):
    # 16 GPUs: server 3 takes 8; 8 more fit no server, so server 1 (6 free) takes 6;
    # the last 2 go to the tightest server that holds 2: server 2.
    assert place(fig2, 3) == [6] * 4 + [7] * 4 + [2, 2, 3, 3, 3, 3] + [5, 5]


def test_a_task_takes_all_its_gpus_from_one_group(fig2):
    # Server 0 has 3 free GPUs, all in group 1; server 1 has 6 but at most 4 in a group.
    # A 3-GPU task fits servers 0, 1 and 3; server 0 is the tightest.
    assert place(fig2, 4) == [1]


def test_a_job_that_cannot_fit_whole_is_not_placed(fig2):
    assert place(fig2, 5) is None


def test_cores_count_as_well_as_gpus(setup_sim, job_spec):
    """Server 0 has the fewest free GPUs but its sockets lack the cores: server 1 wins."""
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=2, cpus=4)], gpu_fillers=1, cpu_fillers=[6, 6])
    setup.occupy(0, gpus=1, cpus=6)  # socket 0: 6 of 8 cores busy
    sim = setup.sim
    sim.place(setup.cpu_filler(6), [1])  # socket 1: 6 of 8 cores busy
    # Server 0: 3 free GPUs, 2 + 2 free cores: no 4-core task fits. Server 1: 4 GPUs.
    # Server 1: both tasks fit group 2 (2 GPUs, 8 cores on socket 2).
    assert place(sim, 0) == [2, 2]


@pytest.mark.parametrize("server", ["dgx1", "minsky", "power8"])
def test_alike_tasks_take_the_general_steps(server):
    """Jobs of identical tasks go through a fast path; on random free resources it picks
    the groups the general two-kind loop picks, with and without allowed servers."""
    import numpy as np

    from envs.schedulers.packing import _pack_alike, _pack_any
    from envs.schedulers.tasks import JobTasks
    from envs.schedulers.tentative import Tentative

    cluster = build_cluster("flat", servers=6, server=server)
    rng = np.random.default_rng(0)
    compared = 0
    for _ in range(300):
        free_gpus = rng.integers(0, cluster.group_gpus + 1)
        free_cores = rng.integers(0, cluster.socket_cores + 1).astype(np.float64)
        count, gpus = int(rng.integers(2, 13)), int(rng.integers(1, 3))
        cpus = float(rng.choice([0.0, 1.0, 2.5, 4.0]))
        tasks = JobTasks(0, np.full(count, gpus), np.full(count, cpus), count)
        allowed = None if rng.random() < 0.5 else rng.random(cluster.num_servers) < 0.7
        fast = _pack_alike(Tentative(cluster, free_gpus, free_cores, tasks), allowed)
        general = _pack_any(Tentative(cluster, free_gpus, free_cores, tasks), allowed)
        assert (fast is None) == (general is None)
        if fast is not None:
            assert fast.tolist() == general.tolist()
            compared += 1
    assert compared > 50


def place_quietly(sim, job):
    return place(sim, job, QuietPacking())


def test_quiet_packing_takes_packings_servers_and_the_emptier_group(fig2):
    # Job 0 (2 x 1 GPU) goes to server 2 as with packing, where only group 5 is free.
    assert place_quietly(fig2, 0) == [5, 5]
    # Job 1 (4 x 1 GPU) goes to server 1 as with packing, but its first task takes group 3
    # (4 free GPUs, socket 3's 8 cores free) rather than the tighter group 2 (2 free); the
    # rest follow it while it has room: a group holding the job comes first.
    assert place_quietly(fig2, 1) == [3, 3, 3, 3]
    # 12 GPUs: server 3 takes 8 (its emptier group first, group 6 on a tie: lower index),
    # then server 1 takes 4, again in its emptier group 3.
    assert place_quietly(fig2, 2) == [6] * 4 + [7] * 4 + [3, 3, 3, 3]


def test_quiet_packing_puts_one_gpu_jobs_on_different_sockets(setup_sim, job_spec):
    """Two one-GPU jobs on an empty two-socket server: packing stacks them on one socket
    (the group the first one left tighter), quiet packing gives each its own."""
    cluster = build_cluster("flat", servers=1, gpus_per_server=8)
    for rule, second_group in ((Packing(), 0), (QuietPacking(), 1)):
        setup = setup_sim(cluster, [job_spec(cpus=2), job_spec(cpus=2)])
        sim = setup.sim
        first = rule.place(sim, 0, ClusterView(sim))
        assert first.tolist() == [0]  # a tie of empty groups: the lower index
        sim.place(0, first)
        assert rule.place(sim, 1, ClusterView(sim)).tolist() == [second_group]


def test_quiet_packing_weighs_the_sockets_free_cores_first(setup_sim, job_spec):
    """Group 0 has more free GPUs, but its socket's cores are busier: group 1 wins (the
    free GPUs alone would pick group 0)."""
    cluster = build_cluster("flat", servers=1, gpus_per_server=8)
    setup = setup_sim(cluster, [job_spec(cpus=1)], gpu_fillers=1, cpu_fillers=[6, 2])
    setup.occupy(1, gpus=1, cpus=2)  # group 1: 3 free GPUs; socket 1: 6 of 8 cores free
    setup.sim.place(setup.cpu_filler(6), [0])  # socket 0: 2 of 8 cores free, 4 GPUs free
    sim = setup.sim
    assert place_quietly(sim, 0) == [1]
