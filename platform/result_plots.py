"""Plots of simulation results: JCT CDF and GPU utilization over time, one line per policy.

A JCT CDF counts every job that arrived: a job unfinished when the run ended (truncated at
the horizon) is in the denominator but never completes, so a policy's curve stops at its
fraction of jobs finished (below 1) and runs flat to the longest time so far of its
unfinished jobs; the legend says how many were unfinished. Drawn over finished jobs only,
a policy that leaves its hardest jobs in the queue would reach 1 early and look best.

Kept out of the envs package so the simulator never imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI
import matplotlib.pyplot as plt
import numpy as np

from envs.sim import SimulationResult
from envs.sim.metrics import JobTimes

#: What a JCT CDF's title adds when some policy left jobs unfinished.
CENSORED_NOTE = "unfinished jobs counted, never completed: curve stays below 1"


class CdfSteps(NamedTuple):
    """A JCT CDF's step points (``hours``, ``fraction`` of all jobs), for ``step(...,
    where="post")``, and how many ``jobs`` it counts, ``unfinished`` of them."""

    hours: np.ndarray
    fraction: np.ndarray
    jobs: int
    unfinished: int


def censored_cdf(times: JobTimes | Sequence[Any]) -> CdfSteps:
    """The step points of a JCT CDF over every job of ``times``.

    ``times``: :class:`envs.sim.metrics.JobTimes`, or plain values where a finite value is
    a finished job's JCT and None or NaN an unfinished job (time so far unknown). The
    fraction is of all jobs, finished or not: the finished jobs' JCTs step it up by 1/n
    each, and with unfinished jobs it ends flat at the fraction finished, drawn to the
    longest time so far when known.
    """
    if isinstance(times, Mapping):
        seconds = np.asarray(times["seconds"], dtype=float)
        unfinished = np.asarray(times["unfinished"], dtype=bool)
    else:
        seconds = np.array([np.nan if value is None else float(value) for value in times])
        unfinished = ~np.isfinite(seconds)
    total = len(seconds)
    completed = np.sort(seconds[~unfinished]) / 3600.0
    fraction = np.arange(1, len(completed) + 1) / max(total, 1)
    if not unfinished.any():
        return CdfSteps(completed, fraction, total, 0)
    # Flat from 0 (none finished) or from the last finish to the longest time so far.
    start = np.empty(0) if len(completed) else np.zeros(1)
    so_far = seconds[unfinished & np.isfinite(seconds)] / 3600.0
    end = max(so_far.max(initial=0.0), completed.max(initial=0.0))
    return CdfSteps(
        np.concatenate([start, completed, [end]]),
        np.concatenate([start, fraction, [len(completed) / total]]),
        total,
        int(unfinished.sum()),
    )


def _draw_cdf(axis: Any, times: JobTimes | Sequence[Any], label: str) -> bool:
    """Draw one policy's :func:`censored_cdf` on ``axis``; whether it had unfinished jobs."""
    steps = censored_cdf(times)
    if not steps.jobs:
        return False
    if steps.unfinished:
        label = f"{label} ({steps.unfinished} of {steps.jobs} jobs unfinished)"
    axis.step(steps.hours, steps.fraction, where="post", label=label)
    return steps.unfinished > 0


def _label_cdf_axis(axis: Any, title: str, censored: bool) -> None:
    """Axis labels, ``title`` (with :data:`CENSORED_NOTE` on a second line when
    ``censored``) and a fraction axis up to 1, so a curve that stops short shows it."""
    axis.set(
        xlabel="job completion time (hours)",
        ylabel="fraction of jobs",
        title=f"{title}\n({CENSORED_NOTE})" if censored else title,
    )
    axis.set_ylim(0, 1.05)


def plot_results(results: Sequence[SimulationResult], path: Path) -> None:
    """Write a two-panel PNG: JCT CDF over every job that arrived (left; unfinished jobs
    counted, module docstring), GPU utilization over time (right)."""
    fig, (cdf_axis, util_axis) = plt.subplots(1, 2, figsize=(12, 4.5))
    censored = False
    for result in results:
        censored |= _draw_cdf(cdf_axis, result.job_times(), result.policy)
        time = np.append(result.timeline["time"], result.end_time) / 3600.0
        busy = np.append(result.timeline["busy_gpus"], 0) / result.total_gpus
        util_axis.step(time, busy, where="post", label=result.policy, linewidth=0.9)
    _label_cdf_axis(cdf_axis, "JCT CDF", censored)
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


def plot_jct_cdfs(jcts: Mapping[str, JobTimes | Sequence[Any]], path: Path) -> None:
    """JCT CDF of each evaluated policy (learned and heuristics), hours, over every job
    that arrived (:func:`censored_cdf`; an evaluation row's ``jct`` is its
    :class:`envs.sim.metrics.JobTimes`)."""
    fig, axis = plt.subplots(figsize=(6, 4))
    censored = False
    for policy, times in jcts.items():
        censored |= _draw_cdf(axis, times, policy)
    _label_cdf_axis(axis, "Held-out JCT CDF", censored)
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
