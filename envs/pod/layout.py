"""What every agent's observation is built from that never changes: graphs and targets.

Each partition's inner graph (device or server level) is padded to the largest
partition's node and edge counts so all agents share one fixed-shape space; its first
``num_targets`` nodes are the placement targets (GPU groups or servers), so action ``i``
places on node ``i``. The inter-scheduler graph is the same for everyone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.topology import Cluster, inner_graph, inter_scheduler_graph
from envs.topology.views import VIEW_NODE_TYPES, GraphView


@dataclass(frozen=True)
class PaddedGraph:
    """A graph view padded to ``num_nodes``/``num_edges`` slots with validity masks.

    ``edge_attr_static`` holds (bandwidth / max bandwidth, tier / max tier); the dynamic
    load column is filled per step from ``edge_link_offsets``/``edge_link_ids``.
    """

    view: GraphView
    node_type_one_hot: np.ndarray  # [n_max, types] float32
    node_mask: np.ndarray  # [n_max] int8
    edge_index: np.ndarray  # [2, e_max] int64, padding points at node 0
    edge_mask: np.ndarray  # [e_max] int8
    edge_attr_static: np.ndarray  # [e_max, 2] float32
    link_counts: np.ndarray  # [E] physical links per real edge

    @staticmethod
    def build(
        view: GraphView, num_nodes: int, num_edges: int, gbps_scale: float, tiers: int
    ) -> PaddedGraph:
        """Pad ``view``; bandwidths divided by ``gbps_scale``, tiers by ``tiers - 1``."""
        types = np.zeros((num_nodes, len(VIEW_NODE_TYPES)), dtype=np.float32)
        types[np.arange(view.num_nodes), view.node_type] = 1.0
        node_mask = np.zeros(num_nodes, dtype=np.int8)
        node_mask[: view.num_nodes] = 1
        edge_index = np.zeros((2, num_edges), dtype=np.int64)
        edge_index[:, : view.num_edges] = view.edge_index
        edge_mask = np.zeros(num_edges, dtype=np.int8)
        edge_mask[: view.num_edges] = 1
        static = np.zeros((num_edges, 2), dtype=np.float32)
        static[: view.num_edges, 0] = view.edge_gbps / gbps_scale
        static[: view.num_edges, 1] = view.edge_tier / max(tiers - 1, 1)
        return PaddedGraph(
            view, types, node_mask, edge_index, edge_mask, static, np.diff(view.edge_link_offsets)
        )

    def edge_load(self, link_jobs: np.ndarray, num_edges: int) -> np.ndarray:
        """Mean number of jobs on each edge's physical links, padded to ``num_edges``."""
        load = np.zeros(num_edges, dtype=np.float32)
        view = self.view
        if view.num_edges:
            sums = np.add.reduceat(link_jobs[view.edge_link_ids], view.edge_link_offsets[:-1])
            load[: view.num_edges] = sums / self.link_counts
        return load


@dataclass(frozen=True)
class PartitionLayout:
    """One agent's static world: its targets, groups and padded inner graph."""

    partition: int
    targets: np.ndarray  # GPU groups (device level) or servers (server level)
    groups: np.ndarray  # the partition's GPU groups
    group_target: np.ndarray  # per partition group: its target index
    group_sockets: np.ndarray  # per partition group: its CPU socket
    graph: PaddedGraph


@dataclass(frozen=True)
class ClusterLayout:
    """Static layout of all agents plus the shared inter-scheduler graph."""

    cluster: Cluster
    level: str
    partitions: tuple[PartitionLayout, ...]
    inter: PaddedGraph
    max_nodes: int
    max_edges: int
    max_targets: int

    @staticmethod
    def build(cluster: Cluster, level: str, fuse_top_switches: bool) -> ClusterLayout:
        """Views of every partition, padded to the largest."""
        views = [
            inner_graph(cluster, p, level=level, fuse_top_switches=fuse_top_switches)
            for p in range(cluster.num_partitions)
        ]
        inter_view = inter_scheduler_graph(cluster)
        gbps_scale = float(cluster.link_gbps.max())
        tiers = len(cluster.link_tier_names)
        max_nodes = max(view.num_nodes for view in views)
        max_edges = max(max(view.num_edges for view in views), 1)
        partitions = []
        for p, view in enumerate(views):
            groups = cluster.partition_groups(p)
            if level == "device":
                targets = groups
                group_target = np.arange(len(groups))
            else:
                targets = cluster.partition_servers(p)
                group_target = cluster.group_server[groups] - targets[0]
            graph = PaddedGraph.build(view, max_nodes, max_edges, gbps_scale, tiers)
            partitions.append(
                PartitionLayout(
                    p, targets, groups, group_target, cluster.group_socket[groups], graph
                )
            )
        inter = PaddedGraph.build(
            inter_view, inter_view.num_nodes, max(inter_view.num_edges, 1), gbps_scale, tiers
        )
        return ClusterLayout(
            cluster,
            level,
            tuple(partitions),
            inter,
            max_nodes,
            max_edges,
            max(len(layout.targets) for layout in partitions),
        )
