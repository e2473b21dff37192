"""A lower bound on the average JCT that any schedule of a workload can reach.

How far a scheduler is from the best possible is what tells a researcher whether a goal
such as "10% below the best heuristic" is within reach. The exact optimum of rigid,
non-preemptive jobs on a cluster is NP-hard, so this module solves a relaxation, a linear
program whose optimum no real schedule beats (the mean-busy-time relaxation of
single-machine scheduling, with the cluster's GPUs as one pooled capacity).

**The relaxation.** Job ``j`` arrives at ``a_j``, may start no earlier than ``s_j`` (the
first decision at or after its arrival), holds ``g_j`` GPUs while it runs and needs at
least ``p_j`` seconds of running (its contention-free run time). Describe any schedule by
each job's progress, from 0 to 1, at a rate of at most ``1 / p_j``; ``x_jt`` is the
job's progress in time slot ``t`` (``[t D, (t + 1) D)``) times its GPU-seconds ``g_j
p_j``. Every real schedule -- spread, contended, preempted or not -- then satisfies:

- ``sum_t x_jt = g_j p_j``, ``x_jt = 0`` for slots before ``s_j``;
- ``x_jt <= g_j D`` (the rate cap) and ``sum_j x_jt <= G D`` (a running job holds its
  ``g_j`` GPUs, so the progress of all jobs in a slot costs at most the cluster's ``G``
  GPU-slots);
- ``C_j >= s_j + p_j`` and ``C_j >= M_j + p_j / 2``, where ``M_j`` is the mean time of
  the job's progress: a density of at most ``1 / p_j`` that ends at ``C_j`` has its mean
  at least ``p_j / 2`` before. The program uses each slot's start for ``M_j``, which can
  only make the bound lower (looser by at most ``D`` a job).

Minimizing ``sum_j C_j`` over these constraints gives the bound; the relaxation drops
rigidity in time (a job may slow down and pause), per-server fit, locality, contention
and the order of starts, so real schedules sit above it. The horizon grows until the
program leaves its last slot empty: then slots after it could not lower the optimum (their
cost only grows with time and their capacity is unused), so the value is that of an
unbounded horizon.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sparse
from scipy.optimize import linprog

# Work below this many GPU-seconds in the last slot counts as none (solver tolerance).
_EMPTY_GPU_SECONDS = 1e-6
_MAX_HORIZON_DOUBLINGS = 8


class _Jobs(NamedTuple):
    """The relaxation's per-job inputs (seconds, GPUs)."""

    arrival: np.ndarray
    start: np.ndarray
    need: np.ndarray
    run: np.ndarray


@dataclass(frozen=True)
class JCTLowerBound:
    """The relaxation's optimum: ``mean_jct_s`` is a lower bound on any schedule's mean
    JCT; ``completion_s[j]`` is job ``j``'s completion in the optimal relaxed schedule
    (their mean minus the arrivals' is ``mean_jct_s``); ``slot_s`` and ``horizon_s`` are
    the time grid the program used."""

    mean_jct_s: float
    completion_s: np.ndarray
    slot_s: float
    horizon_s: float


def mean_jct_lower_bound(
    arrival_s: np.ndarray,
    earliest_start_s: np.ndarray,
    gpus: np.ndarray,
    min_run_s: np.ndarray,
    total_gpus: int,
    slot_s: float = 300.0,
    horizon_s: float | None = None,
) -> JCTLowerBound:
    """The mean-busy-time bound on the mean JCT of jobs on ``total_gpus`` GPUs (module doc).

    Per job: ``arrival_s``, ``earliest_start_s`` (>= arrival), ``gpus`` held while running
    (0 to ``total_gpus``; a job of no GPUs shares nothing the program counts, so its own
    bound, ``earliest_start_s + min_run_s``, is exact) and ``min_run_s`` (> 0, its run time
    free of contention). A schedule that meets the bound exactly (every job starting at
    its earliest start, free of contention) equals it up to float rounding.
    ``slot_s``: the time grid (a smaller slot gives a tighter bound and a larger program).
    ``horizon_s``: where the grid starts its search for a long enough horizon (default:
    every job's GPU-seconds packed after the last earliest start). Raises ValueError
    naming what is wrong with the input.
    """
    jobs = _Jobs(
        *(
            np.asarray(values, dtype=np.float64)
            for values in (arrival_s, earliest_start_s, gpus, min_run_s)
        )
    )
    _check_jobs(jobs, total_gpus, slot_s)
    if not len(jobs.arrival):
        return JCTLowerBound(float("nan"), np.zeros(0), float(slot_s), 0.0)
    completion_s = jobs.start + jobs.run  # exact for jobs of no GPUs, replaced for the others
    uses_gpus = jobs.need > 0
    horizon = 0.0
    if uses_gpus.any():
        solved = _solve_growing(
            _Jobs(*(values[uses_gpus] for values in jobs)), total_gpus, slot_s, horizon_s
        )
        completion_s[uses_gpus] = solved.completion_s
        horizon = solved.horizon_s
    return JCTLowerBound(
        mean_jct_s=float((completion_s - jobs.arrival).mean()),
        completion_s=completion_s,
        slot_s=float(slot_s),
        horizon_s=horizon,
    )


def _solve_growing(
    jobs: _Jobs, total_gpus: int, slot_s: float, horizon_s: float | None
) -> JCTLowerBound:
    """:func:`_solve` on horizons doubling from ``horizon_s`` until the optimum leaves the
    last slot empty."""
    start, run = jobs.start, jobs.run
    if horizon_s is None:
        horizon_s = float(start.max() + (jobs.need * run).sum() / total_gpus + run.max())
    horizon_s = max(float(horizon_s), float(start.max() + run.max()), slot_s)
    for _ in range(_MAX_HORIZON_DOUBLINGS):
        solved = _solve(jobs, total_gpus, slot_s, horizon_s)
        if solved is not None:
            return solved
        last_tried, horizon_s = horizon_s, horizon_s * 2.0
    raise RuntimeError(
        f"the lower-bound program still used its last slot at a horizon of {last_tried:.0f} s "
        f"after {_MAX_HORIZON_DOUBLINGS} doublings; pass a larger horizon_s (or slot_s)"
    )


def _check_jobs(jobs: _Jobs, total_gpus: int, slot_s: float) -> None:
    """Raise ValueError for inputs the bound is not defined on."""
    arrival, start, need, run = jobs
    if not (arrival.ndim == 1 and arrival.shape == start.shape == need.shape == run.shape):
        raise ValueError(
            "arrival_s, earliest_start_s, gpus and min_run_s must be 1-D arrays of one "
            f"length; got shapes {arrival.shape}, {start.shape}, {need.shape}, {run.shape}"
        )
    if isinstance(total_gpus, bool) or not isinstance(total_gpus, int | np.integer):
        raise ValueError(f"total_gpus must be a positive integer; got {total_gpus!r}")
    if total_gpus < 1:
        raise ValueError(f"total_gpus must be a positive integer; got {total_gpus}")
    if not (np.isfinite(slot_s) and slot_s > 0):
        raise ValueError(f"slot_s must be a positive number of seconds; got {slot_s!r}")
    problems = [
        (~np.isfinite(arrival) | (arrival < 0), "arrival_s must be finite and >= 0"),
        (~np.isfinite(start), "earliest_start_s must be finite"),
        (~(start >= arrival), "earliest_start_s must be >= arrival_s"),
        (~((need >= 0) & (need <= total_gpus)), f"gpus must be in [0, {total_gpus}]"),
        (~(np.isfinite(run) & (run > 0)), "min_run_s must be finite and > 0"),
    ]
    for bad, rule in problems:
        if bad.any():
            job = int(bad.argmax())
            raise ValueError(f"{rule}; job {job} breaks it ({int(bad.sum())} jobs in all)")


def _solve(
    jobs_in: _Jobs, total_gpus: int, slot_s: float, horizon_s: float
) -> JCTLowerBound | None:
    """The program on slots up to ``horizon_s``; None when its optimum uses the last slot."""
    arrival, start, need, run = jobs_in
    jobs = len(arrival)
    slots = int(np.ceil(horizon_s / slot_s))
    slot_start = np.arange(slots) * slot_s
    # A slot that begins before the earliest start may still hold the job's work from
    # that start on: the slot containing it is the job's first.
    first_slot = np.floor(start / slot_s).astype(np.int64)
    job_of, slot_of = np.nonzero(np.arange(slots)[None, :] >= first_slot[:, None])
    work = need * run
    count = len(job_of)
    # Variables: x (count), then C (jobs). Objective: sum of C.
    cost = np.concatenate([np.zeros(count), np.ones(jobs)])
    columns = np.arange(count)
    completion = count + np.arange(jobs)
    # M_j + p_j / 2 <= C_j, written as sum_t x_jt t D / w_j - C_j <= -p_j / 2.
    busy = sparse.csr_matrix(
        (
            np.concatenate([slot_start[slot_of] / work[job_of], -np.ones(jobs)]),
            (np.concatenate([job_of, np.arange(jobs)]), np.concatenate([columns, completion])),
        ),
        shape=(jobs, count + jobs),
    )
    capacity = sparse.csr_matrix((np.ones(count), (slot_of, columns)), shape=(slots, count + jobs))
    a_ub = sparse.vstack([busy, capacity]).tocsr()
    b_ub = np.concatenate([-run / 2.0, np.full(slots, total_gpus * slot_s)])
    a_eq = sparse.csr_matrix((np.ones(count), (job_of, columns)), shape=(jobs, count + jobs))
    lower = np.concatenate([np.zeros(count), start + run])
    upper = np.concatenate([need[job_of] * slot_s, np.full(jobs, np.inf)])
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=work,
        bounds=np.column_stack([lower, upper]),
        method="highs",
    )
    if result.status != 0:
        if result.status == 2:  # infeasible: the horizon is too short for the work
            return None
        raise RuntimeError(f"the lower-bound program failed: {result.message}")
    last_slot_work = result.x[:count][slot_of == slots - 1].sum()
    if last_slot_work > _EMPTY_GPU_SECONDS:
        return None
    completion_s = result.x[count:]
    return JCTLowerBound(
        mean_jct_s=float((completion_s - arrival).mean()),
        completion_s=completion_s,
        slot_s=float(slot_s),
        horizon_s=float(slots * slot_s),
    )
