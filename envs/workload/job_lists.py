"""Explicit job lists shared by the GPU-only formulations, and making a workload GPU-only.

A list of jobs ``[{"arrival": 0, "model": "VGG16", "gpus": 4, "duration": 3600}, ...]``
(``duration``: ideal execution time in seconds) becomes arrays with :func:`job_rows`;
:func:`gpu_only` sets every task's CPU demand to 0 for formulations that schedule GPUs only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from envs.workload.catalog import get_catalog
from envs.workload.jobs import Workload

#: Keys of one explicit job.
JOB_KEYS: tuple[str, ...] = ("arrival", "model", "gpus", "duration")


def gpu_only(workload: Workload) -> Workload:
    """``workload`` with every task's CPU demand set to 0 (GPUs are the only resource)."""
    worker = np.array(workload.worker_demand, dtype=np.float64)
    ps = np.array(workload.ps_demand, dtype=np.float64)
    worker[:, 1:] = 0.0
    ps[:, 1:] = 0.0
    return workload.replace(worker_demand=worker, ps_demand=ps)


def job_rows(
    jobs: object, catalog_name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(arrival, model index, gpus, duration)`` arrays of an explicit job list, sorted by
    arrival (stably: jobs arriving together keep list order); ValueError naming the job
    and field that is wrong."""
    if isinstance(jobs, str | bytes) or not isinstance(jobs, Sequence) or not jobs:
        raise ValueError(
            "jobs must be a Workload or a non-empty list of mappings with the keys "
            f"{', '.join(JOB_KEYS)}, got {type(jobs).__name__}"
        )
    catalog = get_catalog(catalog_name)
    rows: list[tuple[float, int, int, float]] = []
    for index, job in enumerate(jobs):
        if not isinstance(job, Mapping) or set(job) != set(JOB_KEYS):
            raise ValueError(
                f"job {index} must be a mapping with exactly the keys {', '.join(JOB_KEYS)}, "
                f"got {job!r}"
            )
        if job["model"] not in catalog.names:
            raise ValueError(
                f"job {index}: unknown model {job['model']!r}; known: {', '.join(catalog.names)}"
            )
        arrival, duration = _number(index, "arrival", job["arrival"]), job["duration"]
        gpus = job["gpus"]
        if isinstance(gpus, bool) or not isinstance(gpus, int | np.integer) or gpus < 1:
            raise ValueError(f"job {index}: gpus must be an integer >= 1, got {gpus!r}")
        if arrival < 0 or not _number(index, "duration", duration) > 0:
            raise ValueError(
                f"job {index}: arrival must be >= 0 and duration > 0 seconds, got "
                f"{job['arrival']!r} and {duration!r}"
            )
        rows.append((arrival, catalog.names.index(job["model"]), int(gpus), float(duration)))
    rows.sort(key=lambda row: row[0])
    arrival, model, gpus, duration = (np.array(column) for column in zip(*rows, strict=True))
    return (
        arrival.astype(np.float64),
        model.astype(np.int64),
        gpus.astype(np.int64),
        duration.astype(np.float64),
    )


def _number(index: int, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"job {index}: {key} must be a number, got {value!r}")
    if not np.isfinite(float(value)):
        raise ValueError(f"job {index}: {key} must be finite, got {value!r}")
    return float(value)
