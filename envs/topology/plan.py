"""The network plan a topology builder produces: switches, server ports and switch links.

Builders describe only the network (which server port plugs into which switch, which
switches are wired together, at what bandwidth, in which tier, and who belongs to which
partition); :func:`envs.topology.cluster.assemble_cluster` then adds the inside of every
server and freezes everything into flat arrays. Keeping the two apart lets any server
architecture go into any topology.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from envs.validation import is_number

SHARED = -1
"""Partition id of a switch that belongs to no partition (a top-tier switch)."""


@dataclass
class NetworkPlan:
    """Mutable accumulator of a topology's network, filled by one builder.

    Servers are numbered in partition order (partitions hold contiguous server ranges), and
    ports are added server by server, in port order, so the assembled arrays are CSR-like.
    """

    topology: str
    params: dict[str, object]
    routing: str  # "tree" (up to the lowest common switches) or "bcube" (digit correction)
    server_partition: list[int] = field(default_factory=list)
    switch_tier: list[str] = field(default_factory=list)
    switch_level: list[int] = field(default_factory=list)
    switch_partition: list[int] = field(default_factory=list)
    port_server: list[int] = field(default_factory=list)
    port_switch: list[int] = field(default_factory=list)
    port_gbps: list[float] = field(default_factory=list)
    port_tier: list[str] = field(default_factory=list)
    link_a: list[int] = field(default_factory=list)
    link_b: list[int] = field(default_factory=list)
    link_gbps: list[float] = field(default_factory=list)
    link_tier: list[str] = field(default_factory=list)

    def add_switch(self, tier: str, level: int, partition: int = SHARED) -> int:
        """Add a network switch; returns its index."""
        self.switch_tier.append(tier)
        self.switch_level.append(level)
        self.switch_partition.append(partition)
        return len(self.switch_tier) - 1

    def add_server(self, partition: int) -> int:
        """Add a server to ``partition``; servers must be added partition by partition."""
        if self.server_partition and partition < self.server_partition[-1]:
            raise AssertionError("servers must be added in partition order")
        self.server_partition.append(partition)
        return len(self.server_partition) - 1

    def add_port(self, server: int, switch: int, gbps: float, tier: str) -> None:
        """Plug the next network port of ``server`` (added last) into ``switch``."""
        if self.port_server and server < self.port_server[-1]:
            raise AssertionError("ports must be added server by server")
        self.port_server.append(server)
        self.port_switch.append(switch)
        self.port_gbps.append(gbps)
        self.port_tier.append(tier)

    def add_link(self, switch_a: int, switch_b: int, gbps: float, tier: str) -> None:
        """Wire two switches together."""
        self.link_a.append(switch_a)
        self.link_b.append(switch_b)
        self.link_gbps.append(gbps)
        self.link_tier.append(tier)

    def network_tiers(self) -> list[str]:
        """Link tier names, lowest first: server ports, then switch links in level order."""
        tiers: list[str] = []
        for tier in self.port_tier:
            if tier not in tiers:
                tiers.append(tier)
        level_of = {}
        for a, b, tier in zip(self.link_a, self.link_b, self.link_tier, strict=True):
            level_of.setdefault(tier, min(self.switch_level[a], self.switch_level[b]))
        tiers.extend(sorted(level_of, key=lambda name: level_of[name]))
        return tiers

    def switch_tiers(self) -> list[str]:
        """Switch tier names, lowest level first."""
        level_of: dict[str, int] = {}
        for tier, level in zip(self.switch_tier, self.switch_level, strict=True):
            level_of.setdefault(tier, level)
        return sorted(level_of, key=lambda name: level_of[name])

    def partition_sizes(self) -> list[int]:
        """Number of servers in each partition, in partition order."""
        counts = np.bincount(np.asarray(self.server_partition, dtype=np.int64))
        return [int(count) for count in counts]


def is_sequence(value: object) -> bool:
    """True for a list, tuple or numpy array: what a list of sizes or bandwidths may be.

    A string is a sequence to Python but never a list of numbers here; refusing it keeps
    ``"22"`` from reading as two racks of ``"2"``.
    """
    if isinstance(value, np.ndarray):
        # A 0-d array (``np.array(10.0)``) holds one number and has no len().
        return value.ndim >= 1
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def shown(values: object) -> object:
    """How ``values`` reads in an error message: a sequence as a list of plain Python
    numbers (not numpy reprs such as ``np.int64(2)``), anything else as its repr."""
    if not is_sequence(values):
        return repr(values)
    return [value.item() if isinstance(value, np.generic) else value for value in values]


def require_bandwidths(name: str, values: object, count: int, meaning: str) -> tuple[float, ...]:
    """The ``count`` bandwidths in ``values`` as a tuple of plain floats; ValueError unless
    ``values`` is a sequence (list, tuple, 1-d numpy array) of positive finite numbers.

    ``meaning`` completes "``name`` needs ...", e.g. ``"3 values (server-edge, ...)"``.
    Specs store the returned tuple: a numpy array there would make the frozen spec
    unhashable and its ``==`` ambiguous.
    """
    if not is_sequence(values) or len(values) != count:  # type: ignore[arg-type]
        raise ValueError(f"{name} needs {meaning}, got {shown(values)}")
    return require_positive(name, values)  # type: ignore[arg-type]


def require_positive(name: str, values: Sequence[object] | np.ndarray) -> tuple[float, ...]:
    """``values`` as plain floats; ValueError unless each is a positive finite number.

    Numpy scalars (``np.float64(10.0)``, ``np.int64(40)``) are numbers like any other; a
    numpy array where one number belongs is refused with its own message.
    """
    for value in values:
        if isinstance(value, np.ndarray):
            raise ValueError(
                f"{name} must be numbers (Gbps), not numpy arrays, got {shown(values)}; "
                "pass each as a number (float(x) or x.item() of a one-element array)"
            )
        # An infinite link would turn every capacity sum (the bisection's max flow
        # among them) into inf or nan.
        if not is_number(value) or not (math.isfinite(value) and value > 0):  # type: ignore[arg-type]
            raise ValueError(f"{name} must be positive finite numbers (Gbps), got {shown(values)}")
    return tuple(float(value) for value in values)  # type: ignore[arg-type]


def require_int(name: str, value: object, minimum: int) -> int:
    """Raise ValueError unless ``value`` is an integer >= ``minimum``; returns it."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)
