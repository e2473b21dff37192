"""Locality levels of a cluster: nested groups of servers that share a switch.

Level 0 is the server itself. Above it, for each switch level L of the topology, servers
are in one domain when the switches of levels <= L connect them (connected components of
servers + those switches): under one edge switch / ToR at L = 0, one fat-tree pod or VL2
aggregation pair at L = 1, the whole tree at the top; in BCube the level-L domains are
the BCube_L sub-cubes. The cluster's partitions (scheduler pods) join the chain where
they nest between two levels (VL2's half-pairs, BCube's groups of sub-cubes) and are
dropped where they repeat a level (fat-tree pods, racks) or do not nest. A last
one-domain level closes the chain, so every job has a level that holds it.

Two tasks' "lowest common switch" is then the first level at which their servers share a
domain (:func:`span_level`): the lower, the fewer and faster the links between them.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from envs.topology import Cluster


@dataclass(frozen=True)
class LocalityLevels:
    """``names[l]`` and ``server_domain[l, s]``: the domain id of server s at level l.

    Domain ids run ``0 .. num_domains[l]-1`` in order of their lowest server.
    """

    names: tuple[str, ...]
    server_domain: np.ndarray

    @property
    def num_levels(self) -> int:
        """Number of levels, the server level included."""
        return len(self.names)

    @property
    def num_domains(self) -> tuple[int, ...]:
        """Number of domains at each level."""
        return tuple(int(row.max()) + 1 for row in self.server_domain)

    def span_level(self, servers: np.ndarray) -> int:
        """The lowest level at which all ``servers`` lie in one domain."""
        return span_level(self, servers)


_CACHE: weakref.WeakKeyDictionary[Cluster, LocalityLevels] = weakref.WeakKeyDictionary()


def locality_levels(cluster: Cluster) -> LocalityLevels:
    """The locality levels of ``cluster`` (computed once per cluster, then cached)."""
    levels = _CACHE.get(cluster)
    if levels is None:
        levels = _build(cluster)
        _CACHE[cluster] = levels
    return levels


def span_level(levels: LocalityLevels, servers: np.ndarray) -> int:
    """The lowest level at which all ``servers`` lie in one domain."""
    domains = levels.server_domain[:, np.asarray(servers, dtype=np.int64)]
    together = (domains == domains[:, :1]).all(axis=1)
    return int(np.argmax(together))  # the top level always holds everything


def _relabel(labels: np.ndarray) -> np.ndarray:
    """Domain ids 0.. in order of each domain's lowest server."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _refines(finer: np.ndarray, coarser: np.ndarray) -> bool:
    """True when every domain of ``finer`` lies inside one domain of ``coarser``."""
    pairs = np.unique(finer * (int(coarser.max()) + 1) + coarser)
    return len(pairs) == int(finer.max()) + 1


def _switch_components(cluster: Cluster, level: int) -> np.ndarray:
    """Per server, its component through switches of level <= ``level`` (and servers)."""
    num_servers, num_switches = cluster.num_servers, cluster.num_switches
    low = cluster.switch_level <= level
    port_server = np.repeat(np.arange(num_servers), np.diff(cluster.server_port_offsets))
    keep = low[cluster.port_switch]
    rows = [port_server[keep]]
    cols = [num_servers + cluster.port_switch[keep]]
    first_switch_link = len(cluster.port_link)
    switch_links = cluster.link_nodes[first_switch_link : cluster.num_network_links]
    both_low = low[switch_links[:, 0]] & low[switch_links[:, 1]]
    rows.append(num_servers + switch_links[both_low, 0])
    cols.append(num_servers + switch_links[both_low, 1])
    row, col = np.concatenate(rows), np.concatenate(cols)
    size = num_servers + num_switches
    # Imported here: scipy.sparse's graph routines take a quarter second to load, and the
    # levels are computed once per cluster.
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(row)), (row, col)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    return _relabel(labels[:num_servers])


def _build(cluster: Cluster) -> LocalityLevels:
    candidates: list[tuple[str, np.ndarray]] = []
    for level in np.unique(cluster.switch_level).tolist():
        tier = cluster.switch_tier_names[int(cluster.switch_tier[cluster.switch_level == level][0])]
        candidates.append((tier, _switch_components(cluster, level)))
    candidates.append(("partition", _relabel(np.asarray(cluster.server_partition))))
    # Finer first; a stable sort keeps a switch level ahead of an equal partition level.
    candidates.sort(key=lambda item: -(int(item[1].max()) + 1))

    names = ["server"]
    rows = [np.arange(cluster.num_servers, dtype=np.int64)]
    for name, domains in candidates:
        if int(domains.max()) + 1 < int(rows[-1].max()) + 1 and _refines(rows[-1], domains):
            names.append(name)
            rows.append(domains)
    if int(rows[-1].max()) > 0:
        names.append("cluster")
        rows.append(np.zeros(cluster.num_servers, dtype=np.int64))
    server_domain = np.stack(rows)
    server_domain.flags.writeable = False
    return LocalityLevels(tuple(names), server_domain)
