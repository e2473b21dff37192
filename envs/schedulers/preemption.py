"""Preemption for the preemptive orderings (Tiresias-style LAS, SRTF).

At every decision the ordering ranks running and waiting jobs together by its priority
keys (:meth:`~envs.schedulers.base.Ordering.priority_keys`), ties by arrival, then index.
Before the usual walk, the waiting jobs that outrank some preemptible running job are
taken in rank order:

1. a job that fits the free resources (compactly, under consolidation below) is placed;
2. otherwise its *victims* -- the preemptible running jobs ranked strictly after it --
   are released on a scratch copy of the cluster view until the placement can place
   the job (compactly, under consolidation), those whose GPU count is closest to the
   job's first and the lowest-ranked first among equals (a one-GPU job stops a one-GPU
   job, not a 64-GPU one; an eight-GPU job frees an eight-GPU job's room in one piece,
   not eight scattered GPUs). Without consolidation, when that first room spreads the
   job wider than it would be on the empty cluster (a higher locality level), up to 8
   more victims are released in search of room in one piece, else the first room is
   taken. Only the victims holding GPUs or cores that
   the placement then uses are preempted (they go back to the queue with their
   progress, and pay the simulator's restart cost when they resume), and the job is
   placed there;
3. when even all its victims are not enough, the jobs of the same demand shape behind
   it are not tried again in this decision (they have fewer victims), nor the jobs of
   identical tasks that need at least as many tasks, each at least as large. Under
   consolidation "enough" means compact room, and the second rule then skips only the
   larger jobs whose compact room would hold the smaller job compactly (see
   :class:`_FailedDemands`): a larger job spread over more servers may find room the
   smaller one lacks (5 tasks as 3 + 2 on two servers, where 4 need one server with 4).

With ``backfill=False`` the pass stops at the first job that neither fits nor can
preempt. The scheduler's usual walk then places what else fits.

**Consolidation** (``consolidate``, the default of :class:`PreemptionSettings`). A job,
fresh or resumed, starts only *compactly*: on no more servers, and at no higher
locality level, than the placement would give it on the empty cluster (its answer
there, cached per task shape). A job that fits only spread is not started by the pass
unless preempting makes compact room, and the scheduler's walk holds it back too while
anything runs (whose end may free such room; with nothing running it starts spread).
Step 2 then accepts only compact room (no "first room" fallback), and plans probe for
it: before any placement, a plan fails at once when even all its victims released
leave no ``n`` servers holding the job (``n`` the servers it spans alone; per server
GPUs, cores and each task kind's capacity, :func:`_compact_rooms`), the usual outcome.
Why: without it, on issue 20's 10k-job Philly replay under ``contention``, a wide job
demoted and preempted by a queue of one-GPU jobs was nearly always resumed on the
GPUs they left scattered (99% of 8-GPU resumes spanned more servers than needed), its
ring then ran several times slower, and LAS consumed 2.3x the GPU-seconds of FIFO,
whose makespan it exceeded 1.9x. ``consolidate=False`` restores the earlier rule: room
spread wider than the job alone triggers up to 8 more victims in search of one piece,
else the first room is taken.

**Against thrashing.** A running job is preemptible only after it ran ``min_run_s``
seconds since it (re)started; jobs started in the same decision never are. Discretized
LAS only demotes a job when it crosses a threshold, and SRTF's running jobs only get
better, so preemptions come from arrivals and demotions, not from jobs overtaking each
other back and forth.

**Speed.** Most plans fail (issue 20's 10k-job Philly replay under LAS asks for about
three per decision). After the totals test, the victims released one by one are probed
in growing chunks (4, 16, 64, ... victims), by cumulative sums of what each holds (GPUs
per group, cores per socket), for the first one after which the job's necessary
condition (totals and the exact per-kind capacity of :mod:`.capacity`) may pass; the
releases up to it are then made on the scratch view, whose own test and placement
decide as before. The probe is a superset of the view's test (its core sums get a
little slack, since they add in another order), so it never skips a release the
one-by-one walk would have placed after: schedules are those of the walk. The jobs a
failure rules out (3.) are masked in one vectorized comparison. Once a pass needs its
first plan, one vectorized screen (:mod:`.room_screen`) finds the candidates ahead
(alike tasks on one server) that even all their victims leave without compact room;
those are skipped untried (on issue 20's 10k-job replay candidates tried one by one
135k -> 53k, full plans 87k -> 22k).

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
from envs.schedulers.capacity import (
    one_group_per_socket,
    rows_capacity,
    rows_socket_capacity,
    server_capacity,
)
from envs.schedulers.domains import locality_levels
from envs.schedulers.las import check_promote_knob, check_thresholds
from envs.schedulers.locality import best_level
from envs.schedulers.room_screen import Demands, may_have_compact_room, released_rows
from envs.schedulers.tasks import CORE_TOLERANCE, JobTasks
from envs.schedulers.view import ClusterView
from envs.sim import JobStatus, Simulator

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
_RUNNING = int(JobStatus.RUNNING)


@dataclass(frozen=True)
class PreemptionSettings:
    """How the registry's preemptive orderings (``las``, ``srtf``, ``gittins``) preempt.

    ``enabled``: False keeps the orderings but never preempts. ``min_run_s``: seconds a
    job runs after (re)starting before it may be preempted. ``las_thresholds_gpu_s``:
    attained GPU-seconds that separate LAS's queues (one threshold: two queues).
    ``las_promote_knob``: Tiresias' PROMOTEKNOB, a demoted waiting job returns to the
    first queue once it waited this many times its run time (:mod:`.las`); None never
    promotes. ``consolidate``: start a job only as compactly as it would be placed alone,
    fresh or resumed (see the module doc); False restores the rule that took any room.
    """

    enabled: bool = True
    min_run_s: float = DEFAULT_MIN_RUN_S
    las_thresholds_gpu_s: tuple[float, ...] = DEFAULT_LAS_THRESHOLDS_GPU_S
    las_promote_knob: float | None = DEFAULT_LAS_PROMOTE_KNOB
    consolidate: bool = True

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

    def __init__(
        self,
        ordering: Ordering,
        placement: Placement,
        shape_of: np.ndarray,
        job_keys: np.ndarray | None = None,
    ) -> None:
        self.ordering = ordering
        self.placement = placement
        self.shape_of = shape_of
        self.job_keys = shape_of if job_keys is None else job_keys
        self.started_at = np.full(len(shape_of), -np.inf)
        # A random placement has no one answer to hold a start to.
        self.consolidate = ordering.consolidate and placement.memoizable
        self._best_levels: dict[int, int] = {}
        # Per placement key, whether the screen answers its jobs (see _screen).
        num_keys = int(self.job_keys.max()) + 1 if len(self.job_keys) else 0
        self._key_classified = np.zeros(num_keys, dtype=bool)
        # Per placement key, (servers, locality level) of its job placed alone (-1: not
        # known yet; see _alone_span).
        self._alone_servers = np.full(num_keys, -1, dtype=np.int64)
        self._alone_level = np.full(num_keys, -1, dtype=np.int64)
        # Per placement key of alike tasks, the most of them one empty server holds.
        self._server_most = np.zeros(num_keys, dtype=np.int64)
        self._screenable = np.zeros(num_keys, dtype=bool)
        self._holdings: _Holdings | None = None
        self._holdings_fresh = False
        # Starts numbered in order, and per placement key the last plan found without
        # room even with all its victims gone (see _NoRoom).
        self._starts = 0
        self._start_number = np.zeros(len(shape_of), dtype=np.int64)
        self._no_room: dict[int, _NoRoom] = {}

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
        # The running jobs' tasks, brought up to date once per pass when a plan first
        # needs them (plans release subsets of them).
        self._holdings_fresh = False
        rank = joint_ranks(sim, self.ordering, np.concatenate([waiting, victims]))
        waiting_rank, victim_rank = rank[: len(waiting)], rank[len(waiting) :]
        outranks = (waiting_rank < victim_rank.max()).nonzero()[0]
        best_first = outranks[waiting_rank[outranks].argsort()]
        candidates, candidate_rank = waiting[best_first], waiting_rank[best_first]
        alive = np.ones(len(candidates), dtype=bool)
        preempted = False
        failed = _FailedDemands(
            sim,
            candidates,
            self.shape_of[candidates],
            (lambda jobs: self._alone_spans(sim, view, jobs)) if self.consolidate else None,
        )
        last_victim_rank = int(victim_rank.max())
        # Candidates that cannot act whatever is preempted, found at once when the first
        # is visited (see :mod:`.room_screen`): False there, True where a candidate may
        # act or was not screened.
        may_act: np.ndarray | None = None
        position = 0
        while len(victims) and position < len(alive):
            position += int(alive[position:].argmax())
            if not alive[position]:
                break  # none alive ahead
            job, job_rank = int(candidates[position]), int(candidate_rank[position])
            if last_victim_rank < job_rank:
                break  # no preemptible job is ranked after this one, nor after the rest
            mine = victim_rank > job_rank
            plan = None
            # Screened without compact room, or known to find no room even with all its
            # victims released: none now either (skipped before looking for room; see
            # _NoRoom).
            hopeless = (may_act is not None and not may_act[position]) or (
                self._known_without_room(sim, job, victims[mine])
            )
            groups = None
            if not hopeless and self.may_start_compact(sim, view, job):
                groups = view.place(self.placement, job)
            if groups is None or not self.is_compact(sim, view, job, groups):
                # No room, or (under consolidation) room only spread wider than the job
                # alone: the job starts here only if preemptions make compact room (the
                # walk holds it back too).
                if not hopeless and may_act is None:
                    # The first plan of the pass: the candidates from here on that need
                    # none are found at once (most passes that get here plan several).
                    may_act = self._screen(
                        sim, view, candidates, candidate_rank, alive, position, victims, victim_rank
                    )
                    hopeless = not may_act[position]
                if not hopeless:
                    plan = self._plan(sim, view, job, victims[mine], victim_rank[mine])
                if plan is None:
                    if strict:
                        break
                    # Jobs alike behind it have fewer victims: they fail too; so do the
                    # jobs its demand rules out (see _FailedDemands), skipped untried.
                    alive[position:] &= ~failed.ruled_out(position)[position:]
                    position += 1
                    continue
                chosen, groups = plan
                for victim in chosen.tolist():
                    view.release(victim)  # reads the placement: before the simulator drops it
                    sim.preempt(victim)
                # A few victims at most: a broadcast comparison beats np.isin's sorting.
                kept = ~(victims[:, None] == chosen[None, :]).any(axis=1)
                victims, victim_rank = victims[kept], victim_rank[kept]
                last_victim_rank = int(victim_rank.max()) if len(victims) else -1
                preempted = True
                # Released victims ranked before later candidates add to their room: the
                # screen's answers are stale (a start alone only takes room away).
                may_act = None
            start(job, groups)
            position += 1
        return preempted

    def started(self, sim: Simulator, job: int) -> None:
        """Book a start of ``job`` by the scheduler, now."""
        self.started_at[job] = sim.now
        self.holdings(sim).starts[job] += 1
        self._starts += 1
        self._start_number[job] = self._starts

    def holdings(self, sim: Simulator) -> _Holdings:
        """The running tasks' table of this simulation (made on first use)."""
        if self._holdings is None or self._holdings.sim is not sim:
            self._holdings = _Holdings(sim)
        return self._holdings

    def _fresh_holdings(self, sim: Simulator) -> _Holdings:
        """The running tasks' table, brought up to the simulator once per pass."""
        holdings = self.holdings(sim)
        if not self._holdings_fresh:
            holdings.refresh()
            self._holdings_fresh = True
        return holdings

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
    def _screen(
        self,
        sim: Simulator,
        view: ClusterView,
        candidates: np.ndarray,
        candidate_rank: np.ndarray,
        alive: np.ndarray,
        start: int,
        victims: np.ndarray,
        victim_rank: np.ndarray,
    ) -> np.ndarray:
        """Boolean per candidate: False where even all its victims released leave no
        compact room (:mod:`.room_screen`), True elsewhere and where not screened.

        Screened: from ``start`` on, the first alive candidate of each placement key
        (a failure rules out the later ones of its key, and a start takes room away
        from them) whose tasks are alike and use GPUs and cores, on sockets of one GPU
        group each; the plan's own tests decide the rest.
        """
        may_act = np.ones(len(candidates), dtype=bool)
        if not self.consolidate or not len(victims) or not one_group_per_socket(sim.cluster):
            return may_act
        ahead = start + alive[start:].nonzero()[0]
        jobs = candidates[ahead]
        keys = self.job_keys[jobs]
        if not self._key_classified[keys].all():
            self._classify_keys(sim, view, jobs[~self._key_classified[keys]])
        # Jobs of alike tasks with GPUs and cores.
        screened = self._screenable[keys]
        if not screened.any():
            return may_act
        ahead, jobs = ahead[screened], jobs[screened]
        _, first = np.unique(keys[screened], return_index=True)
        first.sort()  # in rank order
        ahead, jobs = ahead[first], jobs[first]
        count, task_cpus = sim.num_workers[jobs], sim.worker_cpus[jobs]
        demands = Demands(
            sim.worker_gpus[jobs],
            task_cpus,
            count,
            count * task_cpus,
            self._alone_servers[self.job_keys[jobs]],
        )
        rows = self._fresh_holdings(sim).rows_of(victims)
        task_victim, task_group, task_gpus_held, task_cpus_held = rows
        gpus, cores = released_rows(
            sim.cluster,
            view.free_gpus,
            view.free_cores,
            victim_rank,
            task_victim,
            task_group,
            task_gpus_held,
            task_cpus_held,
            candidate_rank[ahead],
        )
        may_act[ahead] = may_have_compact_room(sim.cluster, gpus, cores, demands)
        return may_act

    def _classify_keys(self, sim: Simulator, view: ClusterView, jobs: np.ndarray) -> None:
        """Note for the placement keys of ``jobs`` whether the screen answers them (alike
        tasks with GPUs and cores), and the servers they span alone."""
        for job in jobs.tolist():
            key = int(self.job_keys[job])
            self._key_classified[key] = True
            self._alone_span(sim, view, job)
            self._screenable[key] = bool(
                sim.num_ps[job] == 0 and sim.worker_gpus[job] > 0 and sim.worker_cpus[job] > 0
            )

    def _best_level(self, sim: Simulator, job: int) -> int:
        """The locality level ``job`` would get on the empty cluster (per shape, cached)."""
        shape = int(self.shape_of[job])
        level = self._best_levels.get(shape)
        if level is None:
            level = self._best_levels[shape] = best_level(sim, job)
        return level

    def is_compact(self, sim: Simulator, view: ClusterView, job: int, groups: np.ndarray) -> bool:
        """Whether ``groups`` hold ``job`` as compactly as the placement would place it on
        the empty cluster: no more servers, no higher locality level (always True
        without consolidation)."""
        if not self.consolidate or len(groups) == 1:
            return True
        servers, level = self._alone_span(sim, view, job)
        spanned = sim.cluster.group_server[groups]
        if servers == 1:
            return bool(spanned.min() == spanned.max())
        if len(np.unique(spanned)) > servers:
            return False
        return locality_levels(sim.cluster).span_level(spanned) <= level

    def may_start_compact(self, sim: Simulator, view: ClusterView, job: int) -> bool:
        """Whether ``view`` may hold ``job`` compactly (a necessary condition; True
        without consolidation and for one-task jobs). Remembered per placement key until
        the view changes."""
        if not self.consolidate or sim.num_workers[job] + sim.num_ps[job] == 1:
            return True
        tasks = JobTasks.of(sim, job)
        if len(tasks.kinds) == 1 and self._alone_span(sim, view, job)[0] == 1:
            # Alike tasks on one server: the most any server holds decides, known per
            # kind of task once per state of the view.
            kind = tasks.kinds[0]
            key = ("most per server", kind.gpus, kind.cpus)
            most = view.derived.get(key)
            if most is None:
                capacity = server_capacity(
                    sim.cluster, view.free_gpus, view.free_cores, kind.gpus, kind.cpus
                )
                most = view.derived[key] = int(capacity.max())
            return bool(most >= kind.count)
        key = ("may be compact", int(self.job_keys[job]))
        answer = view.derived.get(key)
        if answer is None:
            answer = self._may_be_compact(sim, view, job, view.free_gpus, view.free_cores)
            view.derived[key] = answer
        return bool(answer)

    def _released(
        self, sim: Simulator, view: ClusterView, victims: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(free GPUs per group, free cores per socket)`` of ``view`` with every one of
        the running ``victims`` (of this pass) released; the view is left alone."""
        task_group, task_gpus, task_cpus = self._fresh_holdings(sim).of(victims)
        free_gpus, free_cores = view.free_gpus.copy(), view.free_cores.copy()
        np.add.at(free_gpus, task_group, task_gpus)
        np.add.at(free_cores, sim.cluster.group_socket[task_group], task_cpus)
        return free_gpus, free_cores

    def _may_be_compact(
        self,
        sim: Simulator,
        view: ClusterView,
        job: int,
        free_gpus: np.ndarray,
        free_cores: np.ndarray,
        slack: float = 0.0,
    ) -> bool:
        """:func:`_compact_rooms` for one state of the cluster: ``free_gpus`` per group,
        ``free_cores`` per socket."""
        servers, _ = self._alone_span(sim, view, job)
        rooms = _compact_rooms(
            sim, JobTasks.of(sim, job), servers, free_gpus[None], free_cores[None], slack
        )
        return bool(rooms[0])

    def _alone_span(self, sim: Simulator, view: ClusterView, job: int) -> tuple[int, int]:
        """``(servers, locality level)`` of the placement's answer for ``job`` on the
        empty cluster (cached per placement key)."""
        key = int(self.job_keys[job])
        if self._alone_servers[key] < 0:
            groups = self.placement.place(sim, job, view.emptied())
            assert groups is not None, "a job that never fits reached the scheduler"
            spanned = sim.cluster.group_server[groups]
            self._alone_servers[key] = len(np.unique(spanned))
            self._alone_level[key] = locality_levels(sim.cluster).span_level(spanned)
            if sim.num_ps[job] == 0:
                cluster = sim.cluster
                most = server_capacity(
                    cluster,
                    cluster.group_gpus,
                    cluster.socket_cores,
                    int(sim.worker_gpus[job]),
                    float(sim.worker_cpus[job]),
                )
                self._server_most[key] = int(min(most.max(), sim.num_workers[job]))
        return int(self._alone_servers[key]), int(self._alone_level[key])

    def _alone_spans(
        self, sim: Simulator, view: ClusterView, jobs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_alone_span` of each of ``jobs``: ``(servers, locality levels)``, and
        for jobs of alike tasks the most of their tasks one empty server holds (capped at
        their count)."""
        keys = self.job_keys[jobs]
        unknown = self._alone_servers[keys] < 0
        if unknown.any():
            _, first = np.unique(keys[unknown], return_index=True)
            for job in jobs[unknown][first].tolist():
                self._alone_span(sim, view, job)
        return self._alone_servers[keys], self._alone_level[keys], self._server_most[keys]

    def _known_without_room(self, sim: Simulator, job: int, victims: np.ndarray) -> bool:
        """Whether a plan for ``job`` over ``victims`` must fail as one of its key did
        (:class:`_NoRoom`)."""
        known = self._no_room.get(int(self.job_keys[job]))
        return known is not None and known.still_holds(sim, self._start_number, victims)

    def _preemptible(self, sim: Simulator) -> np.ndarray:
        """Running jobs past their minimum run, not started in this decision."""
        running = sim.running_jobs()
        started = self.started_at[running]
        tolerance = _TIME_TOLERANCE * max(1.0, abs(sim.now))
        ran = sim.now - started
        return running[(started < sim.now) & (ran >= self.ordering.min_run_s - tolerance)]

    def _plan(
        self,
        sim: Simulator,
        view: ClusterView,
        job: int,
        victims: np.ndarray,
        rank: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(victims to preempt, task groups)`` that let ``job`` start, or None.

        ``victims`` (with their joint ``rank``) are tried closest in GPUs to the job first,
        the lowest-ranked first among equals. Under consolidation only compact room
        counts, and a plan whose victims all together leave none fails at once.
        """
        key = int(self.job_keys[job])
        tasks = JobTasks.of(sim, job)
        servers = self._alone_span(sim, view, job)[0] if self.consolidate else None
        if servers is not None and not self._may_be_compact(
            sim, view, job, *self._released(sim, view, victims), slack=_PROBE_SLACK
        ):
            # No compact room even with every victim gone, the usual answer: known
            # before the victims are ordered.
            self._no_room[key] = _NoRoom.now(sim, self._starts, victims)
            return None
        tried_first = np.lexsort((-rank, np.abs(sim.running_gpus[victims] - tasks.total_gpus)))
        victims = victims[tried_first]
        # Fewer victims than the first `enough` cannot free the job's GPUs and cores in
        # total (could_hold's first test): release those in one go, untested.
        workers = sim.running_workers[victims]
        cores = workers * sim.worker_cpus[victims] + sim.num_ps[victims] * sim.ps_cpus[victims]
        enough_gpus = view.total_free_gpus + sim.running_gpus[victims].cumsum() >= tasks.total_gpus
        enough_cores = view.total_free_cores + cores.cumsum() + CORE_TOLERANCE >= tasks.total_cpus
        enough = enough_gpus & enough_cores
        if not enough[-1]:
            self._no_room[key] = _NoRoom.now(sim, self._starts, victims)
            return None  # not even all the victims together
        skip = int(enough.argmax())
        scratch = view.copy()
        released: list[int] = victims[:skip].tolist()
        scratch.release_all(released)
        first: tuple[int, np.ndarray] | None = None
        room: np.ndarray | None = None
        locality = locality_levels(sim.cluster)
        best = self._best_level(sim, job) if not self.consolidate else -1
        position = skip
        while position < len(victims):
            stop = position + 1
            if first is None:
                # Until some room is found, only the victims after which the necessary
                # test may pass deserve a placement: find the next one vectorized.
                stop = _next_possible_room(sim, scratch, tasks, victims, position, servers) + 1
                if stop > len(victims):
                    break  # even all the victims leave no room
            batch = victims[position:stop].tolist()
            scratch.release_all(batch)
            released.extend(batch)
            position = stop
            if not scratch.could_hold(tasks):
                continue
            groups = scratch.place(self.placement, job)
            if groups is None:
                continue
            if self.consolidate:
                # Only compact room will do: probe on for the next victim that may give it.
                if self.is_compact(sim, view, job, groups):
                    room = groups
                    break
                continue
            if locality.span_level(sim.cluster.group_server[groups]) <= best:
                room = groups
                break
            # Room, but spread wider than the job would be alone: a few more victims may
            # free it in one piece (a spread ring can run several times slower).
            if first is None:
                first = (len(released), groups)
            elif len(released) - first[0] >= _CONSOLIDATION_TRIES:
                break
        if room is not None:
            groups = room
        elif first is not None:
            count, groups = first
            released = released[:count]
        else:
            return None
        return self._fewest(sim, view, job, np.array(released, dtype=np.int64), groups)

    def _fewest(
        self, sim: Simulator, view: ClusterView, job: int, released: np.ndarray, groups: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Of the ``released`` victims that make room ``groups``, keep running those whose
        GPUs and cores the placement leaves alone (if the placement, given only the
        others, still places the job, compactly under consolidation)."""
        needed = _overlapping(sim, released, groups)
        if len(needed) < len(released):
            trial = view.copy()
            trial.release_all(needed)
            fewer = trial.place(self.placement, job)
            if fewer is not None and self.is_compact(sim, view, job, fewer):
                return needed, fewer
        return released, groups


@dataclass(frozen=True)
class _NoRoom:
    """A plan that failed a necessary test with all its ``victims`` released: no room
    (compact room, under consolidation) or too few GPUs and cores in total.

    Those tests only ever pass with more free resources, and the resources a plan sees
    are the free ones plus its victims'. So a later plan for a job of the same placement
    key (the same tasks, the same span alone) fails them too while

    - every job stopped since (completed or preempted; ``releases``: the simulator's
      count then) was one of those victims: its resources only moved from a victim's
      to the free ones, and
    - each victim of the later plan was either a victim then or started since
      (``starts``: the scheduler's count then): a job started since took its resources
      out of the free ones, so counting them again as a victim's gives back no more
      than was free then.

    Anything else -- a job that blocked then (ranked before, or guarded) stopped, or
    became a victim (demoted, past its guard) -- and the plan is tested afresh; so it is
    when more jobs stopped than there were victims (not reading a long list of stops). Plans
    fail this way over and over while the queue waits: at every arrival, wake-up and
    completion of a job elsewhere.
    """

    releases: int
    starts: int
    victims: np.ndarray

    @staticmethod
    def now(sim: Simulator, starts: int, victims: np.ndarray) -> _NoRoom:
        """The failure of a plan over ``victims`` now, ``starts`` starts counted."""
        return _NoRoom(sim.releases, starts, np.sort(victims))

    def still_holds(self, sim: Simulator, start_number: np.ndarray, victims: np.ndarray) -> bool:
        """Whether a plan over ``victims`` now must fail the same way (see the class doc)."""
        known = self.victims
        stops = sim.releases - self.releases
        if stops > len(known):
            return False  # more stops than victims: not all of them (read no list that long)
        if stops and not _all_in(sim.released_since(self.releases), known):
            return False
        new = victims[~_in_sorted(victims, known)]
        return bool((start_number[new] > self.starts).all())


def _in_sorted(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Boolean per value: it is one of the sorted ``known`` (np.isin without sorting)."""
    if not len(known):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(known.searchsorted(values), len(known) - 1)
    return known[at] == values


def _all_in(values: np.ndarray, known: np.ndarray) -> bool:
    """Whether every one of ``values`` is one of the sorted ``known``."""
    return bool(_in_sorted(values, known).all())


class _FailedDemands:
    """The demands of a preemption pass's candidates, to skip the jobs a failure rules out.

    Candidates come in rank order, so a later one has a subset of an earlier one's
    victims, and starts only take resources away. A job of identical tasks (no parameter
    servers) that needs at least as many tasks as a failed one, each with at least as many
    GPUs and cores, can then not be placed either, nor room made for it: capacity for such
    tasks is exact (:meth:`~envs.schedulers.view.ClusterView.could_hold`), and it only
    shrinks as tasks grow. Most plans of a pass would fail, most of them for this reason.

    Under consolidation (``alone_spans``: the servers and locality level of jobs placed
    alone, and the most of their tasks one empty server holds) a failure means no
    *compact* room. A larger job Y is then ruled out only when its compact room would
    hold the failed job X compactly: Y on ``n_Y`` servers, at most ``m_Y`` tasks on each,
    leaves X's ``w_X`` tasks room on X's own ``n_X`` servers when ``w_Y - max(n_Y - n_X, 0)
    m_Y >= w_X`` (the fullest ``n_X`` of Y's servers hold the rest), at no higher locality
    level than X's (or on one server). A job of 9 one-GPU tasks may find room as 5 + 4 on
    two 8-GPU servers where 8 need one server free; 16 need both, and are ruled out.
    """

    def __init__(
        self,
        sim: Simulator,
        candidates: np.ndarray,
        shapes: np.ndarray,
        alone_spans: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
        | None = None,
    ) -> None:
        self._candidates = candidates
        self._shapes = shapes
        self._alike = sim.num_ps[candidates] == 0
        self._workers = sim.num_workers[candidates]
        self._gpus = sim.worker_gpus[candidates]
        self._cpus = sim.worker_cpus[candidates]
        self._alone_spans = alone_spans
        # Every candidate's (servers, level, most per server), read at the first failure.
        self._spans: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def ruled_out(self, failed: int) -> np.ndarray:
        """Boolean per candidate: candidate ``failed`` found no room, so this one cannot
        (``shapes[k]``: equal for jobs alike, which then fail alike; for a job of alike
        tasks the demand test below covers them)."""
        if not self._alike[failed]:
            return self._shapes == self._shapes[failed]
        larger = (
            self._alike
            & (self._workers >= self._workers[failed])
            & (self._gpus >= self._gpus[failed])
            & (self._cpus >= self._cpus[failed] - CORE_TOLERANCE)
        )
        if self._alone_spans is None:
            return larger
        if self._spans is None:
            self._spans = self._alone_spans(self._candidates)
        servers, levels, most = self._spans
        wider = np.maximum(servers - servers[failed], 0)
        holds = self._workers - wider * most >= self._workers[failed]
        if servers[failed] > 1:
            holds &= levels <= levels[failed]
        return larger & holds


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


def _overlapping(sim: Simulator, victims: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The running ``victims`` holding GPUs of ``groups`` or cores of their sockets.

    A GPU of one of ``groups`` lies on one of their sockets, so testing the sockets the
    victims' tasks use answers both.
    """
    cluster = sim.cluster
    owner, task_group, _, _ = sim.placements_of(victims)
    on_socket = np.zeros(cluster.num_sockets, dtype=bool)
    on_socket[cluster.group_socket[groups]] = True
    hit = np.zeros(len(victims), dtype=bool)
    hit[owner[on_socket[cluster.group_socket[task_group]]]] = True
    return victims[hit]


_PROBE_SLACK = 1e-6
"""Cores of slack in the vectorized room test: its sums may round differently from the
view's, so it may pass where the view's test fails (never the reverse); the view's own
test confirms."""

_PROBE_CHUNK = 4
"""Victims in the first chunk of the vectorized room test; each next chunk is 4x larger."""


def _possible_rooms(
    sim: Simulator, tasks: JobTasks, free_gpus: np.ndarray, free_cores: np.ndarray
) -> np.ndarray:
    """Boolean per row of ``free_gpus[K, G]`` and ``free_cores[K, S]`` (states of the
    cluster): ``tasks`` may pass the view's :meth:`~.view.ClusterView.could_hold` there,
    a superset of the exact answers (see :data:`_PROBE_SLACK`)."""
    cluster = sim.cluster
    group_socket = None if one_group_per_socket(cluster) else cluster.group_socket
    possible = (free_gpus.sum(axis=1) >= tasks.total_gpus) & (
        free_cores.sum(axis=1) + (CORE_TOLERANCE + _PROBE_SLACK) >= tasks.total_cpus
    )
    for kind in tasks.kinds:
        capacity = rows_capacity(
            group_socket, free_gpus, free_cores, kind.gpus, kind.cpus, _PROBE_SLACK
        )
        possible &= capacity >= kind.count
    return possible


class _Holdings:
    """The tasks of the running jobs, kept across decisions: a job's rows are gathered
    (:meth:`~envs.sim.Simulator.placements_of`) when it is first seen running after a
    start, and dropped once it stops; ``of(jobs)`` selects the rows of any of them (in
    the table's order: the probe's core slack absorbs sums in another order).

    ``starts[job]`` counts the scheduler's starts of each job: rows gathered at another
    count belong to an earlier placement.
    """

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.starts = np.zeros(sim.num_jobs, dtype=np.int64)
        self._gathered_at = np.full(sim.num_jobs, -1, dtype=np.int64)
        self.task_job = np.zeros(0, dtype=np.int64)
        self.task_group = np.zeros(0, dtype=np.int64)
        self.task_gpus = np.zeros(0, dtype=np.int64)
        self.task_cpus = np.zeros(0)
        self._position = np.full(sim.num_jobs, -1, dtype=np.int64)

    def refresh(self) -> None:
        """Bring the rows up to the simulator's running jobs."""
        sim = self.sim
        # Over the rows and the running jobs only, not every job of the workload.
        running = sim.running_jobs()
        new = running[self._gathered_at[running] != self.starts[running]]
        task_job = self.task_job
        still = sim.status[task_job] == _RUNNING
        keep = still & (self._gathered_at[task_job] == self.starts[task_job])
        if keep.all() and not len(new):
            return
        self._gathered_at[task_job[~still]] = -1  # stopped: gathered afresh if it runs again
        owner, group, gpus, cpus = sim.placements_of(new)
        self._gathered_at[new] = self.starts[new]
        self.task_job = np.concatenate([self.task_job[keep], new[owner]])
        self.task_group = np.concatenate([self.task_group[keep], group])
        self.task_gpus = np.concatenate([self.task_gpus[keep], gpus])
        self.task_cpus = np.concatenate([self.task_cpus[keep], cpus])

    def rows_of(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(owner, task_group, task_gpus, task_cpus)`` of the tasks of running ``jobs``,
        ``owner`` the position in ``jobs`` of each task's job (distinct ``jobs``; a job
        given twice has its tasks once, owned by its last position)."""
        self._position[jobs] = np.arange(len(jobs))
        owner = self._position[self.task_job]
        self._position[jobs] = -1
        mine = owner >= 0
        return owner[mine], self.task_group[mine], self.task_gpus[mine], self.task_cpus[mine]

    def of(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(task_group, task_gpus, task_cpus)`` of the tasks of running ``jobs``."""
        return self.rows_of(jobs)[1:]


def _compact_rooms(
    sim: Simulator,
    tasks: JobTasks,
    servers: int,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    slack: float = 0.0,
) -> np.ndarray:
    """Boolean per row of ``free_gpus[K, G]`` and ``free_cores[K, S]``: the ``servers``
    servers with the most room (per resource) hold ``tasks``' GPUs, cores and each kind
    of its tasks (:mod:`.capacity`) -- necessary for a placement on that many servers;
    for one server and tasks all alike, sufficient too. ``slack``: cores of slack, as
    in :data:`_PROBE_SLACK`."""
    cluster = sim.cluster
    group_offsets = cluster.server_group_offsets[:-1]
    socket_offsets = cluster.server_socket_offsets[:-1]
    group_socket = None if one_group_per_socket(cluster) else cluster.group_socket
    if len(free_gpus) == 1 and servers == 1 and group_socket is None and len(tasks.kinds) == 1:
        kind = tasks.kinds[0]
        if kind.gpus > 0 and kind.cpus > 0:
            return np.array(
                [_one_server_holds(tasks, free_gpus[0], free_cores[0], socket_offsets, slack)]
            )
    needs = [
        (np.add.reduceat(free_gpus, group_offsets, axis=1), tasks.total_gpus),
        (
            np.add.reduceat(free_cores, socket_offsets, axis=1) + (CORE_TOLERANCE + slack),
            tasks.total_cpus,
        ),
    ]
    for kind in tasks.kinds:
        per_socket = rows_socket_capacity(
            group_socket, free_gpus, free_cores, kind.gpus, kind.cpus, slack
        )
        needs.append((np.add.reduceat(per_socket, socket_offsets, axis=1), kind.count))
    if servers == 1:
        holds = np.ones((len(free_gpus), cluster.num_servers), dtype=bool)
        for have, need in needs:
            holds &= have >= need
        return holds.any(axis=1)
    rooms = np.ones(len(free_gpus), dtype=bool)
    for have, need in needs:
        rooms &= np.sort(have, axis=1)[:, -servers:].sum(axis=1) >= need
    return rooms


def _one_server_holds(
    tasks: JobTasks,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    socket_offsets: np.ndarray,
    slack: float,
) -> bool:
    """:func:`_compact_rooms` for one state, one server and tasks all alike (with GPUs
    and cores) on sockets of one GPU group each, the plans' usual question in fewer
    steps: some server holds ``count`` such tasks and the job's cores. Its GPUs then
    follow: each task counted takes ``gpus`` of the socket's."""
    kind = tasks.kinds[0]
    tolerance = CORE_TOLERANCE + slack
    by_cores = np.maximum(np.floor((free_cores + tolerance) / kind.cpus), 0.0)
    per_socket = np.minimum(free_gpus // kind.gpus, by_cores)
    holds = np.add.reduceat(per_socket, socket_offsets) >= kind.count
    holds &= np.add.reduceat(free_cores, socket_offsets) + tolerance >= tasks.total_cpus
    return bool(holds.any())


def _next_possible_room(
    sim: Simulator,
    scratch: ClusterView,
    tasks: JobTasks,
    victims: np.ndarray,
    start: int,
    servers: int | None = None,
) -> int:
    """The first ``k >= start`` such that ``tasks`` may pass ``scratch.could_hold`` once
    ``victims[start : k + 1]`` are released on it, or ``len(victims)`` if none
    (:func:`_possible_rooms`, for many releases at once). With ``servers`` (under
    consolidation), such that they may also fit on that many servers
    (:func:`_compact_rooms`).

    Victims are read in growing chunks: room is usually found after a victim or two,
    while a plan that fails reads them all.
    """
    cluster = sim.cluster
    free_gpus, free_cores = scratch.free_gpus, scratch.free_cores
    low, size = start, _PROBE_CHUNK
    while low < len(victims):
        chunk = victims[low : low + size]
        owner, task_group, task_gpus, task_cpus = sim.placements_of(chunk)
        gpus = np.zeros((len(chunk), cluster.num_gpu_groups), dtype=np.int64)
        cores = np.zeros((len(chunk), cluster.num_sockets))
        np.add.at(gpus, (owner, task_group), task_gpus)
        np.add.at(cores, (owner, cluster.group_socket[task_group]), task_cpus)
        # Row k: the free resources once the chunk's first k + 1 victims are released.
        gpus = free_gpus + gpus.cumsum(axis=0)
        cores = free_cores + cores.cumsum(axis=0)
        possible = _possible_rooms(sim, tasks, gpus, cores)
        if servers is not None and possible.any():
            possible &= _compact_rooms(sim, tasks, servers, gpus, cores, _PROBE_SLACK)
        if possible.any():
            return low + int(possible.argmax())
        free_gpus, free_cores = gpus[-1], cores[-1]
        low, size = low + len(chunk), 4 * size
    return len(victims)
