"""Each ordering on one hand-made queue, with the order derived by hand.

Cluster: flat, 2 servers x 8 GPUs (2 sockets x (8 cores, one 4-GPU group) each): 16 GPUs,
32 cores. Speed model off, so a job runs at exactly its ideal speed. ResNet-50 takes
0.16 s per mini-batch; a job's ideal time is iterations x 0.16 / workers.

====  =======  =======  ======  =====  ============  =====  ================  ========
job   arrives  workers  cores   iters  ideal (s)     GPUs   GPUs x ideal      DRF share
====  =======  =======  ======  =====  ============  =====  ================  ========
0     0        4        1       1000   40            4      160               4/16
1     0        1        1       400    64            1      64                1/16
2     0        2        1       100    8             2      16                2/16
3     0        1        8       200    32            1      32                8/32
4     20       1        1       50     8             1      8                 1/16
====  =======  =======  ======  =====  ============  =====  ================  ========

Job 0 runs alone on group 0 from 0 s until job 4 arrives at 20 s, then is preempted:
half its work is done (20 s remaining), and it attained 4 GPUs x 20 s = 80 GPU-seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import (
    ClusterView,
    DominantResourceFairness,
    FirstInFirstOut,
    LeastAttainedService,
    LeastResourceFirst,
    Packing,
    RandomOrder,
    ShortestActualTime,
    ShortestIdealTime,
    ShortestJobFirst,
    ShortestRemainingTimeFirst,
    SmallestProductFirst,
)
from envs.sim import SimulatorConfig
from envs.topology import build_cluster

IDEAL = SimulatorConfig(interference=False, communication=False)


@pytest.fixture
def queue(setup_sim, job_spec):
    cluster = build_cluster("flat", servers=2, gpus_per_server=8)
    specs = [
        job_spec(workers=4, iterations=1000),
        job_spec(workers=1, iterations=400),
        job_spec(workers=2, iterations=100),
        job_spec(workers=1, iterations=200, cpus=8),
        job_spec(workers=1, iterations=50, arrival=20.0),
    ]
    setup = setup_sim(cluster, specs, config=IDEAL)
    sim = setup.sim
    sim.place(0, [0, 0, 0, 0])
    assert sim.run_until_decision() and sim.now == pytest.approx(20.0)
    sim.preempt(0)
    return sim


def ranked(ordering, sim):
    return ordering.order(sim, sim.waiting_jobs(), ClusterView(sim)).tolist()


def test_the_queue_is_as_described(queue):
    np.testing.assert_allclose(queue.ideal_duration[:5], [40, 64, 8, 32, 8])
    np.testing.assert_allclose(queue.expected_duration(np.arange(5)), [20, 64, 8, 32, 8])
    np.testing.assert_allclose(queue.attained_gpu_seconds[:5], [80, 0, 0, 0, 0])
    assert queue.waiting_jobs().tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        # Arrival order; jobs 0-3 all arrived at 0 s, so their index breaks the tie.
        (FirstInFirstOut(), [0, 1, 2, 3, 4]),
        # Whole ideal time: 8 (job 2, arrived first), 8 (job 4), 32, 40, 64.
        (ShortestJobFirst(), [2, 4, 3, 0, 1]),
        (ShortestIdealTime(), [2, 4, 3, 0, 1]),
        # Remaining: job 0 has 20 s left, ahead of job 3's 32.
        (ShortestRemainingTimeFirst(), [2, 4, 0, 3, 1]),
        # Attained service: only job 0 has any.
        (LeastAttainedService(), [1, 2, 3, 4, 0]),
        # GPUs: 1 (jobs 1, 3 at 0 s, then job 4 at 20 s), 2, 4.
        (LeastResourceFirst(), [1, 3, 4, 2, 0]),
        # GPUs x ideal: 8, 16, 32, 64, 160.
        (SmallestProductFirst(), [4, 2, 3, 1, 0]),
        # Dominant shares: 1/16 (jobs 1, 4), 2/16, then 1/4 for job 0 (GPUs) and job 3
        # (8 of 32 cores), tied, so job 0 goes first by index.
        (DominantResourceFairness(), [1, 4, 2, 0, 3]),
    ],
    ids=lambda value: getattr(value, "name", None),
)
def test_ordering_on_the_hand_made_queue(queue, ordering, expected):
    assert ranked(ordering, queue) == expected


def test_saf_equals_srtf_when_every_job_runs_at_its_ideal_speed(queue):
    # With the speed model off and room for every job, the oracle's time is the
    # remaining ideal time.
    assert ranked(ShortestActualTime(Packing()), queue) == [2, 4, 0, 3, 1]


def test_random_order_is_a_seeded_permutation(queue):
    first = ranked(RandomOrder(np.random.default_rng(5)), queue)
    again = ranked(RandomOrder(np.random.default_rng(5)), queue)
    assert first == again
    assert sorted(first) == [0, 1, 2, 3, 4]


def test_orderings_return_the_jobs_they_were_given(queue):
    view = ClusterView(queue)
    subset = np.array([3, 1])
    for ordering in (FirstInFirstOut(), ShortestJobFirst(), LeastAttainedService()):
        assert sorted(ordering.order(queue, subset, view).tolist()) == [1, 3]


def test_saf_prefers_the_job_whose_placement_runs_faster(setup_sim, job_spec):
    """Two jobs of equal ideal time (160 s): job 0 has 2 workers that must talk across
    servers, job 1 one worker. SIF keeps index order; SAF's oracle puts job 1 first.

    Flat 2 servers x 2 GPUs (one 1-GPU group per socket, 10 Gbps ports); one GPU of each
    server is busy, so job 0's workers land on groups 1 and 3. Its ring of two is one
    pair moving 2 x (1/2) x G MB per step over the 10 Gbps port links (nobody else on
    them); step = 0.16 + G x 8/1000 / 10 s, and 2000 mini-batches at 2 per step.
    """
    cluster = build_cluster("flat", servers=2, gpus_per_server=2)
    specs = [job_spec(workers=2, iterations=2000), job_spec(workers=1, iterations=1000)]
    setup = setup_sim(cluster, specs, gpu_fillers=2)
    setup.occupy(0)
    setup.occupy(2)
    sim = setup.sim
    view = ClusterView(sim)
    assert Packing().place(sim, 0, view).tolist() == [1, 3]
    assert ranked(ShortestIdealTime(), sim)[:2] == [0, 1]
    assert ranked(ShortestActualTime(Packing()), sim)[:2] == [1, 0]

    from envs.schedulers.estimate import estimated_duration

    gradient_mb = float(sim.gradient_mb[0])
    expected = 2000 / 2 * (0.16 + gradient_mb * 8 / 1000 / 10)
    assert estimated_duration(sim, 0, np.array([1, 3]), view.loads) == pytest.approx(expected)
    assert estimated_duration(sim, 1, np.array([1]), view.loads) == pytest.approx(160.0)


@pytest.mark.parametrize("sharing", ["equal", "traffic"])
def test_safs_oracle_shares_links_as_the_simulator_does(setup_sim, job_spec, sharing):
    """A light job (VGG-16) crossing both servers' ports beside a busy one (ResNeXt-110):
    SAF's estimate of its time equals the simulator's once it is placed there, under
    either link sharing (the duty-cycle weights of traffic sharing leave it more of a
    port than the equal split; the oracle split equally in both)."""
    from envs.schedulers.estimate import estimated_duration

    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    specs = [
        job_spec(workers=2, model="VGG-16", iterations=1000),
        job_spec(workers=2, model="ResNeXt-110", iterations=10**9),
    ]
    config = SimulatorConfig(link_sharing=sharing, interference=False)
    setup = setup_sim(cluster, specs, config=config)
    sim = setup.sim
    sim.place(1, [0, 2])
    estimate = estimated_duration(sim, 0, np.array([1, 3]), ClusterView(sim).loads)
    sim.place(0, [1, 3])
    assert estimate == pytest.approx(float(sim.remaining_time(np.array([0]))[0]), rel=1e-12)
