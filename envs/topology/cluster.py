"""The immutable ``Cluster``: every device and link of a data center as flat numpy arrays.

Node ids are global and grouped by kind: switches ``[0, W)``, CPU sockets ``[W, W+C)``,
GPU groups ``[W+C, W+C+G)``. Links are undirected and numbered with the network links
first (server ports, then switch-switch links), then PCIe (GPU group - socket), then
inter-socket (QPI) links, so ``link_id < num_network_links`` tells a network link.

A server's NIC is folded into its port link: a NIC sits in series between its CPU and its
switch and carries exactly the flows of that port, so the pair of links behaves as one
link of the smaller bandwidth (003's CPU-IBC link, 1000 GB/s, never binds).

Every array is read-only; derived structure (routes, graph views, the networkx graph) is
computed on demand and cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from envs.topology.plan import SHARED, NetworkPlan, require_int
from envs.topology.servers import ServerArchitecture, assign_servers

if TYPE_CHECKING:
    from envs.topology.routing import Router

NODE_SWITCH, NODE_SOCKET, NODE_GPU_GROUP = 0, 1, 2
NODE_KIND_NAMES = ("switch", "socket", "gpu_group")
PCIE_TIER, QPI_TIER = "pcie", "qpi"


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _offsets(counts: np.ndarray) -> np.ndarray:
    """CSR offsets (length n+1) from per-row counts."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


class Cluster:
    """A data-center GPU cluster: topology, servers, partitions and links as arrays.

    Build one with :func:`envs.topology.build_cluster`; do not construct it directly.
    Attributes (all read-only numpy arrays unless noted):

    - ``server_partition[S]``, ``server_architecture[S]`` (index into ``architectures``);
      ``partition_server_offsets[P+1]``: partition p owns servers
      ``offsets[p]:offsets[p+1]``.
    - ``server_socket_offsets[S+1]``, ``socket_server[C]``, ``socket_cores[C]``.
    - ``server_group_offsets[S+1]``, ``group_server[G]``, ``group_socket[G]``,
      ``group_gpus[G]``, ``group_gpu_offsets[G+1]``, ``gpu_group[U]``, ``gpu_server[U]``.
    - ``switch_tier[W]`` (index into ``switch_tier_names``), ``switch_level[W]`` (0 =
      closest to servers), ``switch_partition[W]`` (-1 = shared top tier).
    - ``link_nodes[L, 2]`` (global node ids), ``link_gbps[L]``, ``link_tier[L]`` (index into
      ``link_tier_names``), ``num_network_links``.
    - ``server_port_offsets[S+1]``, ``port_link[N]``, ``port_socket[N]``, ``port_switch[N]``.
    - ``group_pcie_link[G]``; inter-socket links through :meth:`qpi_link`.
    """

    def __init__(
        self,
        plan: NetworkPlan,
        architectures: Sequence[ServerArchitecture],
        server_architecture: np.ndarray,
    ) -> None:
        self.topology = plan.topology
        # Plain Python numbers: sizes given as numpy integers stay JSON-able (describe,
        # MLflow parameters).
        self.params = {
            name: value.item() if isinstance(value, np.generic) else value
            for name, value in plan.params.items()
        }
        self.routing = plan.routing
        self.architectures = tuple(architectures)
        num_servers = len(plan.server_partition)
        self.server_partition = _frozen(np.asarray(plan.server_partition, dtype=np.int32))
        self.server_architecture = _frozen(server_architecture.astype(np.int32))
        self.partition_server_offsets = _frozen(
            _offsets(np.bincount(self.server_partition, minlength=1))
        )
        self._build_servers(num_servers)
        self._build_switches(plan)
        self._build_links(plan)

    # ------------------------------------------------------------------ assembly
    def _build_servers(self, num_servers: int) -> None:
        arch_of = self.server_architecture
        sockets_per_arch = np.array([a.num_sockets for a in self.architectures])
        groups_per_arch = np.array([a.num_gpu_groups for a in self.architectures])
        socket_counts = sockets_per_arch[arch_of]
        group_counts = groups_per_arch[arch_of]
        self.server_socket_offsets = _frozen(_offsets(socket_counts))
        self.server_group_offsets = _frozen(_offsets(group_counts))
        self.socket_server = _frozen(np.repeat(np.arange(num_servers), socket_counts))
        self.group_server = _frozen(np.repeat(np.arange(num_servers), group_counts))

        # Per-architecture templates, padded, then gathered by (architecture, local index).
        max_sockets, max_groups = sockets_per_arch.max(), groups_per_arch.max()
        cores_table = np.zeros((len(self.architectures), max_sockets), dtype=np.int32)
        group_socket_table = np.zeros((len(self.architectures), max_groups), dtype=np.int32)
        group_gpus_table = np.zeros((len(self.architectures), max_groups), dtype=np.int32)
        for a, arch in enumerate(self.architectures):
            local_group = 0
            for s, socket in enumerate(arch.sockets):
                cores_table[a, s] = socket.cores
                for gpus in socket.gpu_groups:
                    group_socket_table[a, local_group] = s
                    group_gpus_table[a, local_group] = gpus
                    local_group += 1
        socket_local = (
            np.arange(len(self.socket_server)) - self.server_socket_offsets[self.socket_server]
        )
        group_local = (
            np.arange(len(self.group_server)) - self.server_group_offsets[self.group_server]
        )
        self.socket_cores = _frozen(cores_table[arch_of[self.socket_server], socket_local])
        group_arch = arch_of[self.group_server]
        self.group_socket = _frozen(
            self.server_socket_offsets[self.group_server]
            + group_socket_table[group_arch, group_local]
        )
        self.group_gpus = _frozen(group_gpus_table[group_arch, group_local])
        self.group_gpu_offsets = _frozen(_offsets(self.group_gpus))
        self.gpu_group = _frozen(np.repeat(np.arange(len(self.group_gpus)), self.group_gpus))
        self.gpu_server = _frozen(self.group_server[self.gpu_group])

    def _build_switches(self, plan: NetworkPlan) -> None:
        self.switch_tier_names = tuple(plan.switch_tiers())
        tier_index = {name: i for i, name in enumerate(self.switch_tier_names)}
        self.switch_tier = _frozen(
            np.array([tier_index[t] for t in plan.switch_tier], dtype=np.int16)
        )
        self.switch_level = _frozen(np.asarray(plan.switch_level, dtype=np.int16))
        self.switch_partition = _frozen(np.asarray(plan.switch_partition, dtype=np.int32))

    def _build_links(self, plan: NetworkPlan) -> None:
        self.link_tier_names = (*plan.network_tiers(), PCIE_TIER, QPI_TIER)
        tier_index = {name: i for i, name in enumerate(self.link_tier_names)}
        num_servers = self.num_servers
        socket_base, group_base = self.num_switches, self.num_switches + self.num_sockets

        # Server ports: port p of a server hangs off socket p mod (its sockets).
        port_server = np.asarray(plan.port_server, dtype=np.int64)
        port_counts = np.bincount(port_server, minlength=num_servers)
        if (port_counts == 0).any():
            missing = int(np.flatnonzero(port_counts == 0)[0])
            raise AssertionError(f"server {missing} has no network port")
        self.server_port_offsets = _frozen(_offsets(port_counts))
        port_local = np.arange(len(port_server)) - self.server_port_offsets[port_server]
        sockets_of = np.diff(self.server_socket_offsets)[port_server]
        self.port_socket = _frozen(
            self.server_socket_offsets[port_server] + port_local % sockets_of
        )
        self.port_switch = _frozen(np.asarray(plan.port_switch, dtype=np.int64))
        num_ports = len(port_server)
        self.port_link = _frozen(np.arange(num_ports, dtype=np.int64))

        # QPI: every pair of sockets inside a server, in server order.
        qpi_a, qpi_b = [], []
        for server_sockets in np.split(
            np.arange(self.num_sockets), self.server_socket_offsets[1:-1]
        ):
            for i, a in enumerate(server_sockets):
                for b in server_sockets[i + 1 :]:
                    qpi_a.append(a)
                    qpi_b.append(b)
        qpi_a_arr, qpi_b_arr = np.array(qpi_a, dtype=np.int64), np.array(qpi_b, dtype=np.int64)
        group_arch = self.server_architecture[self.group_server]
        qpi_arch = self.server_architecture[self.socket_server[qpi_a_arr]]
        pcie_gbps = np.array([a.pcie_gbps for a in self.architectures])[group_arch]
        qpi_gbps = np.array([a.qpi_gbps for a in self.architectures])[qpi_arch]

        nodes = np.concatenate(
            [
                np.stack([self.port_switch, socket_base + self.port_socket], axis=1),
                np.stack([plan.link_a, plan.link_b], axis=1).reshape(-1, 2).astype(np.int64),
                np.stack(
                    [group_base + np.arange(self.num_gpu_groups), socket_base + self.group_socket],
                    axis=1,
                ),
                np.stack([socket_base + qpi_a_arr, socket_base + qpi_b_arr], axis=1).reshape(-1, 2),
            ]
        )
        self.link_nodes = _frozen(nodes)
        self.link_gbps = _frozen(
            np.concatenate(
                [np.asarray(plan.port_gbps), np.asarray(plan.link_gbps), pcie_gbps, qpi_gbps]
            ).astype(np.float64)
        )
        tiers = [tier_index[t] for t in (*plan.port_tier, *plan.link_tier)]
        tiers += [tier_index[PCIE_TIER]] * self.num_gpu_groups
        tiers += [tier_index[QPI_TIER]] * len(qpi_a)
        self.link_tier = _frozen(np.asarray(tiers, dtype=np.int16))
        self.num_network_links = num_ports + len(plan.link_a)
        self.group_pcie_link = _frozen(self.num_network_links + np.arange(self.num_gpu_groups))
        first_qpi = self.num_network_links + self.num_gpu_groups
        self._qpi = {
            (int(a), int(b)): first_qpi + i
            for i, (a, b) in enumerate(zip(qpi_a, qpi_b, strict=True))
        }

    # ------------------------------------------------------------------ sizes
    @property
    def num_servers(self) -> int:
        """Number of servers."""
        return len(self.server_partition)

    @property
    def num_partitions(self) -> int:
        """Number of partitions (one scheduler each)."""
        return len(self.partition_server_offsets) - 1

    @property
    def num_sockets(self) -> int:
        """Number of CPU sockets."""
        return len(self.socket_server)

    @property
    def num_gpu_groups(self) -> int:
        """Number of GPU groups (GPUs behind one PCIe switch)."""
        return len(self.group_server)

    @property
    def num_gpus(self) -> int:
        """Number of GPUs."""
        return len(self.gpu_group)

    @property
    def num_switches(self) -> int:
        """Number of network switches (PCIe switches inside servers are not counted)."""
        return len(self.switch_tier)

    @property
    def num_links(self) -> int:
        """Number of links, in-server ones included."""
        return len(self.link_gbps)

    @property
    def num_nodes(self) -> int:
        """Number of graph nodes: switches, sockets and GPU groups."""
        return self.num_switches + self.num_sockets + self.num_gpu_groups

    # ------------------------------------------------------------------ lookups
    def socket_node(self, socket: int | np.ndarray) -> int | np.ndarray:
        """Global node id of a socket (or array of sockets)."""
        return self.num_switches + socket

    def group_node(self, group: int | np.ndarray) -> int | np.ndarray:
        """Global node id of a GPU group (or array of groups)."""
        return self.num_switches + self.num_sockets + group

    def node_kind(self, node: int) -> tuple[str, int]:
        """``(kind, index)`` of a global node id, kind in :data:`NODE_KIND_NAMES`."""
        if not 0 <= node < self.num_nodes:
            raise ValueError(f"node id {node} out of range [0, {self.num_nodes})")
        if node < self.num_switches:
            return "switch", node
        if node < self.num_switches + self.num_sockets:
            return "socket", node - self.num_switches
        return "gpu_group", node - self.num_switches - self.num_sockets

    def qpi_link(self, socket_a: int, socket_b: int) -> int:
        """The inter-socket link between two sockets of one server."""
        key = (socket_a, socket_b) if socket_a < socket_b else (socket_b, socket_a)
        try:
            return self._qpi[key]
        except KeyError:
            raise ValueError(
                f"sockets {socket_a} and {socket_b} are not two sockets of one server"
            ) from None

    def partition_servers(self, partition: int) -> np.ndarray:
        """Server indices of one partition."""
        self._check_partition(partition)
        start, stop = self.partition_server_offsets[partition : partition + 2]
        return np.arange(start, stop)

    def partition_groups(self, partition: int) -> np.ndarray:
        """GPU-group indices of one partition (its servers' groups, in order)."""
        servers = self.partition_servers(partition)
        return np.arange(
            self.server_group_offsets[servers[0]], self.server_group_offsets[servers[-1] + 1]
        )

    def _check_partition(self, partition: int) -> None:
        if not 0 <= partition < self.num_partitions:
            raise ValueError(
                f"partition {partition} out of range; this cluster has {self.num_partitions}"
            )

    @cached_property
    def server_gpus(self) -> np.ndarray:
        """GPUs of every server [S] (read-only)."""
        gpus = np.add.reduceat(self.group_gpus, self.server_group_offsets[:-1]).astype(np.int64)
        gpus.flags.writeable = False
        return gpus

    @cached_property
    def server_cores(self) -> np.ndarray:
        """CPU cores of every server [S] (read-only)."""
        cores = np.add.reduceat(self.socket_cores, self.server_socket_offsets[:-1])
        cores.flags.writeable = False
        return cores

    @cached_property
    def socket_sibling_cores(self) -> np.ndarray:
        """Per socket [K], the cores of the other sockets of its server (float, read-only):
        what a socket's neighbours hold before a load on it spills over."""
        cores = (self.server_cores[self.socket_server] - self.socket_cores).astype(np.float64)
        cores.flags.writeable = False
        return cores

    @property
    def is_network_link(self) -> np.ndarray:
        """Boolean mask over links: True for network links (ports and switch links)."""
        mask = np.zeros(self.num_links, dtype=bool)
        mask[: self.num_network_links] = True
        return mask

    # ------------------------------------------------------------------ derived
    @cached_property
    def router(self) -> Router:
        """Deterministic router with an on-demand route cache (see :mod:`.routing`)."""
        from envs.topology.routing import Router

        return Router(self)

    def route_links(self, group_a: int, group_b: int) -> np.ndarray:
        """Link indices on the route between two GPU groups (empty for the same group)."""
        return self.router.route(group_a, group_b)

    @cached_property
    def graph(self) -> nx.Graph:
        """The whole cluster as a networkx graph, for people, tests and drawing.

        Nodes are the global node ids with attributes ``kind``, ``index``, ``server`` (-1
        for switches), ``partition`` (-1 for shared switches) and ``tier``/``level`` for
        switches; edges carry ``link`` (its index), ``gbps`` and ``tier``. Servers with
        several ports into one switch (racks) give parallel links, so it is a MultiGraph.
        """
        graph = nx.MultiGraph(topology=self.topology, **self.params)
        for w in range(self.num_switches):
            graph.add_node(
                w,
                kind="switch",
                index=w,
                server=-1,
                partition=int(self.switch_partition[w]),
                tier=self.switch_tier_names[self.switch_tier[w]],
                level=int(self.switch_level[w]),
            )
        socket_partition = self.server_partition[self.socket_server]
        for c in range(self.num_sockets):
            graph.add_node(
                int(self.socket_node(c)),
                kind="socket",
                index=c,
                server=int(self.socket_server[c]),
                partition=int(socket_partition[c]),
                cores=int(self.socket_cores[c]),
            )
        group_partition = self.server_partition[self.group_server]
        for g in range(self.num_gpu_groups):
            graph.add_node(
                int(self.group_node(g)),
                kind="gpu_group",
                index=g,
                server=int(self.group_server[g]),
                partition=int(group_partition[g]),
                gpus=int(self.group_gpus[g]),
            )
        for link, (u, v) in enumerate(self.link_nodes.tolist()):
            graph.add_edge(
                u,
                v,
                key=link,
                link=link,
                gbps=float(self.link_gbps[link]),
                tier=self.link_tier_names[self.link_tier[link]],
            )
        return graph

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return (
            f"Cluster({self.topology}({params}): {self.num_servers} servers, {self.num_gpus} "
            f"GPUs, {self.num_switches} switches, {self.num_partitions} partitions)"
        )


def assemble_cluster(plan: NetworkPlan, server: str | ServerArchitecture, seed: int = 0) -> Cluster:
    """Fill every server of ``plan`` with an architecture (a preset, a mix or an object).

    ``seed`` (an integer >= 0) orders the servers of a mix; raises ValueError otherwise.
    """
    # Checked here, where every builder's seed ends up; numpy's own error names no parameter.
    rng = np.random.default_rng(require_int("seed", seed, 0))
    architectures, server_architecture = assign_servers(server, plan.partition_sizes(), rng)
    if len(plan.switch_partition) and min(plan.switch_partition) < SHARED:
        raise AssertionError("switch partitions must be >= -1")
    return Cluster(plan, architectures, server_architecture)
