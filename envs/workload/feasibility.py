"""Jobs that can never run: refuse them with a clear error, or drop and count them.

A job can never fit when its total demand exceeds the whole cluster, or when one of its
tasks (worker or parameter server) needs more than the largest server offers -- a task
is placed on one server. The capacity is passed in as plain numbers so this package never
depends on the topology package (``envs.topology`` computes them from a cluster).
"""

from __future__ import annotations

import math

import numpy as np

from envs.workload.jobs import Workload

# Demands are floats (fractional GPUs); this slack keeps 3 x 0.1 GPU from "exceeding" 0.3.
_SLACK = 1e-9


class InfeasibleJobError(ValueError):
    """A job whose demand no placement on the given cluster can satisfy."""

    def __init__(self, message: str, job: int, job_id: int) -> None:
        super().__init__(message)
        self.job = job
        self.job_id = job_id

    def __reduce__(self) -> tuple[type, tuple[str, int, int]]:
        return (type(self), (str(self), self.job, self.job_id))


def _limit(label: str, value: float | None) -> float:
    if value is None:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"{label} must be a number > 0 or None (no limit), got {value!r}")
    if value <= 0:
        raise ValueError(f"{label} must be > 0, got {value!r}")
    return float(value)


def _limits(
    max_gpus_per_job: float,
    max_cpus_per_job: float | None,
    max_gpus_per_task: float | None,
    max_cpus_per_task: float | None,
) -> list[tuple[str, str, int, float]]:
    """(scope, resource, column, limit) for every finite limit."""
    checks = [
        ("job", "GPUs", 0, _limit("max_gpus_per_job", max_gpus_per_job)),
        ("job", "CPU cores", 1, _limit("max_cpus_per_job", max_cpus_per_job)),
        ("task", "GPUs", 0, _limit("max_gpus_per_task", max_gpus_per_task)),
        ("task", "CPU cores", 1, _limit("max_cpus_per_task", max_cpus_per_task)),
    ]
    return [check for check in checks if math.isfinite(check[3])]


def _violations(workload: Workload, checks: list[tuple[str, str, int, float]]) -> np.ndarray:
    """(checks, J) boolean: job j breaks check c."""
    rows = []
    for scope, _, column, limit in checks:
        demand = workload.total_demand if scope == "job" else workload.max_task_demand
        rows.append(demand[:, column] > limit + _SLACK)
    if not rows:
        return np.zeros((0, len(workload)), dtype=bool)
    return np.vstack(rows)


def infeasible_mask(
    workload: Workload,
    max_gpus_per_job: float,
    max_cpus_per_job: float | None = None,
    *,
    max_gpus_per_task: float | None = None,
    max_cpus_per_task: float | None = None,
) -> np.ndarray:
    """Boolean (J,): True for jobs that can never fit the given capacity.

    ``max_*_per_job`` is the whole cluster's capacity; ``max_*_per_task`` the largest
    server's. None means no limit on that quantity.
    """
    checks = _limits(max_gpus_per_job, max_cpus_per_job, max_gpus_per_task, max_cpus_per_task)
    return _violations(workload, checks).any(axis=0)


def check_feasible(
    workload: Workload,
    max_gpus_per_job: float,
    max_cpus_per_job: float | None = None,
    *,
    max_gpus_per_task: float | None = None,
    max_cpus_per_task: float | None = None,
) -> None:
    """Raise :class:`InfeasibleJobError` naming the first job that can never fit."""
    checks = _limits(max_gpus_per_job, max_cpus_per_job, max_gpus_per_task, max_cpus_per_task)
    broken = _violations(workload, checks)
    bad_jobs = broken.any(axis=0)
    if not bad_jobs.any():
        return
    job = int(np.flatnonzero(bad_jobs)[0])
    scope, resource, column, limit = checks[int(np.flatnonzero(broken[:, job])[0])]
    if scope == "job":
        demand = workload.total_demand[job, column]
        where = "the whole cluster has"
    else:
        demand = workload.max_task_demand[job, column]
        where = "the largest server has"
    job_id = int(workload.job_id[job])
    raise InfeasibleJobError(
        f"job {job} (job_id {job_id}, arriving at {workload.arrival_time[job]:g} s) can never "
        f"run: one {scope} needs {demand:g} {resource} but {where} {limit:g}; "
        f"{int(bad_jobs.sum())} job(s) in total cannot fit. Drop them with drop_infeasible() "
        "(--drop-infeasible) or use a larger cluster",
        job,
        job_id,
    )


def drop_infeasible(
    workload: Workload,
    max_gpus_per_job: float,
    max_cpus_per_job: float | None = None,
    *,
    max_gpus_per_task: float | None = None,
    max_cpus_per_task: float | None = None,
) -> tuple[Workload, int]:
    """The workload without the jobs that can never fit, and how many were dropped."""
    bad = infeasible_mask(
        workload,
        max_gpus_per_job,
        max_cpus_per_job,
        max_gpus_per_task=max_gpus_per_task,
        max_cpus_per_task=max_cpus_per_task,
    )
    dropped = int(bad.sum())
    return (workload.select(~bad) if dropped else workload), dropped
