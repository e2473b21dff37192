"""BCube(n, k) (Guo et al., SIGCOMM'09) as used by paper 001 §VI-D.

``n^(k+1)`` servers, each with ``k+1`` ports, and ``k+1`` levels of ``n^k`` n-port
switches. Server ``s`` has base-n address digits ``d_k ... d_0``; its level-l port plugs
into the level-l switch that joins the ``n`` servers whose addresses differ only in digit
``l``. Servers relay traffic (routing corrects one digit per hop, see :mod:`.routing`).

Per-level bandwidths default to 001's 10/20/40 Gbps for levels 0/1/2; 001 gives three
values for its four levels (k=3), so levels above 2 keep 40 Gbps.

Partitions: groups of ``cubes_per_partition`` consecutive BCube_m sub-cubes,
``m = partition_level``. 001 (n=6, k=3) manages every two BCube_1 with one scheduler: 18
partitions of 72 servers. Defaults: m = 1 when k >= 2 (else 0 when k = 1, and a single
partition when k = 0); two sub-cubes per partition when their number is even, else one.
A switch belongs to a partition when all its servers do; the others are shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.topology.plan import SHARED, NetworkPlan, require_bandwidths, require_int
from envs.topology.servers import ServerArchitecture

DEFAULT_LEVEL_GBPS = (10.0, 20.0, 40.0)


@dataclass(frozen=True)
class BCubeSpec:
    """Arguments of a BCube: ``n`` >= 2, ``k`` >= 0, per-level bandwidths, partitioning."""

    n: int = 4
    k: int = 1
    bandwidth_gbps: tuple[float, ...] | None = None
    partition_level: int | None = None
    cubes_per_partition: int | None = None
    server: str | ServerArchitecture = "power8"
    seed: int = 0

    def __post_init__(self) -> None:
        require_int("BCube n", self.n, 2)
        k = require_int("BCube k", self.k, 0)
        if self.bandwidth_gbps is not None:
            # Stored as plain floats so the frozen spec stays hashable (an array is not).
            bandwidths = require_bandwidths(
                "BCube bandwidth_gbps",
                self.bandwidth_gbps,
                k + 1,
                f"k+1 = {k + 1} values (one per level)",
            )
            object.__setattr__(self, "bandwidth_gbps", bandwidths)
        if self.partition_level is not None:
            level = require_int("BCube partition_level", self.partition_level, 0)
            if level > self.k:
                raise ValueError(f"BCube partition_level must be in [0, k={self.k}], got {level}")
        if self.cubes_per_partition is not None:
            cubes = require_int("BCube cubes_per_partition", self.cubes_per_partition, 1)
            if self.num_subcubes % cubes:
                raise ValueError(
                    f"BCube cubes_per_partition must divide the {self.num_subcubes} "
                    f"BCube_{self.level} sub-cubes, got {cubes}"
                )

    @property
    def level(self) -> int:
        """Level m of the sub-cubes that partitions are made of."""
        if self.partition_level is not None:
            return self.partition_level
        return min(1, max(self.k - 1, 0)) if self.k else 0

    @property
    def num_subcubes(self) -> int:
        """Number of BCube_m sub-cubes."""
        return self.n ** (self.k - self.level)

    @property
    def cubes(self) -> int:
        """Sub-cubes per partition."""
        if self.cubes_per_partition is not None:
            return self.cubes_per_partition
        return 2 if self.num_subcubes % 2 == 0 else 1

    @property
    def level_gbps(self) -> tuple[float, ...]:
        """Bandwidth of the server links of each level."""
        if self.bandwidth_gbps is not None:
            return tuple(self.bandwidth_gbps)
        return tuple(DEFAULT_LEVEL_GBPS[min(level, 2)] for level in range(self.k + 1))

    def plan(self) -> NetworkPlan:
        """The BCube network."""
        n, k = self.n, self.k
        num_servers = n ** (k + 1)
        servers_per_partition = self.cubes * n ** (self.level + 1)
        plan = NetworkPlan("bcube", {"n": n, "k": k}, routing="bcube")
        server_partition = np.arange(num_servers) // servers_per_partition
        for level in range(k + 1):
            for index in range(n**k):
                members = _switch_members(n, level, index)
                owners = np.unique(server_partition[members])
                owner = int(owners[0]) if len(owners) == 1 else SHARED
                plan.add_switch(f"level{level}", level, owner)
        for server in range(num_servers):
            plan.add_server(int(server_partition[server]))
            for level, gbps in enumerate(self.level_gbps):
                switch = level * n**k + _switch_index(n, level, server)
                plan.add_port(server, switch, gbps, f"server-level{level}")
        return plan


def _switch_index(n: int, level: int, server: int) -> int:
    """Index, within its level, of the level-``level`` switch of ``server``: drop digit l."""
    place = n**level
    return (server // (place * n)) * place + server % place


def _switch_members(n: int, level: int, index: int) -> np.ndarray:
    """The ``n`` servers of a level switch: its index with every digit value inserted at l."""
    place = n**level
    base = (index // place) * place * n + index % place
    return base + np.arange(n) * place
