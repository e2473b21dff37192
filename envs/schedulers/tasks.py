"""One job's tasks as a placement sees them: GPUs and cores per task, in two kinds.

A job's tasks are its workers (all alike) followed by its parameter servers (all alike),
the order :meth:`envs.sim.Simulator.place` expects its ``task_groups`` in. Placements
reason about *kinds* of identical tasks because how many identical tasks fit a socket has
a closed form (:mod:`.capacity`), while a mix of different tasks is a small bin-packing
problem they settle by actually filling.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The tasks of one job: per-task demands (workers first) and their kinds."""

    job: int
    gpus: np.ndarray
    cpus: np.ndarray
    num_workers: int

    @classmethod
    def of(cls, sim: Simulator, job: int) -> JobTasks:
        """The tasks ``job`` asks for, at its requested number of workers.

        The same arrays as ``sim.task_demands(job)``, built from the per-job columns
        directly: placements ask for them on every attempt.
        """
        workers, ps = int(sim.num_workers[job]), int(sim.num_ps[job])
        counts = (workers, ps)
        gpus = np.repeat(np.array([sim.worker_gpus[job], sim.ps_gpus[job]], np.int64), counts)
        cpus = np.repeat(np.array([sim.worker_cpus[job], sim.ps_cpus[job]], np.float64), counts)
        return cls(int(job), gpus, cpus, workers)

    @property
    def count(self) -> int:
        """Number of tasks."""
        return len(self.gpus)

    @property
    def total_gpus(self) -> int:
        """GPUs over all tasks."""
        return int(self.gpus.sum())

    @property
    def total_cpus(self) -> float:
        """Cores over all tasks."""
        return float(self.cpus.sum())

    @property
    def is_worker(self) -> np.ndarray:
        """Boolean per task: True for workers."""
        return np.arange(self.count) < self.num_workers

    @property
    def kinds(self) -> tuple[TaskKind, ...]:
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
