"""k-ary fat-tree (paper 001 §VI-A): k pods, one scheduler partition per pod.

Each pod has k/2 edge and k/2 aggregation switches and (k/2)^2 servers (k/2 per edge
switch); every edge switch is wired to every aggregation switch of its pod; (k/2)^2 core
switches, core ``a * k/2 + j`` wired to aggregation switch ``a`` of every pod. Tier
bandwidths (server-edge, edge-aggregation, aggregation-core) default to 001's 10/20/40
Gbps. Edge and aggregation switches belong to their pod's partition; cores are shared.
"""

from __future__ import annotations

from dataclasses import dataclass

from envs.topology.plan import NetworkPlan, require_bandwidths, require_int
from envs.topology.servers import ServerArchitecture


@dataclass(frozen=True)
class FatTreeSpec:
    """Arguments of a fat-tree: ``k`` (even, >= 2), tier bandwidths, server choice, seed."""

    k: int = 4
    bandwidth_gbps: tuple[float, float, float] = (10.0, 20.0, 40.0)
    server: str | ServerArchitecture = "power8"
    seed: int = 0

    def __post_init__(self) -> None:
        k = require_int("fat-tree k", self.k, 2)
        if k % 2:
            raise ValueError(f"fat-tree k must be an even integer >= 2, got {k}")
        # Stored as plain floats so the frozen spec stays hashable (a numpy array is not).
        bandwidths = require_bandwidths(
            "fat-tree bandwidth_gbps",
            self.bandwidth_gbps,
            3,
            "3 values (server-edge, edge-aggregation, aggregation-core)",
        )
        object.__setattr__(self, "bandwidth_gbps", bandwidths)

    def plan(self) -> NetworkPlan:
        """The fat-tree's network."""
        k, half = self.k, self.k // 2
        host_gbps, edge_gbps, core_gbps = self.bandwidth_gbps
        plan = NetworkPlan("fat-tree", {"k": k}, routing="tree")
        edges = [[plan.add_switch("edge", 0, pod) for _ in range(half)] for pod in range(k)]
        aggs = [[plan.add_switch("aggregation", 1, pod) for _ in range(half)] for pod in range(k)]
        cores = [plan.add_switch("core", 2) for _ in range(half * half)]
        for pod in range(k):
            for edge in edges[pod]:
                for _ in range(half):
                    server = plan.add_server(pod)
                    plan.add_port(server, edge, host_gbps, "server-edge")
        for pod in range(k):
            for edge in edges[pod]:
                for agg in aggs[pod]:
                    plan.add_link(edge, agg, edge_gbps, "edge-aggregation")
        for pod in range(k):
            for a, agg in enumerate(aggs[pod]):
                for j in range(half):
                    plan.add_link(agg, cores[a * half + j], core_gbps, "aggregation-core")
        return plan
