"""A job's step time alone on a placement, and the "j GPUs on each of 2^i servers" shapes.

What profiling formulations share (002's profile-driven simulator, 000's job lengths):
:func:`alone_communication_s` prices one step's communication of a job with no other job on
any link, with the simulator's own pair list, routes and bottleneck rule;
:func:`shape_gpus_per_server` and :func:`shape_groups` lay a job out from concentrated to
scattered on an empty cluster.
"""

from __future__ import annotations

import numpy as np

from envs.sim.speed import alone_communication_seconds, routed_pairs
from envs.topology import Cluster


def alone_communication_s(
    cluster: Cluster,
    collective: str,
    num_workers: int,
    num_ps: int,
    gradient_mb: float,
    task_groups: np.ndarray,
) -> float:
    """Seconds of one step's communication of a job alone on ``task_groups`` (workers first).

    The simulator's own pair list (:func:`envs.sim.communication.communication_pairs`),
    routes and bottleneck rule (:func:`envs.sim.speed.alone_communication_seconds`) with no other
    job on any link.
    """
    groups = np.asarray(task_groups, dtype=np.int64)
    pairs = routed_pairs(cluster, 0, collective, num_workers, num_ps, gradient_mb, groups)
    return alone_communication_seconds(pairs, cluster.link_gbps)


def shape_gpus_per_server(gpus: int, shapes: int, servers: int, gpus_per_server: int) -> list[int]:
    """GPUs per server of the ``shapes`` profiling placements of a ``gpus``-GPU job."""
    fewest = -(-gpus // servers)  # more spread than this needs more servers than exist
    return [max(fewest, min(gpus, gpus_per_server) >> shape, 1) for shape in range(shapes)]


def shape_groups(cluster: Cluster, gpus: int, per_server: int) -> np.ndarray:
    """Task groups (one per 1-GPU worker) of ``per_server`` GPUs on each of the first
    servers of the empty ``cluster``, filling every server's groups in order."""
    groups: list[int] = []
    server = 0
    while len(groups) < gpus:
        take = min(per_server, gpus - len(groups))
        first, last = cluster.server_group_offsets[server], cluster.server_group_offsets[server + 1]
        for group in range(int(first), int(last)):
            room = min(int(cluster.group_gpus[group]), take)
            groups.extend([group] * room)
            take -= room
            if not take:
                break
        if take:
            raise ValueError(
                f"a server of this cluster has fewer than {per_server} GPUs; cannot build "
                "the profiling shape"
            )
        server += 1
    return np.asarray(groups, dtype=np.int64)
