"""Arrival processes: when jobs arrive, drawn from a caller-supplied numpy Generator.

Two families:

* **Per-interval counts** (001's "number of arrived jobs per scheduling interval"): time is
  cut into intervals of ``interval_s`` seconds and each of ``num_schedulers`` schedulers
  receives a count of jobs per interval -- fixed (:func:`fixed_counts`), Poisson
  (:func:`poisson_counts`), heavy-tailed (:func:`bursty_counts`) or Poisson around a daily
  cycle (:func:`diurnal_counts`, the shape of the production trace 001 replays).
  :func:`interval_arrivals` turns a count matrix into sorted arrival times plus the
  scheduler each job arrives at.
* **Renewal processes**: i.i.d. gaps between consecutive jobs -- Bernoulli per time step as
  in DeepRM (:func:`bernoulli_arrivals`) or exponential / lognormal gaps
  (:func:`renewal_arrivals`).

Every function takes ``rng`` and nothing here touches global ``np.random``, so a workload
is a pure function of its seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

WITHIN_INTERVAL_CHOICES: tuple[str, ...] = ("uniform", "start")
BURST_LAWS: tuple[str, ...] = ("pareto", "lognormal")
GAP_LAWS: tuple[str, ...] = ("exponential", "lognormal")


def check_rng(rng: object) -> np.random.Generator:
    """``rng`` itself if it is a numpy Generator; TypeError saying how to make one otherwise."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def _positive(label: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{label} must be a finite number > 0, got {value!r}")
    if value <= 0:
        raise ValueError(f"{label} must be > 0, got {value!r}")
    return float(value)


def _whole(label: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{label} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def fixed_counts(num_jobs: int, jobs_per_interval: int, num_schedulers: int) -> np.ndarray:
    """(intervals, schedulers) counts: every scheduler gets ``jobs_per_interval`` jobs."""
    per_interval = _whole("jobs_per_interval", jobs_per_interval, 1)
    schedulers = _whole("num_schedulers", num_schedulers, 1)
    intervals = math.ceil(_whole("num_jobs", num_jobs, 1) / (per_interval * schedulers))
    return np.full((intervals, schedulers), per_interval, dtype=np.int64)


def _draw_until(num_jobs: int, draw_block: Callable[[], np.ndarray], schedulers: int) -> np.ndarray:
    """Stack blocks of per-interval counts until they hold at least ``num_jobs`` jobs."""
    blocks = []
    total = 0
    while total < num_jobs:
        block = draw_block()
        blocks.append(block)
        total += int(block.sum())
    counts = np.concatenate(blocks).reshape(-1, schedulers)
    # Intervals after the one that completes num_jobs are never reached; drop them so the
    # matrix ends where the workload does.
    cumulative = np.cumsum(counts.sum(axis=1))
    last = int(np.searchsorted(cumulative, num_jobs, side="left"))
    return counts[: last + 1]


def poisson_counts(
    num_jobs: int, rate: float, num_schedulers: int, rng: np.random.Generator
) -> np.ndarray:
    """(intervals, schedulers) counts, each Poisson with mean ``rate``."""
    jobs = _whole("num_jobs", num_jobs, 1)
    mean = _positive("rate", rate)
    schedulers = _whole("num_schedulers", num_schedulers, 1)
    block = max(16, math.ceil(jobs / (mean * schedulers)) + 4)
    return _draw_until(jobs, lambda: rng.poisson(mean, size=(block, schedulers)), schedulers)


def bursty_counts(
    num_jobs: int,
    rate: float,
    num_schedulers: int,
    rng: np.random.Generator,
    *,
    law: str = "pareto",
    shape: float = 1.5,
    sigma: float = 1.0,
) -> np.ndarray:
    """(intervals, schedulers) counts with a heavy-tailed intensity and mean ``rate``.

    Each (interval, scheduler) first draws an intensity, then a Poisson count with that
    mean -- a mixed Poisson process whose counts inherit the intensity's tail:

    * ``law="pareto"``: Pareto type I intensity with tail index ``shape`` (> 1, so the mean
      exists) and scale ``rate (shape - 1) / shape``, so its mean is ``rate``. With the
      default ``shape=1.5`` the variance is infinite: long calm stretches, rare floods.
    * ``law="lognormal"``: intensity ``rate * exp(sigma Z - sigma^2 / 2)``, Z standard
      normal, again of mean ``rate``.
    """
    jobs = _whole("num_jobs", num_jobs, 1)
    mean = _positive("rate", rate)
    schedulers = _whole("num_schedulers", num_schedulers, 1)
    if law not in BURST_LAWS:
        raise ValueError(f"burst law {law!r} is unknown; allowed: {', '.join(BURST_LAWS)}")
    if law == "pareto":
        tail = _positive("shape", shape)
        if tail <= 1:
            raise ValueError(f"Pareto shape must be > 1 so the mean rate exists, got {shape}")
        scale = mean * (tail - 1) / tail

        def intensity(size: tuple[int, int]) -> np.ndarray:
            # numpy's pareto() is the Lomax law; + 1 and * scale give Pareto type I.
            return (rng.pareto(tail, size=size) + 1.0) * scale
    else:
        spread = _positive("sigma", sigma)

        def intensity(size: tuple[int, int]) -> np.ndarray:
            return mean * np.exp(spread * rng.standard_normal(size) - spread**2 / 2)

    block = max(16, math.ceil(jobs / (mean * schedulers)) + 4)
    return _draw_until(jobs, lambda: rng.poisson(intensity((block, schedulers))), schedulers)


def diurnal_rates(
    intervals: int, rate: float, *, period: int = 48, amplitude: float = 0.5, phase: float = 0.0
) -> np.ndarray:
    """Mean jobs per interval of a daily cycle: ``rate (1 + amplitude sin(2 pi (i / period +
    phase)))`` for intervals ``i = 0 .. intervals - 1``.

    ``period`` intervals make one cycle (48 half-hour intervals: a day); ``amplitude`` in
    [0, 1) sets the peak-to-trough ratio ``(1 + a) / (1 - a)`` (3 for 0.5); ``phase`` (in
    cycles) shifts where the episode starts. A whole cycle averages ``rate``.
    """
    mean = _positive("rate", rate)
    cycle = _whole("period", period, 1)
    if isinstance(amplitude, bool) or not (
        isinstance(amplitude, int | float) and 0 <= amplitude < 1
    ):
        raise ValueError(f"amplitude must lie in [0, 1) so every rate is > 0, got {amplitude!r}")
    if isinstance(phase, bool) or not isinstance(phase, int | float) or not math.isfinite(phase):
        raise ValueError(f"phase must be a finite number of cycles, got {phase!r}")
    cycles = np.arange(_whole("intervals", intervals, 0)) / cycle + float(phase)
    return mean * (1.0 + float(amplitude) * np.sin(2.0 * math.pi * cycles))


def diurnal_counts(
    num_jobs: int,
    rate: float,
    num_schedulers: int,
    rng: np.random.Generator,
    *,
    period: int = 48,
    amplitude: float = 0.5,
    phase: float = 0.0,
) -> np.ndarray:
    """(intervals, schedulers) Poisson counts whose mean follows :func:`diurnal_rates`.

    Every scheduler sees the same cycle (a data center's users share one day), each with
    its own Poisson draw per interval.
    """
    jobs = _whole("num_jobs", num_jobs, 1)
    schedulers = _whole("num_schedulers", num_schedulers, 1)
    diurnal_rates(1, rate, period=period, amplitude=amplitude, phase=phase)  # checks options
    drawn = 0

    def block() -> np.ndarray:
        nonlocal drawn
        size = max(16, math.ceil(jobs / (rate * schedulers)) + 4)
        # This block's intervals only: the cycle continues where the last block ended.
        start = phase + drawn / period
        means = diurnal_rates(size, rate, period=period, amplitude=amplitude, phase=start)
        drawn += size
        return rng.poisson(np.repeat(means[:, None], schedulers, axis=1))

    return _draw_until(jobs, block, schedulers)


def interval_arrivals(
    counts: np.ndarray,
    interval_s: float,
    rng: np.random.Generator,
    *,
    within: str = "uniform",
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted arrival times and scheduler indices for an (intervals, schedulers) count matrix.

    ``within="uniform"`` spreads an interval's jobs uniformly over it (the simulator still
    batches them at the next decision point); ``within="start"`` puts them all at the
    interval's start, 001's batch view. Ties are broken by scheduler index.
    """
    length = _positive("interval_s", interval_s)
    if within not in WITHIN_INTERVAL_CHOICES:
        raise ValueError(
            f"within={within!r} is unknown; allowed: {', '.join(WITHIN_INTERVAL_CHOICES)}"
        )
    counts = np.asarray(counts, dtype=np.int64)
    intervals, schedulers = counts.shape
    flat = counts.ravel()
    interval_index = np.repeat(np.repeat(np.arange(intervals), schedulers), flat)
    scheduler_index = np.repeat(np.tile(np.arange(schedulers), intervals), flat)
    arrival = interval_index * length
    if within == "uniform":
        arrival = arrival + rng.uniform(0.0, length, size=arrival.shape[0])
    order = np.lexsort((scheduler_index, arrival))
    return arrival[order].astype(np.float64), scheduler_index[order]


def bernoulli_arrivals(
    num_jobs: int, probability: float, time_step_s: float, rng: np.random.Generator
) -> np.ndarray:
    """DeepRM arrivals: at each time step a job arrives with ``probability`` (at most one).

    Gaps between arrivals are geometric; the first job arrives at step ``gap - 1``.
    """
    jobs = _whole("num_jobs", num_jobs, 1)
    if not (isinstance(probability, int | float) and 0 < probability <= 1):
        raise ValueError(f"arrival probability per step must lie in (0, 1], got {probability!r}")
    step = _positive("time_step_s", time_step_s)
    steps = np.cumsum(rng.geometric(probability, size=jobs)) - 1
    return steps.astype(np.float64) * step


def renewal_arrivals(
    num_jobs: int,
    mean_gap_s: float,
    rng: np.random.Generator,
    *,
    law: str = "exponential",
    sigma: float = 1.0,
) -> np.ndarray:
    """Arrival times with i.i.d. gaps of mean ``mean_gap_s``; the first job arrives at 0.

    ``law="exponential"`` is a Poisson process; ``law="lognormal"`` has gaps
    ``mean_gap_s * exp(sigma Z - sigma^2 / 2)``: the same mean but burstier, as 002 found its
    production trace "does not obey" the Poisson assumption.
    """
    jobs = _whole("num_jobs", num_jobs, 1)
    mean = _positive("mean_gap_s", mean_gap_s)
    if law not in GAP_LAWS:
        raise ValueError(f"gap law {law!r} is unknown; allowed: {', '.join(GAP_LAWS)}")
    if law == "exponential":
        gaps = rng.exponential(mean, size=jobs - 1)
    else:
        spread = _positive("sigma", sigma)
        gaps = mean * np.exp(spread * rng.standard_normal(jobs - 1) - spread**2 / 2)
    return np.concatenate(([0.0], np.cumsum(gaps)))
