"""One placement attempt: a private copy of the free resources and the groups chosen so far.

Placements assign a job's tasks one at a time; each assignment must see the previous
ones (two tasks on one socket share its cores). A :class:`Tentative` holds that scratch
state, so a placement that fails half-way leaves the view untouched and returns None.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from envs.schedulers.capacity import server_capacity, server_sums, sockets_capacity
from envs.schedulers.tasks import CORE_TOLERANCE, JobTasks, TaskKind
from envs.schedulers.view import ClusterView
from envs.topology import Cluster


class Tentative:
    """Free GPUs/cores after the tasks assigned so far; ``groups[t]`` = -1 while unplaced.

    ``spread``: how a task picks a group inside a server (:meth:`best_group_in_server`):
    False, the tightest fit (002's packing, keeping whole groups for larger tasks); True,
    the group whose socket and PCIe switch have the most room, i.e. the fewest neighbours
    to interfere with (001 §V's two shared resources).
    """

    def __init__(
        self,
        cluster: Cluster,
        free_gpus: np.ndarray,
        free_cores: np.ndarray,
        tasks: JobTasks,
        spread: bool = False,
    ) -> None:
        self.cluster = cluster
        self.tasks = tasks
        self.spread = spread
        self.free_gpus = np.array(free_gpus, dtype=np.int64)
        self.free_cores = np.array(free_cores, dtype=np.float64)
        self.groups = np.full(tasks.count, -1, dtype=np.int64)

    @classmethod
    def on(cls, view: ClusterView, tasks: JobTasks, spread: bool = False) -> Tentative:
        """An attempt at placing ``tasks`` on what ``view`` has free."""
        return cls(view.cluster, view.free_gpus, view.free_cores, tasks, spread)

    @classmethod
    def on_empty(cls, cluster: Cluster, tasks: JobTasks) -> Tentative:
        """An attempt at placing ``tasks`` on ``cluster`` with nothing running."""
        return cls(cluster, cluster.group_gpus, cluster.socket_cores, tasks)

    # ------------------------------------------------------------------ state
    @property
    def unplaced(self) -> np.ndarray:
        """Indices of the tasks not assigned yet, in task order."""
        return np.flatnonzero(self.groups < 0)

    @property
    def complete(self) -> bool:
        """True once every task has a group."""
        return bool((self.groups >= 0).all())

    def result(self) -> np.ndarray | None:
        """The task groups when complete, else None (placements never return partial ones)."""
        return self.groups.copy() if self.complete else None

    def checkpoint(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A copy of the state, for :meth:`restore` after a trial that did not work out."""
        return self.free_gpus.copy(), self.free_cores.copy(), self.groups.copy()

    def restore(self, state: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Go back to a :meth:`checkpoint`."""
        self.free_gpus, self.free_cores, self.groups = (array.copy() for array in state)

    def used_servers(self) -> np.ndarray:
        """Boolean per server: True where this job already has a task."""
        used = np.zeros(self.cluster.num_servers, dtype=bool)
        placed = self.groups[self.groups >= 0]
        used[self.cluster.group_server[placed]] = True
        return used

    # ------------------------------------------------------------------ fitting
    def fitting_groups(self, task: int) -> np.ndarray:
        """Boolean per GPU group: True where ``task`` fits now."""
        gpus, cpus = int(self.tasks.gpus[task]), float(self.tasks.cpus[task])
        cores = self.free_cores[self.cluster.group_socket]
        return (self.free_gpus >= gpus) & (cores >= cpus - CORE_TOLERANCE)

    def server_capacity(self, kind: TaskKind) -> np.ndarray:
        """Tasks of ``kind`` each server can still take."""
        return server_capacity(self.cluster, self.free_gpus, self.free_cores, kind.gpus, kind.cpus)

    def server_room(self, server: int, kinds: tuple[TaskKind, ...]) -> tuple[int, float, list[int]]:
        """One server's free GPUs, free cores and room for tasks of each of ``kinds``, now
        (what :meth:`server_free` and :meth:`server_capacity` give it, for one server)."""
        cluster = self.cluster
        group_start, group_stop = cluster.server_group_offsets[server : server + 2]
        socket_start, socket_stop = cluster.server_socket_offsets[server : server + 2]
        free_gpus = self.free_gpus[group_start:group_stop]
        free_cores = self.free_cores[socket_start:socket_stop]
        local_socket = cluster.group_socket[group_start:group_stop] - socket_start
        capacities = [
            int(sockets_capacity(local_socket, free_gpus, free_cores, kind.gpus, kind.cpus).sum())
            for kind in kinds
        ]
        return int(free_gpus.sum()), float(free_cores.sum()), capacities

    def server_free(self) -> tuple[np.ndarray, np.ndarray]:
        """``(free GPUs, free cores)`` per server."""
        return server_sums(self.cluster, self.free_gpus, self.free_cores)

    # ------------------------------------------------------------------ assigning
    def assign(self, task: int, group: int) -> None:
        """Put ``task`` on ``group`` (the caller checked that it fits)."""
        self.free_gpus[group] -= int(self.tasks.gpus[task])
        self.free_cores[self.cluster.group_socket[group]] -= float(self.tasks.cpus[task])
        self.groups[task] = group

    def best_group_in_server(self, task: int, server: int) -> int:
        """The group of ``server`` for ``task``, or -1 when none fits.

        Preference: a group already holding this job's tasks (talk over PCIe, not QPI),
        then the tightest fit (fewest free GPUs, keeping whole groups for larger tasks) --
        or, with :attr:`spread`, the most free cores on the group's socket, then the most
        free GPUs in the group --, then the lowest index.
        """
        cluster = self.cluster
        start, stop = cluster.server_group_offsets[server : server + 2].tolist()
        need_gpus, need_cpus = int(self.tasks.gpus[task]), float(self.tasks.cpus[task])
        free_gpus = self.free_gpus[start:stop].tolist()
        cores = self.free_cores[cluster.group_socket[start:stop]].tolist()
        hosting = set(self.groups.tolist())
        offset = _best_offset(free_gpus, cores, hosting, start, need_gpus, need_cpus, self.spread)
        return start + offset if offset >= 0 else -1

    def fill_server(self, server: int, tasks: np.ndarray) -> int:
        """Assign as many of ``tasks`` (in order) to ``server`` as fit; returns how many.

        Each task goes where :meth:`best_group_in_server` would put it, given the tasks
        assigned before it; the server's few groups are read into Python numbers once,
        since a numpy call per task and group costs more than the arithmetic.
        """
        cluster = self.cluster
        start, stop = cluster.server_group_offsets[server : server + 2].tolist()
        free_gpus = self.free_gpus[start:stop].tolist()
        sockets = cluster.group_socket[start:stop].tolist()
        cores = {socket: float(self.free_cores[socket]) for socket in sockets}
        hosting = set(self.groups.tolist())
        demands = self.tasks.gpus.tolist(), self.tasks.cpus.tolist()
        placed: list[tuple[int, int]] = []
        failed_kinds: set[int] = set()
        for task in tasks.tolist():
            kind = 0 if task < self.tasks.num_workers else 1
            if kind in failed_kinds:
                continue  # an identical task did not fit; neither will this one
            need_gpus, need_cpus = demands[0][task], demands[1][task]
            group_cores = [cores[socket] for socket in sockets]
            best = _best_offset(
                free_gpus, group_cores, hosting, start, need_gpus, need_cpus, self.spread
            )
            if best < 0:
                failed_kinds.add(kind)
                continue
            free_gpus[best] -= need_gpus
            cores[sockets[best]] -= need_cpus
            hosting.add(start + best)
            placed.append((task, start + best))
        for task, group in placed:
            self.groups[task] = group
        if placed:
            self.free_gpus[start:stop] = free_gpus
            for socket, free in cores.items():
                self.free_cores[socket] = free
        return len(placed)


def _best_offset(
    free_gpus: list[int],
    group_cores: list[float],
    hosting: set[int],
    start: int,
    need_gpus: int,
    need_cpus: float,
    spread: bool = False,
) -> int:
    """Offset (from group ``start``) of a server's group for a task, or -1 when none fits:
    a group already holding the job's tasks, then the tightest fit (or with ``spread`` the
    most free cores, then GPUs), then the lowest index
    (:meth:`Tentative.best_group_in_server`). ``free_gpus`` and ``group_cores`` (its
    socket's free cores) list the server's groups; a server has a handful of groups, so
    plain Python beats numpy's per-call overhead."""
    best, best_key = -1, None
    for offset, (free, cores) in enumerate(zip(free_gpus, group_cores, strict=True)):
        if free < need_gpus or cores < need_cpus - CORE_TOLERANCE:
            continue
        elsewhere = start + offset not in hosting
        key = (elsewhere, -cores, -free) if spread else (elsewhere, free)
        if best_key is None or key < best_key:
            best, best_key = offset, key
    return best


class ServerRoom:
    """Per server: free GPUs, free cores and room for each task kind of one attempt.

    Built once (vectorized) and refreshed one server at a time after that server is
    filled, so a placement that walks many servers does not rescan the cluster each step.
    """

    def __init__(self, attempt: Tentative, allowed: np.ndarray | None = None) -> None:
        self.attempt = attempt
        self.allowed = allowed
        self.free_gpus, self.free_cores = attempt.server_free()
        self.kinds = attempt.tasks.kinds
        self.capacity = [attempt.server_capacity(kind) for kind in self.kinds]

    @classmethod
    def for_job(cls, view: ClusterView, tasks: JobTasks) -> ServerRoom | None:
        """The room of a fresh attempt at placing ``tasks`` on what ``view`` has free, or
        None when the job could never fit there (:meth:`could_ever_fit`)."""
        room = cls(Tentative.on(view, tasks))
        return room if room.could_ever_fit() else None

    def could_ever_fit(self) -> bool:
        """Whether each kind fits in the allowed servers taken together (exact per kind)."""
        for kind, capacity in zip(self.kinds, self.capacity, strict=True):
            room = capacity if self.allowed is None else capacity[self.allowed]
            if int(room.sum()) < kind.count:
                return False
        return True

    def _remaining(self) -> list[tuple[int, int]]:
        todo = self.attempt.groups < 0
        counts = [
            (index, int(todo[kind.start : kind.stop].sum()))
            for index, kind in enumerate(self.kinds)
        ]
        return [(index, count) for index, count in counts if count]

    def holds_all(self) -> np.ndarray:
        """Boolean per server: it passes the necessary test for all unplaced tasks (callers
        confirm by filling: the kinds compete for one server's cores)."""
        remaining = self._remaining()
        kinds = self.kinds
        mask = self.free_gpus >= sum(kinds[i].gpus * count for i, count in remaining)
        mask &= (
            self.free_cores >= sum(kinds[i].cpus * count for i, count in remaining) - CORE_TOLERANCE
        )
        for index, count in remaining:
            mask &= self.capacity[index] >= count
        return mask if self.allowed is None else mask & self.allowed

    def takes_some(self) -> np.ndarray:
        """Boolean per server: it has room for at least one unplaced task."""
        mask = np.zeros(len(self.free_gpus), dtype=bool)
        for index, _ in self._remaining():
            mask |= self.capacity[index] > 0
        return mask if self.allowed is None else mask & self.allowed

    def refresh(self, server: int) -> None:
        """Recompute ``server``'s entries after the attempt changed it."""
        gpus, cores, capacities = self.attempt.server_room(server, self.kinds)
        self.free_gpus[server] = gpus
        self.free_cores[server] = cores
        for capacity, value in zip(self.capacity, capacities, strict=True):
            capacity[server] = value


def fill_server_by_server(
    room: ServerRoom,
    whole_rank: Callable[[], np.ndarray],
    partial_rank: Callable[[], np.ndarray],
) -> np.ndarray | None:
    """Place the job one server at a time, the fewest servers greedily: among the servers
    that hold every unplaced task whole, the first by ``whole_rank()`` that does once
    filled (``holds_all`` is a necessary test only); when none does, the first by
    ``partial_rank()`` among those that take some, filled as far as it goes; then again.
    Ranks are per-server arrays, lowest first, ties to the lower index, asked afresh after
    each fill. The groups, or None when the job does not fit.

    The walk of 002's packing (:mod:`.packing`), 004's depth-first (:mod:`.nodes`) and
    001's Tetris (:mod:`.tetris`), which differ only in their ranks.
    """
    attempt = room.attempt
    while True:
        todo = attempt.unplaced
        if not len(todo):
            return attempt.result()
        holds = room.holds_all()
        whole = np.where(holds, whole_rank(), np.inf) if holds.any() else holds[:0]
        while whole.size and np.isfinite(whole.min()):
            server = int(whole.argmin())
            saved = attempt.checkpoint()
            if attempt.fill_server(server, todo) == len(todo):
                return attempt.result()
            attempt.restore(saved)
            whole[server] = np.inf
        takes_some = room.takes_some()
        if not takes_some.any():
            return None
        server = int(np.where(takes_some, partial_rank(), np.inf).argmin())
        if attempt.fill_server(server, todo) == 0:
            return None
        room.refresh(server)
