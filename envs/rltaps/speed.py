"""RL-TAPS's topology-aware job speed (003 eq. 3, 10, 12-15) on racks of Minsky machines.

A job ``j`` with mini-batch FLOPs ``d_m = d_ex m`` on the GPU set ``G`` runs at

    v(j) = d_m |G| / (tt_m + rt(j))                                   (eq. 3)
    tt_m = d_m / (0.9 v_P100)                                         (eq. 10)
    rt(j) = sr(|G|, gradient MB) x (1 + (r - 1)/5) x s(j)             (eq. 12)

**sr, the single-rack ring-reduction time.** Two square-root fits of measured ring
reductions, ``t_100(g)`` and ``t_500(g)`` (``a sqrt(g) + b`` seconds, config
``reduction_fit_100mb``/``_500mb``), are interpolated linearly in the gradient size at
the job's GPU count g: from 0 s at 0 MB to ``t_100`` at 100 MB, and on the line through
``t_100`` and ``t_500`` above 100 MB (extrapolated past 500 MB). One GPU reduces nothing:
``sr(1, .) = 0``.

**r** is the number of racks the job's GPUs span.

**s, the bandwidth-sharing scale** (eq. 13-15). ``E(j)`` is the set of links on the
shortest paths between every pair of the job's GPUs -- the routes of podsched's topology
library (:mod:`envs.topology.routing`: GPU - CPU (PCIe/NVLink), CPU - CPU (QPI),
InfiniBand card - ToR, ToR - director). A link's run-time bandwidth is its default
bandwidth over the number of running jobs whose ``E`` holds it;
``s = min_E default / min_E run-time``. A one-GPU job has an empty ``E`` and counts on no
link. Two GPUs of one GPU group (not on Minsky, where each GPU is its own group) talk
over that group's PCIe link.

:class:`SpeedModel` computes all of this for every running job at once: the link sets of
all GPU pairs are precomputed as one ``(M, M x L)`` 0/1 matrix, so the links of K jobs
are two matrix products, and everything after is elementwise over (K, L).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from envs.rltaps.config import FIT_SIZES_MB, SERVER, RLTapsConfig
from envs.topology import Cluster, build_cluster


@functools.lru_cache(maxsize=8)
def rltaps_cluster(racks: tuple[int, ...]) -> Cluster:
    """Racks of Minsky machines under one director switch (cached: immutable)."""
    return build_cluster("racks", racks=racks, server=SERVER)


def pair_link_table(cluster: Cluster) -> np.ndarray:
    """``(M, M, L)`` 0/1: links on the shortest path between GPUs u and v (none for u = v)."""
    num_gpus, num_links = cluster.num_gpus, cluster.num_links
    table = np.zeros((num_gpus, num_gpus, num_links))
    groups = cluster.gpu_group
    for first in range(num_gpus):
        for second in range(first + 1, num_gpus):
            group_a, group_b = int(groups[first]), int(groups[second])
            if group_a == group_b:
                links = np.array([cluster.group_pcie_link[group_a]])
            else:
                links = cluster.route_links(group_a, group_b)
            table[first, second, links] = 1.0
            table[second, first, links] = 1.0
    return table


def sqrt_fit_s(fit: tuple[float, float], gpus: np.ndarray) -> np.ndarray:
    """``a sqrt(g) + b`` seconds (never below 0)."""
    a, b = fit
    return np.maximum(a * np.sqrt(gpus) + b, 0.0)


@dataclass(frozen=True)
class JobSpeeds:
    """Speeds of K running jobs (in the order of the assignment's rows) and link loads.

    ``gpus`` |G|; ``racks`` r; ``scale`` s (eq. 13); ``reduction_s`` rt (eq. 12);
    ``speed_flops`` v (eq. 3); ``link_jobs[L]`` jobs whose E holds each link.
    """

    gpus: np.ndarray
    racks: np.ndarray
    scale: np.ndarray
    reduction_s: np.ndarray
    speed_flops: np.ndarray
    link_jobs: np.ndarray


class SpeedModel:
    """003's speed model on the cluster of ``config.racks``; see the module docstring."""

    def __init__(self, config: RLTapsConfig) -> None:
        self.config = config
        self.cluster = rltaps_cluster(config.racks)
        cluster = self.cluster
        self.num_gpus, self.num_links = cluster.num_gpus, cluster.num_links
        self.pair_links = pair_link_table(cluster).reshape(self.num_gpus, -1)
        self.link_gbps = np.asarray(cluster.link_gbps, dtype=np.float64)
        self.gpu_rack = np.asarray(cluster.server_partition[cluster.gpu_server], dtype=np.int64)
        self.rack_of_gpu = np.eye(len(config.racks))[self.gpu_rack]
        # The two fitted curves at every GPU count a job can hold (0..M), looked up per step.
        counts = np.arange(self.num_gpus + 1, dtype=np.float64)
        self._curve_small = sqrt_fit_s(config.reduction_fit_100mb, counts)
        self._curve_large = sqrt_fit_s(config.reduction_fit_500mb, counts)
        self._rack_step = config.rack_factor_step

    def single_rack_reduction_s(self, gpus: np.ndarray, gradient_mb: np.ndarray) -> np.ndarray:
        """sr: the ring-reduction time of ``gradient_mb`` over ``gpus`` (0..M) GPUs of one
        rack."""
        gpus = np.asarray(gpus).astype(np.int64)
        size = np.asarray(gradient_mb, dtype=np.float64)
        small, large = FIT_SIZES_MB
        at_small, at_large = self._curve_small[gpus], self._curve_large[gpus]
        seconds = np.where(
            size <= small,
            at_small * size / small,
            at_small + (at_large - at_small) * (size - small) / (large - small),
        )
        return np.where(gpus >= 2, np.maximum(seconds, 0.0), 0.0)

    def rack_factor(self, racks: np.ndarray) -> np.ndarray:
        """eq. 12's ``1 + (r - 1)/5`` for jobs spanning ``racks`` racks."""
        return 1.0 + (np.asarray(racks, dtype=np.float64) - 1.0) * self._rack_step

    def job_links(self, assignment: np.ndarray) -> np.ndarray:
        """``(K, L)`` bool: E(j) of each row of the ``(K, M)`` 0/1 GPU assignment."""
        rows = np.asarray(assignment, dtype=np.float64)
        through = (rows @ self.pair_links).reshape(len(rows), self.num_gpus, self.num_links)
        return (rows[:, None, :] @ through)[:, 0, :] > 0

    def speeds(
        self,
        assignment: np.ndarray,
        minibatch_flops: np.ndarray,
        train_s: np.ndarray,
        gradient_mb: np.ndarray,
    ) -> JobSpeeds:
        """Eq. 3 for K running jobs: ``assignment`` ``(K, M)`` 0/1 (every row >= 1 GPU),
        their ``d_m`` (FLOPs), ``tt_m`` (s) and gradient sizes (MB)."""
        rows = np.asarray(assignment, dtype=np.float64)
        gpus = rows.sum(axis=1)
        racks = np.count_nonzero(rows @ self.rack_of_gpu, axis=1)
        used = self.job_links(rows)
        link_jobs = used.sum(axis=0)
        default = np.where(used, self.link_gbps, np.inf)
        run_time = np.where(used, self.link_gbps / np.maximum(link_jobs, 1), np.inf)
        single, multi = default.min(axis=1), run_time.min(axis=1)
        scale = np.ones(len(rows))
        np.divide(single, multi, out=scale, where=np.isfinite(single))
        reduction = (
            self.single_rack_reduction_s(gpus, gradient_mb) * self.rack_factor(racks) * scale
        )
        speed = minibatch_flops * gpus / (train_s + reduction)
        return JobSpeeds(gpus, racks, scale, reduction, speed, link_jobs)

    def link_tier(self, name: str) -> np.ndarray:
        """Indices of the links of one tier (``server-tor``, ``tor-director``, ``pcie``,
        ``qpi``), for people and tests."""
        cluster = self.cluster
        if name not in cluster.link_tier_names:
            raise ValueError(
                f"unknown link tier {name!r}; known: {', '.join(cluster.link_tier_names)}"
            )
        return np.flatnonzero(cluster.link_tier == cluster.link_tier_names.index(name))
