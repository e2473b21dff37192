"""Counts and capacities of a cluster: what ``simulate.py describe`` prints."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from envs.topology.cluster import Cluster

_INT32_MAX = 2**31 - 1


def describe_cluster(cluster: Cluster) -> dict[str, Any]:
    """A JSON-able summary: counts per kind and tier, partitions and bandwidths.

    ``switches`` counts network switches only (not PCIe switches inside servers) per tier;
    ``links`` counts network links per tier and ``server_links`` the in-server ones;
    ``total_bandwidth_gbps`` sums the network links; ``bisection_bandwidth_gbps`` is
    :func:`bisection_bandwidth_gbps`.
    """
    network = slice(0, cluster.num_network_links)
    network_tiers = Counter(cluster.link_tier[network].tolist())
    server_tiers = Counter(cluster.link_tier[cluster.num_network_links :].tolist())
    architectures = Counter(cluster.server_architecture.tolist())
    return {
        "topology": cluster.topology,
        "params": cluster.params,
        "servers": cluster.num_servers,
        "gpus": cluster.num_gpus,
        "cpu_sockets": cluster.num_sockets,
        "cpu_cores": int(cluster.socket_cores.sum()),
        "gpu_groups": cluster.num_gpu_groups,
        "partitions": cluster.num_partitions,
        "servers_per_partition": np.diff(cluster.partition_server_offsets).tolist(),
        "switches": {
            name: int((cluster.switch_tier == i).sum())
            for i, name in enumerate(cluster.switch_tier_names)
        },
        "links": {cluster.link_tier_names[t]: n for t, n in sorted(network_tiers.items())},
        "server_links": {cluster.link_tier_names[t]: n for t, n in sorted(server_tiers.items())},
        "server_architectures": {
            cluster.architectures[a].name: n for a, n in sorted(architectures.items())
        },
        "total_bandwidth_gbps": float(cluster.link_gbps[network].sum()),
        "bisection_bandwidth_gbps": bisection_bandwidth_gbps(cluster),
    }


def bisection_bandwidth_gbps(cluster: Cluster) -> float:
    """Min cut between the first and the second half of the servers (in index order).

    Servers are numbered pod by pod (rack by rack, sub-cube by sub-cube), so this is the
    standard halving of each topology. Computed exactly as a max flow over the network
    (servers relay, which BCube needs); capacities in integer units of 1 Mbps, coarsened
    only if their sum would overflow 32 bits.
    """
    num_servers = cluster.num_servers
    if num_servers < 2:
        return 0.0
    num_switches = cluster.num_switches
    ends = cluster.link_nodes[: cluster.num_network_links].copy()
    # Contract sockets into their servers: node ids [0, W) switches, [W, W+S) servers.
    is_socket = ends >= num_switches
    ends[is_socket] = num_switches + cluster.socket_server[ends[is_socket] - num_switches]
    source, sink = num_switches + num_servers, num_switches + num_servers + 1
    mbps = cluster.link_gbps[: cluster.num_network_links] * 1000.0
    unit = max(1.0, float(np.ceil(4 * mbps.sum() / _INT32_MAX)))
    capacity = np.maximum(np.round(mbps / unit), 1).astype(np.int64)
    unlimited = int(capacity.sum()) + 1
    half = num_servers // 2
    servers = num_switches + np.arange(num_servers)
    rows = np.concatenate([ends[:, 0], ends[:, 1], np.full(half, source), servers[half:]])
    cols = np.concatenate(
        [ends[:, 1], ends[:, 0], servers[:half], np.full(num_servers - half, sink)]
    )
    caps = np.concatenate([capacity, capacity, np.full(num_servers, unlimited)])
    size = sink + 1
    # Imported here: loading scipy.sparse's graph routines costs every program that
    # imports the topologies a quarter second; only this summary needs them.
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    graph = csr_matrix((caps.astype(np.int32), (rows, cols)), shape=(size, size))
    flow = maximum_flow(graph, source, sink)
    return float(flow.flow_value * unit / 1000.0)
