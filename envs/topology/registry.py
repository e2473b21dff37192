"""``build_cluster(topology, **params)``: the one entry point from a name to a Cluster."""

from __future__ import annotations

import dataclasses
from typing import Any

from envs.topology.bcube import BCubeSpec
from envs.topology.cluster import Cluster, assemble_cluster
from envs.topology.fattree import FatTreeSpec
from envs.topology.flat import FlatSpec
from envs.topology.racks import RacksSpec
from envs.topology.servers import SERVER_MIXES, SERVER_PRESETS, known_server_names
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
    """Build a :class:`Cluster` from a validated spec."""
    server = spec.architecture if isinstance(spec, FlatSpec) else spec.server
    return assemble_cluster(spec.plan(), server, seed=spec.seed)
