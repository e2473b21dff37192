"""Server architectures: CPU sockets, GPU groups behind PCIe switches, and their links.

A server is a set of CPU sockets joined pairwise by inter-socket links (QPI); each socket
hosts zero or more GPU groups, a group being the GPUs behind one PCIe switch (paper 001
§IV-A models "both physical CPUs and such GPU groups as nodes"). A server's i-th network
port hangs off socket ``i mod sockets``, so a GPU group on another socket reaches the
network through the inter-socket link, as on real NUMA machines.

Presets (paper 001 §VI-A and §VI-C, paper 003 §4.6.1):

==============  ==========================================  ===========  ==========
name            sockets (cores: GPUs per group)             PCIe (Gbps)  QPI (Gbps)
==============  ==========================================  ===========  ==========
power8          2 x (8: [2])  -- 001's default                 128          300
dgx1            2 x (16: [4])                                  128          300
asymmetric      (16: [4]) + (8: [2])  -- 001 §VI-C (ii)        128          300
single-socket   1 x (8: [2])  -- the 2-GPU server of §VI-C     128          300
minsky          2 x (10: [1, 1]) -- 003 Table 1                320          308
summit          2 x (22: [3])  -- CuSH's Summit node           128          300
==============  ==========================================  ===========  ==========

``minsky`` gives every GPU its own CPU link (003 models CPU-GPU edges of 40 GB/s =
320 Gbps and CPU-CPU of 38.5 GB/s = 308 Gbps); ``power8`` with 2 sockets x 2 GPUs is also
CuSH's Sierra node. 003 does not give core counts: 10 per socket is the S822LC's.

Mixes assign a preset to each server of a partition: ``mixed`` is 001 §VI-C (iii) --
per partition 20% single-socket, 40% power8, 40% dgx1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.topology.plan import is_sequence, require_int, require_positive, shown


@dataclass(frozen=True)
class Socket:
    """One CPU socket: its cores and the GPU groups (GPU counts) behind its PCIe switches.

    ``gpu_groups`` holds one GPU count per group, even for a single group: ``(2,)`` is one
    group of 2 GPUs, ``(1, 1)`` two groups of one, ``()`` a socket without GPUs. A bare
    count is refused (``2`` could mean either of the first two), as are fractional counts;
    :class:`ServerArchitecture` checks its sockets and stores them with plain ints.
    """

    cores: int
    gpu_groups: tuple[int, ...]


@dataclass(frozen=True)
class ServerArchitecture:
    """The inside of one server: sockets, their GPU groups, PCIe and inter-socket bandwidth.

    Numpy numbers are accepted and stored as plain Python ones, and lists as tuples, so the
    architecture stays hashable and JSON-able.
    """

    name: str
    sockets: tuple[Socket, ...]
    pcie_gbps: float = 128.0
    qpi_gbps: float = 300.0

    def __post_init__(self) -> None:
        if not is_sequence(self.sockets) or not len(self.sockets):  # type: ignore[arg-type]
            raise ValueError(
                f"server architecture {self.name!r} needs at least one CPU socket: a list of "
                f"Socket(cores, gpu_groups), got {shown(self.sockets)}"
            )
        object.__setattr__(
            self, "sockets", tuple(self._checked_socket(i, s) for i, s in enumerate(self.sockets))
        )
        if self.num_gpus == 0:
            raise ValueError(
                f"server architecture {self.name!r} has no GPU; a GPU server needs one"
            )
        for label in ("pcie_gbps", "qpi_gbps"):
            (gbps,) = require_positive(
                f"server architecture {self.name!r}: {label}", [getattr(self, label)]
            )
            object.__setattr__(self, label, gbps)

    def _checked_socket(self, index: int, socket: object) -> Socket:
        """``socket`` with plain int counts and a tuple of groups; ValueError naming it."""
        where = f"server architecture {self.name!r}: socket {index}"
        if not isinstance(socket, Socket):
            raise ValueError(f"{where} must be a Socket(cores, gpu_groups), got {socket!r}")
        # Whole counts only: the cluster stores cores and GPUs in integer tables, where
        # 8.5 cores or 2.5 GPUs would silently become 8 and 2.
        cores = require_int(f"{where} cores", socket.cores, 1)
        if not is_sequence(socket.gpu_groups):
            raise ValueError(
                f"{where} gpu_groups must be a list of GPU counts, one per group (e.g. (2,) "
                f"for one group of 2 GPUs, () for none), got {shown(socket.gpu_groups)}"
            )
        groups = tuple(
            require_int(f"{where} GPUs per group", gpus, 1) for gpus in socket.gpu_groups
        )
        return Socket(cores, groups)

    @property
    def num_sockets(self) -> int:
        """Number of CPU sockets."""
        return len(self.sockets)

    @property
    def num_gpu_groups(self) -> int:
        """Number of GPU groups (PCIe switches with GPUs) over all sockets."""
        return sum(len(socket.gpu_groups) for socket in self.sockets)

    @property
    def num_gpus(self) -> int:
        """Number of GPUs in the server."""
        return sum(sum(socket.gpu_groups) for socket in self.sockets)

    @property
    def num_cores(self) -> int:
        """Number of CPU cores in the server."""
        return sum(socket.cores for socket in self.sockets)


SERVER_PRESETS: dict[str, ServerArchitecture] = {
    preset.name: preset
    for preset in (
        ServerArchitecture("power8", (Socket(8, (2,)), Socket(8, (2,)))),
        ServerArchitecture("dgx1", (Socket(16, (4,)), Socket(16, (4,)))),
        ServerArchitecture("asymmetric", (Socket(16, (4,)), Socket(8, (2,)))),
        ServerArchitecture("single-socket", (Socket(8, (2,)),)),
        ServerArchitecture(
            "minsky", (Socket(10, (1, 1)), Socket(10, (1, 1))), pcie_gbps=320.0, qpi_gbps=308.0
        ),
        ServerArchitecture("summit", (Socket(22, (3,)), Socket(22, (3,)))),
    )
}

# A mix is a list of (preset, share); shares of a partition's servers, in this order.
SERVER_MIXES: dict[str, tuple[tuple[str, float], ...]] = {
    "mixed": (("single-socket", 0.2), ("power8", 0.4), ("dgx1", 0.4)),
}


def known_server_names() -> list[str]:
    """All names accepted as a server choice: presets and mixes."""
    return sorted([*SERVER_PRESETS, *SERVER_MIXES])


def uniform_gpu_architecture(gpus_per_server: int, cores_per_socket: int = 8) -> ServerArchitecture:
    """A two-socket server with ``gpus_per_server`` GPUs split evenly, one group per socket.

    An odd GPU count gets a single socket, so every requested GPU exists. Used by the flat
    topology when it is given a GPU count instead of a preset.
    """
    if gpus_per_server < 1:
        raise ValueError(f"gpus per server must be >= 1, got {gpus_per_server}")
    if gpus_per_server % 2 == 0:
        half = gpus_per_server // 2
        sockets = (Socket(cores_per_socket, (half,)), Socket(cores_per_socket, (half,)))
    else:
        sockets = (Socket(cores_per_socket, (gpus_per_server,)),)
    return ServerArchitecture(f"{gpus_per_server}-gpu", sockets)


def assign_servers(
    server: str | ServerArchitecture,
    partition_sizes: list[int],
    rng: np.random.Generator,
) -> tuple[list[ServerArchitecture], np.ndarray]:
    """Choose the architecture of every server, partition by partition.

    Returns the distinct architectures used and, per server (partitions in order, servers
    contiguous), the index of its architecture in that list. A preset is used everywhere;
    a mix gives each partition its exact shares (largest remainder rounding) in a seeded
    random order, so every partition holds the same blend as 001 §VI-C (iii) prescribes.
    """
    if isinstance(server, ServerArchitecture):
        return [server], np.zeros(sum(partition_sizes), dtype=np.int32)
    if server in SERVER_PRESETS:
        return [SERVER_PRESETS[server]], np.zeros(sum(partition_sizes), dtype=np.int32)
    if server not in SERVER_MIXES:
        raise ValueError(
            f"unknown server architecture {server!r}; known: {', '.join(known_server_names())}"
        )
    mix = SERVER_MIXES[server]
    architectures = [SERVER_PRESETS[name] for name, _ in mix]
    shares = np.array([share for _, share in mix])
    labels = []
    for size in partition_sizes:
        counts = _largest_remainder(shares, size)
        partition_labels = np.repeat(np.arange(len(mix), dtype=np.int32), counts)
        labels.append(rng.permutation(partition_labels))
    return architectures, np.concatenate(labels).astype(np.int32)


def _largest_remainder(shares: np.ndarray, total: int) -> np.ndarray:
    """Integer counts proportional to ``shares`` that sum to ``total``."""
    exact = shares / shares.sum() * total
    counts = np.floor(exact).astype(np.int64)
    # Hand the leftover units to the largest fractional parts; ties go to the earlier entry.
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts
