"""How many identical tasks fit where: closed forms over sockets and servers, vectorized.

A task takes all its GPUs from one GPU group and its cores from that group's socket. For
identical tasks of ``g`` GPUs and ``c`` cores, socket ``s`` holds

    min( sum over its groups of floor(free_gpus / g),  floor(free_cores[s] / c) )

of them (a task without GPUs or without cores is bounded by the other resource only), and
a server the sum over its sockets. The formula is exact: each task placed on a socket
lowers both terms by exactly one, so any greedy order reaches it.
"""

from __future__ import annotations

import weakref

import numpy as np

from envs.schedulers.tasks import CORE_TOLERANCE
from envs.topology import Cluster

UNBOUNDED = 1 << 40
"""Capacity of a resource a task does not use (large, yet safe to sum in int64)."""


def group_gpu_capacity(free_gpus: np.ndarray, gpus: int) -> np.ndarray:
    """Tasks of ``gpus`` GPUs each GPU group could hold, by its GPUs alone."""
    if gpus <= 0:
        return np.full(len(free_gpus), UNBOUNDED, dtype=np.int64)
    return free_gpus // gpus


def one_group_per_socket(cluster: Cluster) -> bool:
    """Whether socket c holds exactly GPU group c (Power8, DGX-1): sockets = groups."""
    known = _ONE_GROUP_PER_SOCKET.get(cluster)
    if known is None:
        known = cluster.num_sockets == cluster.num_gpu_groups and bool(
            (cluster.group_socket == np.arange(cluster.num_gpu_groups)).all()
        )
        _ONE_GROUP_PER_SOCKET[cluster] = known
    return known


_ONE_GROUP_PER_SOCKET: weakref.WeakKeyDictionary[Cluster, bool] = weakref.WeakKeyDictionary()


def socket_capacity(
    cluster: Cluster, free_gpus: np.ndarray, free_cores: np.ndarray, gpus: int, cpus: float
) -> np.ndarray:
    """Identical tasks of (``gpus``, ``cpus``) each socket holds; a socket without GPU
    groups holds none, since every task is placed on a GPU group."""
    # The common layouts (one group per socket) skip the regrouping.
    group_socket = None if one_group_per_socket(cluster) else cluster.group_socket
    return sockets_capacity(group_socket, free_gpus, free_cores, gpus, cpus)


def sockets_capacity(
    group_socket: np.ndarray | None,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    gpus: int,
    cpus: float,
) -> np.ndarray:
    """The formula of the module docstring for any run of sockets: ``group_socket[g]``
    indexes ``free_cores`` (None when group g sits alone on socket g)."""
    by_group = group_gpu_capacity(free_gpus, gpus)
    if group_socket is None:
        by_gpus = by_group
    else:
        by_gpus = np.bincount(group_socket, weights=by_group, minlength=len(free_cores))
        by_gpus = by_gpus.astype(np.int64)
    if cpus <= 0:
        return by_gpus
    by_cores = np.floor((free_cores + CORE_TOLERANCE) / cpus).astype(np.int64)
    return np.minimum(by_gpus, np.maximum(by_cores, 0))


def rows_capacity(
    group_socket: np.ndarray | None,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    gpus: int,
    cpus: float,
    slack: float = 0.0,
) -> np.ndarray:
    """:func:`sockets_capacity` summed over the sockets, for many states at once: row ``k``
    of ``free_gpus[K, G]`` and ``free_cores[K, S]`` is one state of the cluster.

    ``slack`` (cores) loosens the core test: callers that built the rows by summing in
    another order than the view does use it to get a superset of the exact answers.
    """
    return rows_socket_capacity(group_socket, free_gpus, free_cores, gpus, cpus, slack).sum(axis=1)


def rows_socket_capacity(
    group_socket: np.ndarray | None,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    gpus: int,
    cpus: float,
    slack: float = 0.0,
) -> np.ndarray:
    """:func:`rows_capacity` per socket: ``[K, S]`` tasks each socket of each state holds."""
    if gpus <= 0:
        by_group = np.full(free_gpus.shape, UNBOUNDED, dtype=np.int64)
    else:
        by_group = free_gpus // gpus
    if group_socket is None:
        by_gpus = by_group
    else:
        by_gpus = np.zeros(free_cores.shape, dtype=np.int64)
        np.add.at(by_gpus, (slice(None), group_socket), by_group)
    if cpus > 0:
        by_cores = np.floor((free_cores + (CORE_TOLERANCE + slack)) / cpus).astype(np.int64)
        by_gpus = np.minimum(by_gpus, np.maximum(by_cores, 0))
    return by_gpus


def server_capacity(
    cluster: Cluster, free_gpus: np.ndarray, free_cores: np.ndarray, gpus: int, cpus: float
) -> np.ndarray:
    """Identical tasks of (``gpus``, ``cpus``) each server holds."""
    per_socket = socket_capacity(cluster, free_gpus, free_cores, gpus, cpus)
    return np.add.reduceat(per_socket, cluster.server_socket_offsets[:-1])


def server_sums(
    cluster: Cluster, free_gpus: np.ndarray, free_cores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(free GPUs, free cores)`` per server."""
    gpus = np.add.reduceat(free_gpus, cluster.server_group_offsets[:-1])
    cores = np.add.reduceat(free_cores, cluster.server_socket_offsets[:-1])
    return gpus, cores
