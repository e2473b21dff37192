"""Preemption for the preemptive orderings (Tiresias-style LAS, SRTF).

At every decision the ordering ranks running and waiting jobs together by its priority
keys (:meth:`~envs.schedulers.base.Ordering.priority_keys`), ties by arrival, then index.
Before the usual walk, the waiting jobs that outrank some preemptible running job are
taken in rank order:

1. a job that fits the free resources is placed;
2. otherwise its *victims* -- the preemptible running jobs ranked strictly after it --
   are released on a scratch copy of the cluster view until the placement can place
   the job, those whose GPU count is closest to the job's first and the lowest-ranked
   first among equals (a one-GPU job stops a one-GPU job, not a 64-GPU one; an
   eight-GPU job frees an eight-GPU job's room in one piece, not eight scattered GPUs).
   When that first room spreads the job wider than it would be on the empty cluster
   (a higher locality level), up to 8 more victims are released in search of room in
   one piece, else the first room is taken. Only the victims holding GPUs or cores that
   the placement then uses are preempted (they go back to the queue with their
   progress, and pay the simulator's restart cost when they resume), and the job is
   placed there;
3. when even all its victims are not enough, the jobs of the same demand shape behind
   it are not tried again in this decision (they have fewer victims), nor the jobs of
   identical tasks that need at least as many tasks, each at least as large.

With ``backfill=False`` the pass stops at the first job that neither fits nor can
preempt. The scheduler's usual walk then places what else fits.

**Against thrashing.** A running job is preemptible only after it ran ``min_run_s``
seconds since it (re)started; jobs started in the same decision never are. Discretized
LAS only demotes a job when it crosses a threshold, and SRTF's running jobs only get
better, so preemptions come from arrivals and demotions, not from jobs overtaking each
other back and forth.

**Wake-ups.** Priorities also change while nothing happens: a running LAS job crosses
a threshold, a guarded job's minimum run ends. In event mode the scheduler asks the
simulator for a decision at the earliest such time while a waiting job could then
preempt (:meth:`~envs.sim.Simulator.request_decision`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from envs.schedulers.base import Ordering, Placement, check_min_run
from envs.schedulers.domains import locality_levels
from envs.schedulers.las import check_promote_knob, check_thresholds
from envs.schedulers.locality import best_level
from envs.schedulers.tasks import CORE_TOLERANCE, JobTasks
from envs.schedulers.view import ClusterView
from envs.sim import Simulator

DEFAULT_MIN_RUN_S = 300.0
"""Default guard: five minutes of running before a job may be preempted (our choice)."""

DEFAULT_LAS_THRESHOLDS_GPU_S = (3250.0, 7200.0, 18000.0)
"""Default discretized LAS: four queues, split at 3,250, 7,200 and 18,000 attained
GPU-seconds (the thresholds of issue 20's comparison with Tiresias' simulator). One split
at a GPU-hour, our earlier default, left every job longer than that in one FIFO queue:
on the first 10,000 Philly jobs (ideal model) LAS then averaged 319k s, against 108k s
with these four queues (strict FIFO: 1.69M s)."""

DEFAULT_LAS_PROMOTE_KNOB: float | None = None
"""Default promotion of starved LAS jobs: none."""

_TIME_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PreemptionSettings:
    """How the registry's preemptive orderings (``las``, ``srtf``) preempt.

    ``enabled``: False keeps both orderings but never preempts. ``min_run_s``: seconds a
    job runs after (re)starting before it may be preempted. ``las_thresholds_gpu_s``:
    attained GPU-seconds that separate LAS's queues (one threshold: two queues).
    ``las_promote_knob``: Tiresias' PROMOTEKNOB, a demoted waiting job returns to the
    first queue once it waited this many times its run time (:mod:`.las`); None never
    promotes.
    """

    enabled: bool = True
    min_run_s: float = DEFAULT_MIN_RUN_S
    las_thresholds_gpu_s: tuple[float, ...] = DEFAULT_LAS_THRESHOLDS_GPU_S
    las_promote_knob: float | None = DEFAULT_LAS_PROMOTE_KNOB

    def __post_init__(self) -> None:
        check_min_run(self.min_run_s)
        check_thresholds(self.las_thresholds_gpu_s)
        check_promote_knob(self.las_promote_knob)


class Preemptor:
    """The preemption pass of one scheduler over one simulation (see the module doc).

    ``shape_of[job]``: an id equal for jobs whose tasks are alike (a placement answers
    them alike). ``start(job, groups)`` is the scheduler's own way to start a job (it
    claims the view and books the start time); ``started_at[job]`` is when each job last
    started (-inf for jobs this scheduler did not start: they are preemptible).
    """

    def __init__(self, ordering: Ordering, placement: Placement, shape_of: np.ndarray) -> None:
        self.ordering = ordering
        self.placement = placement
        self.shape_of = shape_of
        self.started_at = np.full(len(shape_of), -np.inf)
        self._best_levels: dict[int, int] = {}

    def run(
        self,
        sim: Simulator,
        view: ClusterView,
        start: Callable[[int, np.ndarray], None],
        strict: bool,
    ) -> bool:
        """Place and preempt for the waiting jobs that outrank a preemptible running job.

        Returns whether anything was preempted.
        """
        waiting = sim.waiting_jobs()
        victims = self._preemptible(sim)
        if not len(waiting) or not len(victims):
            return False
        rank = joint_ranks(sim, self.ordering, np.concatenate([waiting, victims]))
        waiting_rank, victim_rank = rank[: len(waiting)], rank[len(waiting) :]
        outranks = np.flatnonzero(waiting_rank < victim_rank.max())
        best_first = outranks[np.argsort(waiting_rank[outranks])]
        candidates, candidate_rank = waiting[best_first], waiting_rank[best_first]
        shapes = self.shape_of[candidates]
        alive = np.ones(len(candidates), dtype=bool)
        preempted = False
        failed = _FailedDemands()
        position = 0
        while len(victims):
            ahead = alive[position:]
            if not ahead.any():
                break
            position += int(np.argmax(ahead))
            job, job_rank = int(candidates[position]), int(candidate_rank[position])
            if victim_rank.max() < job_rank:
                break  # no preemptible job is ranked after this one, nor after the rest
            groups = view.place(self.placement, job)
            if groups is None:
                mine = victim_rank > job_rank
                plan = None
                if not failed.dominated(sim, job):
                    plan = self._plan(sim, view, job, victims[mine], victim_rank[mine])
                if plan is None:
                    failed.add(sim, job)
                    if strict:
                        break
                    # Jobs alike behind it have fewer victims: they fail too.
                    alive[position:] &= shapes[position:] != shapes[position]
                    position += 1
                    continue
                chosen, groups = plan
                for victim in chosen.tolist():
                    view.release(victim)  # reads the placement: before the simulator drops it
                    sim.preempt(victim)
                kept = ~np.isin(victims, chosen)
                victims, victim_rank = victims[kept], victim_rank[kept]
                preempted = True
            start(job, groups)
            position += 1
        return preempted

    def request_wake_up(self, sim: Simulator) -> None:
        """Ask for a decision when a waiting job may next preempt (event mode only)."""
        if sim.config.interval_s is not None:
            return
        waiting, running = sim.waiting_jobs(), sim.running_jobs()
        if not len(waiting) or not len(running):
            return
        rank = joint_ranks(sim, self.ordering, np.concatenate([waiting, running]))
        outranked = running[rank[len(waiting) :] > rank[: len(waiting)].min()]
        times = [self.ordering.next_priority_change(sim, running)]
        guarded_until = self.started_at[outranked] + self.ordering.min_run_s
        guarded_until = guarded_until[guarded_until > sim.now]
        if len(guarded_until):
            times.append(float(guarded_until.min()))
        wake = min(times)
        if np.isfinite(wake) and wake > sim.now:
            sim.request_decision(wake)

    # ------------------------------------------------------------------ internals
    def _best_level(self, sim: Simulator, job: int) -> int:
        """The locality level ``job`` would get on the empty cluster (per shape, cached)."""
        shape = int(self.shape_of[job])
        level = self._best_levels.get(shape)
        if level is None:
            level = self._best_levels[shape] = best_level(sim, job)
        return level

    def _preemptible(self, sim: Simulator) -> np.ndarray:
        """Running jobs past their minimum run, not started in this decision."""
        running = sim.running_jobs()
        started = self.started_at[running]
        tolerance = _TIME_TOLERANCE * max(1.0, abs(sim.now))
        ran = sim.now - started
        return running[(started < sim.now) & (ran >= self.ordering.min_run_s - tolerance)]

    def _plan(
        self, sim: Simulator, view: ClusterView, job: int, victims: np.ndarray, rank: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(victims to preempt, task groups)`` that let ``job`` start, or None.

        ``victims`` (with their joint ``rank``) are tried closest in GPUs to the job first,
        the lowest-ranked first among equals.
        """
        tasks = JobTasks.of(sim, job)
        held = sim.running_gpus[victims]
        tried_first = np.lexsort((-rank, np.abs(held - tasks.total_gpus)))
        victims = victims[tried_first]
        # Fewer victims than the first `enough` cannot free the job's GPUs and cores in
        # total (could_hold's first test): release those in one go, untested.
        workers = sim.running_workers[victims]
        cores = workers * sim.worker_cpus[victims] + sim.num_ps[victims] * sim.ps_cpus[victims]
        enough_gpus = (
            view.total_free_gpus + np.cumsum(sim.running_gpus[victims]) >= tasks.total_gpus
        )
        enough_cores = view.total_free_cores + np.cumsum(cores) + CORE_TOLERANCE >= tasks.total_cpus
        enough = enough_gpus & enough_cores
        if not enough[-1]:
            return None  # not even all the victims together
        skip = int(np.argmax(enough))
        scratch = view.copy()
        released: list[int] = victims[:skip].tolist()
        scratch.release_all(released)
        first: tuple[int, np.ndarray] | None = None
        locality = locality_levels(sim.cluster)
        best = self._best_level(sim, job)
        for victim in victims[skip:].tolist():
            scratch.release(victim)
            released.append(victim)
            # The vectorized necessary test first: placements cost more.
            if not scratch.could_hold(tasks):
                continue
            groups = scratch.place(self.placement, job)
            if groups is None:
                continue
            if locality.span_level(sim.cluster.group_server[groups]) <= best:
                first = None
                break
            # Room, but spread wider than the job would be alone: a few more victims may
            # free it in one piece (a spread ring can run several times slower).
            if first is None:
                first = (len(released), groups)
            elif len(released) - first[0] >= _CONSOLIDATION_TRIES:
                break
        else:
            if first is None:
                return None
        if first is not None:
            count, groups = first
            released = released[:count]
        # Keep running the victims whose GPUs and cores the placement leaves alone.
        needed = np.array([v for v in released if _overlaps(sim, v, groups)], dtype=np.int64)
        if len(needed) < len(released):
            trial = view.copy()
            trial.release_all(needed.tolist())
            fewer = trial.place(self.placement, job)
            if fewer is not None:
                return needed, fewer
        return np.array(released, dtype=np.int64), groups


class _FailedDemands:
    """Demands that found no room in this preemption pass, to skip the jobs they rule out.

    Candidates come in rank order, so a later one has a subset of an earlier one's
    victims, and starts only take resources away. A job of identical tasks (no parameter
    servers) that needs at least as many tasks as a failed one, each with at least as many
    GPUs and cores, can then not be placed either: capacity for such tasks is exact
    (:meth:`~envs.schedulers.view.ClusterView.could_hold`), and it only shrinks as tasks
    grow. Most plans of a pass fail, most of them for this reason.
    """

    def __init__(self) -> None:
        self._rows: list[tuple[int, int, float]] = []

    @staticmethod
    def _demand(sim: Simulator, job: int) -> tuple[int, int, float] | None:
        if sim.num_ps[job] > 0:
            return None
        return int(sim.num_workers[job]), int(sim.worker_gpus[job]), float(sim.worker_cpus[job])

    def add(self, sim: Simulator, job: int) -> None:
        """Record that ``job`` found no room."""
        demand = self._demand(sim, job)
        if demand is not None:
            self._rows.append(demand)

    def dominated(self, sim: Simulator, job: int) -> bool:
        """Whether a recorded failure rules ``job`` out."""
        demand = self._demand(sim, job)
        if demand is None:
            return False
        workers, gpus, cpus = demand
        return any(
            workers >= w and gpus >= g and cpus >= c - CORE_TOLERANCE for w, g, c in self._rows
        )


_CONSOLIDATION_TRIES = 8
"""Victims released beyond the first room found, looking for room in one piece."""


def joint_ranks(sim: Simulator, ordering: Ordering, jobs: np.ndarray) -> np.ndarray:
    """Position of each of ``jobs`` (distinct; running or waiting) in the ordering's
    priority order, 0 first: by its priority keys, then arrival, then index."""
    keys = [np.asarray(key) for key in ordering.priority_keys(sim, jobs)]
    arrival = np.asarray(sim.workload.arrival_time)[jobs]
    order = np.lexsort((jobs, arrival, *reversed(keys)))  # the last key sorts first
    rank = np.empty(len(jobs), dtype=np.int64)
    rank[order] = np.arange(len(jobs))
    return rank


def _overlaps(sim: Simulator, victim: int, groups: np.ndarray) -> bool:
    """Whether running ``victim`` holds GPUs of ``groups`` or cores of their sockets."""
    victim_groups, _ = sim.job_placement(victim)
    cluster = sim.cluster
    if np.isin(victim_groups, groups).any():
        return True
    return bool(np.isin(cluster.group_socket[victim_groups], cluster.group_socket[groups]).any())
