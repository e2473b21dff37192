"""Data-center topologies: fat-tree, VL2, BCube, racks and flat pools of GPU servers.

``build_cluster(name, **params)`` returns an immutable :class:`Cluster` (flat numpy arrays
plus a networkx graph on demand); :mod:`.routing` gives routes between GPU groups,
:mod:`.views` the graphs a GNN reads, :mod:`.summary` the counts that ``simulate.py
describe`` prints.
"""

from envs.topology.bcube import BCubeSpec
from envs.topology.cluster import NODE_KIND_NAMES, Cluster
from envs.topology.fattree import FatTreeSpec
from envs.topology.flat import FlatSpec
from envs.topology.racks import RacksSpec
from envs.topology.registry import TOPOLOGIES, build_cluster, build_from_spec, make_spec
from envs.topology.servers import (
    SERVER_MIXES,
    SERVER_PRESETS,
    ServerArchitecture,
    Socket,
    known_server_names,
)
from envs.topology.summary import describe_cluster
from envs.topology.views import (
    GraphView,
    inner_graph,
    inter_scheduler_graph,
)
from envs.topology.vl2 import VL2Spec

__all__ = [
    "NODE_KIND_NAMES",
    "SERVER_MIXES",
    "SERVER_PRESETS",
    "TOPOLOGIES",
    "BCubeSpec",
    "Cluster",
    "FatTreeSpec",
    "FlatSpec",
    "GraphView",
    "RacksSpec",
    "ServerArchitecture",
    "Socket",
    "VL2Spec",
    "build_cluster",
    "build_from_spec",
    "describe_cluster",
    "inner_graph",
    "inter_scheduler_graph",
    "known_server_names",
    "make_spec",
]
