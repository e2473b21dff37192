"""A flat pool: N servers on one switch (SCED2 15 x 8, contention-aware 4 x 8, CuSH 128).

Give either ``gpus_per_server`` (a two-socket server with the GPUs split evenly; one
socket when the count is odd) or a ``server`` preset. One partition holds everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from envs.topology.plan import NetworkPlan, require_int, require_positive
from envs.topology.servers import ServerArchitecture, uniform_gpu_architecture


@dataclass(frozen=True)
class FlatSpec:
    """Arguments of a flat cluster: servers, GPUs per server or a preset, port bandwidth."""

    servers: int = 16
    gpus_per_server: int | None = None
    server: str | ServerArchitecture | None = None
    host_gbps: float = 10.0
    seed: int = 0

    def __post_init__(self) -> None:
        require_int("flat servers", self.servers, 1)
        if self.gpus_per_server is not None:
            require_int("flat gpus_per_server", self.gpus_per_server, 1)
            if self.server is not None:
                raise ValueError("flat cluster: give gpus_per_server or a server preset, not both")
        (host_gbps,) = require_positive("flat host_gbps", [self.host_gbps])
        object.__setattr__(self, "host_gbps", host_gbps)

    @property
    def architecture(self) -> str | ServerArchitecture:
        """The server choice the flat cluster is filled with."""
        if self.gpus_per_server is not None:
            return uniform_gpu_architecture(self.gpus_per_server)
        return self.server if self.server is not None else "power8"

    def plan(self) -> NetworkPlan:
        """The flat network."""
        plan = NetworkPlan("flat", {"servers": self.servers}, routing="tree")
        switch = plan.add_switch("switch", 0, 0)
        for _ in range(self.servers):
            plan.add_port(plan.add_server(0), switch, self.host_gbps, "server-switch")
        return plan
