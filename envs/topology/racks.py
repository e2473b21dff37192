"""Racks of machines under one director switch (paper 003 §4.6.1, Table 1).

Each rack has a top-of-rack switch; every machine plugs ``ports_per_server`` InfiniBand
cards into its rack's switch (003: two cards, one per CPU), and every ToR links to the
single director switch. Table 1 bandwidths, in Gbps (GB/s x 8): IBC-ToR 12.5 GB/s = 100,
ToR-director 6.25 GB/s = 50. The machines default to the ``minsky`` preset (4 GPUs,
2 CPUs, CPU-GPU 40 GB/s, CPU-CPU 38.5 GB/s). 003's default cluster is four racks of two
machines: ``racks=(2, 2, 2, 2)``, 32 GPUs. One partition per rack; the director is shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.topology.plan import NetworkPlan, is_sequence, require_int, require_positive, shown
from envs.topology.servers import ServerArchitecture


@dataclass(frozen=True)
class RacksSpec:
    """Arguments of a rack cluster: machines per rack, ports per machine, bandwidths."""

    racks: tuple[int, ...] = (2, 2, 2, 2)
    ports_per_server: int = 2
    host_gbps: float = 100.0
    uplink_gbps: float = 50.0
    server: str | ServerArchitecture = "minsky"
    seed: int = 0

    def __post_init__(self) -> None:
        if not is_sequence(self.racks) or not len(self.racks):
            raise ValueError(
                f"racks must be a non-empty list of machines per rack, got {shown(self.racks)}"
            )
        for machines in self.racks:
            if isinstance(machines, bool) or not isinstance(machines, int | np.integer):
                raise ValueError(
                    "every rack needs a whole number of machines (an integer >= 1), "
                    f"got racks={shown(self.racks)}"
                )
            if machines < 1:
                raise ValueError(
                    f"every rack needs at least 1 machine, got racks={shown(self.racks)}"
                )
        require_int("racks ports_per_server", self.ports_per_server, 1)
        host_gbps, uplink_gbps = require_positive(
            "racks host_gbps/uplink_gbps", [self.host_gbps, self.uplink_gbps]
        )
        # Plain Python values: a numpy array of rack sizes would make the frozen spec
        # unhashable and its == ambiguous.
        object.__setattr__(self, "racks", tuple(int(machines) for machines in self.racks))
        object.__setattr__(self, "host_gbps", host_gbps)
        object.__setattr__(self, "uplink_gbps", uplink_gbps)

    def plan(self) -> NetworkPlan:
        """The racks' network."""
        plan = NetworkPlan("racks", {"racks": list(self.racks)}, routing="tree")
        tors = [plan.add_switch("tor", 0, rack) for rack in range(len(self.racks))]
        director = plan.add_switch("director", 1)
        for rack, machines in enumerate(self.racks):
            for _ in range(machines):
                server = plan.add_server(rack)
                for _ in range(self.ports_per_server):
                    plan.add_port(server, tors[rack], self.host_gbps, "server-tor")
        for tor in tors:
            plan.add_link(tor, director, self.uplink_gbps, "tor-director")
        return plan
