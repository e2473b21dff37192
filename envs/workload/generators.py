"""Seeded synthetic workloads, one generator per paper, and the ``make_workload`` registry.

Every generator has the signature ``generator(num_jobs, rng, **options) -> Workload`` and
draws every random number from ``rng`` (a ``numpy.random.Generator``) in a fixed order, so
the same seed always yields the same workload.

=================  =====  ======================================================================
kind               paper  what it generates
=================  =====  ======================================================================
uniform            001    15 jobs per 30-min interval per scheduler; random 001 model; workers
                          and PSs uniform in [1, 4]; progress-based (epochs x iterations)
poisson            --     as ``uniform`` but Poisson counts per interval (mean ``rate``)
bursty             --     as ``uniform`` but heavy-tailed counts (Pareto or lognormal mixed
                          Poisson, mean ``rate``)
diurnal            001    as ``uniform`` but Poisson counts around a daily cycle of the rate
                          (001's default: arrivals per interval of a production trace)
deeprm             DeepRM bimodal lengths (80% 1..3 steps, else 10..15), one random dominant
                          resource 5..10 units, others 1..2; Bernoulli arrivals; fixed duration
cush               004    CuSH job sets: 75% of lengths <= 10t, the rest 11t..20t, arrivals in
                          the first 10t, dgemm/daxpy (``cush_jobs``, as the CuSH environment
                          draws them); fixed duration
sced2[-60|-75]     002    68% (or 60% / 75%) 1-GPU jobs, CV 10% / NLP 60% / Speech 30% models,
                          mean inter-arrival 172 s, minutes-to-hours execution times
deepshare[-mix]    000    256-job sets, GPU demand up to 32, each job one hour alone, model
                          mix normal / heavy / medium / low of 000's footnote 4
=================  =====  ======================================================================

Numbers a paper does not give are options with documented defaults (see each generator).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from envs.workload.arrivals import (
    bernoulli_arrivals,
    bursty_counts,
    check_rng,
    diurnal_counts,
    fixed_counts,
    interval_arrivals,
    poisson_counts,
    renewal_arrivals,
)
from envs.workload.catalog import ModelCatalog, get_catalog
from envs.workload.jobs import BASE_RESOURCES, Workload

#: 001 §VI-A: scheduling interval of 30 minutes.
INTERVAL_S: float = 1800.0

#: 000 footnote 4: GNN:IMG:DLRM:LM:FSDP:MoE per trace. The paper prints the normal mix as
#: "1:1:1:1:1" (five numbers for six models); we read it as all six equal.
DEEPSHARE_MIXES: dict[str, tuple[int, ...]] = {
    "normal": (1, 1, 1, 1, 1, 1),
    "heavy": (1, 1, 1, 1, 4, 4),
    "medium": (1, 1, 4, 4, 1, 1),
    "low": (4, 4, 1, 1, 1, 1),
}

#: 002 §IV-A: computer vision 10%, NLP 60%, speech 30%, with Table II's models standing in
#: for each category; the CV share is split evenly over its four models (chosen).
SCED2_MODEL_SHARES: dict[str, float] = {
    "AlexNet": 0.025,
    "InceptionV3": 0.025,
    "ResNet-50": 0.025,
    "VGG16": 0.025,
    "Transformer": 0.60,
    "DeepSpeech": 0.30,
}


# --- option checks -------------------------------------------------------------------------


#: The most jobs a generator draws. A job costs about 220 bytes in a :class:`Workload`
#: and 300 more in a simulator's per-job arrays (measured at a million jobs), so ten
#: million take some 5 GB: they fit a 24 GB machine with room for the results, while a
#: hundred million (``--jobs 100000000``) would not and ended in a MemoryError. Ten
#: million is over 120 times the full Philly trace (82,247 jobs) and 10,000 times a
#: paper's job set (000: 256, 002: 1,000), so no experiment here comes near it.
MAX_JOBS = 10_000_000


def _check_jobs(num_jobs: int) -> int:
    """``num_jobs`` as an int; ValueError unless 1 <= it <= :data:`MAX_JOBS`, checked
    before a generator allocates anything."""
    if isinstance(num_jobs, bool) or not isinstance(num_jobs, int | np.integer) or num_jobs < 1:
        raise ValueError(f"num_jobs must be an integer >= 1, got {num_jobs!r}")
    if num_jobs > MAX_JOBS:
        raise ValueError(
            f"num_jobs must be at most {MAX_JOBS:,} (more would not fit in memory), "
            f"got {int(num_jobs):,}"
        )
    return int(num_jobs)


def _int_range(label: str, value: Sequence[int], minimum: int) -> tuple[int, int]:
    """An inclusive integer range ``(low, high)`` with ``minimum <= low <= high``."""
    if (
        not isinstance(value, Sequence)
        or len(value) != 2
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value)
    ):
        raise ValueError(f"{label} must be a pair of integers (low, high), got {value!r}")
    low, high = int(value[0]), int(value[1])
    if not minimum <= low <= high:
        raise ValueError(f"{label}={value!r}; it needs {minimum} <= low <= high")
    return low, high


def _fraction(label: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{label} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _positive(label: str, value: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{label} must be a finite number > 0, got {value!r}")
    return float(value)


def _non_negative(label: str, value: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{label} must be a finite number >= 0, got {value!r}")
    return float(value)


def _weights(label: str, values: Sequence[float], count: int) -> np.ndarray:
    """Non-negative weights of length ``count``, normalized to sum to 1."""
    try:
        weights = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be {count} numbers, got {values!r}") from None
    if weights.shape != (count,) or not np.all(np.isfinite(weights)) or (weights < 0).any():
        raise ValueError(f"{label} must be {count} finite numbers >= 0, got {values!r}")
    if weights.sum() <= 0:
        raise ValueError(f"{label} must not be all zero, got {values!r}")
    return weights / weights.sum()


def _duration_range(label: str, value: Sequence[float]) -> tuple[float, float]:
    """``(shortest, longest)`` seconds with ``0 < shortest <= longest``."""
    pair = tuple(value) if isinstance(value, Sequence | np.ndarray) else ()
    if (
        len(pair) != 2
        or not all(isinstance(v, Real) and not isinstance(v, bool) for v in pair)
        or not 0 < pair[0] <= pair[1]
    ):
        raise ValueError(
            f"{label} must be (shortest, longest) seconds with 0 < shortest <= longest, "
            f"got {value!r}"
        )
    return float(pair[0]), float(pair[1])


def _resource_names(label: str, value: Sequence[str]) -> tuple[str, ...]:
    """Distinct non-empty resource names starting with :data:`BASE_RESOURCES`."""
    listed = isinstance(value, Sequence | np.ndarray) and not isinstance(value, str)
    if not listed or not all(isinstance(name, str) and name for name in value):
        raise ValueError(
            f"{label} must be a list of non-empty resource names starting with "
            f"{BASE_RESOURCES!r}, got {value!r}"
        )
    names = tuple(str(name) for name in value)  # plain str, also from a numpy array
    if names[:2] != BASE_RESOURCES:
        raise ValueError(f"{label} must start with {BASE_RESOURCES!r}, got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{label} must not repeat a name, got {names!r}")
    return names


def _shares(
    label: str, value: Mapping[str, float] | None, default: Mapping[str, float]
) -> dict[str, float]:
    """``value`` (a mapping, or ``(name, share)`` pairs as JSON gives them) as a dict."""
    if value is None:
        return dict(default)
    try:
        # dict() also takes pairs, so a JSON [["Transformer", 1]] works like a mapping.
        shares = dict(value)
    except (TypeError, ValueError):
        shares = None
    if shares is None or not all(
        isinstance(share, Real) and not isinstance(share, bool) for share in shares.values()
    ):
        raise ValueError(
            f"{label} must map model names to shares (numbers >= 0), e.g. "
            f"{{'Transformer': 0.6}}, got {value!r}"
        )
    return shares


def _positive_ints(label: str, values: Sequence[int]) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu" or (array < 1).any():
        raise ValueError(f"{label} must be a non-empty list of integers >= 1, got {values!r}")
    return array.astype(np.int64)


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Integer counts summing to ``total`` closest to ``total x weights`` (largest remainder).

    Ties in the remainders go to the earlier entry, so the result is deterministic.
    """
    ideal = total * np.asarray(weights, dtype=np.float64)
    counts = np.floor(ideal).astype(np.int64)
    short = total - int(counts.sum())
    # Rounded so that remainders equal on paper (1/3 vs 4/3 of a job) tie exactly instead
    # of being ordered by floating-point noise.
    remainders = np.round(ideal - counts, 9)
    order = np.argsort(-remainders, kind="stable")
    counts[order[:short]] += 1
    return counts


# --- building workloads ----------------------------------------------------------------------


def _progress_workload(
    catalog: ModelCatalog,
    arrival: np.ndarray,
    model: np.ndarray,
    num_workers: np.ndarray,
    num_ps: np.ndarray,
    *,
    epochs: np.ndarray | None = None,
    partition: np.ndarray | None = None,
) -> Workload:
    """Progress-based jobs: one GPU per worker, CPUs and work from the model profiles."""
    count = arrival.shape[0]
    worker_demand = np.column_stack((np.ones(count), catalog.column("cpu_cores")[model]))
    ps_demand = np.column_stack((np.zeros(count), catalog.column("ps_cpu_cores")[model]))
    return Workload(
        arrival_time=arrival,
        model=model,
        num_workers=num_workers,
        num_ps=num_ps,
        worker_demand=worker_demand,
        ps_demand=ps_demand,
        epochs=catalog.column("default_epochs")[model] if epochs is None else epochs,
        iterations_per_epoch=catalog.column("iterations_per_epoch")[model].astype(np.int64),
        catalog_name=catalog.name,
        resource_names=BASE_RESOURCES,
        partition=partition,
    )


def _interval_workload(
    num_jobs: int,
    rng: np.random.Generator,
    counts: np.ndarray,
    *,
    interval_s: float,
    within_interval: str,
    catalog: str,
    workers: Sequence[int],
    parameter_servers: Sequence[int] | None,
) -> Workload:
    """001-style jobs whose arrivals follow an (interval, scheduler) count matrix."""
    models = get_catalog(catalog)
    worker_low, worker_high = _int_range("workers", workers, 1)
    ps_range = (1, 4) if parameter_servers is None else parameter_servers
    ps_low, ps_high = _int_range("parameter_servers", ps_range, 0)
    arrival, scheduler = interval_arrivals(counts, interval_s, rng, within=within_interval)
    arrival, scheduler = arrival[:num_jobs], scheduler[:num_jobs]
    model = rng.integers(len(models), size=num_jobs)
    num_workers = rng.integers(worker_low, worker_high + 1, size=num_jobs)
    num_ps = rng.integers(ps_low, ps_high + 1, size=num_jobs)
    if parameter_servers is None:
        # Default: PSs only for models that train with them (all of 001's); AllReduce-family
        # models of other catalogs get none.
        uses_ps = np.array([profile.uses_parameter_server for profile in models])
        num_ps = np.where(uses_ps[model], num_ps, 0)
    return _progress_workload(models, arrival, model, num_workers, num_ps, partition=scheduler)


def uniform_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    jobs_per_interval: int = 15,
    interval_s: float = INTERVAL_S,
    num_schedulers: int = 1,
    within_interval: str = "uniform",
    catalog: str = "marl",
    workers: Sequence[int] = (1, 4),
    parameter_servers: Sequence[int] | None = None,
) -> Workload:
    """001 §VI-A: a steady ``jobs_per_interval`` arrivals per interval at each scheduler.

    Each job trains a model drawn uniformly from ``catalog`` for the model's default epochs,
    with workers uniform in ``workers`` and parameter servers uniform in
    ``parameter_servers`` (both [1, 4] in 001; the default ``None`` means [1, 4] for models
    that use parameter servers and 0 for AllReduce models). A worker demands 1 GPU and the
    model's ``cpu_cores``; a PS 0 GPUs and ``ps_cpu_cores``. ``partition`` records the
    scheduler (0..num_schedulers-1) each job arrives at.
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    counts = fixed_counts(jobs, jobs_per_interval, num_schedulers)
    return _interval_workload(
        jobs,
        rng,
        counts,
        interval_s=interval_s,
        within_interval=within_interval,
        catalog=catalog,
        workers=workers,
        parameter_servers=parameter_servers,
    )


def poisson_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    rate: float = 15.0,
    interval_s: float = INTERVAL_S,
    num_schedulers: int = 1,
    within_interval: str = "uniform",
    catalog: str = "marl",
    workers: Sequence[int] = (1, 4),
    parameter_servers: Sequence[int] | None = None,
) -> Workload:
    """As :func:`uniform_workload`, with Poisson(``rate``) arrivals per interval and scheduler."""
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    counts = poisson_counts(jobs, rate, num_schedulers, rng)
    return _interval_workload(
        jobs,
        rng,
        counts,
        interval_s=interval_s,
        within_interval=within_interval,
        catalog=catalog,
        workers=workers,
        parameter_servers=parameter_servers,
    )


def bursty_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    rate: float = 15.0,
    law: str = "pareto",
    shape: float = 1.5,
    sigma: float = 1.0,
    interval_s: float = INTERVAL_S,
    num_schedulers: int = 1,
    within_interval: str = "uniform",
    catalog: str = "marl",
    workers: Sequence[int] = (1, 4),
    parameter_servers: Sequence[int] | None = None,
) -> Workload:
    """As :func:`uniform_workload`, with heavy-tailed per-interval counts of mean ``rate``.

    Counts are Poisson with a random intensity per (interval, scheduler): Pareto type I
    with tail index ``shape`` (default 1.5: finite mean, infinite variance) or lognormal
    with log-standard-deviation ``sigma``; see :func:`envs.workload.arrivals.bursty_counts`.
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    counts = bursty_counts(jobs, rate, num_schedulers, rng, law=law, shape=shape, sigma=sigma)
    return _interval_workload(
        jobs,
        rng,
        counts,
        interval_s=interval_s,
        within_interval=within_interval,
        catalog=catalog,
        workers=workers,
        parameter_servers=parameter_servers,
    )


def diurnal_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    rate: float = 15.0,
    period: int = 48,
    amplitude: float = 0.5,
    phase: float = 0.0,
    interval_s: float = INTERVAL_S,
    num_schedulers: int = 1,
    within_interval: str = "uniform",
    catalog: str = "marl",
    workers: Sequence[int] = (1, 4),
    parameter_servers: Sequence[int] | None = None,
) -> Workload:
    """As :func:`uniform_workload`, with arrivals that follow a day: 001's default workload.

    001 §VI-A replays "the job arrival pattern (i.e., the number of arrived jobs per
    scheduling interval) extracted from Google cluster traces, with down-scaled arrival
    rates". That trace is not shipped here; what this generator keeps of it is its shape, a
    daily cycle of the submission rate: Poisson counts per interval and scheduler with mean
    ``rate (1 + amplitude sin(2 pi (i / period + phase)))`` (``period`` = 48 half-hour
    intervals, a day; the default ``amplitude`` 0.5, a peak three times the trough, is
    chosen). See :func:`envs.workload.arrivals.diurnal_counts`.
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    counts = diurnal_counts(
        jobs, rate, num_schedulers, rng, period=period, amplitude=amplitude, phase=phase
    )
    return _interval_workload(
        jobs,
        rng,
        counts,
        interval_s=interval_s,
        within_interval=within_interval,
        catalog=catalog,
        workers=workers,
        parameter_servers=parameter_servers,
    )


def bimodal_lengths(
    is_short: np.ndarray, rng: np.random.Generator, short: Sequence[int], long: Sequence[int]
) -> np.ndarray:
    """Per job, a length uniform in ``short`` (inclusive) where ``is_short``, else in ``long``.

    Both ranges are drawn for every job, short first, so the stream of ``rng`` does not
    depend on the mix: DeepRM's and 004's two-mode job lengths. An empty range (low above
    high) is allowed, and not drawn, when no job needs it (every job short, say).
    """
    count = is_short.shape[0]
    drawn = []
    for label, (low, high), used in (
        ("short", short, is_short.any()),
        ("long", long, (~is_short).any()),
    ):
        if low <= high:
            drawn.append(rng.integers(low, high + 1, size=count))
        elif used:
            raise ValueError(f"{label} job lengths {low}..{high} are an empty range")
        else:
            drawn.append(np.zeros(count, dtype=np.int64))
    return np.where(is_short, drawn[0], drawn[1])


def deeprm_jobs(
    count: int,
    width: int,
    rng: np.random.Generator,
    *,
    short_fraction: float,
    short: Sequence[int],
    long: Sequence[int],
    dominant: Sequence[int],
    other: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """DeepRM's bimodal jobs (the reference's ``job_distribution.py``): int64 ``(length,
    demand)`` of ``count`` jobs over ``width`` resources.

    A job is short (``short``) with probability ``short_fraction``, else long (``long``);
    one uniformly drawn resource gets a demand in ``dominant``, every other one in ``other``.
    :func:`deeprm_workload` and :func:`envs.deeprm.jobs.generate_sequence` both draw this way.
    """
    length = bimodal_lengths(rng.random(count) < short_fraction, rng, short, long)
    heavy = rng.integers(width, size=count)
    demand = rng.integers(other[0], other[1] + 1, size=(count, width))
    demand[np.arange(count), heavy] = rng.integers(dominant[0], dominant[1] + 1, size=count)
    return length, demand


def deeprm_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    arrival_probability: float = 0.7,
    time_step_s: float = 1.0,
    short_fraction: float = 0.8,
    short_steps: Sequence[int] = (1, 3),
    long_steps: Sequence[int] = (10, 15),
    dominant_demand: Sequence[int] = (5, 10),
    other_demand: Sequence[int] = (1, 2),
    resource_names: Sequence[str] = BASE_RESOURCES,
    catalog: str = "cush",
) -> Workload:
    """DeepRM's bimodal workload as fixed-duration jobs.

    A job lasts ``short_steps`` (uniform integer, default 1..3) time steps with probability
    ``short_fraction`` (0.8), else ``long_steps`` (10..15). One resource, uniformly chosen,
    is its dominant resource with a demand uniform in ``dominant_demand`` (5..10 units);
    every other resource gets ``other_demand`` (1..2). At each step a new job arrives with
    probability ``arrival_probability`` (0.7, DeepRM's default new-job rate). As in DeepRM a
    job is one task holding its whole demand vector (``num_workers = 1``, no PS). DeepRM
    has no model types; models are drawn uniformly from ``catalog`` (default 004's
    dgemm/daxpy, CuSH being DeepRM's HPC descendant) so placement penalties can apply.
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    names = _resource_names("resource_names", resource_names)
    short_share = _fraction("short_fraction", short_fraction)
    short_low, short_high = _int_range("short_steps", short_steps, 1)
    long_low, long_high = _int_range("long_steps", long_steps, 1)
    dominant_low, dominant_high = _int_range("dominant_demand", dominant_demand, 0)
    other_low, other_high = _int_range("other_demand", other_demand, 0)
    step = _positive("time_step_s", time_step_s)
    models = get_catalog(catalog)

    arrival = bernoulli_arrivals(jobs, arrival_probability, step, rng)
    length, demand = deeprm_jobs(
        jobs,
        len(names),
        rng,
        short_fraction=short_share,
        short=(short_low, short_high),
        long=(long_low, long_high),
        dominant=(dominant_low, dominant_high),
        other=(other_low, other_high),
    )
    model = rng.integers(len(models), size=jobs)
    return Workload(
        arrival_time=arrival,
        model=model,
        num_workers=np.ones(jobs, dtype=np.int64),
        worker_demand=demand.astype(np.float64),
        duration=length * step,
        catalog_name=models.name,
        resource_names=names,
    )


#: CuSH's job types (004 §3.1), in the order :func:`cush_jobs` numbers them.
CUSH_JOB_TYPES: tuple[str, ...] = ("dgemm", "daxpy")


def cush_jobs(
    count: int,
    rng: np.random.Generator,
    *,
    num_short: int,
    short: Sequence[int],
    long: Sequence[int],
    arrival_window: int,
    dgemm_fraction: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """004 §4's job sets: int64 ``(arrival, length, kind)`` of ``count`` jobs, in steps.

    "75% of the jobs ... have a time duration less than or equal to 10t ... the other 25%
    a length greater than 10t": exactly ``num_short`` jobs, which ones at random, get a
    length uniform in ``short`` (inclusive), the others in ``long``. Arrivals are sorted
    uniform integer steps in ``0..arrival_window-1``. ``kind`` indexes
    :data:`CUSH_JOB_TYPES`: dgemm with probability ``dgemm_fraction``, else daxpy.
    004 gives no demands, so each caller draws them after these (:func:`cush_workload`,
    :func:`envs.cush.jobs.generate_job_set`).
    """
    is_short = rng.permutation(np.arange(count) < num_short)
    length = bimodal_lengths(is_short, rng, short, long)
    arrival = np.sort(rng.integers(0, arrival_window, size=count))
    kind = (rng.random(count) >= dgemm_fraction).astype(np.int64)
    return arrival.astype(np.int64), length.astype(np.int64), kind


def cush_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    short_fraction: float = 0.75,
    short_steps: Sequence[int] = (1, 10),
    long_steps: Sequence[int] = (11, 20),
    arrival_window_steps: int = 10,
    dgemm_fraction: float = 0.5,
    time_step_s: float = 1.0,
    gpus: Sequence[int] = (1, 8),
    cpus_per_gpu: float = 0.5,
) -> Workload:
    """004 §4: CuSH job sets of dgemm and daxpy fixed-duration jobs (:func:`cush_jobs`).

    ``short_fraction`` (0.75, rounded to whole jobs) of the lengths uniform in
    ``short_steps`` (1..10), the rest in ``long_steps`` (11..20); arrivals uniform integer
    steps in the first ``arrival_window_steps`` (10t); dgemm with probability
    ``dgemm_fraction`` (0.5), else daxpy. 004 does not give demands; chosen: GPUs uniform
    in ``gpus`` (1..8, up to two 4-GPU Sierra nodes), one worker per GPU, each worker
    ``cpus_per_gpu`` (0.5: a Sierra node's 2 CPUs shared by its 4 GPUs).
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    short_share = _fraction("short_fraction", short_fraction)
    dgemm_share = _fraction("dgemm_fraction", dgemm_fraction)
    short_low, short_high = _int_range("short_steps", short_steps, 1)
    long_low, long_high = _int_range("long_steps", long_steps, 1)
    if (
        isinstance(arrival_window_steps, bool)
        or not isinstance(arrival_window_steps, int | np.integer)
        or arrival_window_steps < 1
    ):
        raise ValueError(
            f"arrival_window_steps must be an integer >= 1, got {arrival_window_steps!r}"
        )
    gpu_low, gpu_high = _int_range("gpus", gpus, 1)
    step = _positive("time_step_s", time_step_s)
    cpu_share = _non_negative("cpus_per_gpu", cpus_per_gpu)
    models = get_catalog("cush")

    arrival, length, kind = cush_jobs(
        jobs,
        rng,
        num_short=round(short_share * jobs),
        short=(short_low, short_high),
        long=(long_low, long_high),
        arrival_window=int(arrival_window_steps),
        dgemm_fraction=dgemm_share,
    )
    num_workers = rng.integers(gpu_low, gpu_high + 1, size=jobs)
    model = np.array([models.index(name) for name in CUSH_JOB_TYPES], dtype=np.int64)[kind]
    return Workload(
        arrival_time=arrival * step,
        model=model,
        num_workers=num_workers,
        worker_demand=np.tile([1.0, cpu_share], (jobs, 1)),
        duration=length * step,
        catalog_name=models.name,
    )


def sced2_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    one_gpu_fraction: float = 0.68,
    multi_gpu_sizes: Sequence[int] = (2, 4, 8, 16),
    multi_gpu_weights: Sequence[float] = (0.40, 0.30, 0.22, 0.08),
    mean_interarrival_s: float = 172.0,
    interarrival: str = "lognormal",
    interarrival_sigma: float = 1.0,
    median_duration_s: float = 1800.0,
    duration_sigma: float = 1.4,
    duration_range_s: Sequence[float] = (60.0, 172_800.0),
    model_shares: Mapping[str, float] | None = None,
) -> Workload:
    """002 §II-B / §IV-A: a production-like trace of mostly 1-GPU jobs.

    Exact from 002: ``one_gpu_fraction`` 68% (variants 60% and 75%), mean inter-arrival
    172 s, categories CV 10% / NLP 60% / Speech 30% played by Table II's models. Chosen
    (002's Fig. 3 is not tabulated): multi-GPU jobs ask for 2/4/8/16 GPUs with weights
    0.40/0.30/0.22/0.08; gaps are lognormal (sigma 1) because 002 says its trace is not
    Poisson; execution times ("several minutes to hours") are lognormal with median 30 min
    and sigma 1.4, clipped to [1 min, 48 h]. Each GPU is one AllReduce worker; the job's
    epochs are set so that its ideal duration equals the drawn execution time (002 assigns
    "a mini-batch number calculated according to its execution time").
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    single = _fraction("one_gpu_fraction", one_gpu_fraction)
    sizes = _positive_ints("multi_gpu_sizes", multi_gpu_sizes)
    size_weights = _weights("multi_gpu_weights", multi_gpu_weights, sizes.size)
    median = _positive("median_duration_s", median_duration_s)
    spread = _positive("duration_sigma", duration_sigma)
    shortest, longest = _duration_range("duration_range_s", duration_range_s)
    models = get_catalog("sced2")
    shares = _shares("model_shares", model_shares, SCED2_MODEL_SHARES)
    # key=str: a JSON or hand-made mapping may mix key types, which sorted() cannot order.
    unknown = sorted(set(shares) - set(models.names), key=str)
    if unknown:
        raise ValueError(
            f"model_shares names unknown models {unknown}; known: {', '.join(models.names)}"
        )
    model_weights = _weights(
        "model_shares", [shares.get(name, 0.0) for name in models.names], len(models)
    )

    arrival = renewal_arrivals(
        jobs, mean_interarrival_s, rng, law=interarrival, sigma=interarrival_sigma
    )
    is_single = rng.random(jobs) < single
    num_gpus = np.where(is_single, 1, rng.choice(sizes, size=jobs, p=size_weights))
    model = rng.choice(len(models), size=jobs, p=model_weights)
    duration = np.clip(median * np.exp(spread * rng.standard_normal(jobs)), shortest, longest)
    epoch_time = (
        models.column("iterations_per_epoch")[model] * models.column("compute_time_s")[model]
    )
    epochs = duration * num_gpus / epoch_time
    return _progress_workload(
        models, arrival, model, num_gpus, np.zeros(jobs, dtype=np.int64), epochs=epochs
    )


def deepshare_workload(
    num_jobs: int,
    rng: np.random.Generator,
    *,
    mix: str | Sequence[float] = "normal",
    gpu_choices: Sequence[int] = (1, 2, 4, 8, 16, 32),
    target_duration_s: float = 3600.0,
    mean_interarrival_s: float = 0.0,
) -> Workload:
    """000 §VI: a job set of ``num_jobs`` (256 in 000) randomly shuffled jobs.

    Models follow ``mix`` -- a footnote-4 name (normal 1:1:1:1:1:1, heavy 1:1:1:1:4:4,
    medium 1:1:4:4:1:1, low 4:4:1:1:1:1 over GNN:IMG:DLRM:LM:FSDP:MoE) or six weights --
    with counts apportioned exactly (largest remainder) and then shuffled. Each job asks
    for a GPU count uniform over ``gpu_choices`` ("a GPU demand of up to 32"; powers of two
    chosen, as nearly all real DL jobs ask for), one AllReduce worker per GPU, and enough
    epochs to take ``target_duration_s`` (one hour) alone: compute time x (1 + comm/comp)
    for distributed jobs, compute time alone for 1-GPU jobs, which do not communicate.
    ``mean_interarrival_s = 0`` submits the whole set at t = 0 (000 replays job sets as
    episodes); a positive value gives Poisson arrivals instead.
    """
    jobs = _check_jobs(num_jobs)
    check_rng(rng)
    models = get_catalog("deepshare")
    if isinstance(mix, str):
        if mix not in DEEPSHARE_MIXES:
            raise ValueError(
                f"unknown DeepShare mix {mix!r}; allowed: {', '.join(DEEPSHARE_MIXES)} "
                "or six weights for GNN, IMG, DLRM, LM, FSDP, MoE"
            )
        weights = _weights("mix", DEEPSHARE_MIXES[mix], len(models))
    else:
        weights = _weights("mix", mix, len(models))
    choices = _positive_ints("gpu_choices", gpu_choices)
    target = _positive("target_duration_s", target_duration_s)
    gap = _non_negative("mean_interarrival_s", mean_interarrival_s)

    model = rng.permutation(np.repeat(np.arange(len(models)), apportion(jobs, weights)))
    num_gpus = rng.choice(choices, size=jobs)
    arrival = np.zeros(jobs) if gap == 0 else renewal_arrivals(jobs, gap, rng)
    slowdown = np.where(num_gpus > 1, 1.0 + models.column("comm_comp_ratio")[model], 1.0)
    epoch_time = (
        models.column("iterations_per_epoch")[model] * models.column("compute_time_s")[model]
    )
    epochs = target * num_gpus / (epoch_time * slowdown)
    return _progress_workload(
        models, arrival, model, num_gpus, np.zeros(jobs, dtype=np.int64), epochs=epochs
    )


# --- registry ------------------------------------------------------------------------------

WorkloadGenerator = Callable[..., Workload]

_REGISTRY: dict[str, tuple[WorkloadGenerator, dict[str, Any]]] = {
    "uniform": (uniform_workload, {}),
    "poisson": (poisson_workload, {}),
    "bursty": (bursty_workload, {}),
    "diurnal": (diurnal_workload, {}),
    "deeprm": (deeprm_workload, {}),
    "cush": (cush_workload, {}),
    "sced2": (sced2_workload, {}),
    "sced2-60": (sced2_workload, {"one_gpu_fraction": 0.60}),
    "sced2-75": (sced2_workload, {"one_gpu_fraction": 0.75}),
    "deepshare": (deepshare_workload, {}),
    **{f"deepshare-{name}": (deepshare_workload, {"mix": name}) for name in DEEPSHARE_MIXES},
}


def workload_kinds() -> tuple[str, ...]:
    """Names ``make_workload`` accepts."""
    return tuple(_REGISTRY)


def _lookup(kind: str) -> tuple[WorkloadGenerator, dict[str, Any]]:
    try:
        return _REGISTRY[kind]
    except (KeyError, TypeError):
        raise ValueError(f"unknown workload kind {kind!r}; known: {', '.join(_REGISTRY)}") from None


def workload_options(kind: str) -> dict[str, Any]:
    """Options of ``kind`` and their defaults (a preset's fixed values excluded)."""
    generator, preset = _lookup(kind)
    return {
        name: parameter.default
        for name, parameter in inspect.signature(generator).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in preset
    }


def make_workload(
    kind: str, *, num_jobs: int, rng: np.random.Generator, **options: Any
) -> Workload:
    """Generate ``num_jobs`` jobs of workload ``kind`` with ``rng``.

    Raises ValueError for an unknown kind (listing the known ones) or an option the kind
    does not take (listing the ones it does).
    """
    generator, preset = _lookup(kind)
    _check_jobs(num_jobs)  # the generators check it too; here before any option's work
    allowed = workload_options(kind)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        fixed = f"; {kind!r} fixes {sorted(preset)}" if set(unknown) & set(preset) else ""
        raise ValueError(
            f"workload kind {kind!r} takes no option {', '.join(map(repr, unknown))}{fixed}; "
            f"allowed: {', '.join(allowed) or 'none'}"
        )
    return generator(num_jobs, rng, **preset, **options)
