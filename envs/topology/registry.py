"""``build_cluster(topology, **params)``: the one entry point from a name to a Cluster."""

from __future__ import annotations

import dataclasses
from typing import Any

from envs.topology.bcube import BCubeSpec
from envs.topology.cluster import Cluster, assemble_cluster
from envs.topology.fattree import FatTreeSpec
from envs.topology.flat import FlatSpec
from envs.topology.racks import RacksSpec
from envs.topology.servers import (
    SERVER_MIXES,
    SERVER_PRESETS,
    ServerArchitecture,
    known_server_names,
)
from envs.topology.vl2 import VL2Spec

TopologySpec = FatTreeSpec | VL2Spec | BCubeSpec | RacksSpec | FlatSpec

TOPOLOGIES: dict[str, type[TopologySpec]] = {
    "fat-tree": FatTreeSpec,
    "vl2": VL2Spec,
    "bcube": BCubeSpec,
    "racks": RacksSpec,
    "flat": FlatSpec,
}


def make_spec(topology: str, **params: Any) -> TopologySpec:
    """Validated spec of ``topology`` from keyword parameters (unknown keys are refused)."""
    spec_class = TOPOLOGIES.get(topology)
    if spec_class is None:
        raise ValueError(f"unknown topology {topology!r}; known: {', '.join(sorted(TOPOLOGIES))}")
    allowed = [field.name for field in dataclasses.fields(spec_class)]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(unknown)} for topology {topology!r}; "
            f"allowed: {', '.join(allowed)}"
        )
    server = params.get("server")
    if isinstance(server, str) and server not in SERVER_PRESETS and server not in SERVER_MIXES:
        raise ValueError(
            f"unknown server architecture {server!r}; known: {', '.join(known_server_names())}"
        )
    return spec_class(**params)


def build_cluster(topology: str = "fat-tree", **params: Any) -> Cluster:
    """Build a :class:`Cluster` by topology name.

    Examples: ``build_cluster("fat-tree", k=20)``, ``build_cluster("vl2", k=20)``,
    ``build_cluster("bcube", n=6, k=3)``, ``build_cluster("racks", racks=(2, 2, 2, 2))``,
    ``build_cluster("flat", servers=15, gpus_per_server=8)``; every topology takes
    ``server=`` (a preset or mix name from :data:`SERVER_PRESETS` / :data:`SERVER_MIXES`, or
    a :class:`ServerArchitecture`) and ``seed=`` (for the order of mixed servers).
    Raises ValueError naming any bad value and what is allowed.
    """
    return build_from_spec(make_spec(topology, **params))


def build_from_spec(spec: TopologySpec) -> Cluster:
    """Build a :class:`Cluster` from a validated spec; ValueError, before anything is
    allocated, for one too large to hold in memory (:func:`check_cluster_size`)."""
    check_cluster_size(spec)
    server = spec.architecture if isinstance(spec, FlatSpec) else spec.server
    return assemble_cluster(spec.plan(), server, seed=spec.seed)


# The most a cluster may hold. A cluster is flat arrays over its servers, sockets, GPU
# groups, GPUs, switches and links, built from Python lists (the plan): about 100 bytes
# per element, measured -- fat-tree k=160 (1,024,000 servers, 4M GPUs, 6M links) takes
# 1.3 GB and 9 s, BCube n=32 k=3 (1,048,576 servers, 7M links) 1.7 GB and 15 s. At these
# bounds a cluster takes some 4 GB, which a 24 GB machine holds with the simulator's
# per-GPU and per-link state beside it; fat-tree k=100000 (2.5e14 servers) or BCube
# n=1000 k=5 (1e18) ended in a MemoryError instead. The papers' scales are far below:
# fat-tree k=20 (2,000 servers) and k=48 (27,648), VL2 k=20 (2,000), BCube n=6 k=3 (1,296).
MAX_CLUSTER_SERVERS = 2**20  # 1,048,576
MAX_CLUSTER_GPUS = 2**23  # 8,388,608: 8 per server at the most servers
MAX_CLUSTER_LINKS = 2**24  # 16,777,216: network, PCIe and inter-socket links together

# Counts are exact up to here and shown as "more than" beyond: BCube's n^(k+1) with a
# large k would otherwise be computed digit by digit (and printed: Python refuses to
# print integers of more than 4,300 digits).
_COUNT_CEILING = 10**30


def _count_text(count: int) -> str:
    return f"{count:,}" if count <= _COUNT_CEILING else "more than 10^30"


def _capped(count: int) -> int:
    return min(count, _COUNT_CEILING + 1)


def _capped_power(base: int, exponent: int) -> int:
    """``base ** exponent`` (base >= 2), or a number above the ceiling when that is, in at
    most ~100 multiplications whatever the exponent."""
    value = 1
    for _ in range(exponent):
        value *= base
        if value > _COUNT_CEILING:
            return _COUNT_CEILING + 1
    return value


def _network_size(spec: TopologySpec) -> tuple[str, int, int, int]:
    """``(label, servers, server ports, switch-switch links)`` of ``spec``, from the
    builders' formulas (their module docstrings) without building anything."""
    if isinstance(spec, FatTreeSpec):
        k = spec.k
        # k pods of (k/2)^2 servers; edge-aggregation and aggregation-core links k^3/4 each.
        return f"fat-tree k={k}", k**3 // 4, k**3 // 4, k**3 // 2
    if isinstance(spec, VL2Spec):
        d_a, d_i = spec.ports_aggregation, spec.ports_intermediate
        assert d_a is not None and d_i is not None  # the spec checked them
        tors = d_i * (d_a // 4)
        servers = tors * spec.servers_per_tor
        label = f"VL2 d_a={d_a} d_i={d_i} servers_per_tor={spec.servers_per_tor}"
        # Every ToR dual-homed; every aggregation switch wired to every intermediate one.
        return label, servers, servers, 2 * tors + d_i * (d_a // 2)
    if isinstance(spec, BCubeSpec):
        servers = _capped_power(spec.n, spec.k + 1)
        # k+1 ports per server; BCube wires no switch to another.
        return f"BCube n={spec.n} k={spec.k}", servers, servers * (spec.k + 1), 0
    if isinstance(spec, RacksSpec):
        servers = sum(spec.racks)
        label = f"racks ({len(spec.racks):,} rack{'s' if len(spec.racks) > 1 else ''})"
        return label, servers, servers * spec.ports_per_server, len(spec.racks)
    return f"flat servers={spec.servers}", spec.servers, spec.servers, 0


def _server_architectures(spec: TopologySpec) -> list[ServerArchitecture]:
    """The architectures ``spec``'s servers may have (several for a mix)."""
    server = spec.architecture if isinstance(spec, FlatSpec) else spec.server
    if isinstance(server, ServerArchitecture):
        return [server]
    names = [name for name, _ in SERVER_MIXES[server]] if server in SERVER_MIXES else [server]
    if any(name not in SERVER_PRESETS for name in names):
        raise ValueError(
            f"unknown server architecture {server!r}; known: {', '.join(known_server_names())}"
        )
    return [SERVER_PRESETS[name] for name in names]


def planned_size(spec: TopologySpec) -> dict[str, int]:
    """The servers, GPUs and links (network, PCIe and inter-socket) the cluster of
    ``spec`` would have, counted from the spec alone: exact for one architecture, an upper
    bound for a mix (every server counted as its largest). A count beyond 10^30 is some
    number beyond it."""
    _, servers, ports, switch_links = _network_size(spec)
    servers, ports = _capped(servers), _capped(ports)
    architectures = _server_architectures(spec)
    gpus = max(arch.num_gpus for arch in architectures)
    # Per server: a PCIe link per GPU group and an inter-socket link per pair of sockets.
    inside = max(
        arch.num_gpu_groups + arch.num_sockets * (arch.num_sockets - 1) // 2
        for arch in architectures
    )
    return {
        "servers": servers,
        "GPUs": _capped(servers * gpus),
        "links": _capped(ports + switch_links + servers * inside),
    }


def check_cluster_size(spec: TopologySpec) -> None:
    """Raise ValueError, naming the count and the bound, when the cluster of ``spec`` would
    have more than :data:`MAX_CLUSTER_SERVERS` servers, :data:`MAX_CLUSTER_GPUS` GPUs or
    :data:`MAX_CLUSTER_LINKS` links (:func:`planned_size`): too many to hold in memory."""
    size = planned_size(spec)
    for what, bound in (
        ("servers", MAX_CLUSTER_SERVERS),
        ("GPUs", MAX_CLUSTER_GPUS),
        ("links", MAX_CLUSTER_LINKS),
    ):
        if size[what] > bound:
            label = _network_size(spec)[0]
            raise ValueError(
                f"{label} would have {_count_text(size[what])} {what}; at most {bound:,} "
                "fit in memory"
            )
