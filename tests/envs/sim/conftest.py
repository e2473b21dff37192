"""Helpers to build exact workloads for simulator tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from envs.workload import Workload


def exact_workload(
    arrivals: Sequence[float],
    models: Sequence[int],
    workers: Sequence[int],
    *,
    ps: Sequence[int] | None = None,
    gpus_per_worker: float = 1.0,
    cpus_per_worker: float = 1.0,
    epochs: float = 1.0,
    iterations_per_epoch: int = 1000,
    catalog: str = "marl",
) -> Workload:
    """Progress-based jobs with the given arrivals, models and worker counts."""
    count = len(arrivals)
    ps_counts = np.zeros(count, dtype=np.int64) if ps is None else np.asarray(ps)
    return Workload(
        arrival_time=np.asarray(arrivals, dtype=float),
        model=np.asarray(models),
        num_workers=np.asarray(workers),
        worker_demand=np.tile([gpus_per_worker, cpus_per_worker], (count, 1)),
        num_ps=ps_counts,
        ps_demand=np.tile([0.0, 1.0], (count, 1)),
        epochs=np.full(count, epochs),
        iterations_per_epoch=np.full(count, iterations_per_epoch),
        catalog_name=catalog,
    )


@pytest.fixture
def make_workload():
    return exact_workload
