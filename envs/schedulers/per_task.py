"""Placements that choose a GPU group for each task in turn by a score (001's baselines;
its Tetris fills whole servers instead: :mod:`.tetris`).

Tasks are taken workers first, then parameter servers; each goes to the best-scoring GPU
group it fits (its GPUs in the group, its cores on the group's socket), and the next task
sees that claim. Ties go to the lower group index unless a placement says otherwise. If
some task fits nowhere the job is not placed at all.

- **load-balancing** (001 §VI-A, as in Mesos and Kubernetes): a server's load is the sum
  over resource types of used / capacity; the task goes to the least-loaded server, and
  inside it to the least-loaded group (group GPUs used / its GPUs + socket cores used /
  its cores).
- **lif**, least interference first (001 §VI-A): a server's interference level is the
  summed slowdown (001 §V, the simulator's coefficients) of all the workers on it; the
  task goes where that level *after* adding it is lowest -- the other jobs' workers on
  that server slowed by the task's cores and PCIe traffic, plus the task's own slowdown if
  it is a worker. Ties (typically 0 where nothing would interfere) go to a server already
  holding this job, then to the lower group index, so tasks that hurt nobody consolidate.
- **random**: a uniformly random group among those the task fits, from a seeded
  generator.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.schedulers.base import Placement
from envs.schedulers.capacity import server_sums
from envs.schedulers.loads import InterferenceLoads
from envs.schedulers.tasks import JobTasks
from envs.schedulers.tentative import Tentative
from envs.schedulers.view import ClusterView
from envs.sim import Simulator


class PerTaskPlacement(Placement):
    """Greedy task-by-task placement: subclasses score the candidate groups."""

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        attempt = Tentative.on(view, tasks)
        context = self.prepare(sim, tasks, view)
        for task in range(tasks.count):
            candidates = np.flatnonzero(attempt.fitting_groups(task))
            if not len(candidates):
                return None
            group = self.pick(context, attempt, task, candidates)
            attempt.assign(task, group)
            self.assigned(context, attempt, task, group)
        return attempt.result()

    def prepare(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> Any:
        """Per-job state for :meth:`pick` (default: none)."""
        return None

    @abstractmethod
    def pick(self, context: Any, attempt: Tentative, task: int, candidates: np.ndarray) -> int:
        """The group for ``task`` among ``candidates`` (groups it fits, ascending)."""

    def assigned(self, context: Any, attempt: Tentative, task: int, group: int) -> None:
        """Update :meth:`prepare`'s state after ``task`` went to ``group`` (default: none)."""


@dataclass
class _LoadContext:
    """Load balancing's per-job state: capacities and the current load of every server."""

    server_gpus: np.ndarray
    server_cores: np.ndarray
    load: np.ndarray


class LoadBalancing(PerTaskPlacement):
    """Least normalized server load (GPUs used / GPUs + cores used / cores), then group load."""

    name = "load-balancing"

    def prepare(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> _LoadContext:
        cluster = view.cluster
        free_gpus, free_cores = server_sums(cluster, view.free_gpus, view.free_cores)
        # The cluster's own per-server totals (cached), as floats for the load's ratios.
        server_gpus = cluster.server_gpus.astype(np.float64)
        server_cores = cluster.server_cores.astype(np.float64)
        load = (server_gpus - free_gpus) / server_gpus + (server_cores - free_cores) / server_cores
        return _LoadContext(server_gpus, server_cores, load)

    def pick(
        self, context: _LoadContext, attempt: Tentative, task: int, candidates: np.ndarray
    ) -> int:
        cluster = attempt.cluster
        server_load = context.load[cluster.group_server[candidates]]
        # Candidates ascend, so the first minimum is the lowest index among equals.
        lightest = candidates[server_load == server_load.min()]
        sockets = cluster.group_socket[lightest]
        group_gpus = cluster.group_gpus[lightest]
        socket_cores = cluster.socket_cores[sockets]
        group_load = (group_gpus - attempt.free_gpus[lightest]) / group_gpus
        group_load += (socket_cores - attempt.free_cores[sockets]) / socket_cores
        return int(lightest[np.argmin(group_load)])

    def assigned(self, context: _LoadContext, attempt: Tentative, task: int, group: int) -> None:
        # Recompute the one server that changed, by the same formula as the others.
        cluster = attempt.cluster
        server = int(cluster.group_server[group])
        groups = slice(*cluster.server_group_offsets[server : server + 2])
        sockets = slice(*cluster.server_socket_offsets[server : server + 2])
        gpus, cores = context.server_gpus[server], context.server_cores[server]
        context.load[server] = (gpus - attempt.free_gpus[groups].sum()) / gpus + (
            cores - attempt.free_cores[sockets].sum()
        ) / cores


@dataclass
class _InterferenceContext:
    """LIF's per-job state: everyone's loads (this job's tasks included) and the job's own."""

    loads: InterferenceLoads
    socket_cpu: np.ndarray
    server_cpu: np.ndarray
    group_pcie: np.ndarray
    own_socket_cpu: np.ndarray
    own_server_cpu: np.ndarray
    own_group_pcie: np.ndarray
    # Other jobs' workers (rows of the loads table) and, per (worker, group of its server)
    # pair, the pair's worker row and group: who a new task on that group would slow.
    worker_rows: np.ndarray
    pair_row: np.ndarray
    pair_group: np.ndarray
    task_is_worker: np.ndarray
    task_cpu: np.ndarray
    task_pcie: np.ndarray


class LeastInterference(PerTaskPlacement):
    """001's LIF: the lowest predicted interference level of the server after the task."""

    name = "lif"

    def key_columns(self, sim: Simulator) -> list[np.ndarray]:
        # The scores depend on the job's CPU and PCIe profile, not only its task shape.
        return [np.asarray(sim.cpu_use), np.asarray(sim.pcie_use)]

    def prepare(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> _InterferenceContext:
        cluster = view.cluster
        loads = view.loads
        table = loads.table()
        is_worker = table[4]
        server = table[3]
        worker_rows = np.flatnonzero(is_worker)
        groups_per_server = np.diff(cluster.server_group_offsets)
        counts = groups_per_server[server[worker_rows]]
        pair_row = np.repeat(worker_rows, counts)
        # Each worker row expands to the groups of its server: first group + 0, 1, ...
        starts = np.repeat(cluster.server_group_offsets[server[worker_rows]], counts)
        within = np.arange(len(pair_row)) - np.repeat(np.cumsum(counts) - counts, counts)
        task_is_worker, task_cpu, task_pcie = loads.task_loads(tasks.job, tasks.count)
        return _InterferenceContext(
            loads=loads,
            socket_cpu=loads.socket_cpu.copy(),
            server_cpu=loads.server_cpu.copy(),
            group_pcie=loads.group_pcie.copy(),
            own_socket_cpu=np.zeros(cluster.num_sockets),
            own_server_cpu=np.zeros(cluster.num_servers),
            own_group_pcie=np.zeros(cluster.num_gpu_groups),
            worker_rows=worker_rows,
            pair_row=pair_row,
            pair_group=starts + within,
            task_is_worker=task_is_worker,
            task_cpu=task_cpu,
            task_pcie=task_pcie,
        )

    def pick(
        self, context: _InterferenceContext, attempt: Tentative, task: int, candidates: np.ndarray
    ) -> int:
        score = self.levels_after(context, attempt, task)[candidates]
        away = ~attempt.used_servers()[attempt.cluster.group_server[candidates]]
        best = np.lexsort((candidates, away, score))
        return int(candidates[best[0]])

    def levels_after(
        self, context: _InterferenceContext, attempt: Tentative, task: int
    ) -> np.ndarray:
        """Per GPU group: the interference level of its server if ``task`` went there."""
        cluster = attempt.cluster
        loads = context.loads
        _, group, socket, server, _, cpu, pcie, own_socket, own_server, own_group = loads.table()
        add_cpu, add_pcie = float(context.task_cpu[task]), float(context.task_pcie[task])

        # Other jobs' workers now: loads minus their own job's part.
        rows = context.worker_rows
        same = context.socket_cpu[socket[rows]] - own_socket[rows]
        other = context.server_cpu[server[rows]] - own_server[rows] - same
        shared_pcie = context.group_pcie[group[rows]] - own_group[rows]
        before = loads.slowdown(
            loads.shared_cpu(same, other, socket[rows]), cpu[rows], shared_pcie, pcie[rows]
        )
        level = np.bincount(server[rows], weights=before, minlength=cluster.num_servers)

        # The same workers with the task added on each group of their server.
        at = np.searchsorted(rows, context.pair_row)
        pair_group = context.pair_group
        on_socket = cluster.group_socket[pair_group] == socket[context.pair_row]
        after = loads.slowdown(
            loads.shared_cpu(
                same[at] + add_cpu * on_socket,
                other[at] + add_cpu * ~on_socket,
                socket[context.pair_row],
            ),
            cpu[context.pair_row],
            shared_pcie[at] + add_pcie * (pair_group == group[context.pair_row]),
            pcie[context.pair_row],
        )
        increase = np.bincount(
            pair_group, weights=after - before[at], minlength=cluster.num_gpu_groups
        )
        # bincount of nothing is an int array; the sum must be float for the += below.
        result = (level[cluster.group_server] + increase).astype(np.float64)
        if context.task_is_worker[task]:
            result += self._own_slowdown(context, attempt, task)
        return result

    @staticmethod
    def _own_slowdown(context: _InterferenceContext, attempt: Tentative, task: int) -> np.ndarray:
        """Per GPU group: the slowdown the worker ``task`` would see there from other jobs."""
        cluster = attempt.cluster
        loads = context.loads
        sockets = cluster.group_socket
        same = context.socket_cpu[sockets] - context.own_socket_cpu[sockets]
        other = (
            context.server_cpu[cluster.group_server]
            - context.own_server_cpu[cluster.group_server]
            - same
        )
        shared_pcie = context.group_pcie - context.own_group_pcie
        count = cluster.num_gpu_groups
        return loads.slowdown(
            loads.shared_cpu(same, other, sockets),
            np.full(count, context.task_cpu[task]),
            shared_pcie,
            np.full(count, context.task_pcie[task]),
        )

    def assigned(
        self, context: _InterferenceContext, attempt: Tentative, task: int, group: int
    ) -> None:
        cluster = attempt.cluster
        socket, server = cluster.group_socket[group], cluster.group_server[group]
        add_cpu, add_pcie = context.task_cpu[task], context.task_pcie[task]
        for totals, own, where, value in (
            (context.socket_cpu, context.own_socket_cpu, socket, add_cpu),
            (context.server_cpu, context.own_server_cpu, server, add_cpu),
            (context.group_pcie, context.own_group_pcie, group, add_pcie),
        ):
            totals[where] += value
            own[where] += value


class RandomPlacement(PerTaskPlacement):
    """A uniformly random fitting group per task, from the seeded ``rng``."""

    name = "random"
    memoizable = False

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def pick(self, context: Any, attempt: Tentative, task: int, candidates: np.ndarray) -> int:
        return int(candidates[self.rng.integers(len(candidates))])
