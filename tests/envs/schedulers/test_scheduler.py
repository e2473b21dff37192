"""The scheduler's walk: backfilling, strict order, DSIF's delays, DRF's progressive filling."""

from __future__ import annotations

import pytest

from envs.schedulers import (
    BreadthFirst,
    DelayedShortestIdealTime,
    DominantResourceFairness,
    FirstInFirstOut,
    Packing,
    Scheduler,
)
from envs.topology import build_cluster


def record_starts(sim):
    """Wrap ``sim.place`` to record the jobs it starts, in order."""
    started = []
    place = sim.place

    def recording(job, groups, *args, **kwargs):
        started.append(int(job))
        return place(job, groups, *args, **kwargs)

    sim.place = recording
    return started


@pytest.fixture
def blocked_head(setup_sim, job_spec):
    """Flat 2 x 4 GPUs with 5 busy: job 0 wants 4 GPUs (does not fit), job 1 one GPU."""
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=4), job_spec(workers=1)], gpu_fillers=5)
    for group, busy in ((0, 2), (1, 1), (2, 2)):
        setup.occupy(group, gpus=busy)
    return setup.sim


class Counting(Packing):
    """Packing that counts how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def choose(self, sim, tasks, view):
        self.calls += 1
        return super().choose(sim, tasks, view)


def test_backfilling_starts_jobs_behind_one_that_does_not_fit(blocked_head):
    started = record_starts(blocked_head)
    counting = Counting()
    Scheduler(FirstInFirstOut(), counting).schedule(blocked_head)
    assert started == [1]
    # Job 0 needs 4 GPUs with 3 free: filtered out before the placement is asked.
    assert counting.calls == 1


def test_strict_order_waits_for_the_head_of_the_queue(blocked_head):
    started = record_starts(blocked_head)
    Scheduler(FirstInFirstOut(), Packing(), backfill=False).schedule(blocked_head)
    assert started == []


def test_a_failed_shape_is_tried_once_per_decision(setup_sim, job_spec):
    """Ten alike jobs that fail cost one placement call, not ten.

    Flat 2 x 4 GPUs. Free: group 0's 2 GPUs only; socket 0 has 6 free cores, socket 1 has
    3, server 1 none. Each of jobs 0-9 has a worker (1 GPU, 3 cores) and a parameter
    server (6 cores): each kind fits on its own (the worker on socket 0, the PS on socket
    0) and the totals fit (9 cores), but not both: the vectorized test passes them and
    the placement has to find out. Job 10 (1 GPU, 1 core) fits.
    """
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    alike = [job_spec(workers=1, cpus=3, ps=1, ps_cpus=6) for _ in range(10)]
    setup = setup_sim(
        cluster, [*alike, job_spec(workers=1)], gpu_fillers=6, cpu_fillers=[2, 5, 8, 8]
    )
    setup.occupy(1, gpus=2, cpus=5)
    setup.occupy(2, gpus=2, cpus=8)
    setup.occupy(3, gpus=2, cpus=8)
    setup.sim.place(setup.cpu_filler(2), [0])

    started = record_starts(setup.sim)
    counting = Counting()
    Scheduler(FirstInFirstOut(), counting).schedule(setup.sim)
    assert started == [10]
    assert counting.calls == 2


def test_drf_fills_progressively_by_user_share(setup_sim, job_spec):
    """User 0 runs 1 GPU of 16; users 0 (jobs 0, 1) and 1 (jobs 2, 3) wait, one GPU each.

    User 1 (share 0) goes first: job 2. Both users are then at 1/16, and jobs 0, 1, 3 tie
    on arrival, so job 0 (user 0) goes by index. User 0 is now at 2/16: job 3, then job 1.
    A static ranking would have started 2, 3, 0, 1.
    """
    cluster = build_cluster("flat", servers=2, gpus_per_server=8)
    specs = [
        job_spec(user=0, arrival=0.0),
        job_spec(user=0, arrival=0.0),
        job_spec(user=1, arrival=0.0),
        job_spec(user=1, arrival=0.0),
        job_spec(user=0, iterations=10**9),
    ]
    setup = setup_sim(cluster, specs)
    setup.sim.place(4, [0])
    started = record_starts(setup.sim)
    Scheduler(DominantResourceFairness(), Packing()).schedule(setup.sim)
    assert started == [2, 0, 3, 1]


def test_drf_fills_progressively_without_backfill_too(setup_sim, job_spec):
    """The strict walk re-ranks after each start as the backfilling one does. Two GPUs
    free of 4; jobs 0, 1 (user 0) and 2 (user 1) wait, one GPU each, all at share 0: job 0
    by index, then user 0 is at 1/4 and job 2 (user 1, 0) goes before job 1. Ranked once,
    job 1 took the second GPU."""
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    specs = [
        job_spec(user=0, arrival=0.0),
        job_spec(user=0, arrival=0.0),
        job_spec(user=1, arrival=0.0),
        job_spec(iterations=10**9),
        job_spec(iterations=10**9),
    ]
    setup = setup_sim(cluster, specs)
    setup.sim.place(3, [0])
    setup.sim.place(4, [0])
    started = record_starts(setup.sim)
    Scheduler(DominantResourceFairness(), Packing(), backfill=False).schedule(setup.sim)
    assert started == [0, 2]


# ---------------------------------------------------------------------------- DSIF
@pytest.fixture
def spread_out(setup_sim, job_spec):
    """Flat 2 x 4 GPUs, one GPU busy on each server: job 0 (4 one-GPU workers) would fit
    one server of the empty cluster but now must span both."""
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=4), job_spec(workers=2)], gpu_fillers=2)
    setup.occupy(0)
    setup.occupy(2)
    return setup.sim


def test_dsif_holds_a_job_at_most_three_decisions(spread_out):
    scheduler = Scheduler(DelayedShortestIdealTime(), Packing())
    started = record_starts(spread_out)
    for decision in range(3):
        scheduler.schedule(spread_out)
        # Job 1 (2 GPUs, best locality: one server) starts in the first decision.
        assert started == [1]
        assert scheduler.delays == {0: decision + 1}
    # Job 1 took 2 more GPUs: 4 free remain, across both servers.
    scheduler.schedule(spread_out)
    assert started == [1, 0]
    assert scheduler.delays == {}


def test_dsif_does_not_hold_a_job_that_gets_its_best_locality(setup_sim, job_spec):
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=4)])
    started = record_starts(setup.sim)
    Scheduler(DelayedShortestIdealTime(), Packing()).schedule(setup.sim)
    assert started == [0]


def test_dsif_places_held_jobs_when_nothing_runs(setup_sim, job_spec):
    """Breadth-first spreads a 2-task job over two servers, missing its best locality;
    with nothing running no completion would bring another decision, so it starts."""
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    setup = setup_sim(cluster, [job_spec(workers=2)])
    scheduler = Scheduler(DelayedShortestIdealTime(), BreadthFirst())
    started = record_starts(setup.sim)
    scheduler.schedule(setup.sim)
    assert started == [0]
    assert setup.sim.job_placement(0)[0].tolist() == [0, 2]


def test_scheduler_names_and_checks():
    scheduler = Scheduler(FirstInFirstOut(), Packing())
    assert scheduler.name == "fifo+packing"
    with pytest.raises(TypeError, match="Ordering"):
        Scheduler("fifo", Packing())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Placement"):
        Scheduler(FirstInFirstOut(), "packing")  # type: ignore[arg-type]


def test_jobs_passed_over_at_arrivals_start_when_resources_free_up(setup_sim, job_spec):
    """Flat 1 x 4 GPUs, speed model off: three 4-worker jobs of 10 s arriving at 0, 1, 5 s.

    At 1 s and 5 s nothing was freed since the last decision, so only the new arrival is
    looked at (and does not fit); when job 0 finishes at 10 s every waiting job is looked
    at again, and they run back to back.
    """
    from envs.sim import SimulatorConfig

    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    specs = [job_spec(workers=4, iterations=250, arrival=t) for t in (0.0, 1.0, 5.0)]
    sim = setup_sim(
        cluster, specs, config=SimulatorConfig(interference=False, communication=False)
    ).sim
    counting = Counting()
    scheduler = Scheduler(FirstInFirstOut(), counting)
    scheduler.schedule(sim)  # the helper stopped at the first decision, at 0 s
    sim.run(scheduler)
    assert sim.first_start.tolist() == [0.0, 10.0, 20.0]
    assert sim.finish_time.tolist() == [10.0, 20.0, 30.0]
    # The capacity test screens out the jobs that cannot fit: one call per start.
    assert counting.calls == 3
