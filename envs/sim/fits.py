"""Whether a job's tasks can be placed at all: on the whole cluster, empty.

The simulator places every task (worker or parameter server) on one GPU group; it takes
its GPUs from that group and its cores from the group's socket. A job can exceed no
single group or socket and still never fit: 3 workers of 2 GPUs on two groups of 3 GPUs,
or 4 workers of 8 cores on one socket of 16. Such a job waits forever, and a run ends in
a stall instead of an error that names it. This module answers the question exactly, on
the empty cluster, per distinct job shape:

* per socket, the most workers it holds beside ``p`` parameter servers (its groups' GPUs
  after the servers' share, split group by group; its cores after theirs);
* over sockets, the most workers beside all ``P`` servers (a max-plus sum over the
  sockets that hold servers; the others hold workers only). Sockets of one layout are
  counted once each, and at most ``P`` of them hold servers.

It reads the cluster's arrays only (``group_gpus``, ``group_socket``, ``socket_cores``), so
it serves the simulator's own check and the dropping of such jobs before a run.
"""

from __future__ import annotations

import numpy as np

from envs.topology import Cluster
from envs.workload import Workload

CORE_SLACK = 1e-9
"""Cores of rounding a placement may exceed a socket by (as the simulator's own check)."""


def tasks_fit(
    cluster: Cluster,
    num_workers: np.ndarray,
    worker_gpus: np.ndarray,
    worker_cpus: np.ndarray,
    num_ps: np.ndarray,
    ps_gpus: np.ndarray,
    ps_cpus: np.ndarray,
) -> np.ndarray:
    """Boolean per job: its tasks (GPUs whole, as the simulator rounds them) can all be
    placed on the empty cluster at once."""
    shapes = np.column_stack(
        [num_workers, worker_gpus, worker_cpus, num_ps, ps_gpus, ps_cpus]
    ).astype(np.float64)
    if not len(shapes):
        return np.zeros(0, dtype=bool)
    distinct, inverse = np.unique(shapes, axis=0, return_inverse=True)
    layouts = _socket_layouts(cluster)
    fits = np.array([_shape_fits(layouts, *shape) for shape in distinct.tolist()])
    return fits[inverse.reshape(-1)]


def workload_fits(cluster: Cluster, workload: Workload) -> np.ndarray:
    """:func:`tasks_fit` for a workload's jobs (their GPU demands rounded up)."""
    return tasks_fit(
        cluster,
        workload.num_workers,
        np.ceil(workload.worker_demand[:, 0]),
        workload.worker_demand[:, 1],
        workload.num_ps,
        np.ceil(workload.ps_demand[:, 0]),
        workload.ps_demand[:, 1],
    )


def _socket_layouts(cluster: Cluster) -> list[tuple[np.ndarray, float, int]]:
    """``(GPUs per group, cores, how many sockets)`` per distinct socket layout."""
    sockets = cluster.group_socket
    per_socket = np.bincount(sockets, minlength=cluster.num_sockets)
    widest = int(per_socket.max()) if len(per_socket) else 0
    # One row per socket: its groups' GPUs in ascending order, -1 padded, then its cores.
    order = np.lexsort((cluster.group_gpus, sockets))
    first = np.concatenate([[0], np.cumsum(per_socket)[:-1]])
    slot = np.arange(len(order)) - first[sockets[order]]
    rows = np.full((cluster.num_sockets, widest + 1), -1.0)
    rows[sockets[order], slot] = cluster.group_gpus[order]
    rows[:, widest] = cluster.socket_cores
    layouts, counts = np.unique(rows, axis=0, return_counts=True)
    return [
        (row[:widest][row[:widest] >= 0].astype(np.int64), float(row[widest]), int(count))
        for row, count in zip(layouts, counts, strict=True)
    ]


def _shape_fits(
    layouts: list[tuple[np.ndarray, float, int]],
    workers: float,
    worker_gpus: float,
    worker_cpus: float,
    servers: float,
    server_gpus: float,
    server_cpus: float,
) -> bool:
    """Whether ``workers`` + ``servers`` tasks of these sizes fit the sockets of ``layouts``."""
    needed_servers = int(servers)
    total = np.full(needed_servers + 1, -np.inf)
    total[0] = 0.0
    for groups, cores, count in layouts:
        most = _socket_workers(
            groups, cores, needed_servers, worker_gpus, worker_cpus, server_gpus, server_cpus
        )
        hosts = min(count, needed_servers)
        for _ in range(hosts):
            total = _max_plus(total, most)
        if count > hosts:  # the sockets left hold workers only
            total = total + (count - hosts) * most[0]
    return bool(total[needed_servers] >= workers)


def _socket_workers(
    groups: np.ndarray,
    cores: float,
    servers: int,
    worker_gpus: float,
    worker_cpus: float,
    server_gpus: float,
    server_cpus: float,
) -> np.ndarray:
    """``[p]``: the most workers one socket holds beside ``p`` parameter servers (-inf:
    it cannot hold ``p``), for p = 0..servers."""
    if not len(groups):
        return np.concatenate([[0.0], np.full(servers, -np.inf)])  # nowhere to put a task
    by_gpus = _group_workers(groups, servers, worker_gpus, server_gpus)
    cores_left = cores - server_cpus * np.arange(servers + 1)
    if worker_cpus > 0:
        by_cores = np.floor((cores_left + CORE_SLACK) / worker_cpus)
    else:
        by_cores = np.full(servers + 1, np.inf)
    most = np.minimum(by_gpus, by_cores)
    most[cores_left < -CORE_SLACK] = -np.inf
    return most


def _group_workers(
    groups: np.ndarray, servers: int, worker_gpus: float, server_gpus: float
) -> np.ndarray:
    """``[p]``: the most workers a socket's ``groups`` hold by GPUs beside ``p`` servers."""

    def workers_in(gpus_left: np.ndarray) -> np.ndarray:
        if worker_gpus > 0:
            return np.floor(gpus_left / worker_gpus)
        return np.full(len(gpus_left), np.inf)

    if server_gpus <= 0:
        return np.full(servers + 1, workers_in(groups.astype(float)).sum())
    best = np.full(servers + 1, -np.inf)
    best[0] = 0.0
    for gpus in groups.tolist():
        # This group holding q servers (as many as its GPUs allow) and workers in the rest.
        on_group = np.full(servers + 1, -np.inf)
        q = np.arange(min(servers, int(gpus // server_gpus)) + 1)
        on_group[q] = workers_in(gpus - server_gpus * q)
        best = _max_plus(best, on_group)
    return best


def _max_plus(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``[p] = max over a + b = p of first[a] + second[b]``, p up to the arrays' length."""
    size = len(first)
    combined = np.full(size, -np.inf)
    for a in np.flatnonzero(first > -np.inf).tolist():
        rest = second[: size - a]
        # -inf (cannot hold) wins over +inf (no limit): inf + -inf would be NaN.
        candidate = np.where(rest > -np.inf, first[a] + rest, -np.inf)
        combined[a:] = np.maximum(combined[a:], candidate)
    return combined
