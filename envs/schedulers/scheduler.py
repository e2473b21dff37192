"""A heuristic scheduler: an ordering of the waiting jobs times a placement of each job.

At every decision point :meth:`Scheduler.schedule` ranks the waiting queue with its
ordering and walks it, placing every job its placement can place whole:

- **backfill** (default): a job that does not fit is skipped and the walk goes on, so
  smaller jobs behind it may start; with ``backfill=False`` the walk stops at the first
  job that does not fit or is held (strict order: nothing overtakes the head of the
  queue).
- **dynamic orderings** (DRF with users): the rest of the queue is re-ranked after every
  placement, since the placement changed the ranks.
- **delays** (``ordering.max_delays`` > 0, 002's DSIF): a job whose placement would span a
  higher locality level than it could get on the empty cluster (:func:`.locality.
  best_level`) is held back, counting one delay per decision, until it has been held
  ``max_delays`` times; then it is placed wherever it fits. Held jobs behave like jobs
  that do not fit. If at the end of a decision nothing runs at all, the held jobs are
  placed anyway: with an idle cluster no completion would ever bring the next decision.

**Speed on long queues.** Before any placement is called, the queue is filtered,
vectorized: a job is skipped when its total GPUs or cores exceed what is free, or when
some kind of its tasks (workers, parameter servers) exceeds the cluster's exact capacity
for such tasks (:mod:`.capacity`); for a job without parameter servers that test is
exact, so the placement is called only for jobs it will place. The test is evaluated
once per demand shape (the few distinct (totals, counts, task kinds) of the workload),
not per job, and only the jobs that pass are ranked: orderings by a per-job key rank a
subset exactly as they rank the whole queue. Orderings by keys that never change (FIFO,
SJF, ...) rank all jobs once per simulation; a decision then sorts integer ranks.
When a deterministic placement still fails for a job, the jobs of the same task shape
behind it are skipped for the rest of the decision (the view would give them the same
answer, and claims only shrink what is free). Across decisions, while nothing has been
freed since the previous one (a decision brought by an arrival), the jobs that did not
fit then cannot fit now: only the jobs that arrived since, and those held back, are
ranked and walked.

Both shortcuts assume a placement that fails keeps failing when resources shrink. That
is exact for the capacity tests and for jobs of identical tasks; for the greedy
placements of jobs with parameter servers it is a (rarely wrong) approximation, and such
a job is retried at the next decision that frees resources.

A scheduler keeps per-simulation state (delay counters, job keys), reset when it is
handed a different simulator; reuse one across runs only sequentially.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.schedulers.base import Ordering, Placement, static_rank
from envs.schedulers.domains import locality_levels
from envs.schedulers.locality import best_level
from envs.schedulers.orderings import total_cpus, total_gpus
from envs.schedulers.preemption import Preemptor
from envs.schedulers.tasks import CORE_TOLERANCE
from envs.schedulers.view import ClusterView
from envs.sim import JobStatus, Simulator

_WAITING = int(JobStatus.WAITING)


class Scheduler:
    """``ordering`` x ``placement``: the policy ``Simulator.run`` calls at every decision."""

    def __init__(self, ordering: Ordering, placement: Placement, backfill: bool = True) -> None:
        if not isinstance(ordering, Ordering):
            raise TypeError(f"ordering must be an Ordering, got {type(ordering).__name__}")
        if not isinstance(placement, Placement):
            raise TypeError(f"placement must be a Placement, got {type(placement).__name__}")
        self.ordering = ordering
        self.placement = placement
        self.backfill = backfill
        self.delays: dict[int, int] = {}
        self._sim_ref: weakref.ref[Simulator] | None = None
        self._keys = np.zeros(0, np.int64)
        self._kinds: list[tuple[int, float]] = []
        self._shape = np.zeros(0, np.int64)
        self._shape_demand = _ShapeDemand.of(np.zeros((0, 6)))
        self._least_gpus = 0
        self._rank: np.ndarray | None = None
        self._by_rank: np.ndarray | None = None
        self._rank_is_index = False
        self._preemptor: Preemptor | None = None
        self._best_level: dict[int, int] = {}
        self._settled = np.zeros(0, dtype=bool)
        self._last_free: tuple[np.ndarray, np.ndarray] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Scheduler:
        """A copy whose per-simulator state follows the simulator's copy: copied together
        with the simulator it schedules (one ``copy.deepcopy`` of both), it keeps its delay
        counters and caches for that copy instead of starting fresh (a weak reference
        would otherwise still point at the original simulator)."""
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key == "_sim_ref" and value is not None:
                sim = value()
                value = None if sim is None else weakref.ref(copy.deepcopy(sim, memo))
            else:
                value = copy.deepcopy(value, memo)
            setattr(clone, key, value)
        return clone

    @property
    def name(self) -> str:
        """``ordering+placement``, the registry name."""
        return f"{self.ordering.name}+{self.placement.name}"

    def __repr__(self) -> str:
        return f"Scheduler({self.ordering!r}, {self.placement!r}, backfill={self.backfill})"

    # ------------------------------------------------------------------ decisions
    def schedule(self, sim: Simulator) -> None:
        """Place what the ordering and placement allow now (see the module docstring)."""
        self._bind(sim)
        view = ClusterView(sim, job_keys=self._keys)
        if self._preemptor is not None:
            self._preemptor.run(
                sim,
                view,
                lambda job, groups: self._start(sim, view, job, groups),
                not self.backfill,
            )
        self._walk_queue(sim, view)
        if self._preemptor is not None:
            self._preemptor.request_wake_up(sim)

    def _walk_queue(self, sim: Simulator, view: ClusterView) -> None:
        """The walk over the waiting jobs (after any preemptions)."""
        waiting = sim.waiting_jobs()
        if not self.backfill:
            if len(waiting):
                self._walk_strict(sim, view, self._order(sim, waiting, view))
            return
        shrank = self._only_shrank(view)
        if not shrank:
            self._settled[:] = False
        if view.total_free_gpus < self._least_gpus and not self.delays:
            # Nothing fits a cluster without enough free GPUs for any job. The newcomers
            # stay unsettled: they are tested (and fail) again until something is freed.
            self._last_free = (sim.free_gpus.copy(), sim.free_cores.copy())
            return
        if shrank:
            waiting = waiting[~self._settled[waiting]]
        if len(waiting):
            candidates, fits = waiting, None
            if self.ordering.ranks_each_job_alone():
                # Only jobs passing the necessary test now can start in this decision (it
                # only gets stricter as jobs are placed): rank and walk just those.
                fits = self._shape_fits(view, self._shapes_in(waiting))
                candidates = waiting[fits[self._shape[waiting]]]
            if len(candidates):
                queue = self._order(sim, candidates, view)
                delays = self.ordering.max_delays > 0
                held = self._walk(sim, view, queue, allow_delays=delays, fits=fits)
                if held and not len(sim.running_jobs()):
                    self._walk(sim, view, np.asarray(held, dtype=np.int64), allow_delays=False)
            # What is still waiting did not fit; only held jobs deserve another look
            # before something frees resources.
            self._settled[waiting[sim.status[waiting] == _WAITING]] = True
            self._settled[list(self.delays)] = False
        self._last_free = (sim.free_gpus.copy(), sim.free_cores.copy())

    def _order(self, sim: Simulator, jobs: np.ndarray, view: ClusterView) -> np.ndarray:
        """``jobs`` (ascending, as the simulator lists them) in the ordering's order: by
        the rank of static keys, computed once."""
        if self._by_rank is not None:
            assert self._rank is not None
            if self._rank_is_index:
                return jobs  # FIFO on a trace in arrival order: ascending is ranked
            return self._by_rank[np.sort(self._rank[jobs])]
        return np.asarray(self.ordering.order(sim, jobs, view), dtype=np.int64)

    def _only_shrank(self, view: ClusterView) -> bool:
        """Whether no GPU or core was freed since the end of the previous decision."""
        if self._last_free is None:
            return False
        gpus, cores = self._last_free
        return bool(
            (view.free_gpus <= gpus).all() and (view.free_cores <= cores + CORE_TOLERANCE).all()
        )

    def _walk_strict(self, sim: Simulator, view: ClusterView, queue: np.ndarray) -> None:
        position = 0
        while position < len(queue):
            job = int(queue[position])
            groups = view.place(self.placement, job)
            if groups is None:
                return
            # Hold only while something runs: its completion brings the next decision.
            if self._spread_hold(sim, view, job, groups) or (
                len(sim.running_jobs()) and self._hold(sim, job, groups)
            ):
                return
            self._start(sim, view, job, groups)
            position += 1
            # A dynamic ordering (DRF's shares) ranks the rest again after each start, as
            # the backfilling walk does: progressive filling.
            if self.ordering.is_dynamic(sim):
                queue, position = self.ordering.order(sim, queue[position:], view), 0

    def _walk(
        self,
        sim: Simulator,
        view: ClusterView,
        queue: np.ndarray,
        allow_delays: bool,
        fits: np.ndarray | None = None,
    ) -> list[int]:
        """Backfilling walk over ``queue``; returns the jobs held back for locality.

        ``fits``: the shapes passing the necessary test on ``view`` now, when known.
        """
        held: list[int] = []
        shapes = self._shape[queue]
        if fits is None:
            fits = self._shape_fits(view, self._shapes_in(queue))
        alive = fits[shapes]
        position = 0
        while True:
            ahead = alive[position:]
            if not ahead.any():
                return held
            position += int(ahead.argmax())
            job = int(queue[position])
            if (
                self._preemptor is not None
                and not self._preemptor.may_start_compact(sim, view, job)
                and len(sim.running_jobs())
            ):
                # Consolidation holds it (below) wherever it would fit: skip the placement.
                groups = None
            else:
                groups = view.place(self.placement, job)
            if groups is None:
                if self.placement.memoizable:
                    alive[position:] &= self._keys[queue[position:]] != self._keys[job]
                alive[position] = False
                position += 1
                continue
            if self._spread_hold(sim, view, job, groups):
                held.append(job)
                position += 1
                continue
            if allow_delays and self._hold(sim, job, groups):
                held.append(job)
                position += 1
                continue
            self._start(sim, view, job, groups)
            position += 1
            if self.ordering.is_dynamic(sim):
                rest = queue[position:][alive[position:]]
                queue = np.concatenate([queue[:position], self.ordering.order(sim, rest, view)])
                alive = np.concatenate([alive[:position], np.ones(len(rest), dtype=bool)])
                shapes = self._shape[queue]
            if alive[position:].any():
                # Placing only shrinks what is free: re-test the shapes that passed.
                fits = self._shape_fits(view, fits)
                alive[position:] &= fits[shapes[position:]]

    def _start(self, sim: Simulator, view: ClusterView, job: int, groups: np.ndarray) -> None:
        sim.place(job, groups)
        view.claim(job, groups)
        self.delays.pop(job, None)
        if self._preemptor is not None:
            self._preemptor.started(sim, job)

    def _spread_hold(self, sim: Simulator, view: ClusterView, job: int, groups: np.ndarray) -> bool:
        """Whether a preemptive ordering's consolidation holds ``job`` back: ``groups``
        spread it wider than it would be alone, and something runs whose end or
        preemption can make compact room (:mod:`.preemption`)."""
        preemptor = self._preemptor
        if preemptor is None or not preemptor.consolidate or not len(sim.running_jobs()):
            return False
        return not preemptor.is_compact(sim, view, job, groups)

    def _hold(self, sim: Simulator, job: int, groups: np.ndarray) -> bool:
        """Whether to hold ``job`` back this decision (and count it) for better locality."""
        limit = self.ordering.delay_limit(job)
        if limit <= 0 or self.delays.get(job, 0) >= limit:
            return False
        key = int(self._keys[job])
        best = self._best_level.get(key)
        if best is None:
            best = self._best_level[key] = best_level(sim, job)
        levels = locality_levels(sim.cluster)
        if levels.span_level(sim.cluster.group_server[groups]) <= best:
            return False
        self.delays[job] = self.delays.get(job, 0) + 1
        return True

    # ------------------------------------------------------------------ helpers
    def _shapes_in(self, jobs: np.ndarray) -> np.ndarray:
        """Boolean per demand shape: some job of ``jobs`` has it."""
        return np.bincount(self._shape[jobs], minlength=len(self._shape_demand.counts)) > 0

    def _shape_fits(self, view: ClusterView, consider: np.ndarray) -> np.ndarray:
        """Boolean per demand shape: the vectorized necessary test, for the shapes where
        ``consider`` is True (False elsewhere): totals, and each task kind on its own.

        Jobs of one shape pass or fail together. The per-kind test uses the exact
        capacity of the cluster for identical tasks, so a job without parameter servers
        that passes it will be placed.
        """
        demand = self._shape_demand
        totals, counts = demand.totals, demand.counts
        mask = (
            consider
            & (totals[:, 0] <= view.total_free_gpus)
            & (totals[:, 1] <= view.total_free_cores + CORE_TOLERANCE)
        )
        if not mask.any():  # a full cluster: the usual case on long queues
            return mask
        has_ps = demand.ps_kind >= 0
        present = np.bincount(demand.worker_kind[mask], minlength=len(self._kinds))
        present += np.bincount(demand.ps_kind[mask & has_ps], minlength=len(self._kinds))
        capacity = np.full(len(self._kinds), -1, dtype=np.int64)
        for kind in np.flatnonzero(present).tolist():
            capacity[kind] = view.kind_capacity(*self._kinds[kind])
        mask &= counts[:, 0] <= capacity[demand.worker_kind]
        mask &= ~has_ps | (counts[:, 1] <= capacity[np.maximum(demand.ps_kind, 0)])
        return mask

    def _bind(self, sim: Simulator) -> None:
        """Per-simulator state: job keys for memoization, demand shapes, static ranks,
        fresh delay counters."""
        if self._sim_ref is not None and self._sim_ref() is sim:
            return
        self._sim_ref = weakref.ref(sim)
        self.delays = {}
        self._best_level = {}
        self._settled = np.zeros(sim.num_jobs, dtype=bool)
        self._last_free = None
        jobs = np.arange(sim.num_jobs)
        # Task kinds (GPUs, cores) of workers and parameter servers, numbered together.
        kind_rows = np.concatenate(
            [
                np.stack([sim.worker_gpus, sim.worker_cpus], axis=1),
                np.stack([sim.ps_gpus, sim.ps_cpus], axis=1),
            ]
        ).astype(np.float64)
        kinds, kind_of = np.unique(kind_rows, axis=0, return_inverse=True)
        kind_of = kind_of.reshape(-1)
        self._kinds = [(int(gpus), float(cpus)) for gpus, cpus in kinds]
        # A job's demand shape: everything the necessary test reads.
        demand_rows = np.stack(
            [
                total_gpus(sim, jobs),
                total_cpus(sim, jobs),
                sim.num_workers,
                sim.num_ps,
                kind_of[: sim.num_jobs],
                np.where(sim.num_ps > 0, kind_of[sim.num_jobs :], -1),
            ],
            axis=1,
        ).astype(np.float64)
        shapes, shape_of = np.unique(demand_rows, axis=0, return_inverse=True)
        self._shape = shape_of.reshape(-1).astype(np.int64)
        self._shape_demand = _ShapeDemand.of(shapes)
        self._least_gpus = int(shapes[:, 0].min()) if len(shapes) else 0
        keys = self.ordering.static_keys(sim)
        self._rank, self._by_rank = (None, None) if keys is None else static_rank(sim, keys)
        # Jobs ranked in index order need no sort per decision (the whole Philly trace
        # under FIFO queues thousands).
        self._rank_is_index = self._rank is not None and bool(
            (self._rank == np.arange(sim.num_jobs)).all()
        )
        columns = placement_key_columns(sim, self.placement)
        rows = np.stack([np.asarray(column, dtype=np.float64) for column in columns], axis=1)
        if len(rows):
            _, inverse = np.unique(rows, axis=0, return_inverse=True)
            self._keys = inverse.reshape(-1).astype(np.int64)
        else:
            self._keys = np.zeros(0, np.int64)
        self._preemptor = (
            Preemptor(self.ordering, self.placement, self._shape, self._keys)
            if self.ordering.preemptive
            else None
        )


def placement_key_columns(sim: Simulator, placement: Placement) -> list[np.ndarray]:
    """Per-job columns a deterministic ``placement``'s answer depends on: the task shape
    (workers, PS and their demands) and the placement's own :meth:`~.base.Placement.
    key_columns`. Jobs equal in all of them are placed alike on the same view."""
    return [
        sim.num_workers,
        sim.worker_gpus,
        sim.worker_cpus,
        sim.num_ps,
        sim.ps_gpus,
        sim.ps_cpus,
        *placement.key_columns(sim),
    ]


@dataclass(frozen=True)
class _ShapeDemand:
    """Per demand shape: total (GPUs, cores), (workers, PS) counts, and task kind ids
    (-1: no parameter servers)."""

    totals: np.ndarray
    counts: np.ndarray
    worker_kind: np.ndarray
    ps_kind: np.ndarray

    @staticmethod
    def of(rows: np.ndarray) -> _ShapeDemand:
        """From rows ``(GPUs, cores, workers, PS, worker kind, PS kind)``."""
        return _ShapeDemand(
            rows[:, 0:2].copy(),
            rows[:, 2:4].astype(np.int64),
            rows[:, 4].astype(np.int64),
            rows[:, 5].astype(np.int64),
        )
