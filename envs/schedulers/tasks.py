"""One job's tasks as a placement sees them: GPUs and cores per task, in two kinds.

A job's tasks are its workers (all alike) followed by its parameter servers (all alike),
the order :meth:`envs.sim.Simulator.place` expects its ``task_groups`` in. Placements
reason about *kinds* of identical tasks because how many identical tasks fit a socket has
a closed form (:mod:`.capacity`), while a mix of different tasks is a small bin-packing
problem they settle by actually filling.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from envs.sim import Simulator

CORE_TOLERANCE = 1e-9
"""Slack on core comparisons; the simulator accepts a placement up to this excess."""


@dataclass(frozen=True)
class TaskKind:
    """``count`` identical tasks, task indices ``start .. start+count-1``."""

    gpus: int
    cpus: float
    start: int
    count: int

    @property
    def stop(self) -> int:
        """One past the last task index of this kind."""
        return self.start + self.count


@dataclass(frozen=True)
class JobTasks:
    """The tasks of one job: per-task demands (workers first) and their kinds.

    ``total_gpus``, ``total_cpus`` and ``kinds`` are computed once, when the tasks are
    built: placements read them on every attempt.
    """

    job: int
    gpus: np.ndarray
    cpus: np.ndarray
    num_workers: int
    total_gpus: int = field(init=False)
    total_cpus: float = field(init=False)
    kinds: tuple[TaskKind, ...] = field(init=False)

    def __post_init__(self) -> None:
        # Frozen: derived fields are set the way dataclasses set fields themselves.
        object.__setattr__(self, "total_gpus", int(self.gpus.sum()))
        object.__setattr__(self, "total_cpus", float(self.cpus.sum()))
        object.__setattr__(self, "kinds", self._kinds())

    @classmethod
    def of(cls, sim: Simulator, job: int) -> JobTasks:
        """The tasks ``job`` asks for, at its requested number of workers.

        ``sim.task_demands(job)``, read-only and kept per simulator and job: placements
        ask for them on every attempt, and a job's requested tasks never change.
        """
        job = int(job)
        last = _LAST[0]
        if last is not None and last[0]() is sim:
            cache = last[1]  # the simulator asked about last: no weak-dictionary lookup
        else:
            try:
                cache = _CACHE.setdefault(sim, {})
                _LAST[0] = (weakref.ref(sim), cache)
            except TypeError:  # a simulator stand-in that cannot be weakly referenced
                cache = {}
        tasks = cache.get(job)
        if tasks is None:
            gpus, cpus = sim.task_demands(job)
            gpus.flags.writeable = cpus.flags.writeable = False
            tasks = cache[job] = cls(job, gpus, cpus, int(sim.num_workers[job]))
        return tasks

    @property
    def count(self) -> int:
        """Number of tasks."""
        return len(self.gpus)

    @property
    def is_worker(self) -> np.ndarray:
        """Boolean per task: True for workers."""
        return np.arange(self.count) < self.num_workers

    def _kinds(self) -> tuple[TaskKind, ...]:
        """Workers, then parameter servers when the job has any."""
        workers = TaskKind(int(self.gpus[0]), float(self.cpus[0]), 0, self.num_workers)
        num_ps = self.count - self.num_workers
        if not num_ps:
            return (workers,)
        ps = TaskKind(
            int(self.gpus[self.num_workers]),
            float(self.cpus[self.num_workers]),
            self.num_workers,
            num_ps,
        )
        return (workers, ps)


_CACHE: weakref.WeakKeyDictionary[Simulator, dict[int, JobTasks]] = weakref.WeakKeyDictionary()
"""Per simulator, the tasks of each job asked for so far (see :meth:`JobTasks.of`)."""

_LAST: list[tuple[weakref.ref[Simulator], dict[int, JobTasks]] | None] = [None]
"""The simulator last asked about and its entry of :data:`_CACHE` (placements ask about
one simulator many times in a row; a weak reference keeps nothing alive)."""
