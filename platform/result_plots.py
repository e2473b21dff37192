"""Plots of simulation results: JCT CDF and GPU utilization over time, one line per policy.

Kept out of the envs package so the simulator never imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI
import matplotlib.pyplot as plt
import numpy as np

from envs.sim import SimulationResult


def plot_results(results: Sequence[SimulationResult], path: Path) -> None:
    """Write a two-panel PNG: JCT CDF (left), GPU utilization over time (right)."""
    fig, (cdf_axis, util_axis) = plt.subplots(1, 2, figsize=(12, 4.5))
    for result in results:
        finished = np.isfinite(result.jobs["finish"])
        jct = np.sort((result.jobs["finish"] - result.jobs["arrival"])[finished]) / 3600.0
        if len(jct):
            cdf_axis.step(
                jct, np.arange(1, len(jct) + 1) / len(jct), where="post", label=result.policy
            )
        time = np.append(result.timeline["time"], result.end_time) / 3600.0
        busy = np.append(result.timeline["busy_gpus"], 0) / result.total_gpus
        util_axis.step(time, busy, where="post", label=result.policy, linewidth=0.9)
    cdf_axis.set(xlabel="job completion time (hours)", ylabel="fraction of jobs", title="JCT CDF")
    util_axis.set(xlabel="time (hours)", ylabel="busy GPUs / all GPUs", title="GPU utilization")
    util_axis.set_ylim(0, 1.05)
    for axis in (cdf_axis, util_axis):
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_learning_curve(iterations: Sequence[int], returns: Sequence[float], path: Path) -> None:
    """Mean episode return per training iteration."""
    fig, axis = plt.subplots(figsize=(6, 4))
    axis.plot(list(iterations), list(returns), marker="o", markersize=3)
    axis.set(xlabel="training iteration", ylabel="mean episode return", title="Learning curve")
    axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_jct_cdfs(jcts: dict[str, Sequence[float]], path: Path) -> None:
    """JCT CDF of each evaluated policy (learned and heuristics), hours."""
    fig, axis = plt.subplots(figsize=(6, 4))
    for policy, values in jcts.items():
        finite = (
            np.sort(np.asarray([v for v in values if v is not None and np.isfinite(v)])) / 3600.0
        )
        if len(finite):
            axis.step(
                finite, np.arange(1, len(finite) + 1) / len(finite), where="post", label=policy
            )
    axis.set(
        xlabel="job completion time (hours)", ylabel="fraction of jobs", title="Held-out JCT CDF"
    )
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
