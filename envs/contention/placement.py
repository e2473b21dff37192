"""Placement options of 000's action space: a job's GPUs split evenly over 2^i nodes.

000 §IV: a candidate job of d GPUs can be placed as "j GPUs on each of 2^i nodes" with
``j x 2^i = d`` -- the slots of the state's right half -- and the action names the nodes.
Here every option is a *node subset* of size 1, 2, 4, ... (all of them, in order of size
then lexicographically), and a (job, subset) pair is valid when ``d / |subset|`` is a whole
number of at most M GPUs and every node of the subset has that many GPUs free.

Inside a node the GPUs go to the tightest GPU group that holds them all, else the emptiest
group first (as 002's packing does across servers), and the job's workers are ordered node
by node, so a ring crosses the network once per node boundary.

Two rules place a job without the agent (:data:`~envs.contention.config.PLACEMENT_RULES`):
``spread`` -- 000's reference scheduler (LAS, SRTF and RL-Hybrid's greedy fallback): the
most nodes the job's shapes allow, never one node when a multi-node shape exists, the
lowest node indices that fit; ``pack`` -- the fewest nodes, the fullest nodes that fit.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from envs.contention.config import ContentionConfig
from envs.topology import Cluster


@dataclass(frozen=True)
class PlacementOptions:
    """The node subsets and which demand class can use which, for one configuration.

    ``subsets[s]``: node ids; ``membership[s, n]``; ``sizes[s]``; ``demands[c]``: GPU
    count of demand class c (sorted ``gpu_choices``); ``per_node[c, s]``: GPUs per node of
    class c on subset s (0 where the shape is invalid); ``cells[c]``: the state's
    right-half cells ``(i, j - 1)`` of class c's shapes.
    """

    subsets: tuple[tuple[int, ...], ...]
    membership: np.ndarray
    sizes: np.ndarray
    demands: np.ndarray
    per_node: np.ndarray
    cells: tuple[tuple[tuple[int, int], ...], ...]

    @staticmethod
    def of(config: ContentionConfig) -> PlacementOptions:
        """The options of ``config``'s cluster and demands."""
        nodes, per_node_max = config.nodes, config.gpus_per_node
        subsets = tuple(
            combo
            for level in range(config.node_levels)
            for combo in itertools.combinations(range(nodes), 1 << level)
        )
        membership = np.zeros((len(subsets), nodes), dtype=bool)
        for index, combo in enumerate(subsets):
            membership[index, list(combo)] = True
        sizes = membership.sum(axis=1)
        demands = np.array(config.gpu_choices, dtype=np.int64)
        per_node = np.where(
            (demands[:, None] % sizes[None, :] == 0)
            & (demands[:, None] // sizes[None, :] <= per_node_max),
            demands[:, None] // sizes[None, :],
            0,
        )
        cells = tuple(
            tuple(
                (level, int(gpus >> level) - 1)
                for level in range(config.node_levels)
                if gpus % (1 << level) == 0 and gpus >> level <= per_node_max
            )
            for gpus in demands.tolist()
        )
        return PlacementOptions(subsets, membership, sizes, demands, per_node, cells)

    @property
    def num_subsets(self) -> int:
        """Number of node subsets (options per job)."""
        return len(self.subsets)

    def feasible(self, demand_class: int, node_free: np.ndarray) -> np.ndarray:
        """Per subset: class ``demand_class`` fits there now (``node_free`` per node)."""
        need = self.per_node[demand_class]
        least_free = np.where(self.membership, node_free[None, :], np.iinfo(np.int64).max).min(
            axis=1
        )
        return (need > 0) & (least_free >= need)

    def choose(self, rule: str, demand_class: int, node_free: np.ndarray) -> int | None:
        """The subset rule ``rule`` (``spread`` or ``pack``) picks, or None if none fits."""
        fits = self.feasible(demand_class, node_free)
        if rule == "spread":
            multi = (self.per_node[demand_class] > 0) & (self.sizes > 1)
            if multi.any():
                fits &= self.sizes > 1
            if not fits.any():
                return None
            largest = self.sizes[fits].max()
            return int(np.flatnonzero(fits & (self.sizes == largest))[0])
        if rule == "pack":
            if not fits.any():
                return None
            smallest = self.sizes[fits].min()
            candidates = np.flatnonzero(fits & (self.sizes == smallest))
            free_sum = (self.membership[candidates] * node_free[None, :]).sum(axis=1)
            return int(candidates[np.argmin(free_sum)])  # argmin: ties to the lower index
        raise ValueError(f"placement rule must be spread or pack, got {rule!r}")


def node_free_gpus(cluster: Cluster, free_gpus: np.ndarray) -> np.ndarray:
    """Free GPUs per node from the simulator's free GPUs per group."""
    return np.add.reduceat(free_gpus, cluster.server_group_offsets[:-1])


def task_groups(
    cluster: Cluster, free_gpus: np.ndarray, nodes: tuple[int, ...], per_node: int
) -> np.ndarray:
    """One GPU group per worker for ``per_node`` GPUs on each of ``nodes``, node by node:
    the tightest group that holds what is left of the node's share, else the emptiest."""
    free = np.array(free_gpus, dtype=np.int64)
    groups: list[int] = []
    for node in nodes:
        first, last = cluster.server_group_offsets[node], cluster.server_group_offsets[node + 1]
        local = np.arange(first, last)
        left = per_node
        while left:
            room = free[local]
            holds = room >= left
            if holds.any():
                group = int(local[holds][np.argmin(room[holds])])
            else:
                group = int(local[np.argmax(room)])
            take = min(left, int(free[group]))
            assert take > 0, "the option was checked to fit"
            groups.extend([group] * take)
            free[group] -= take
            left -= take
    return np.asarray(groups, dtype=np.int64)


def candidate_jobs(waiting: np.ndarray, demand_class: np.ndarray, count: int) -> np.ndarray:
    """000's K candidates: from the head of ``waiting`` (queue order), the first job of
    each GPU demand not seen yet, at most ``count``, in queue order."""
    if not len(waiting):
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(demand_class[waiting], return_index=True)
    return waiting[np.sort(first)[:count]]
