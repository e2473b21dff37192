"""Routes are valid, symmetric, deterministic paths with the hop counts the structure implies."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.topology import build_cluster

CLUSTERS = {
    "fat-tree-4": ("fat-tree", {"k": 4}),
    "fat-tree-6-mixed": ("fat-tree", {"k": 6, "server": "mixed"}),
    "vl2-8": ("vl2", {"k": 8, "servers_per_tor": 3}),
    "bcube-4-1": ("bcube", {"n": 4, "k": 1}),
    "bcube-3-2-dgx1": ("bcube", {"n": 3, "k": 2, "server": "dgx1"}),
    "racks": ("racks", {"racks": (2, 2, 3)}),
    "flat": ("flat", {"servers": 6, "gpus_per_server": 8}),
}


@cache
def cluster_named(key: str):
    name, params = CLUSTERS[key]
    return build_cluster(name, **params)


def walk(cluster, group_a: int, group_b: int, links: np.ndarray) -> list[int]:
    """Follow the links from group a; return the nodes visited (fails if not a path)."""
    node = int(cluster.group_node(group_a))
    visited = [node]
    for link in links:
        u, v = (int(x) for x in cluster.link_nodes[link])
        assert node in (u, v), f"link {link} does not touch node {node}"
        node = v if node == u else u
        visited.append(node)
    assert node == cluster.group_node(group_b)
    return visited


def network_hops(cluster, links: np.ndarray) -> int:
    return int((links < cluster.num_network_links).sum())


pairs = st.sampled_from(sorted(CLUSTERS)).flatmap(
    lambda key: st.tuples(
        st.just(key),
        st.integers(0, cluster_named(key).num_gpu_groups - 1),
        st.integers(0, cluster_named(key).num_gpu_groups - 1),
    )
)


@settings(max_examples=400, deadline=None)
@given(pairs)
def test_routes_are_simple_symmetric_paths(case: tuple[str, int, int]) -> None:
    key, a, b = case
    cluster = cluster_named(key)
    forward, backward = cluster.route_links(a, b), cluster.route_links(b, a)
    assert np.array_equal(forward, backward[::-1])
    visited = walk(cluster, a, b, forward)
    assert len(set(visited)) == len(visited), "route revisits a node"
    if a == b:
        assert len(forward) == 0
    elif cluster.group_server[a] == cluster.group_server[b]:
        assert network_hops(cluster, forward) == 0
    # Same answer from an independently built cluster: routing is deterministic.
    name, params = CLUSTERS[key]
    assert np.array_equal(build_cluster(name, **params).route_links(a, b), forward)


def _expected_tree_hops(cluster, key: str, server_a: int, server_b: int) -> int:
    if server_a == server_b:
        return 0
    edge = {s: cluster.port_switch[cluster.server_port_offsets[s]] for s in (server_a, server_b)}
    if edge[server_a] == edge[server_b]:
        return 2
    if key.startswith("fat-tree"):
        same_pod = cluster.server_partition[server_a] == cluster.server_partition[server_b]
        return 4 if same_pod else 6
    if key.startswith("vl2"):
        same_pair = (
            cluster.server_partition[server_a] // 2 == cluster.server_partition[server_b] // 2
        )
        return 4 if same_pair else 6
    return 4  # racks: ToR - director - ToR


@pytest.mark.parametrize("key", ["fat-tree-4", "fat-tree-6-mixed", "vl2-8", "racks", "flat"])
def test_tree_hop_counts_for_every_pair(key: str) -> None:
    cluster = cluster_named(key)
    for a, b in itertools.combinations(range(cluster.num_gpu_groups), 2):
        server_a, server_b = int(cluster.group_server[a]), int(cluster.group_server[b])
        links = cluster.route_links(a, b)
        assert network_hops(cluster, links) == _expected_tree_hops(cluster, key, server_a, server_b)


@pytest.mark.parametrize("key", ["bcube-4-1", "bcube-3-2-dgx1"])
def test_bcube_hops_are_twice_the_differing_digits(key: str) -> None:
    cluster = cluster_named(key)
    n, k = cluster.params["n"], cluster.params["k"]
    for a, b in itertools.combinations(range(cluster.num_gpu_groups), 2):
        server_a, server_b = int(cluster.group_server[a]), int(cluster.group_server[b])
        differing = sum((server_a // n**d) % n != (server_b // n**d) % n for d in range(k + 1))
        assert network_hops(cluster, cluster.route_links(a, b)) == 2 * differing


def test_bcube_one_digit_apart_meet_at_one_switch_of_that_level() -> None:
    cluster = cluster_named("bcube-3-2-dgx1")
    n = cluster.params["n"]
    for level in range(3):
        server_a = 5
        digit = (server_a // n**level) % n
        server_b = server_a + ((digit + 1) % n - digit) * n**level
        group_a = int(cluster.server_group_offsets[server_a])
        group_b = int(cluster.server_group_offsets[server_b])
        links = cluster.route_links(group_a, group_b)
        network = links[links < cluster.num_network_links]
        assert len(network) == 2
        tiers = {cluster.link_tier_names[cluster.link_tier[link]] for link in network}
        assert tiers == {f"server-level{level}"}
        switches = {int(cluster.link_nodes[link].min()) for link in network}
        assert len(switches) == 1 and cluster.switch_level[switches.pop()] == level


def test_in_server_routes_use_pcie_and_qpi() -> None:
    cluster = cluster_named("fat-tree-4")  # power8: one group per socket
    pcie, qpi = cluster.link_tier_names.index("pcie"), cluster.link_tier_names.index("qpi")
    links = cluster.route_links(0, 1)
    assert cluster.link_tier[links].tolist() == [pcie, qpi, pcie]


def test_racks_use_the_port_on_the_groups_socket() -> None:
    cluster = cluster_named("racks")  # minsky: 4 single-GPU groups, 2 sockets, 2 ports
    qpi = cluster.link_tier_names.index("qpi")
    # Group 3 of server 0 and group 3 of server 1 both sit on socket 1: no QPI crossing.
    links = cluster.route_links(3, 7)
    assert qpi not in cluster.link_tier[links].tolist()
    assert len(links) == 4  # pcie, port, port, pcie (same ToR)


def test_equal_cost_paths_are_all_used() -> None:
    cluster = cluster_named("fat-tree-4")
    cores = set(np.flatnonzero(cluster.switch_tier == cluster.switch_tier_names.index("core")))
    used = set()
    for server_a in range(4):  # pod 0
        for server_b in range(4, 16):  # other pods
            links = cluster.route_links(
                int(cluster.server_group_offsets[server_a]),
                int(cluster.server_group_offsets[server_b]),
            )
            used |= {int(n) for n in cluster.link_nodes[links].ravel()} & cores
    assert used == cores


def test_routes_are_cached_and_read_only() -> None:
    cluster = build_cluster("fat-tree", k=4)
    first = cluster.route_links(0, 20)
    assert cluster.router.cached_routes == 1
    assert cluster.route_links(0, 20) is first
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 0
    offsets, links = cluster.router.routes(np.array([0, 20, 3]), np.array([20, 0, 3]))
    assert offsets.tolist() == [0, len(first), 2 * len(first), 2 * len(first)]
    assert np.array_equal(links[: len(first)], first)


def test_route_out_of_range_is_refused() -> None:
    cluster = build_cluster("fat-tree", k=4)
    with pytest.raises(ValueError, match="out of range"):
        cluster.route_links(0, cluster.num_gpu_groups)
