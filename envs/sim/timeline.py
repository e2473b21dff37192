"""The cluster's state over time, one sample per change, for time-weighted metrics."""

from __future__ import annotations

import weakref

import numpy as np

from envs.topology import Cluster

TIMELINE_FIELDS = ("busy_gpus", "queue_length", "running", "fragmentation", "mean_contention")


class Timeline:
    """Piecewise-constant samples: the values at ``time[i]`` hold until ``time[i+1]``."""

    def __init__(self) -> None:
        self.time: list[float] = []
        self.busy_gpus: list[int] = []
        self.queue_length: list[int] = []
        self.running: list[int] = []
        self.fragmentation: list[float] = []
        self.mean_contention: list[float] = []

    def record(self, time: float, values: tuple[int, int, int, float, float]) -> None:
        """Append a sample, or overwrite the last one if it has the same time."""
        # The five fields spelled out: this runs at every event (175k times on the
        # whole Philly trace), where a loop over getattr cost more than the append.
        busy, queue, running, fragmentation, contention = values
        if self.time and self.time[-1] == time:
            self.busy_gpus[-1], self.queue_length[-1], self.running[-1] = busy, queue, running
            self.fragmentation[-1], self.mean_contention[-1] = fragmentation, contention
            return
        self.time.append(time)
        self.busy_gpus.append(busy)
        self.queue_length.append(queue)
        self.running.append(running)
        self.fragmentation.append(fragmentation)
        self.mean_contention.append(contention)

    def arrays(self) -> dict[str, np.ndarray]:
        """The samples as numpy arrays, ``time`` included."""
        return {name: np.asarray(getattr(self, name)) for name in ("time", *TIMELINE_FIELDS)}


def server_fragmentation(cluster: Cluster, gpu_remaining: np.ndarray) -> float:
    """Mean over servers of 002's eq. 1 on the GPUs' remaining times.

    frag = 1 - (sum x_i)^2 / (n sum x_i^2), x_i the remaining time of GPU i (0 when free),
    n the server's GPUs; an idle server counts 0. Higher when remaining times are diverse.
    """
    first_gpu, counts, ones = _server_gpus(cluster)
    total = np.add.reduceat(gpu_remaining, first_gpu)
    squares = np.add.reduceat(gpu_remaining * gpu_remaining, first_gpu)
    # An idle server's ratio stays 1, so its fragmentation is exactly 0 (as is the
    # cluster's when no GPU holds remaining time); this runs at every event, so a few
    # whole-array operations instead of masked ones.
    ratio = np.divide(total * total, counts * squares, out=ones.copy(), where=squares > 0)
    return float(np.add.reduce(1.0 - ratio) / len(ratio))  # the mean, without its overhead


def _server_gpus(cluster: Cluster) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(first GPU, GPU count, 1.0)`` per server, computed once per cluster: the timeline
    samples fragmentation at every event (the ones are copied, cheaper than made)."""
    layout = _SERVER_GPUS.get(cluster)
    if layout is None:
        first_gpu = cluster.group_gpu_offsets[cluster.server_group_offsets[:-1]]
        counts = cluster.server_gpus
        layout = _SERVER_GPUS[cluster] = (first_gpu, counts, np.ones(len(first_gpu)))
    return layout


_SERVER_GPUS: weakref.WeakKeyDictionary[Cluster, tuple[np.ndarray, np.ndarray, np.ndarray]] = (
    weakref.WeakKeyDictionary()
)
