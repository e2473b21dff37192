"""One scheduling interval's decisions: per-scheduler queues, task by task, with claims.

At the start of a round every waiting job joins its home scheduler's queue, in arrival
order or shortest ideal run time first (``queue_order``). A scheduler always works on
the job at the head of its queue, one task at a time (workers first, then parameter
servers). A task placed on the scheduler's own partition is *claimed* -- held from the
free resources the masks see -- until the whole job is placed, when the job starts in
the simulator. A forwarded job moves to the front of the other scheduler's queue with
its claims kept, so the receiver continues where the sender stopped; each task may be
forwarded at most ``forward_limit`` times. A job sent back to wait loses its claims and
waits for the next round. Jobs are never lost or duplicated: a job is in exactly one
queue, or started, or waiting for the next round.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from envs.pod.config import QUEUE_ORDERS
from envs.sim import Simulator

CORE_TOLERANCE = 1e-9


@dataclass
class JobInProgress:
    """A job some scheduler is placing: its tasks' demands and the choices made so far."""

    job: int
    task_gpus: np.ndarray
    task_cpus: np.ndarray
    num_workers: int
    groups: list[int] = field(default_factory=list)
    placed_by: list[int] = field(default_factory=list)
    forwards: int = 0  # of the current task

    @property
    def task(self) -> int:
        """Index of the next task to place."""
        return len(self.groups)

    @property
    def num_tasks(self) -> int:
        """Workers plus parameter servers."""
        return len(self.task_gpus)

    @property
    def current_is_ps(self) -> bool:
        """Whether the next task is a parameter server."""
        return self.task >= self.num_workers


class DecisionRound:
    """Queues and claims of one round; see the module docstring."""

    def __init__(
        self, sim: Simulator, homes: np.ndarray, num_agents: int, queue_order: str = "arrival"
    ) -> None:
        self.sim = sim
        self.queues: list[deque[JobInProgress]] = [deque() for _ in range(num_agents)]
        self.claimed_gpus = np.zeros(sim.cluster.num_gpu_groups, dtype=np.int64)
        self.claimed_cores = np.zeros(sim.cluster.num_sockets)
        waiting = sim.waiting_jobs()
        if queue_order == "ideal-time":
            # Stable: equal ideal times keep their arrival order.
            waiting = waiting[np.argsort(sim.ideal_duration[waiting], kind="stable")]
        elif queue_order not in QUEUE_ORDERS:
            raise ValueError(f"queue_order={queue_order!r}; allowed: {', '.join(QUEUE_ORDERS)}")
        for job in waiting.tolist():
            gpus, cpus = sim.task_demands(job)
            entry = JobInProgress(job, gpus, cpus, int(sim.num_workers[job]))
            self.queues[int(homes[job])].append(entry)

    @property
    def finished(self) -> bool:
        """True when no scheduler has a job left to place."""
        return not any(self.queues)

    def head(self, agent: int) -> JobInProgress | None:
        """The job ``agent`` works on, if any."""
        queue = self.queues[agent]
        return queue[0] if queue else None

    def free_gpus(self) -> np.ndarray:
        """Free GPUs per group net of this round's claims."""
        return self.sim.free_gpus - self.claimed_gpus

    def free_cores(self) -> np.ndarray:
        """Free cores per socket net of this round's claims."""
        return self.sim.free_cores - self.claimed_cores

    def fitting_groups(self, entry: JobInProgress, groups: np.ndarray) -> np.ndarray:
        """Boolean mask over ``groups``: which can take ``entry``'s next task now."""
        cluster = self.sim.cluster
        task = entry.task
        gpus_ok = self.free_gpus()[groups] >= entry.task_gpus[task]
        sockets = cluster.group_socket[groups]
        cores_ok = self.free_cores()[sockets] >= entry.task_cpus[task] - CORE_TOLERANCE
        return gpus_ok & cores_ok

    def place_task(self, agent: int, group: int) -> int | None:
        """Claim ``group`` for the head job's next task; returns the job if now complete.

        A complete job is started in the simulator and leaves the queue.
        """
        entry = self.queues[agent][0]
        task = entry.task
        socket = self.sim.cluster.group_socket[group]
        self.claimed_gpus[group] += entry.task_gpus[task]
        self.claimed_cores[socket] += entry.task_cpus[task]
        entry.groups.append(int(group))
        entry.placed_by.append(agent)
        entry.forwards = 0
        if entry.task < entry.num_tasks:
            return None
        self.queues[agent].popleft()
        self._release_claims(entry)
        self.sim.place(entry.job, np.asarray(entry.groups, dtype=np.int64))
        return entry.job

    def forward(self, moves: list[tuple[int, int]]) -> None:
        """Move each sender's head job to the front of its receiver's queue, all at once.

        Every head is taken before any is given, so two schedulers may swap jobs.
        """
        taken = [(self.queues[sender].popleft(), receiver) for sender, receiver in moves]
        for entry, receiver in taken:
            entry.forwards += 1
            self.queues[receiver].appendleft(entry)

    def defer(self, agent: int) -> int:
        """Send the head job back to wait for the next round; returns it."""
        entry = self.queues[agent].popleft()
        self._release_claims(entry)
        return entry.job

    def _release_claims(self, entry: JobInProgress) -> None:
        if not entry.groups:
            return
        groups = np.asarray(entry.groups, dtype=np.int64)
        placed = np.arange(len(groups))
        np.subtract.at(self.claimed_gpus, groups, entry.task_gpus[placed])
        sockets = self.sim.cluster.group_socket[groups]
        np.subtract.at(self.claimed_cores, sockets, entry.task_cpus[placed])

    def jobs_in_queues(self) -> list[int]:
        """Every job some queue holds (for conservation checks)."""
        return [entry.job for queue in self.queues for entry in queue]
