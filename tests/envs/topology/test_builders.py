"""Counts, degrees, connectivity and partitions of every topology against closed forms."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from envs.topology import build_cluster, describe_cluster


def _switch_degree(cluster, switch: int) -> int:
    return int((cluster.link_nodes[: cluster.num_network_links] == switch).sum())


@pytest.mark.parametrize("k", [4, 6, 8, 20])
def test_fat_tree_counts_match_closed_forms(k: int) -> None:
    cluster = build_cluster("fat-tree", k=k)
    summary = describe_cluster(cluster)
    assert summary["servers"] == k**3 // 4
    assert summary["gpus"] == k**3  # power8: 4 GPUs per server
    assert summary["cpu_sockets"] == summary["gpu_groups"] == k**3 // 2
    assert summary["switches"] == {
        "edge": k * k // 2,
        "aggregation": k * k // 2,
        "core": k * k // 4,
    }
    assert summary["links"] == {
        "server-edge": k**3 // 4,
        "edge-aggregation": k**3 // 4,
        "aggregation-core": k**3 // 4,
    }
    assert summary["partitions"] == k
    assert summary["servers_per_partition"] == [(k // 2) ** 2] * k
    # Every switch of a k-ary fat-tree has exactly k ports in use.
    assert all(_switch_degree(cluster, w) == k for w in range(cluster.num_switches))
    assert summary["total_bandwidth_gbps"] == k**3 / 4 * (10 + 20 + 40)


def test_fat_tree_paper_scale() -> None:
    summary = describe_cluster(build_cluster("fat-tree", k=20))
    assert (summary["servers"], summary["gpus"], summary["partitions"]) == (2000, 8000, 20)
    assert summary["switches"]["core"] == 100
    # Half the servers' 10 Gbps ports are the narrowest cut: 1000 x 10 Gbps.
    assert summary["bisection_bandwidth_gbps"] == 10_000.0


@pytest.mark.parametrize("k", [4, 8, 20])
def test_vl2_counts_match_closed_forms(k: int) -> None:
    cluster = build_cluster("vl2", k=k)
    summary = describe_cluster(cluster)
    tors = k * k // 4
    assert summary["switches"] == {"tor": tors, "aggregation": k, "intermediate": k // 2}
    assert summary["servers"] == 20 * tors
    assert summary["links"] == {
        "server-tor": 20 * tors,
        "tor-aggregation": 2 * tors,
        "aggregation-intermediate": k * k // 2,
    }
    assert summary["partitions"] == k
    assert summary["servers_per_partition"] == [20 * k // 4] * k
    tier = {name: i for i, name in enumerate(cluster.switch_tier_names)}
    for w in range(cluster.num_switches):
        expected = {tier["tor"]: 20 + 2, tier["aggregation"]: k, tier["intermediate"]: k}
        assert _switch_degree(cluster, w) == expected[cluster.switch_tier[w]]
    # Each partition holds one aggregation switch and k/4 ToRs (001: 1 agg, 5 ToRs at k=20).
    for p in range(k):
        owned = cluster.switch_tier[cluster.switch_partition == p]
        assert sorted(owned.tolist()) == [tier["tor"]] * (k // 4) + [tier["aggregation"]]


def test_vl2_paper_scale() -> None:
    summary = describe_cluster(build_cluster("vl2", k=20))
    assert summary["servers"] == 2000
    assert summary["servers_per_partition"] == [100] * 20
    assert summary["bisection_bandwidth_gbps"] == 1000.0  # 1,000 servers x 1 Gbps


@pytest.mark.parametrize(("n", "k"), [(4, 1), (6, 3), (3, 2), (2, 0)])
def test_bcube_counts_match_closed_forms(n: int, k: int) -> None:
    cluster = build_cluster("bcube", n=n, k=k)
    summary = describe_cluster(cluster)
    assert summary["servers"] == n ** (k + 1)
    assert summary["switches"] == {f"level{level}": n**k for level in range(k + 1)}
    assert summary["links"] == {f"server-level{level}": n ** (k + 1) for level in range(k + 1)}
    assert all(_switch_degree(cluster, w) == n for w in range(cluster.num_switches))
    assert (np.diff(cluster.server_port_offsets) == k + 1).all()


def test_bcube_paper_partitions() -> None:
    cluster = build_cluster("bcube", n=6, k=3)
    # 001: every two BCube_1 (36 servers each) per scheduler -> 18 schedulers of 72 servers.
    assert cluster.num_partitions == 18
    assert np.diff(cluster.partition_server_offsets).tolist() == [72] * 18
    # Level 0/1 switches live inside a BCube_1; level 2/3 switches join several partitions.
    level = cluster.switch_level
    assert (cluster.switch_partition[level <= 1] >= 0).all()
    assert (cluster.switch_partition[level >= 2] == -1).all()


def test_bcube_switch_joins_servers_differing_in_its_digit() -> None:
    n, k = 3, 2
    cluster = build_cluster("bcube", n=n, k=k)
    for switch in range(cluster.num_switches):
        level = int(cluster.switch_level[switch])
        ports = np.flatnonzero(cluster.port_switch == switch)
        servers = np.searchsorted(cluster.server_port_offsets, ports, side="right") - 1
        digits = np.array([[(s // n**d) % n for d in range(k + 1)] for s in servers])
        other = [d for d in range(k + 1) if d != level]
        assert len(servers) == n
        assert (digits[:, other] == digits[0, other]).all()
        assert sorted(digits[:, level].tolist()) == list(range(n))


def test_racks_counts_and_bandwidths() -> None:
    cluster = build_cluster("racks", racks=(2, 2, 2, 2))
    summary = describe_cluster(cluster)
    assert (summary["servers"], summary["gpus"], summary["cpu_sockets"]) == (8, 32, 16)
    assert summary["switches"] == {"tor": 4, "director": 1}
    # Two InfiniBand cards per machine, one per CPU (003 Table 1).
    assert summary["links"] == {"server-tor": 16, "tor-director": 4}
    gbps = {
        cluster.link_tier_names[t]: set(cluster.link_gbps[cluster.link_tier == t].tolist())
        for t in range(len(cluster.link_tier_names))
    }
    # Table 1 in GB/s x 8: IBC-ToR 12.5, ToR-DS 6.25, CPU-GPU 40, CPU-CPU 38.5.
    assert gbps == {"server-tor": {100.0}, "tor-director": {50.0}, "pcie": {320.0}, "qpi": {308.0}}
    assert summary["servers_per_partition"] == [2, 2, 2, 2]
    assert summary["bisection_bandwidth_gbps"] == 100.0  # two 50 Gbps ToR uplinks


def test_racks_uneven() -> None:
    summary = describe_cluster(build_cluster("racks", racks=(3, 1, 2)))
    assert summary["servers_per_partition"] == [3, 1, 2]
    assert summary["links"] == {"server-tor": 12, "tor-director": 3}


@pytest.mark.parametrize(("servers", "gpus"), [(15, 8), (4, 8), (3, 3)])
def test_flat_counts(servers: int, gpus: int) -> None:
    cluster = build_cluster("flat", servers=servers, gpus_per_server=gpus)
    summary = describe_cluster(cluster)
    assert (summary["servers"], summary["gpus"], summary["partitions"]) == (
        servers,
        servers * gpus,
        1,
    )
    assert summary["switches"] == {"switch": 1}
    assert summary["links"] == {"server-switch": servers}
    assert summary["cpu_sockets"] == servers * (2 if gpus % 2 == 0 else 1)


def test_cush_sierra_cluster() -> None:
    # CuSH: 128 nodes of 2 CPUs and 4 GPUs.
    summary = describe_cluster(build_cluster("flat", servers=128, server="power8"))
    assert (summary["servers"], summary["gpus"], summary["cpu_sockets"]) == (128, 512, 256)


CLUSTERS = [
    ("fat-tree", {"k": 4}),
    ("fat-tree", {"k": 6, "server": "mixed"}),
    ("vl2", {"k": 4}),
    ("bcube", {"n": 4, "k": 1}),
    ("bcube", {"n": 3, "k": 2, "server": "dgx1"}),
    ("racks", {"racks": (2, 3)}),
    ("flat", {"servers": 5, "gpus_per_server": 8}),
]


@pytest.mark.parametrize(("name", "params"), CLUSTERS)
def test_graph_is_connected_and_partitions_cover_servers(name: str, params: dict) -> None:
    cluster = build_cluster(name, **params)
    assert nx.is_connected(cluster.graph)
    assert cluster.graph.number_of_nodes() == cluster.num_nodes
    assert cluster.graph.number_of_edges() == cluster.num_links
    covered = np.concatenate([cluster.partition_servers(p) for p in range(cluster.num_partitions)])
    assert sorted(covered.tolist()) == list(range(cluster.num_servers))
    # Every GPU sits in exactly one group of its server, every group behind one socket.
    assert (cluster.socket_server[cluster.group_socket] == cluster.group_server).all()
    assert np.bincount(cluster.gpu_group).tolist() == cluster.group_gpus.tolist()


def test_arrays_are_read_only() -> None:
    cluster = build_cluster("fat-tree", k=4)
    with pytest.raises(ValueError, match="read-only"):
        cluster.link_gbps[0] = 1.0


def test_bandwidth_overrides_reach_links() -> None:
    cluster = build_cluster("fat-tree", k=4, bandwidth_gbps=(25, 50, 100))
    host = cluster.link_tier_names.index("server-edge")
    assert set(cluster.link_gbps[cluster.link_tier == host].tolist()) == {25.0}
    bcube = build_cluster("bcube", n=3, k=1, bandwidth_gbps=(5, 7))
    level1 = bcube.link_tier_names.index("server-level1")
    assert set(bcube.link_gbps[bcube.link_tier == level1].tolist()) == {7.0}


@pytest.mark.parametrize(
    ("name", "sizes"),
    [
        ("fat-tree", {"k": 4}),
        ("bcube", {"n": 2, "k": 1}),
        ("flat", {"servers": 3}),
        ("vl2", {"k": 4}),
    ],
)
def test_sizes_given_as_numpy_integers_describe_as_json(name, sizes):
    cluster = build_cluster(name, **{key: np.int64(value) for key, value in sizes.items()})
    summary = json.loads(json.dumps(describe_cluster(cluster)))
    assert {key: summary["params"][key] for key in sizes} == sizes
    assert all(type(cluster.params[key]) is int for key in sizes)
