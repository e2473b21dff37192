"""The two halves of a heuristic scheduler: which job next (ordering), and where (placement).

An :class:`Ordering` ranks the waiting jobs; a :class:`Placement` maps one job to a GPU
group per task, or says it cannot place the job whole. :class:`~envs.schedulers.scheduler.
Scheduler` joins them. Both read a :class:`~envs.schedulers.view.ClusterView`, the
scheduler's tentative picture of the free resources during one decision, so that jobs
placed earlier in the same decision count.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from envs.schedulers.tasks import JobTasks
from envs.schedulers.view import ClusterView
from envs.sim import Simulator


class Ordering(ABC):
    """Ranks waiting jobs, highest priority first.

    :meth:`is_dynamic`: the rank of a job depends on what was placed before it in the same
    decision (DRF's user shares), so the scheduler re-ranks the rest of the queue after
    every placement. ``max_delays``: how many decisions a job may be held back because
    its placement would not get its best locality (002's DSIF); 0 = never.

    ``preemptive``: a waiting job may preempt running jobs it outranks (see
    :mod:`.preemption`); ranks then come from :meth:`priority_keys`, which rank running
    and waiting jobs alike, and a job is not preempted before it ran ``min_run_s``
    seconds since it (re)started. ``consolidate`` (preemptive orderings): a job starts,
    fresh or resumed, only as compactly as the placement would place it alone.
    """

    name: ClassVar[str]
    max_delays: ClassVar[int] = 0
    preemptive: bool = False
    min_run_s: float = 0.0
    consolidate: bool = False

    def delay_limit(self, job: int) -> int:
        """How many decisions ``job`` may be held back for its best locality (default:
        ``max_delays`` for every job; an ordering with ``max_delays`` 0 never holds)."""
        return self.max_delays

    def priority_keys(self, sim: Simulator, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
        """Sort keys (primary first, smaller first) of ``jobs``, running or waiting, now;
        ties go by arrival, then index (:func:`by_key`). Preemptive orderings define it."""
        raise NotImplementedError(f"{type(self).__name__} does not rank running jobs")

    def next_priority_change(self, sim: Simulator, running: np.ndarray) -> float:
        """The earliest time after now at which a running job's priority key gets worse
        by itself (a LAS demotion), or inf: the scheduler asks for a decision then."""
        return float("inf")

    def is_dynamic(self, sim: Simulator) -> bool:
        """Whether ranks change as jobs are placed within one decision (default: no)."""
        return False

    def static_keys(self, sim: Simulator) -> tuple[np.ndarray, ...] | None:
        """Per-job sort keys (of all jobs) when :meth:`order` is :func:`by_key` on keys that
        never change during the simulation, else None.

        The scheduler then ranks all jobs once and orders any queue by that rank: the
        same order as :meth:`order`, without a sort of the whole queue per decision.
        """
        return None

    def ranks_each_job_alone(self) -> bool:
        """Whether :meth:`order` of a subset of jobs is the full order restricted to it.

        True for orderings by a per-job key; the scheduler then ranks only the jobs
        that might fit. False for orderings that draw random numbers per job ranked.
        """
        return True

    @abstractmethod
    def order(self, sim: Simulator, jobs: np.ndarray, view: ClusterView) -> np.ndarray:
        """``jobs`` (waiting job indices) rearranged, first to be considered first."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Placement(ABC):
    """Chooses one GPU group per task of a job: workers first, then parameter servers.

    ``memoizable``: the answer depends only on the view and the job's task shape (plus
    :meth:`key_columns`), so the scheduler may reuse it for alike jobs while nothing is
    claimed. Random placements are not.
    """

    name: ClassVar[str]
    memoizable: ClassVar[bool] = True

    def place(self, sim: Simulator, job: int, view: ClusterView) -> np.ndarray | None:
        """Task groups for ``job`` that fit ``view``, or None when it cannot be placed whole.

        Never changes ``view``; the caller claims what it places.
        """
        tasks = JobTasks.of(sim, job)
        if not view.could_hold(tasks):
            return None
        groups = self.choose(sim, tasks, view)
        if groups is not None:
            assert len(groups) == tasks.count, "a placement must give one group per task"
        return groups

    @abstractmethod
    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        """The placement proper; ``view`` already passed the cheap capacity checks."""

    def key_columns(self, sim: Simulator) -> list[np.ndarray]:
        """Per-job values besides the task shape that this placement's answer depends on."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def static_rank(sim: Simulator, keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(rank, by_rank)`` of all jobs under :func:`by_key` with ``keys`` (of all jobs):
    ``rank[job]`` is its position, ``by_rank[position]`` the job there."""
    by_rank = by_key(sim, np.arange(sim.num_jobs), *keys)
    rank = np.empty(len(by_rank), dtype=np.int64)
    rank[by_rank] = np.arange(len(by_rank))
    return rank, by_rank


def by_key(sim: Simulator, jobs: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """``jobs`` sorted by ``keys`` (first = primary), ties by arrival time then index."""
    jobs = np.asarray(jobs, dtype=np.int64)
    arrival = np.asarray(sim.workload.arrival_time)[jobs]
    # lexsort sorts by its last key first.
    order = np.lexsort((jobs, arrival, *reversed([np.asarray(k) for k in keys])))
    return jobs[order]


def check_min_run(min_run_s: float) -> float:
    """A minimum run time in seconds, or ValueError saying what is allowed."""
    value = float(min_run_s)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"min_run_s must be finite seconds >= 0, got {min_run_s!r}")
    return value
