"""Routes between GPU groups as arrays of link indices, computed from the structure.

A route leaves the source GPU group over its PCIe link, crosses to the socket that holds
the chosen network port over the inter-socket link when they differ, goes through the
network, and enters the destination the same way. Two groups of one server talk over
PCIe (and QPI between sockets) only; a group talks to itself over nothing.

Network paths:

- **tree** topologies (fat-tree, VL2, racks, flat) go up from both servers' switches to
  the lowest tier where they share a switch, then down. All equal-cost choices are
  enumerated in a fixed order (by top switch index, then by the source side's up-path,
  then the destination side's, each sorted by switch index) and the pair of servers
  ``(a, b)`` takes choice number ``(a + b) mod (number of choices)``: deterministic, like
  a hash-based ECMP, and it spreads server pairs evenly over the equal-cost paths.
  A server with several ports into its switch (003's two InfiniBand cards) uses the port
  on the GPU group's own socket when it has one (the shortest path), else its first port.
- **bcube** corrects the differing address digits from the highest level to the lowest
  (BCube's default BCubeRouting order); each correction is one hop through a switch of
  that level to the neighbouring server, which relays.

Routes are symmetric: the route from b to a is the route from a to b reversed (both are
computed from the lower group index). Routes are computed on demand and cached; nothing
is ever materialized for all pairs (paper scale has 64M GPU-group pairs).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from envs.topology.cluster import Cluster

_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY.flags.writeable = False

UpPaths = list[dict[int, list[tuple[int, ...]]]]


class Router:
    """Computes and caches routes of one :class:`~envs.topology.cluster.Cluster`."""

    def __init__(self, cluster: Cluster, max_cached_routes: int = 2_000_000) -> None:
        self._cluster = cluster
        self._max_cached = max_cached_routes
        self._cache: dict[tuple[int, int], np.ndarray] = {}
        self._up_paths_of: dict[int, UpPaths] = {}
        # Upward adjacency of the switch graph, sorted by parent index, for tree routing.
        self._up: dict[int, list[tuple[int, int]]] = defaultdict(list)
        first_switch_link = len(cluster.port_link)
        levels = cluster.switch_level
        for link in range(first_switch_link, cluster.num_network_links):
            a, b = (int(x) for x in cluster.link_nodes[link])
            low, high = (a, b) if levels[a] < levels[b] else (b, a)
            self._up[low].append((high, link))
        for parents in self._up.values():
            parents.sort()
        if cluster.routing == "bcube":
            self._bcube_n = int(cluster.params["n"])
            self._bcube_levels = int(cluster.params["k"]) + 1
        elif cluster.routing != "tree":
            raise AssertionError(f"unknown routing scheme {cluster.routing!r}")

    @property
    def cached_routes(self) -> int:
        """Number of routes currently cached."""
        return len(self._cache)

    def route(self, group_a: int, group_b: int) -> np.ndarray:
        """Read-only array of the link indices from ``group_a`` to ``group_b``."""
        num_groups = self._cluster.num_gpu_groups
        if not (0 <= group_a < num_groups and 0 <= group_b < num_groups):
            raise ValueError(f"GPU groups ({group_a}, {group_b}) out of range [0, {num_groups})")
        if group_a == group_b:
            return _EMPTY
        low, high = (group_a, group_b) if group_a < group_b else (group_b, group_a)
        links = self._cache.get((low, high))
        if links is None:
            if len(self._cache) >= self._max_cached:
                self._cache.clear()
            links = np.asarray(self._compute(low, high), dtype=np.int64)
            links.flags.writeable = False
            self._cache[(low, high)] = links
        return links if group_a == low else links[::-1]

    def routes(self, groups_a: np.ndarray, groups_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many pairs as CSR: ``(offsets[n+1], links)``; pair i is
        ``links[offsets[i]:offsets[i+1]]``."""
        pieces = [self.route(int(a), int(b)) for a, b in zip(groups_a, groups_b, strict=True)]
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in pieces], out=offsets[1:])
        links = np.concatenate(pieces) if pieces else _EMPTY
        return offsets, links

    # ------------------------------------------------------------------ internals
    def _compute(self, low: int, high: int) -> list[int]:
        cluster = self._cluster
        server_a, server_b = int(cluster.group_server[low]), int(cluster.group_server[high])
        socket_a, socket_b = int(cluster.group_socket[low]), int(cluster.group_socket[high])
        links = [int(cluster.group_pcie_link[low])]
        if server_a == server_b:
            self._cross_sockets(links, socket_a, socket_b)
        elif cluster.routing == "tree":
            self._tree_path(links, server_a, socket_a, server_b, socket_b)
        else:
            self._bcube_path(links, server_a, socket_a, server_b, socket_b)
        links.append(int(cluster.group_pcie_link[high]))
        return links

    def _cross_sockets(self, links: list[int], socket_from: int, socket_to: int) -> None:
        if socket_from != socket_to:
            links.append(self._cluster.qpi_link(socket_from, socket_to))

    def _port_for(self, server: int, socket: int) -> int:
        """The port a server uses towards the network: one on ``socket`` if any."""
        cluster = self._cluster
        first, stop = cluster.server_port_offsets[server : server + 2]
        on_socket = np.flatnonzero(cluster.port_socket[first:stop] == socket)
        return int(first + (on_socket[0] if len(on_socket) else 0))

    def _tree_path(
        self, links: list[int], server_a: int, socket_a: int, server_b: int, socket_b: int
    ) -> None:
        cluster = self._cluster
        port_a, port_b = self._port_for(server_a, socket_a), self._port_for(server_b, socket_b)
        self._cross_sockets(links, socket_a, int(cluster.port_socket[port_a]))
        links.append(int(cluster.port_link[port_a]))
        switch_a, switch_b = int(cluster.port_switch[port_a]), int(cluster.port_switch[port_b])
        if switch_a != switch_b:
            links.extend(self._switch_path(switch_a, switch_b, server_a + server_b))
        links.append(int(cluster.port_link[port_b]))
        self._cross_sockets(links, int(cluster.port_socket[port_b]), socket_b)

    def _switch_path(self, switch_a: int, switch_b: int, choice_seed: int) -> list[int]:
        up_a, up_b = self._up_paths(switch_a), self._up_paths(switch_b)
        for height in range(min(len(up_a), len(up_b))):
            common = sorted(up_a[height].keys() & up_b[height].keys())
            if not common:
                continue
            counts = [len(up_a[height][top]) * len(up_b[height][top]) for top in common]
            choice = choice_seed % sum(counts)
            for top, count in zip(common, counts, strict=True):
                if choice < count:
                    side_b = up_b[height][top]
                    path_a = up_a[height][top][choice // len(side_b)]
                    path_b = side_b[choice % len(side_b)]
                    return [*path_a, *reversed(path_b)]
                choice -= count
        raise AssertionError(f"switches {switch_a} and {switch_b} share no upper switch")

    def _up_paths(self, switch: int) -> UpPaths:
        """Per height h (0 = one hop up): upper switch -> every up-path to it (link tuples)."""
        cached = self._up_paths_of.get(switch)
        if cached is not None:
            return cached
        heights: UpPaths = []
        frontier: dict[int, list[tuple[int, ...]]] = {switch: [()]}
        while True:
            nxt: dict[int, list[tuple[int, ...]]] = defaultdict(list)
            for node in sorted(frontier):
                for parent, link in self._up.get(node, ()):
                    nxt[parent].extend((*path, link) for path in frontier[node])
            if not nxt:
                break
            heights.append(dict(nxt))
            frontier = nxt
        self._up_paths_of[switch] = heights
        return heights

    def _bcube_path(
        self, links: list[int], server_a: int, socket_a: int, server_b: int, socket_b: int
    ) -> None:
        cluster = self._cluster
        n, levels = self._bcube_n, self._bcube_levels
        current, current_socket = server_a, socket_a
        for level in reversed(range(levels)):
            place = n**level
            digit_current, digit_target = (current // place) % n, (server_b // place) % n
            if digit_current == digit_target:
                continue
            port_out = int(cluster.server_port_offsets[current]) + level
            self._cross_sockets(links, current_socket, int(cluster.port_socket[port_out]))
            nxt = current + (digit_target - digit_current) * place
            port_in = int(cluster.server_port_offsets[nxt]) + level
            links.append(int(cluster.port_link[port_out]))
            links.append(int(cluster.port_link[port_in]))
            current, current_socket = nxt, int(cluster.port_socket[port_in])
        self._cross_sockets(links, current_socket, socket_b)
