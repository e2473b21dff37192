"""Preemptive LAS and SRTF: hand-derived schedules, the guard, and invariants of random runs.

The hand-made scenarios use one server with one GPU and ResNet-50 jobs (0.16 s per
mini-batch, one worker): a long job L of 2,000 mini-batches (320 s) arrives at 0, a short
job S of 250 (40 s) at 100 s. Only one job runs at a time, so neither interference nor
communication plays a part, and a resumed job stalls ``RESTART`` seconds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.schedulers import (
    LeastAttainedService,
    PreemptionSettings,
    ShortestRemainingTimeFirst,
    make_scheduler,
)
from envs.schedulers.base import by_key
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import build_cluster
from envs.workload import make_workload

from .conftest import RESTART, JobSpec, build_workload

ONE_GPU = build_cluster("flat", servers=1, gpus_per_server=1)


def long_and_short() -> Simulator:
    workload = build_workload(
        [JobSpec(iterations=2000, arrival=0.0), JobSpec(iterations=250, arrival=100.0)]
    )
    return Simulator(ONE_GPU, workload, SimulatorConfig(restart_cost_s=RESTART))


def run(name: str, **preemption) -> Simulator:
    sim = long_and_short()
    sim.run(make_scheduler(name, preemption=PreemptionSettings(**preemption)))
    assert (sim.status == JobStatus.FINISHED).all()
    assert np.array_equal(sim.work_done, sim.work_total)
    return sim


def test_preemptive_srtf_lets_the_short_job_finish_first():
    # At 100 s L has 1,375 mini-batches (220 s) left, S 40 s: S preempts L, which ran
    # 100 s >= the 60 s guard. S runs 100-140; L resumes at 140, stalls 7 s, then needs
    # its 220 s: done at 367.
    sim = run("srtf+packing", min_run_s=60.0)
    assert sim.finish_time.tolist() == pytest.approx([367.0, 140.0])
    assert sim.first_start.tolist() == [0.0, 100.0]
    assert sim.preemptions.tolist() == [1, 0]
    # JCT: L 367 s (it ran 100 + 7 + 220), S 40 s.
    assert sim.run_time.tolist() == pytest.approx([327.0, 40.0])


def test_without_preemption_the_short_job_waits():
    sim = run("srtf+packing", enabled=False)
    assert sim.finish_time.tolist() == pytest.approx([320.0, 360.0])
    assert sim.preemptions.tolist() == [0, 0]


def test_the_guard_delays_preemption_to_the_end_of_the_minimum_run():
    # L may not be preempted before it ran 150 s: the scheduler asks for a decision at
    # 150 s (no arrival or completion then). L has 1,062.5 mini-batches (170 s) left;
    # S runs 150-190, L resumes at 190: 7 s stall + 170 s, done at 367.
    sim = run("srtf+packing", min_run_s=150.0)
    assert sim.first_start.tolist() == [0.0, 150.0]
    assert sim.finish_time.tolist() == pytest.approx([367.0, 190.0])
    assert sim.preemptions.tolist() == [1, 0]


def test_las_preempts_a_job_of_a_lower_queue_at_once():
    # One threshold at 50 GPU-s: at 100 s L (100 GPU-s) is in the second queue, S in the
    # first, so S preempts: the same schedule as SRTF's.
    sim = run("las+packing", min_run_s=0.0, las_thresholds_gpu_s=(50.0,))
    assert sim.finish_time.tolist() == pytest.approx([367.0, 140.0])
    assert sim.preemptions.tolist() == [1, 0]


def test_las_preempts_when_the_running_job_is_demoted():
    # Threshold at 150 GPU-s: at 100 s both are in the first queue and L arrived first,
    # so S waits. L crosses 150 GPU-s at 150 s; the scheduler asked for a decision then:
    # S (first queue) preempts L (second). S runs 150-190; L done at 190 + 7 + 170.
    sim = run("las+packing", min_run_s=0.0, las_thresholds_gpu_s=(150.0,))
    assert sim.first_start.tolist() == [0.0, 150.0]
    assert sim.finish_time.tolist() == pytest.approx([367.0, 190.0])


def test_las_queues_are_fifo_inside():
    # Both stay in the first queue (threshold far away): S waits for L, as under FIFO.
    sim = run("las+packing", min_run_s=0.0, las_thresholds_gpu_s=(10_000.0,))
    assert sim.finish_time.tolist() == pytest.approx([320.0, 360.0])


def test_the_victim_closest_in_size_goes_first():
    """One server with one 3-GPU group, speed model off. B (1 GPU, 3,000 mini-batches:
    480 s) and C (2 workers, 8,000: 640 s) start at 0 and fill it; S (1 GPU, 40 s) comes
    at 100. Both are ranked after S (380 s and 540 s left); C is ranked last, but B holds
    one GPU like S: B is preempted, resumes at 140 and ends at 140 + 7 + 380."""
    cluster = build_cluster("flat", servers=1, gpus_per_server=3)
    specs = [
        JobSpec(iterations=3000),
        JobSpec(workers=2, iterations=8000),
        JobSpec(iterations=250, arrival=100.0),
    ]
    config = SimulatorConfig(restart_cost_s=RESTART, interference=False, communication=False)
    sim = Simulator(cluster, build_workload(specs), config)
    sim.run(make_scheduler("srtf+packing", preemption=PreemptionSettings(min_run_s=0.0)))
    assert sim.preemptions.tolist() == [1, 0, 0]
    assert sim.finish_time.tolist() == pytest.approx([527.0, 640.0, 140.0])


def test_discretized_las_ranks_by_queue_then_arrival():
    ordering = LeastAttainedService((50.0, 500.0))
    sim = long_and_short()
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim._advance(100.0)  # L attained 100 GPU-s: second queue; S none: first
    assert ordering.queue(sim, np.array([0, 1])).tolist() == [1, 0]
    assert by_key(
        sim, np.array([0, 1]), *ordering.priority_keys(sim, np.array([0, 1]))
    ).tolist() == [1, 0]
    # L crosses 500 GPU-s at 100 + 400 s.
    assert ordering.next_priority_change(sim, np.array([0])) == pytest.approx(500.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"las_thresholds_gpu_s": ()}, "at least one"),
        ({"las_thresholds_gpu_s": (100.0, 50.0)}, "must increase"),
        ({"las_thresholds_gpu_s": (-1.0,)}, "> 0"),
        ({"min_run_s": -5.0}, "min_run_s must be finite seconds >= 0"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_scheduler("las+packing", preemption=PreemptionSettings(**kwargs))


def test_the_registry_builds_preemptive_las_and_srtf():
    las = make_scheduler("las+lif").ordering
    assert isinstance(las, LeastAttainedService) and las.preemptive
    assert las.thresholds.tolist() == [3250.0, 7200.0, 18000.0] and las.min_run_s == 300.0
    srtf = make_scheduler("srtf+packing", preemption=PreemptionSettings(enabled=False))
    assert isinstance(srtf.ordering, ShortestRemainingTimeFirst)
    assert not srtf.ordering.preemptive
    assert not make_scheduler("fifo+packing").ordering.preemptive
    with pytest.raises(TypeError, match="PreemptionSettings"):
        make_scheduler("las+packing", preemption={"enabled": False})  # type: ignore[arg-type]


class Recorder:
    """Wraps a scheduler and its simulator: every start and preemption, with the time."""

    def __init__(self, sim: Simulator, scheduler) -> None:
        self.sim, self.scheduler = sim, scheduler
        self.events: list[tuple[float, str, int]] = []
        self.outranked_victims = 0
        place, preempt = sim.place, sim.preempt

        def placing(job, groups, *args, **kwargs):
            self.events.append((sim.now, "start", int(job)))
            return place(job, groups, *args, **kwargs)

        def preempting(job):
            self.events.append((sim.now, "preempt", int(job)))
            return preempt(job)

        sim.place, sim.preempt = placing, preempting

    def schedule(self, sim: Simulator) -> None:
        before = len(self.events)
        ordering = self.scheduler.ordering
        running = sim.running_jobs().copy()
        keys = ordering.priority_keys(sim, running) if len(running) else ()
        rank_keys = {
            int(job): (*(float(k[i]) for k in keys), float(sim.workload.arrival_time[job]), job)
            for i, job in enumerate(running.tolist())
        }
        waiting = sim.waiting_jobs().copy()
        waiting_keys = ordering.priority_keys(sim, waiting)
        for i, job in enumerate(waiting.tolist()):
            rank_keys[int(job)] = (
                *(float(k[i]) for k in waiting_keys),
                float(sim.workload.arrival_time[job]),
                job,
            )
        self.scheduler.schedule(sim)
        decision = self.events[before:]
        started = [job for _, kind, job in decision if kind == "start"]
        for _, kind, victim in decision:
            if kind == "preempt":
                # Every victim makes room for a job that outranked it at the decision.
                assert any(
                    rank_keys[job] < rank_keys[victim] for job in started if job in rank_keys
                )
                self.outranked_victims += 1


WORKLOADS = {
    # A burst: everything arrives at 0, jobs of 1-8 GPUs.
    "burst": lambda rng: make_workload("deepshare", num_jobs=30, rng=rng, gpu_choices=(1, 2, 4, 8)),
    # 001's jobs with parameter servers, arriving over two hours.
    "spread": lambda rng: make_workload(
        "poisson", num_jobs=30, rng=rng, rate=4.0, interval_s=900.0
    ),
}


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(sorted(WORKLOADS)),
    name=st.sampled_from(["las+packing", "srtf+packing", "las+tetris", "srtf+locality"]),
    min_run=st.sampled_from([RESTART, 120.0, 900.0]),
    threshold=st.sampled_from([300.0, 3600.0]),
)
def test_random_runs_conserve_work_and_respect_the_guard(seed, kind, name, min_run, threshold):
    cluster = build_cluster("fat-tree", k=2, server="dgx1")  # 2 servers x 8 GPUs
    workload = WORKLOADS[kind](np.random.default_rng(seed))
    # No interference or communication: a job placed whole runs at its ideal speed, so
    # its time running is its ideal duration plus a restart stall per preemption.
    config = SimulatorConfig(restart_cost_s=RESTART, interference=False, communication=False)
    sim = Simulator(cluster, workload, config)
    scheduler = make_scheduler(
        name,
        preemption=PreemptionSettings(min_run_s=min_run, las_thresholds_gpu_s=(threshold,)),
    )
    recorder = Recorder(sim, scheduler)
    sim.run(recorder)
    assert (sim.status == JobStatus.FINISHED).all()
    assert np.array_equal(sim.work_done, sim.work_total)
    np.testing.assert_allclose(
        sim.run_time, sim.ideal_duration + RESTART * sim.preemptions, rtol=1e-9, atol=1e-6
    )
    assert recorder.outranked_victims == int(sim.preemptions.sum())
    # The guard: a job is preempted only after running min_run seconds since its start.
    last_start: dict[int, float] = {}
    for time, kind, job in recorder.events:
        if kind == "start":
            last_start[job] = time
        else:
            assert time - last_start[job] >= min_run - 1e-6
    starts = np.bincount([job for _, kind, job in recorder.events if kind == "start"])
    assert np.array_equal(starts, 1 + sim.preemptions)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skipping_jobs_a_failed_demand_rules_out_changes_no_schedule(seed, monkeypatch):
    """The pass skips plans for jobs whose demand dominates one that found no room; with
    the skip switched off, every job starts, is preempted and finishes at the same times."""
    from envs.schedulers import preemption

    cluster = build_cluster("fat-tree", k=2, server="dgx1")  # 2 servers x 8 GPUs

    def finish_times() -> tuple[list[float], list[int]]:
        workload = WORKLOADS["burst"](np.random.default_rng(seed))
        sim = Simulator(cluster, workload, SimulatorConfig(restart_cost_s=RESTART))
        settings_ = PreemptionSettings(min_run_s=60.0, las_thresholds_gpu_s=(300.0, 3600.0))
        sim.run(make_scheduler("las+packing", preemption=settings_))
        assert (sim.status == JobStatus.FINISHED).all()
        return sim.finish_time.tolist(), sim.preemptions.tolist()

    ruled_out = preemption._FailedDemands.ruled_out
    skipped: list[int] = []

    def counted(self, failed) -> np.ndarray:
        answer = ruled_out(self, failed)
        skipped.append(int(answer[failed + 1 :].sum()))  # candidates behind it
        return answer

    monkeypatch.setattr(preemption._FailedDemands, "ruled_out", counted)
    pruned = finish_times()
    assert any(skipped), "the skip never applied: this workload cannot test it"
    monkeypatch.setattr(
        preemption._FailedDemands,
        "ruled_out",
        lambda self, failed: np.zeros(len(self._alike), dtype=bool),
    )
    assert finish_times() == pruned
