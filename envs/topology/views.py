"""Graph views a GNN reads (paper 001 §IV-A), as ``edge_index`` arrays for torch_geometric.

- **Inner graph** of a partition, device level: its GPU groups, CPU sockets and the
  switches that belong to it; edges are its PCIe, inter-socket, server-port and switch
  links. Server level: servers replace their sockets and groups (001's server-level
  variant), a server's ports into one switch merging into one edge. Optionally the
  partition's top-tier switches are fused into one node, as 001 fuses a pod's
  aggregation switches.
- **Inter-scheduler graph**: one node per scheduler (partition) plus the shared top-tier
  switches; a partition-switch edge aggregates every physical link between them, its
  bandwidth the sum of theirs (001). Physical links between two partitions (VL2's ToR to
  the neighbour aggregation switch) give scheduler-scheduler edges the same way.

Every view is the cluster graph with some nodes contracted: links between contracted
nodes vanish and parallel links merge into one edge whose bandwidth is their sum. Node
order: GPU groups (or servers), then sockets, then switches, each by index, so a
partition's GPU group ``i`` is node ``i`` -- the natural action index. Edges come in both
directions (``edge_index`` is 2 x 2E: the E edges with lower node first, then reversed).
``edge_link_offsets``/``edge_link_ids`` (CSR) list each edge's physical links, so dynamic
per-link state (current load) maps onto edge features with one gather.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.topology.cluster import Cluster

VIEW_GPU_GROUP, VIEW_SOCKET, VIEW_SWITCH, VIEW_SERVER, VIEW_SCHEDULER = range(5)
VIEW_NODE_TYPES = ("gpu_group", "socket", "switch", "server", "scheduler")
VIEW_LEVELS = ("device", "server")


@dataclass(frozen=True)
class GraphView:
    """A graph over contracted cluster nodes, ready for torch_geometric.

    ``node_type[n]`` (index into :data:`VIEW_NODE_TYPES`) and ``node_ref[n]`` (index of the
    GPU group, socket, switch, server or partition it stands for; a fused node refers to
    its lowest switch); ``edge_index[2, E]``; ``edge_gbps[E]``; ``edge_tier[E]`` (index into
    the cluster's ``link_tier_names``, the tier of the edge's first physical link);
    ``edge_link_offsets[E+1]`` and ``edge_link_ids`` list each edge's physical links.
    """

    node_type: np.ndarray
    node_ref: np.ndarray
    edge_index: np.ndarray
    edge_gbps: np.ndarray
    edge_tier: np.ndarray
    edge_link_offsets: np.ndarray
    edge_link_ids: np.ndarray

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self.node_type)

    @property
    def num_edges(self) -> int:
        """Number of directed edges (twice the undirected count)."""
        return self.edge_index.shape[1]

    def node_type_one_hot(self) -> np.ndarray:
        """``[num_nodes, 5]`` float32 one-hot of :data:`VIEW_NODE_TYPES`."""
        one_hot = np.zeros((self.num_nodes, len(VIEW_NODE_TYPES)), dtype=np.float32)
        one_hot[np.arange(self.num_nodes), self.node_type] = 1.0
        return one_hot

    def edge_links(self, edge: int) -> np.ndarray:
        """Physical link indices behind one edge."""
        return self.edge_link_ids[self.edge_link_offsets[edge] : self.edge_link_offsets[edge + 1]]


def inner_graph(
    cluster: Cluster, partition: int, level: str = "device", fuse_top_switches: bool = False
) -> GraphView:
    """The inner graph of one partition at ``level`` "device" (default) or "server"."""
    if level not in VIEW_LEVELS:
        raise ValueError(f"unknown graph level {level!r}; known: {', '.join(VIEW_LEVELS)}")
    servers = cluster.partition_servers(partition)
    groups = cluster.partition_groups(partition)
    switches = np.flatnonzero(cluster.switch_partition == partition)
    node_map = np.full(cluster.num_nodes, -1, dtype=np.int64)
    if level == "device":
        sockets = np.arange(
            cluster.server_socket_offsets[servers[0]],
            cluster.server_socket_offsets[servers[-1] + 1],
        )
        node_map[cluster.group_node(groups)] = np.arange(len(groups))
        node_map[cluster.socket_node(sockets)] = len(groups) + np.arange(len(sockets))
        types = [VIEW_GPU_GROUP] * len(groups) + [VIEW_SOCKET] * len(sockets)
        refs = [*groups.tolist(), *sockets.tolist()]
    else:
        local_server = np.arange(len(servers))
        node_map[cluster.group_node(groups)] = local_server[
            cluster.group_server[groups] - servers[0]
        ]
        socket_range = np.arange(
            cluster.server_socket_offsets[servers[0]],
            cluster.server_socket_offsets[servers[-1] + 1],
        )
        node_map[cluster.socket_node(socket_range)] = (
            cluster.socket_server[socket_range] - servers[0]
        )
        types = [VIEW_SERVER] * len(servers)
        refs = servers.tolist()
    first_switch_node = len(types)
    if fuse_top_switches and len(switches):
        top = switches[cluster.switch_level[switches] == cluster.switch_level[switches].max()]
        kept = switches[cluster.switch_level[switches] < cluster.switch_level[switches].max()]
        node_map[kept] = first_switch_node + np.arange(len(kept))
        node_map[top] = first_switch_node + len(kept)
        switch_refs = [*kept.tolist(), int(top[0])]
    else:
        node_map[switches] = first_switch_node + np.arange(len(switches))
        switch_refs = switches.tolist()
    types += [VIEW_SWITCH] * len(switch_refs)
    refs += switch_refs
    return _contract(cluster, node_map, np.array(types, dtype=np.int8), np.array(refs))


def inter_scheduler_graph(cluster: Cluster) -> GraphView:
    """Schedulers (nodes ``0..P-1``) and shared switches, with aggregate links."""
    num_partitions = cluster.num_partitions
    shared = np.flatnonzero(cluster.switch_partition < 0)
    node_map = np.empty(cluster.num_nodes, dtype=np.int64)
    owned = cluster.switch_partition >= 0
    node_map[: cluster.num_switches][owned] = cluster.switch_partition[owned]
    node_map[shared] = num_partitions + np.arange(len(shared))
    node_map[cluster.socket_node(np.arange(cluster.num_sockets))] = cluster.server_partition[
        cluster.socket_server
    ]
    node_map[cluster.group_node(np.arange(cluster.num_gpu_groups))] = cluster.server_partition[
        cluster.group_server
    ]
    types = np.array([VIEW_SCHEDULER] * num_partitions + [VIEW_SWITCH] * len(shared), np.int8)
    refs = np.concatenate([np.arange(num_partitions), shared])
    return _contract(cluster, node_map, types, refs)


def _contract(
    cluster: Cluster, node_map: np.ndarray, node_type: np.ndarray, node_ref: np.ndarray
) -> GraphView:
    """Map every link's endpoints through ``node_map`` (-1 = not in the view) and merge."""
    ends = node_map[cluster.link_nodes]
    keep = (ends >= 0).all(axis=1) & (ends[:, 0] != ends[:, 1])
    links = np.flatnonzero(keep)
    low, high = ends[keep].min(axis=1), ends[keep].max(axis=1)
    num_nodes = len(node_type)
    pair_keys, edge_of_link = np.unique(low * num_nodes + high, return_inverse=True)
    num_pairs = len(pair_keys)
    gbps = np.bincount(edge_of_link, weights=cluster.link_gbps[links], minlength=num_pairs)
    order = np.argsort(edge_of_link, kind="stable")  # links grouped by edge, by link index
    counts = np.bincount(edge_of_link, minlength=num_pairs)
    offsets = np.zeros(num_pairs + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    grouped_links = links[order]
    tier = cluster.link_tier[grouped_links[offsets[:-1]]] if num_pairs else np.zeros(0, np.int16)
    source, target = pair_keys // num_nodes, pair_keys % num_nodes
    both_offsets = np.concatenate([offsets[:-1], offsets[:-1] + offsets[-1], [2 * offsets[-1]]])
    return GraphView(
        node_type=node_type,
        node_ref=node_ref.astype(np.int64),
        edge_index=np.stack([np.concatenate([source, target]), np.concatenate([target, source])]),
        edge_gbps=np.concatenate([gbps, gbps]).astype(np.float32),
        edge_tier=np.concatenate([tier, tier]).astype(np.int16),
        edge_link_offsets=both_offsets.astype(np.int64),
        edge_link_ids=np.concatenate([grouped_links, grouped_links]),
    )
