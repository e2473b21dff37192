"""Engine behaviour: decisions, intervals, preemption, resize, invariants under random policies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.sim import (
    JobStatus,
    PlacementError,
    SimulationStalledError,
    Simulator,
    SimulatorConfig,
    server_fragmentation,
)
from envs.topology import build_cluster
from envs.workload import InfeasibleJobError, make_workload


class RandomFirstFit:
    """Test policy: each waiting job, in random order, onto random groups with room."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.checked = 0

    def schedule(self, sim: Simulator) -> None:
        assert (sim.free_gpus >= 0).all() and (sim.free_cores >= -1e-9).all()
        assert (sim.free_gpus <= sim.cluster.group_gpus).all()
        for job in self.rng.permutation(sim.waiting_jobs()):
            gpus, cpus = sim.task_demands(job)
            free_gpus, free_cores = sim.free_gpus.copy(), sim.free_cores.copy()
            groups = []
            for need_gpus, need_cpus in zip(gpus, cpus, strict=True):
                socket = sim.cluster.group_socket
                room = (free_gpus >= need_gpus) & (free_cores[socket] >= need_cpus - 1e-9)
                candidates = np.flatnonzero(room)
                if not len(candidates):
                    break
                group = int(self.rng.choice(candidates))
                groups.append(group)
                free_gpus[group] -= need_gpus
                free_cores[socket[group]] -= need_cpus
            else:
                # A full GPU group is never offered: placing here must succeed.
                assert sim.fits(job, groups)
                sim.place(job, groups)
                self.checked += 1


def test_event_mode_decides_after_arrivals_and_completions(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, gpus_per_server=2)
    workload = make_workload([0.0, 10.0, 10.0], [0, 0, 0], [1, 1, 1])
    sim = Simulator(cluster, workload)
    times = []
    while sim.run_until_decision():
        times.append(sim.now)
        for job in sim.waiting_jobs():
            if sim.fits(job, [int(np.argmax(sim.free_gpus))]):
                sim.place(job, [int(np.argmax(sim.free_gpus))])
    # Job 0 at 0; jobs 1, 2 at 10 (one fits); job 1 ends at 10 + 160 -> job 2 runs.
    assert times == [0.0, 10.0, 160.0]
    assert sim.first_start.tolist() == [0.0, 10.0, 160.0]
    assert sim.finish_time.tolist() == [160.0, 170.0, 320.0]


def test_interval_mode_decides_only_on_ticks(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, gpus_per_server=2)
    workload = make_workload([5.0, 700.0, 1300.0], [0, 0, 0], [1, 1, 1])
    sim = Simulator(cluster, workload, SimulatorConfig(interval_s=600.0))
    decisions = []
    while sim.run_until_decision():
        decisions.append((sim.now, sim.waiting_jobs().tolist()))
        for job in sim.waiting_jobs():
            sim.place(job, [0])
    assert decisions == [(600.0, [0]), (1200.0, [1]), (1800.0, [2])]


def test_a_requested_decision_comes_at_its_time(make_workload) -> None:
    # One GPU; job 0 runs 0-160 s, job 1 waits. Nothing arrives or completes at 100 s,
    # but a policy asked for a decision then.
    cluster = build_cluster("flat", servers=1, gpus_per_server=1)
    sim = Simulator(cluster, make_workload([0.0, 0.0], [0, 0], [1, 1]))
    assert sim.run_until_decision() and sim.now == 0.0
    sim.place(0, [0])
    sim.request_decision(100.0)
    events = sim.events
    assert sim.run_until_decision() and sim.now == 100.0
    assert sim.events == events  # a requested decision is not an event of the workload
    with pytest.raises(ValueError, match="only after now"):
        sim.request_decision(100.0)
    assert sim.run_until_decision() and sim.now == 160.0  # job 0's completion
    # In interval mode decisions stay on the ticks.
    ticking = Simulator(cluster, make_workload([5.0], [0], [1]), SimulatorConfig(interval_s=600.0))
    ticking.request_decision(50.0)
    assert ticking.run_until_decision() and ticking.now == 600.0


def test_preempt_and_resume_conserve_work(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    sim = Simulator(cluster, make_workload([0.0], [0], [1]), SimulatorConfig(restart_cost_s=7.0))
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim._advance(100.0)  # 100 of ResNet-50's 160 ideal seconds
    sim.preempt(0)
    assert sim.status[0] == JobStatus.WAITING and sim.waiting_jobs().tolist() == [0]
    assert sim.work_done[0] == pytest.approx(625.0)  # 100 s / 0.16 s per mini-batch
    assert sim.free_gpus.tolist() == [2, 2]
    sim._advance(150.0)
    sim.place(0, [0])
    assert not sim.run_until_decision()
    # 50 s waiting, 7 s restart cost, the remaining 60 s of work.
    assert sim.finish_time[0] == pytest.approx(150.0 + 7.0 + 60.0)
    assert sim.preemptions[0] == 1
    assert sim.work_done[0] == sim.work_total[0]


def test_elastic_resize_keeps_work_and_changes_speed(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, server="dgx1")
    config = SimulatorConfig(interference=False, communication=False)
    sim = Simulator(cluster, make_workload([0.0], [0], [1]), config)
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim._advance(80.0)  # half of the 1000 mini-batches
    sim.resize(0, [0, 0])  # 003: more GPUs than requested
    assert sim.rate[0] == pytest.approx(2 / 0.16)
    assert not sim.run_until_decision()
    assert sim.finish_time[0] == pytest.approx(80.0 + 40.0)
    assert sim.preemptions[0] == 0


def test_bad_placements_are_refused(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    sim = Simulator(cluster, make_workload([0.0, 0.0], [0, 0], [2, 1]))
    assert sim.run_until_decision()
    with pytest.raises(PlacementError, match="GPU group 0 has 2 free GPU"):
        sim.place(0, [0, 0, 0])  # three workers: an elastic placement
    with pytest.raises(PlacementError, match="one GPU group per task"):
        sim.place(0, [])
    with pytest.raises(PlacementError, match=r"must lie in \[0, 2\)"):
        sim.place(1, [5])
    with pytest.raises(PlacementError, match="belong to its task's GPU group"):
        sim.place(1, [0], gpus=[2])
    sim.place(1, [0], gpus=[1])
    assert sim.gpu_job.tolist() == [-1, 1, -1, -1]
    with pytest.raises(PlacementError, match="is running; only waiting jobs"):
        sim.place(1, [1])
    with pytest.raises(PlacementError, match="not running"):
        sim.preempt(0)


def test_infeasible_job_is_refused_before_running(make_workload) -> None:
    cluster = build_cluster("flat", servers=2, gpus_per_server=2)
    with pytest.raises(InfeasibleJobError, match=r"job 1 .* more GPUs than the cluster's 4"):
        Simulator(cluster, make_workload([0.0, 1.0], [0, 0], [1, 5]))


def test_idle_cluster_with_waiting_jobs_stalls_loudly(make_workload) -> None:
    sim = Simulator(
        build_cluster("flat", servers=1, gpus_per_server=2), make_workload([0.0], [0], [1])
    )
    assert sim.run_until_decision()
    with pytest.raises(SimulationStalledError, match="1 job"):
        sim.run_until_decision()


def test_horizon_truncates(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, gpus_per_server=2)
    sim = Simulator(cluster, make_workload([0.0], [0], [1]), SimulatorConfig(horizon_s=50.0))
    assert sim.run_until_decision()
    sim.place(0, [0])
    assert not sim.run_until_decision()
    assert sim.now == 50.0 and np.isnan(sim.finish_time[0])


def test_the_timeline_counts_the_gpus_held_through_starts_preemptions_and_ends(
    make_workload,
) -> None:
    """Each sample's busy GPUs are those held from its time on: 1 + 2 GPUs from t=0, 2
    after the first job is preempted at t=10, 3 again once it resumes at t=20, and the
    GPU-seconds the timeline integrates are the jobs' attained ones."""
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    sim = Simulator(cluster, make_workload([0.0, 0.0], [0, 0], [1, 2]))
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim.place(1, [1, 2])
    sim._advance(10.0)
    sim.preempt(0)
    sim._advance(20.0)
    sim.place(0, [3])
    while sim.run_until_decision():
        pass
    timeline = sim.timeline.arrays()
    assert timeline["time"][:3].tolist() == [0.0, 10.0, 20.0]
    assert timeline["busy_gpus"][:3].tolist() == [3, 2, 3]
    assert timeline["busy_gpus"][-1] == 0  # the last sample: every job finished
    busy_seconds = np.sum(timeline["busy_gpus"][:-1] * np.diff(timeline["time"]))
    assert busy_seconds == pytest.approx(sim.attained_gpu_seconds.sum(), rel=1e-12)


def test_fragmentation_by_hand() -> None:
    cluster = build_cluster("flat", servers=2, gpus_per_server=4)
    remaining = np.array([10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    # Server 0: 1 - (20)^2 / (4 * 200) = 0.5; server 1 idle: 0.
    assert server_fragmentation(cluster, remaining) == pytest.approx(0.25)
    remaining[4:] = [3.0, 3.0, 3.0, 3.0]  # equal remaining times: no fragmentation
    assert server_fragmentation(cluster, remaining) == pytest.approx(0.25)
    assert server_fragmentation(cluster, np.zeros(8)) == 0.0  # an idle cluster


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    topology=st.sampled_from(
        [("fat-tree", {"k": 4}), ("bcube", {"n": 3, "k": 1}), ("racks", {"racks": (2, 1)})]
    ),
    interval=st.sampled_from([None, 900.0]),
)
def test_invariants_under_random_policies(
    seed: int, topology: tuple, interval: float | None
) -> None:
    name, params = topology
    cluster = build_cluster(name, **params)
    rng = np.random.default_rng(seed)
    workload = make_workload("poisson", num_jobs=25, rng=rng, rate=6.0, interval_s=900.0)
    config = SimulatorConfig(interval_s=interval)
    policy = RandomFirstFit(seed)
    sim = Simulator(cluster, workload, config)
    sim.run(policy)
    assert (sim.status == JobStatus.FINISHED).all()
    jct = sim.finish_time - workload.arrival_time
    assert (jct >= sim.ideal_duration * (1 - 1e-9)).all()
    assert np.array_equal(sim.work_done, sim.work_total)
    assert (sim.free_gpus == cluster.group_gpus).all()
    assert np.allclose(sim.free_cores, cluster.socket_cores)
    assert (sim.link_jobs == 0).all() and (sim.gpu_job == -1).all()
    assert policy.checked == len(workload)
    # Same seed, same everything.
    again = Simulator(cluster, workload, config)
    again.run(RandomFirstFit(seed))
    assert np.array_equal(again.finish_time, sim.finish_time)


def test_events_pushed_at_once_pop_as_pushed_one_by_one():
    """``push_many`` (the arrivals, heapified at once) gives the order of as many
    ``push`` calls: by time, ties in push order, later pushes after them."""
    from envs.sim.events import ARRIVAL, WAKE, EventQueue

    times = [5.0, 1.0, 5.0, 0.0, 1.0]
    one_by_one, at_once = EventQueue(), EventQueue()
    for job, time in enumerate(times):
        one_by_one.push(time, ARRIVAL, job)
    at_once.push_many(times, ARRIVAL, list(range(len(times))))
    for queue in (one_by_one, at_once):
        queue.push(1.0, WAKE)
    popped = [
        [(event.time, event.kind, event.payload) for event in (queue.pop() for _ in range(6))]
        for queue in (one_by_one, at_once)
    ]
    assert (
        popped[0]
        == popped[1]
        == [
            (0.0, ARRIVAL, 3),
            (1.0, ARRIVAL, 1),
            (1.0, ARRIVAL, 4),
            (1.0, WAKE, -1),
            (5.0, ARRIVAL, 0),
            (5.0, ARRIVAL, 2),
        ]
    )


def test_withdrawn_future_jobs_never_arrive_and_spend_no_time(make_workload) -> None:
    # One GPU; job 0 (160 s) arrives at 0, jobs 1 and 2 at 10 and 500. Withdrawn at the
    # first decision, they never arrive: job 0 runs alone and the simulation ends at 160 s.
    cluster = build_cluster("flat", servers=1, gpus_per_server=1)
    sim = Simulator(cluster, make_workload([0.0, 10.0, 500.0], [0, 0, 0], [1, 1, 1]))
    assert sim.run_until_decision() and sim.now == 0.0
    sim.place(0, [0])
    assert sim.withdraw_future_jobs().tolist() == [1, 2]
    assert sim.status.tolist() == [JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FINISHED]
    assert not sim.run_until_decision()
    assert sim.now == 160.0 and sim.done
    assert sim.finish_time.tolist() == [160.0, 10.0, 500.0]  # the withdrawn: at arrival
    assert sim.withdraw_future_jobs().tolist() == []


def test_dropping_one_kind_of_event_keeps_the_others_in_order() -> None:
    from envs.sim.events import ARRIVAL, TICK, WAKE, EventQueue

    queue = EventQueue()
    queue.push_many([3.0, 1.0, 2.0], ARRIVAL, [0, 1, 2])
    queue.push(2.0, TICK)
    queue.push(1.0, WAKE)
    assert queue.drop(ARRIVAL) == 3 and len(queue) == 2
    assert [(e.time, e.kind) for e in (queue.pop(), queue.pop())] == [(1.0, WAKE), (2.0, TICK)]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"interval_s": math.inf}, "interval_s must be a finite number of seconds > 0"),
        ({"interval_s": 0.0}, "interval_s must be a finite number of seconds > 0"),
        ({"interval_s": math.nan}, "interval_s must be a finite number of seconds > 0"),
        ({"restart_cost_s": math.inf}, "restart_cost_s must be a finite number of seconds >= 0"),
        ({"restart_cost_s": -1.0}, "restart_cost_s must be a finite number of seconds >= 0"),
        ({"restart_cost_s": math.nan}, "restart_cost_s must be a finite number of seconds >= 0"),
    ],
)
def test_unusable_times_are_refused(settings, message) -> None:
    """An infinite interval would never decide again after t=0, and an infinite restart
    cost would stall every resumed job forever: both ended in a stall, not an error."""
    with pytest.raises(ValueError, match=message):
        SimulatorConfig(**settings)


def test_a_resize_that_does_not_fit_leaves_the_job_where_it_ran(make_workload) -> None:
    """Two 1-GPU jobs on one server of two 2-GPU groups: job 0 on group 0, job 1 on
    group 1. Job 1 grows to 2 workers on its own group (its GPU counts as free): done.
    Job 0 asked for 3 workers on group 0 (2 GPUs) is refused and runs on, untouched;
    neither resize counts as a preemption, nor sets the time of one."""
    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    config = SimulatorConfig(interference=False, communication=False)
    sim = Simulator(cluster, make_workload([0.0, 0.0], [0, 0], [1, 1]), config)
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim.place(1, [1])
    releases = sim.releases
    sim.resize(1, [1, 1])
    assert sim.job_placement(1)[0].tolist() == [1, 1]
    with pytest.raises(PlacementError, match="GPU group 0 has 2 free GPU"):
        sim.resize(0, [0, 0, 0])
    assert sim.status.tolist() == [JobStatus.RUNNING, JobStatus.RUNNING]
    assert sim.job_placement(0)[0].tolist() == [0]
    assert sim.gpu_job.tolist() == [0, -1, 1, 1]
    assert sim.free_gpus.tolist() == [1, 0]
    assert sim.releases == releases + 1  # job 1's resize only
    assert sim.preemptions.tolist() == [0, 0]
    assert np.isnan(sim.last_preempted_at).all()


def test_a_stopped_job_is_not_contended() -> None:
    """Two 2-worker LM rings share server 0's port (CS > 1 both); preempted, a job's CS is
    1 (it runs nowhere), and after both finish every CS is 1, as the property says."""
    from envs.workload import Workload

    cluster = build_cluster("flat", servers=3, gpus_per_server=4)
    workload = Workload(
        arrival_time=np.zeros(2),
        model=np.array([3, 3]),  # LM in the deepshare catalog
        num_workers=np.array([2, 2]),
        worker_demand=np.tile([1.0, 1.0], (2, 1)),
        epochs=np.ones(2),
        iterations_per_epoch=np.array([4000, 1000]),
        catalog_name="deepshare",
    )
    sim = Simulator(cluster, workload, SimulatorConfig(interference=False))
    sim.run_until_decision()
    sim.place(0, [0, 2])
    sim.place(1, [1, 4])
    assert (sim.contention > 1).all()
    sim.preempt(1)
    assert sim.contention[1] == 1.0
    sim.place(1, [1, 4])
    while sim.run_until_decision():
        pass
    assert (sim.status == JobStatus.FINISHED).all() and (sim.contention == 1.0).all()
