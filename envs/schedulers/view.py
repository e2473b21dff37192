"""The scheduler's tentative view of the cluster during one decision.

A scheduler may place several jobs in one decision, and an ordering (SAF) or a delay rule
(DSIF) may ask where a job *would* go without placing it. The :class:`ClusterView` is what
they all read: the simulator's free GPUs per group and cores per socket, minus the claims
made so far in this decision, plus (built only when asked) the interference loads. A
placement never writes to the view; the scheduler claims (:meth:`ClusterView.claim`)
what it places, so the next placement sees it.

The view also memoizes placements within a decision: while nothing is claimed, the same
placement gives the same answer for jobs with the same task shape (the key the scheduler
hands in), so a long queue of alike jobs costs one placement, not one per job.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from envs.schedulers.capacity import socket_capacity
from envs.schedulers.loads import InterferenceLoads
from envs.schedulers.tasks import CORE_TOLERANCE, JobTasks
from envs.sim import Simulator

if TYPE_CHECKING:
    from envs.schedulers.base import Placement


class ClusterView:
    """Free resources of ``sim`` as a scheduler sees them while it decides.

    ``free_gpus[G]`` and ``free_cores[C]`` are private copies; ``claims`` lists the
    ``(job, task_groups)`` claimed in this decision, ``released`` the running jobs whose
    resources were given back (preemptions). ``derived``: what a caller computed from
    the free resources, by its own keys, forgotten whenever they change. ``job_keys[J]``
    (optional) gives each job a placement-memo key: jobs with equal keys must get equal
    placements from any deterministic placement (same tasks, same profile where it
    matters).
    """

    def __init__(self, sim: Simulator, job_keys: np.ndarray | None = None) -> None:
        self.sim = sim
        self.cluster = sim.cluster
        self.free_gpus = np.asarray(sim.free_gpus, dtype=np.int64).copy()
        self.free_cores = np.asarray(sim.free_cores, dtype=np.float64).copy()
        self.claims: list[tuple[int, np.ndarray]] = []
        self.released: set[int] = set()
        self._job_keys = job_keys
        self._memo: dict[Hashable, np.ndarray | None] = {}
        self._kind_capacity: dict[tuple[int, float], int] = {}
        self._loads: InterferenceLoads | None = None
        self.derived: dict[Hashable, object] = {}
        self._refresh_totals()

    def _refresh_totals(self) -> None:
        self.total_free_gpus = int(self.free_gpus.sum())
        self.total_free_cores = float(self.free_cores.sum())
        self.max_group_free_gpus = int(self.free_gpus.max())
        self.max_socket_free_cores = float(self.free_cores.max())

    # ------------------------------------------------------------------ queries
    def kind_capacity(self, gpus: int, cpus: float) -> int:
        """How many tasks of (``gpus``, ``cpus``) the cluster could take now (cached)."""
        key = (int(gpus), float(cpus))
        capacity = self._kind_capacity.get(key)
        if capacity is None:
            per_socket = socket_capacity(self.cluster, self.free_gpus, self.free_cores, *key)
            capacity = self._kind_capacity[key] = int(per_socket.sum())
        return capacity

    def could_hold(self, tasks: JobTasks) -> bool:
        """Necessary condition for ``tasks`` to fit: totals, and each kind of task alone.

        For a job whose tasks are all alike (no parameter servers) it is also sufficient:
        every placement here places such a job whenever its kind's capacity allows.
        """
        if not (
            tasks.total_gpus <= self.total_free_gpus
            and tasks.total_cpus <= self.total_free_cores + CORE_TOLERANCE
        ):
            return False
        return all(self.kind_capacity(k.gpus, k.cpus) >= k.count for k in tasks.kinds)

    @property
    def loads(self) -> InterferenceLoads:
        """Interference loads of the running jobs and this decision's claims (built lazily)."""
        if self._loads is None:
            claimed = {job for job, _ in self.claims}
            # Claims may already run in the simulator (the scheduler places as it goes);
            # count each job once, from the claim. Released jobs count no more.
            self._loads = InterferenceLoads.from_running(self.sim, skip=claimed | self.released)
            for job, groups in self.claims:
                self._loads.add(job, groups)
        return self._loads

    def place(self, placement: Placement, job: int) -> np.ndarray | None:
        """``placement``'s answer for ``job`` on this view, memoized by the job's key."""
        key = None
        if placement.memoizable and self._job_keys is not None:
            key = (id(placement), int(self._job_keys[job]))
            if key in self._memo:
                cached = self._memo[key]
                return None if cached is None else cached.copy()
        groups = placement.place(self.sim, job, self)
        if key is not None:
            self._memo[key] = None if groups is None else groups.copy()
        return groups

    # ------------------------------------------------------------------ updates
    def claim(self, job: int, task_groups: np.ndarray) -> None:
        """Take the resources of ``job`` placed on ``task_groups`` (workers first)."""
        groups = np.asarray(task_groups, dtype=np.int64)
        sim = self.sim
        if len(groups) == 1 and sim.num_ps[job] == 0:
            # One worker (most trace jobs): plain indexing, the same subtraction.
            group = int(groups[0])
            self.free_gpus[group] -= sim.worker_gpus[job]
            self.free_cores[self.cluster.group_socket[group]] -= sim.worker_cpus[job]
        else:
            workers = len(groups) - int(sim.num_ps[job])
            gpus, cpus = sim.task_demands(job, workers)
            np.subtract.at(self.free_gpus, groups, gpus)
            np.subtract.at(self.free_cores, self.cluster.group_socket[groups], cpus)
        self.claims.append((int(job), groups.copy()))
        if self._loads is not None:
            self._loads.add(job, groups)
        self._changed()

    def release(self, job: int) -> None:
        """Give back the resources of running ``job``: a preemption planned or made."""
        self._give_back(job)
        self._changed()

    def release_all(self, jobs: Sequence[int] | np.ndarray) -> None:
        """Give back the resources of every one of the running ``jobs`` at once.

        One gather of all their tasks (:meth:`~envs.sim.Simulator.placements_of`), added
        task by task in job order: the same sums as releasing them one by one.
        """
        jobs = np.asarray(jobs, dtype=np.int64).reshape(-1)
        if not len(jobs):
            return
        _, task_group, task_gpus, task_cpus = self.sim.placements_of(jobs)
        np.add.at(self.free_gpus, task_group, task_gpus)
        np.add.at(self.free_cores, self.cluster.group_socket[task_group], task_cpus)
        self.released.update(jobs.tolist())
        self._loads = None
        self._changed()

    def _give_back(self, job: int) -> None:
        """Add running ``job``'s GPUs and cores to the free ones (derived values stale)."""
        groups, _ = self.sim.job_placement(job)
        workers = len(groups) - int(self.sim.num_ps[job])
        gpus, cpus = self.sim.task_demands(job, workers)
        np.add.at(self.free_gpus, groups, gpus)
        np.add.at(self.free_cores, self.cluster.group_socket[groups], cpus)
        self.released.add(int(job))
        self._loads = None  # rebuilt without the job when next asked

    def copy(self) -> ClusterView:
        """An independent view of the same state, to plan on without touching this one."""
        twin = ClusterView.__new__(ClusterView)
        twin.sim, twin.cluster, twin._job_keys = self.sim, self.cluster, self._job_keys
        twin.free_gpus, twin.free_cores = self.free_gpus.copy(), self.free_cores.copy()
        twin.claims, twin.released = list(self.claims), set(self.released)
        twin._memo, twin._kind_capacity, twin._loads = {}, {}, None
        twin.derived = {}
        twin._refresh_totals()
        return twin

    def emptied(self) -> ClusterView:
        """A view of the same cluster with nothing running or claimed: where a
        deterministic placement would put a job that had the cluster to itself."""
        twin = self.copy()
        twin.free_gpus = np.asarray(self.cluster.group_gpus, dtype=np.int64).copy()
        twin.free_cores = np.asarray(self.cluster.socket_cores, dtype=np.float64).copy()
        twin.claims = []
        # Interference loads skip released jobs: with every running job released, none.
        twin.released = set(self.sim.running_jobs().tolist()) | {job for job, _ in self.claims}
        twin._refresh_totals()
        return twin

    def _changed(self) -> None:
        """Forget what was derived from the free resources."""
        self._memo.clear()
        self._kind_capacity.clear()
        self.derived.clear()
        self._refresh_totals()
