"""Consolidation of the preemptive orderings: a job, fresh or resumed, starts only as
compactly as it would be placed alone (issue 20: a resumed job placed as well as a fresh one).

Hand-made schedules on a flat cluster of two servers x two GPUs (one GPU per socket), with
the speed model off so that a job runs its ideal time wherever it lands: what the rule
changes is *when* and *where* jobs start, which the tests pin exactly. Jobs are ResNet-50
(0.16 s per mini-batch): ``iterations x 0.16 / workers`` seconds. A resumed job stalls
``RESTART`` seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import build_cluster
from envs.workload import make_workload

from .conftest import RESTART, JobSpec, build_workload, preemptive_schedule, record_answers

TWO_BY_TWO = build_cluster("flat", servers=2, gpus_per_server=2)
CONFIG = SimulatorConfig(restart_cost_s=RESTART, interference=False, communication=False)


def seconds(duration_s: float, workers: int = 1) -> int:
    """Mini-batches of a ResNet-50 job of ``workers`` workers running ``duration_s``."""
    return round(duration_s * workers / 0.16)


def run(specs: list[JobSpec], policy: str, **preemption) -> Simulator:
    sim = Simulator(TWO_BY_TWO, build_workload(specs), CONFIG)
    sim.run(make_scheduler(policy, preemption=PreemptionSettings(**preemption)))
    assert (sim.status == JobStatus.FINISHED).all()
    return sim


def held_resume() -> list[JobSpec]:
    """W (2 workers, 800 s) starts alone on server 0 and is demoted at 60 s (120 GPU-s);
    X (100 s) and Y (1,000 s) arrive at 150 and fill server 1; S (100 s) arrives at 200
    and preempts W, the only job ranked after it (W ran 200 s: 600 s left), taking one
    of its GPUs. X ends at 250: one GPU is free on each server, and Y is guarded until
    350 (a 200 s minimum run), so nothing can be preempted for W."""
    return [
        JobSpec(workers=2, iterations=seconds(800, 2)),
        JobSpec(iterations=seconds(100), arrival=150.0),
        JobSpec(iterations=seconds(1000), arrival=150.0),
        JobSpec(iterations=seconds(100), arrival=200.0),
    ]


@pytest.mark.parametrize("policy", ["las+packing", "srtf+packing"])
def test_a_resumed_job_waits_for_room_in_one_piece(policy):
    # Consolidated: W waits for S to end at 300, resumes on server 0, stalls 7 s and
    # runs its 600 s: done at 907, on one server. (Under SRTF S preempts W too: 100 s
    # left against W's 600 s; X and Y outrank W from their arrival.)
    sim = run(held_resume(), policy, min_run_s=200.0, las_thresholds_gpu_s=(120.0,))
    assert sim.preemptions.tolist() == [1, 0, 0, 0]
    assert sim.finish_time.tolist() == pytest.approx([907.0, 250.0, 1150.0, 300.0])
    assert sim.servers_spanned.tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("policy", ["las+packing", "srtf+packing"])
def test_without_consolidation_the_job_resumes_spread(policy):
    # The earlier rule: W resumes at 250 on the GPU S left and the one X left, over
    # both servers: 250 + 7 + 600 = 857.
    sim = run(
        held_resume(), policy, min_run_s=200.0, las_thresholds_gpu_s=(120.0,), consolidate=False
    )
    assert sim.preemptions.tolist() == [1, 0, 0, 0]
    assert sim.finish_time.tolist() == pytest.approx([857.0, 250.0, 1150.0, 300.0])
    assert sim.servers_spanned.tolist() == [2, 1, 1, 1]


def spread_room() -> list[JobSpec]:
    """A (1,000 s), C1 and C2 (100 s each) and B (1,000 s) start at 0, packed as {A, C1}
    on server 0 and {C2, B} on server 1; all pass the 50 GPU-s threshold at 50 s. C1 and
    C2 end at 100, leaving one GPU free per server. W (2 workers, 200 s) arrives at 150
    in the first queue and outranks A and B."""
    return [
        JobSpec(iterations=seconds(1000)),
        JobSpec(iterations=seconds(100)),
        JobSpec(iterations=seconds(100)),
        JobSpec(iterations=seconds(1000)),
        JobSpec(workers=2, iterations=seconds(200, 2), arrival=150.0),
    ]


def test_a_job_that_fits_only_spread_preempts_for_room_in_one_piece():
    # W fits spread, but consolidation asks for one server: of its victims (A and B, one
    # GPU each) the lowest-ranked, B (same queue and arrival as A, higher index), goes;
    # W takes server 1 at 150 and ends at 350. B restarts at once on the GPU C1 left
    # (it fits there alone): 150 + 7 + its 850 s left = 1,007.
    sim = run(spread_room(), "las+packing", min_run_s=0.0, las_thresholds_gpu_s=(50.0,))
    assert sim.preemptions.tolist() == [0, 0, 0, 1, 0]
    assert sim.first_start[4] == 150.0
    assert sim.finish_time.tolist() == pytest.approx([1000.0, 100.0, 100.0, 1007.0, 350.0])
    assert sim.servers_spanned.tolist() == [1, 1, 1, 1, 1]


def test_without_consolidation_a_job_that_fits_spread_starts_spread():
    sim = run(
        spread_room(),
        "las+packing",
        min_run_s=0.0,
        las_thresholds_gpu_s=(50.0,),
        consolidate=False,
    )
    assert sim.preemptions.tolist() == [0, 0, 0, 0, 0]
    assert sim.finish_time.tolist() == pytest.approx([1000.0, 100.0, 100.0, 1000.0, 350.0])
    assert sim.servers_spanned.tolist() == [1, 1, 1, 1, 2]


def test_compact_means_as_few_servers_as_the_job_alone():
    """A 3-worker job spans two servers even on the empty cluster, so two servers are
    compact for it: with a one-GPU job (100 s) on server 0 it starts at once on the
    three GPUs left. W (2 workers) arrives at 1 s and fits nowhere until both end."""
    specs = [
        JobSpec(iterations=seconds(100)),
        JobSpec(workers=3, iterations=seconds(100, 3)),
        JobSpec(workers=2, iterations=seconds(100, 2), arrival=1.0),
    ]
    sim = run(specs, "las+packing", min_run_s=0.0)
    assert sim.first_start.tolist() == [0.0, 0.0, 100.0]
    assert sim.servers_spanned.tolist() == [1, 2, 1]
    assert np.allclose(sim.finish_time, [100.0, 100.0, 200.0])


def test_consolidation_is_on_by_default_and_reported():
    las = make_scheduler("las+packing").ordering
    assert las.consolidate and "consolidate=True" in repr(las)
    srtf = make_scheduler("srtf+packing", preemption=PreemptionSettings(consolidate=False))
    assert not srtf.ordering.consolidate


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["las+packing", "srtf+locality"])
def test_the_compact_room_probe_changes_no_schedule(seed, policy, monkeypatch):
    """The vectorized test that skips placements (and whole plans) with no compact room
    is a necessary condition: with it answering "maybe" everywhere, every placement is
    tried and judged by its servers, and every job starts, is preempted and finishes
    at the same times."""
    from envs.schedulers import preemption

    cluster = build_cluster("fat-tree", k=2, server="dgx1")  # 2 servers x 8 GPUs
    workload = {"num_jobs": 40, "gpu_choices": (1, 2, 4, 8)}
    answers = record_answers(monkeypatch, preemption, "_compact_rooms")
    probed = preemptive_schedule(cluster, policy, seed, **workload)
    assert sum(int((~answer).sum()) for answer in answers), (
        "the probe never refused: this workload cannot test it"
    )
    monkeypatch.setattr(
        preemption,
        "_compact_rooms",
        lambda sim, tasks, servers, gpus, *rest: np.ones(len(gpus), bool),
    )
    assert preemptive_schedule(cluster, policy, seed, **workload) == probed


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["las+packing", "srtf+locality"])
def test_remembering_plans_without_room_changes_no_schedule(seed, policy, monkeypatch):
    """A plan that found no room even with all its victims released is remembered and
    not tried again while nothing but its victims stopped and its new victims all
    started since. Answering "try again" everywhere, every job starts, is preempted and
    finishes at the same times. (Sockets of two GPU groups each: there the room screen,
    which answers most such plans first on sockets of one group, does not apply.)"""
    from envs.schedulers import preemption

    cluster = build_cluster("flat", servers=8, server="minsky")  # 8 servers x 4 GPUs
    workload = {"num_jobs": 80, "gpu_choices": (1, 2, 4, 8, 16), "mean_interarrival_s": 60.0}
    answers = record_answers(monkeypatch, preemption._NoRoom, "still_holds")
    recalled = preemptive_schedule(cluster, policy, seed, **workload)
    assert any(answers), "no plan was skipped: this workload cannot test the memory"
    monkeypatch.setattr(preemption._NoRoom, "still_holds", lambda self, *args: False)
    assert preemptive_schedule(cluster, policy, seed, **workload) == recalled


@pytest.mark.parametrize("seed", range(4))
def test_the_one_server_room_test_answers_as_the_general_one(seed):
    """The compact-room probe's shortcut for one state, one server and alike tasks
    (the plans' usual question) gives the general test's answers: the same states asked
    two at a time take the general path."""
    from envs.schedulers import preemption
    from envs.schedulers.tasks import JobTasks

    rng = np.random.default_rng(seed)
    cluster = build_cluster("flat", servers=6, server="dgx1")  # one GPU group per socket
    workload = make_workload("deepshare", num_jobs=40, rng=rng, gpu_choices=(1, 2, 4, 8))
    sim = Simulator(cluster, workload)
    asked = 0
    for job in range(sim.num_jobs):
        tasks = JobTasks.of(sim, job)
        free_gpus = rng.integers(0, cluster.group_gpus + 1)
        # Whole and fractional cores, some a hair above a task's need.
        free_cores = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0 + 1e-10, 4.0], cluster.num_sockets)
        for slack in (0.0, 1e-6):
            one = preemption._compact_rooms(sim, tasks, 1, free_gpus[None], free_cores[None], slack)
            two = preemption._compact_rooms(
                sim, tasks, 1, np.stack([free_gpus] * 2), np.stack([free_cores] * 2), slack
            )
            assert one.tolist() == two[:1].tolist()
            asked += int(one[0])
    assert 0 < asked < 2 * sim.num_jobs, "every answer alike: the states test nothing"


def test_a_failed_job_does_not_rule_out_a_larger_one_that_spreads_wider_alone():
    """On 3 servers x 4 GPUs (two GPU groups each), three 1-GPU blockers (100 s, one per
    server) and two 3-GPU victims V3, V4 (10,000 s, servers 0 and 1) start at 0. X (4
    GPUs, 200 s) and Y (5 GPUs, 300 s) arrive at 10 and outrank both victims under SRTF.
    X needs a whole server alone, and every server keeps its blocker until 100: no room
    for X whatever is preempted. Y spans two servers alone, and V4 preempted leaves 3 + 3
    free GPUs on servers 1 and 2: Y starts at 10, though it is larger than X in every
    task count and size (a failure of X only rules out larger jobs as compact alone)."""
    cluster = build_cluster("flat", servers=3, gpus_per_server=4)
    blockers = [JobSpec(iterations=seconds(100)) for _ in range(3)]
    victims = [JobSpec(workers=3, iterations=seconds(10_000, 3)) for _ in range(2)]
    x = JobSpec(workers=4, iterations=seconds(200, 4), arrival=10.0)
    y = JobSpec(workers=5, iterations=seconds(300, 5), arrival=10.0)
    sim = Simulator(cluster, build_workload([*blockers, *victims, x, y]), CONFIG)
    assert sim.run_until_decision()
    for job, groups in [(0, [0]), (1, [2]), (2, [4]), (3, [0, 1, 1]), (4, [2, 3, 3])]:
        sim.place(job, groups)
    sim.run(make_scheduler("srtf+packing", preemption=PreemptionSettings(min_run_s=0.0)))
    assert (sim.status == JobStatus.FINISHED).all()
    # V4 (ranked after V3 among equals) makes room for Y at 10; at 100 the blockers end
    # and X preempts V3 for server 0. V3 (9,900 s left) resumes when X ends at 300, V4
    # (9,990 s left) when Y ends at 310, each after the restart stall.
    assert sim.first_start.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 100.0, 10.0]
    assert sim.preemptions.tolist() == [0, 0, 0, 1, 1, 0, 0]
    assert sim.finish_time.tolist() == pytest.approx(
        [100.0, 100.0, 100.0, 300.0 + RESTART + 9_900.0, 310.0 + RESTART + 9_990.0, 300.0, 310.0]
    )
