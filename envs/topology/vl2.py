"""VL2 (Greenberg et al., SIGCOMM'09) as used by paper 001 §VI-D.

With ``d_a``-port aggregation and ``d_i``-port intermediate switches there are ``d_i``
aggregation switches, ``d_a/2`` intermediate switches and ``d_a*d_i/4`` ToR switches with
``servers_per_tor`` servers each. Every aggregation switch is wired to every intermediate
switch; aggregation switches come in pairs ``(2j, 2j+1)`` that share ``d_a/2`` ToRs, each
ToR dual-homed to both. 001's ``k`` sets ``d_a = d_i = k`` (k=20: 20 aggregation, 10
intermediate, 100 ToR switches, 2,000 servers). Bandwidths (server-ToR, ToR-aggregation,
aggregation-intermediate) default to 001's 1/10/10 Gbps.

Partitions (001 §VI-D): one per aggregation switch, holding it and half of its pair's
ToRs (``d_a/4``; 5 ToRs and 100 servers at k=20). Intermediate switches are shared; a
ToR's link to its pair's other aggregation switch crosses into the neighbour partition.
"""

from __future__ import annotations

from dataclasses import dataclass

from envs.topology.plan import NetworkPlan, require_bandwidths, require_int
from envs.topology.servers import ServerArchitecture


@dataclass(frozen=True)
class VL2Spec:
    """Arguments of a VL2: ``k`` (multiple of 4) or ``d_a``/``d_i``, servers per ToR, ..."""

    k: int | None = 8
    d_a: int | None = None
    d_i: int | None = None
    servers_per_tor: int = 20
    bandwidth_gbps: tuple[float, float, float] = (1.0, 10.0, 10.0)
    server: str | ServerArchitecture = "power8"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.k is not None:
            k = require_int("VL2 k", self.k, 4)
            if k % 4:
                raise ValueError(f"VL2 k must be a multiple of 4 and >= 4, got {k}")
        if self.ports_aggregation is None or self.ports_intermediate is None:
            raise ValueError("VL2 needs k, or both d_a and d_i")
        d_a = require_int("VL2 d_a", self.ports_aggregation, 4)
        d_i = require_int("VL2 d_i", self.ports_intermediate, 2)
        if d_a % 4 or d_i % 2:
            raise ValueError(
                f"VL2 needs d_a a multiple of 4 and d_i even (aggregation switches pair up and "
                f"split their ToRs in halves), got d_a={d_a}, d_i={d_i}"
            )
        require_int("VL2 servers_per_tor", self.servers_per_tor, 1)
        # Stored as plain floats so the frozen spec stays hashable (a numpy array is not).
        bandwidths = require_bandwidths(
            "VL2 bandwidth_gbps",
            self.bandwidth_gbps,
            3,
            "3 values (server-ToR, ToR-aggregation, aggregation-intermediate)",
        )
        object.__setattr__(self, "bandwidth_gbps", bandwidths)

    @property
    def ports_aggregation(self) -> int | None:
        """D_A: ports of an aggregation switch (``k`` unless given)."""
        return self.d_a if self.d_a is not None else self.k

    @property
    def ports_intermediate(self) -> int | None:
        """D_I: ports of an intermediate switch (``k`` unless given)."""
        return self.d_i if self.d_i is not None else self.k

    def plan(self) -> NetworkPlan:
        """The VL2 network."""
        d_a, d_i = self.ports_aggregation, self.ports_intermediate
        assert d_a is not None and d_i is not None
        host_gbps, tor_gbps, agg_gbps = self.bandwidth_gbps
        params: dict[str, object] = {"d_a": d_a, "d_i": d_i}
        if self.k is not None and self.d_a is None and self.d_i is None:
            params = {"k": self.k}
        params["servers_per_tor"] = self.servers_per_tor
        plan = NetworkPlan("vl2", params, routing="tree")
        tors_per_partition = d_a // 4
        aggs = [plan.add_switch("aggregation", 1, partition) for partition in range(d_i)]
        intermediates = [plan.add_switch("intermediate", 2) for _ in range(d_a // 2)]
        tors = [
            [plan.add_switch("tor", 0, partition) for _ in range(tors_per_partition)]
            for partition in range(d_i)
        ]
        for partition in range(d_i):
            for tor in tors[partition]:
                for _ in range(self.servers_per_tor):
                    plan.add_port(plan.add_server(partition), tor, host_gbps, "server-tor")
        for partition in range(d_i):
            pair = (partition - partition % 2, partition - partition % 2 + 1)
            for tor in tors[partition]:
                for agg in pair:
                    plan.add_link(tor, aggs[agg], tor_gbps, "tor-aggregation")
        for agg in aggs:
            for intermediate in intermediates:
                plan.add_link(agg, intermediate, agg_gbps, "aggregation-intermediate")
        return plan
