"""CuSH's allocation policies and locality penalties (004 §3.1), over the simulator's free arrays.

**Allocation.** A job takes ``gpus`` GPUs and ``cpus`` whole CPU sockets, wherever they are
free (a CuSH job fits when the cluster has that many free; the two kinds of resource are
independent, so both policies place every job that fits):

* **depth-first** -- "utilizing as few nodes as possible": nodes with the most free GPUs
  are filled first, the fewest that can hold the job; the last of them is the node with the
  fewest free GPUs that still holds the remainder (best fit, so whole nodes stay whole).
* **breadth-first** -- "utilizing as many nodes as possible": water-filling, one GPU per
  node per round (nodes with the most free GPUs first), so no node gets a second GPU of the
  job while another node with room has none.

CPUs follow the same rule, preferring the nodes that hold the job's GPUs. Ties go to the
lower node index; inside a node the lowest free GPUs and sockets are taken. These are
vectorized over nodes (podsched's :class:`~envs.schedulers.DepthFirst` /
:class:`~envs.schedulers.BreadthFirst` are first-fit and round-robin in node index order,
task by task in Python, which neither minimizes nodes nor scales to 500-GPU jobs).

**Penalties** (004 §3.1: service time ``st_j = t_j + p_j``, here ``p_j = f_j t_j``). 004
shows Fig. 2's trends, not its numbers; chosen, for a job of ``g`` GPUs that the placement
spreads over ``k`` nodes of ``S`` GPUs, where ``k_min = ceil(g / S)`` and ``k_max = min(g,
N)`` are the fewest and most nodes it could span:

* spread ``s = (k - k_min) / (k_max - k_min)``: 0 packed as tightly as possible, 1 spread
  as widely as possible (0 when ``k_min == k_max``: one GPU, or no choice at all);
* dgemm (compute bound; its GPUs copy matrices, over NVLink inside a node and over the
  network between nodes): ``f = dgemm_remote_penalty x s x g / penalty_scale_gpus``;
* daxpy (network bound; the GPUs of one node share its network links):
  ``f = daxpy_shared_penalty x (1 - s) x g / penalty_scale_gpus``.

Defaults 0.5, 1.0 and 512 GPUs (a whole 128-node Sierra), i.e. slopes of 0.5 and 1.0 per
512 GPUs: a 256-GPU dgemm on all 128 nodes instead of 64 runs 1.25x as long, a 256-GPU
daxpy on 64 whole nodes instead of 128 1.5x; a typical 128-GPU job of the default sets
loses 12.5% (dgemm breadth-first) or 25% (daxpy depth-first). So dgemm is
faster depth-first and daxpy breadth-first (Fig. 2), the loss is linear in the job's size
(004's "linear extrapolation" of measured points; larger jobs pay more, Fig. 7), daxpy's
more than dgemm's (with a 50/50 mix breadth-first wins, as in Table 1's Sierra rows), and
a placement that fragmentation pushes away from its policy's ideal pays for where the job
actually lands.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.topology import Cluster

DEPTH_FIRST, BREADTH_FIRST = 0, 1
DGEMM, DAXPY = 0, 1


@dataclass(frozen=True, eq=False)
class NodeLayout:
    """Node-level index arrays of a flat CuSH cluster (one node = one server)."""

    cluster: Cluster
    gpus_per_node: int
    group_node: np.ndarray
    node_group_starts: np.ndarray
    socket_node: np.ndarray
    node_socket_starts: np.ndarray
    socket_group: np.ndarray
    socket_cores: np.ndarray
    gpu_group: np.ndarray
    group_gpu_starts: np.ndarray

    @staticmethod
    def of(cluster: Cluster) -> NodeLayout:
        """The layout of ``cluster``; every node must have the same GPUs and GPU groups on
        every socket (a CPU task sits on one of its socket's groups)."""
        node_gpus = cluster.server_gpus
        if (node_gpus != node_gpus[0]).any():
            raise ValueError("CuSH needs nodes of one size (all with the same number of GPUs)")
        socket_group = np.full(cluster.num_sockets, -1, dtype=np.int64)
        # Reversed so the lowest group of each socket is written last and kept.
        groups = np.arange(cluster.num_gpu_groups)[::-1]
        socket_group[cluster.group_socket[groups]] = groups
        if (socket_group < 0).any():
            raise ValueError("CuSH needs a GPU group on every CPU socket")
        return NodeLayout(
            cluster=cluster,
            gpus_per_node=int(node_gpus[0]),
            group_node=cluster.group_server.astype(np.int64),
            node_group_starts=cluster.server_group_offsets[:-1].astype(np.int64),
            socket_node=cluster.socket_server.astype(np.int64),
            node_socket_starts=cluster.server_socket_offsets[:-1].astype(np.int64),
            socket_group=socket_group,
            socket_cores=cluster.socket_cores.astype(np.float64),
            gpu_group=cluster.gpu_group.astype(np.int64),
            group_gpu_starts=cluster.group_gpu_offsets[:-1].astype(np.int64),
        )

    @property
    def num_nodes(self) -> int:
        """N."""
        return int(self.node_group_starts.shape[0])

    def free_sockets(self, free_cores: np.ndarray) -> np.ndarray:
        """Per socket: True when all its cores are free (a CuSH CPU takes a socket whole)."""
        return free_cores >= self.socket_cores - 1e-9


@dataclass(frozen=True, eq=False)
class Allocation:
    """Where a job goes: one GPU group per task (workers, then CPU tasks), the GPU ids of
    the workers (task by task), its GPUs per node and the sockets its CPUs take."""

    task_groups: np.ndarray
    gpu_ids: np.ndarray
    node_gpus: np.ndarray
    sockets: np.ndarray

    @property
    def nodes_used(self) -> int:
        """Nodes holding at least one of the job's GPUs."""
        return int(np.count_nonzero(self.node_gpus))


def node_counts(
    free: np.ndarray, demand: int, policy: int, preferred: np.ndarray | None = None
) -> np.ndarray:
    """Units per node for ``demand`` units out of ``free`` per node (``demand <= free.sum()``).

    Nodes are ranked preferred first, then most free, then lowest index; depth-first fills
    them in rank order (the fewest), the last one best fit within its preference class;
    breadth-first water-fills (the level every node reaches, then one more unit to the
    first ranked nodes that have room).
    """
    counts = np.zeros_like(free)
    if demand <= 0:
        return counts
    prefer = np.zeros_like(free) if preferred is None else preferred.astype(free.dtype)
    order = np.lexsort((-free, -prefer))
    if policy == DEPTH_FIRST:
        total = np.cumsum(free[order])
        whole = int(np.searchsorted(total, demand))
        full = order[:whole]
        counts[full] = free[full]
        rest = demand - (int(total[whole - 1]) if whole else 0)
        if rest:
            candidates = order[whole:]
            fits = (free[candidates] >= rest) & (prefer[candidates] == prefer[order[whole]])
            picks = candidates[fits]
            counts[picks[np.lexsort((picks, free[picks]))[0]]] = rest
        return counts
    levels = np.arange(1, int(free.max()) + 1)
    reach = np.minimum(free[:, None], levels[None, :]).sum(axis=0)
    level = int(levels[np.searchsorted(reach, demand)])
    counts = np.minimum(free, level - 1)
    rest = demand - int(counts.sum())
    ranked = order[free[order] >= level]
    counts[ranked[:rest]] += 1
    return counts


def _take_lowest(
    free: np.ndarray, per_owner: np.ndarray, owner: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Per unit (a group of a node, a socket of a node, a GPU of a group): how many of its
    owner's ``per_owner[owner]`` it gives, lowest units first, each at most its ``free``.
    ``starts`` are the owners' first units (units are contiguous per owner)."""
    before = np.cumsum(free) - free
    before = before - before[starts][owner]
    return np.clip(per_owner[owner] - before, 0, free)


def allocate(
    layout: NodeLayout,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    gpu_job: np.ndarray,
    gpus: int,
    cpus: int,
    policy: int,
) -> Allocation | None:
    """Place ``gpus`` GPUs and ``cpus`` sockets by ``policy`` (0 depth-, 1 breadth-first)
    given the simulator's free GPUs per group, free cores per socket and job per GPU (-1
    free); None when the cluster has fewer free."""
    node_free_gpus = np.add.reduceat(free_gpus, layout.node_group_starts)
    socket_free = layout.free_sockets(free_cores).astype(np.int64)
    node_free_sockets = np.add.reduceat(socket_free, layout.node_socket_starts)
    if node_free_gpus.sum() < gpus or node_free_sockets.sum() < cpus:
        return None
    node_gpus = node_counts(node_free_gpus, gpus, policy)
    group_take = _take_lowest(free_gpus, node_gpus, layout.group_node, layout.node_group_starts)
    node_cpus = node_counts(node_free_sockets, cpus, policy, preferred=node_gpus > 0)
    socket_take = _take_lowest(
        socket_free, node_cpus, layout.socket_node, layout.node_socket_starts
    )
    sockets = np.flatnonzero(socket_take)
    task_groups = np.concatenate(
        [np.repeat(np.arange(len(free_gpus)), group_take), layout.socket_group[sockets]]
    )
    # The lowest free GPUs of each group, named here because the simulator's default
    # picks them task by task in Python (slow for jobs of hundreds of GPUs).
    free = (gpu_job < 0).astype(np.int64)
    gpu_ids = np.flatnonzero(
        _take_lowest(free, group_take, layout.gpu_group, layout.group_gpu_starts)
    )
    return Allocation(task_groups, gpu_ids, node_gpus, sockets)


def penalty(
    node_gpus: np.ndarray, kind: int, gpus_per_node: int, coefficient: float, scale_gpus: int
) -> float:
    """The penalty fraction ``f`` of a job of type ``kind`` with ``node_gpus`` GPUs per node
    (module docstring): dgemm pays for its spread, daxpy for its packing, in proportion to
    its GPUs over ``scale_gpus``."""
    gpus = int(node_gpus.sum())
    nodes = int(np.count_nonzero(node_gpus))
    fewest = -(-gpus // gpus_per_node)
    most = min(gpus, node_gpus.shape[0])
    if most == fewest:
        return 0.0  # one GPU, or no choice: every placement spans the same nodes
    spread = (nodes - fewest) / (most - fewest)
    placement = spread if kind == DGEMM else 1.0 - spread
    return coefficient * placement * gpus / scale_gpus
