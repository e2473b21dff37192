"""Graph views for learning: inner graphs (device, server level) and the inter-scheduler graph."""

from __future__ import annotations

import numpy as np
import pytest

from envs.topology import build_cluster, inner_graph, inter_scheduler_graph
from envs.topology.views import (
    VIEW_GPU_GROUP,
    VIEW_SCHEDULER,
    VIEW_SERVER,
    VIEW_SOCKET,
    VIEW_SWITCH,
)


def undirected_edges(view) -> dict[tuple[int, int], float]:
    half = view.num_edges // 2
    return {
        (int(view.edge_index[0, e]), int(view.edge_index[1, e])): float(view.edge_gbps[e])
        for e in range(half)
    }


def test_views_list_both_directions() -> None:
    view = inner_graph(build_cluster("vl2", k=4, servers_per_tor=2), 1)
    half = view.num_edges // 2
    assert np.array_equal(view.edge_index[:, half:], view.edge_index[::-1, :half])
    assert np.array_equal(view.edge_gbps[half:], view.edge_gbps[:half])


def test_fat_tree_device_inner_graph_by_hand() -> None:
    cluster = build_cluster("fat-tree", k=4)
    view = inner_graph(cluster, 2)
    # Pod 2: 4 power8 servers = 8 GPU groups, 8 sockets; 2 edge + 2 aggregation switches.
    types = view.node_type.tolist()
    assert types == [VIEW_GPU_GROUP] * 8 + [VIEW_SOCKET] * 8 + [VIEW_SWITCH] * 4
    assert view.node_ref[:8].tolist() == cluster.partition_groups(2).tolist()
    # 8 PCIe + 4 QPI + 4 server-edge + 4 edge-aggregation links.
    assert view.num_edges == 2 * 20
    tiers = [cluster.link_tier_names[t] for t in view.edge_tier[: view.num_edges // 2]]
    assert sorted(set(tiers)) == ["edge-aggregation", "pcie", "qpi", "server-edge"]
    # Every edge maps back to exactly one physical link with the same bandwidth.
    for e in range(view.num_edges):
        (link,) = view.edge_links(e)
        assert cluster.link_gbps[link] == view.edge_gbps[e]


def test_fused_aggregation_switches_merge_links() -> None:
    cluster = build_cluster("fat-tree", k=4)
    view = inner_graph(cluster, 0, fuse_top_switches=True)
    assert view.num_nodes == 8 + 8 + 2 + 1
    fused = view.num_nodes - 1
    edges = undirected_edges(view)
    to_fused = {pair: gbps for pair, gbps in edges.items() if fused in pair}
    # Each edge switch had one 20 Gbps link to each of the 2 aggregation switches.
    assert sorted(to_fused.values()) == [40.0, 40.0]
    e = next(i for i in range(view.num_edges) if fused in view.edge_index[:, i])
    assert len(view.edge_links(e)) == 2


def test_server_level_inner_graph() -> None:
    cluster = build_cluster("racks", racks=(3, 2))
    view = inner_graph(cluster, 0, level="server")
    assert view.node_type.tolist() == [VIEW_SERVER] * 3 + [VIEW_SWITCH]
    edges = undirected_edges(view)
    # Two 100 Gbps InfiniBand ports per machine merge into one 200 Gbps server-ToR edge.
    assert edges == {(0, 3): 200.0, (1, 3): 200.0, (2, 3): 200.0}


def test_mixed_servers_give_every_partition_the_same_blend() -> None:
    cluster = build_cluster("fat-tree", k=4, server="mixed", seed=1)
    sizes = {inner_graph(cluster, p).num_nodes for p in range(cluster.num_partitions)}
    # Per pod of 4: 1 single-socket (1 socket + 1 group), 2 power8 and 1 dgx1 (2 + 2 each),
    # plus 2 edge and 2 aggregation switches.
    assert sizes == {1 * 2 + 2 * 4 + 1 * 4 + 4}


def test_uneven_partitions_give_uneven_inner_graphs() -> None:
    cluster = build_cluster("racks", racks=(3, 1, 2))  # minsky: 2 sockets + 4 groups each
    sizes = [inner_graph(cluster, p).num_nodes for p in range(3)]
    assert sizes == [3 * 6 + 1, 1 * 6 + 1, 2 * 6 + 1]


def test_fat_tree_inter_scheduler_graph() -> None:
    cluster = build_cluster("fat-tree", k=4)
    view = inter_scheduler_graph(cluster)
    assert view.node_type.tolist() == [VIEW_SCHEDULER] * 4 + [VIEW_SWITCH] * 4
    edges = undirected_edges(view)
    # Each core switch has one 40 Gbps link into every pod.
    assert edges == {(p, 4 + c): 40.0 for p in range(4) for c in range(4)}


def test_vl2_inter_scheduler_graph_aggregates_links() -> None:
    k = 8
    cluster = build_cluster("vl2", k=k)
    view = inter_scheduler_graph(cluster)
    assert view.num_nodes == k + k // 2
    edges = undirected_edges(view)
    for p in range(k):
        for i in range(k // 2):
            assert edges[(p, k + i)] == 10.0  # one aggregation-intermediate link
    # Partitions 2j and 2j+1 share a pair of aggregation switches: each partition's k/4
    # ToRs also link to the neighbour's aggregation switch, 2 * k/4 links of 10 Gbps.
    for j in range(k // 2):
        assert edges[(2 * j, 2 * j + 1)] == 2 * (k // 4) * 10.0
    assert len(edges) == k * (k // 2) + k // 2


def test_bcube_inter_scheduler_graph_sums_port_bandwidth() -> None:
    cluster = build_cluster("bcube", n=4, k=1)  # 2 partitions of two BCube_0 each
    view = inter_scheduler_graph(cluster)
    # Level-1 switches join servers of both partitions: shared; 4 of them.
    assert view.node_type.tolist() == [VIEW_SCHEDULER] * 2 + [VIEW_SWITCH] * 4
    edges = undirected_edges(view)
    # Each level-1 switch has 2 servers in each partition, 20 Gbps ports.
    assert edges == {(p, 2 + s): 40.0 for p in range(2) for s in range(4)}


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="device, server"):
        inner_graph(build_cluster("fat-tree", k=4), 0, level="rack")
    with pytest.raises(ValueError, match="out of range"):
        inner_graph(build_cluster("fat-tree", k=4), 9)
