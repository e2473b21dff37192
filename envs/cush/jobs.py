"""CuSH job sets (004 §4): generated or explicit, and their simulator :class:`Workload`.

A CuSH job asks for ``gpus`` GPUs and ``cpus`` CPUs (whole sockets) for ``length`` time
steps, arrives at step ``arrival`` and is a dgemm or a daxpy. Lengths, arrivals and types
are 004's distribution, drawn by :func:`envs.workload.generators.cush_jobs` (the one
sampler, which ``make_workload("cush")`` uses too); the demands are this formulation's:
whole shares of its cluster's GPUs and CPUs. A set becomes a fixed-duration
:class:`~envs.workload.Workload` for the simulator:

* one worker per GPU (1 GPU, 0 cores each);
* one CPU-only task per CPU (the simulator's parameter-server rows: 0 GPUs and all the
  cores of one socket), so a CuSH CPU is exactly one socket taken whole. With interference
  and communication switched off (as :mod:`envs.cush.core` runs the simulator) these rows
  are pure resource claims: they exchange nothing and slow nobody;
* ``duration = length x step_seconds`` and ``arrival_time = arrival x step_seconds``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.cush.config import JOB_TYPES, CuSHConfig
from envs.validation import check_rng
from envs.workload import Workload, get_catalog
from envs.workload.generators import cush_jobs

#: Keys of one explicit job, e.g. ``{"arrival": 0, "length": 3, "gpus": 4, "cpus": 1,
#: "type": "dgemm"}``.
JOB_KEYS: tuple[str, ...] = ("arrival", "length", "gpus", "cpus", "type")


@dataclass(frozen=True, eq=False)
class JobSet:
    """One episode's jobs as int64 arrays in arrival order (ties keep their list order).

    ``kind`` indexes :data:`~envs.cush.config.JOB_TYPES` (0 dgemm, 1 daxpy).
    """

    arrival: np.ndarray
    length: np.ndarray
    gpus: np.ndarray
    cpus: np.ndarray
    kind: np.ndarray

    def __len__(self) -> int:
        return int(self.length.shape[0])

    def to_list(self) -> list[dict[str, Any]]:
        """The explicit form: one ``{"arrival", "length", "gpus", "cpus", "type"}`` per job."""
        return [
            {
                "arrival": int(a),
                "length": int(n),
                "gpus": int(g),
                "cpus": int(c),
                "type": JOB_TYPES[int(k)],
            }
            for a, n, g, c, k in zip(
                self.arrival, self.length, self.gpus, self.cpus, self.kind, strict=True
            )
        ]


def generate_job_set(config: CuSHConfig, rng: np.random.Generator) -> JobSet:
    """A job set drawn with ``rng`` as the :class:`~envs.cush.config.CuSHConfig` says.

    Exactly ``config.num_short_jobs`` jobs (75% of 20 = 15) are short, which ones at
    random; arrivals are sorted uniform integer steps in ``0..arrival_window-1``.
    """
    check_rng(rng)
    count = config.num_jobs
    arrival, length, kind = cush_jobs(
        count,
        rng,
        num_short=config.num_short_jobs,
        short=(1, config.short_max_len),
        long=(config.short_max_len + 1, config.max_job_len),
        arrival_window=config.arrival_window,
        dgemm_fraction=config.dgemm_fraction,
    )
    # 1 - random() lies in (0, 1], so a share is never 0 and rounds up to >= 1 unit.
    shares = (1.0 - rng.random((2, count))) * config.max_job_share
    gpus = np.ceil(shares[0] * config.total_gpus - 1e-9).clip(1, config.total_gpus)
    cpus = np.ceil(shares[1] * config.total_cpus - 1e-9).clip(1, config.total_cpus)
    return JobSet(
        arrival=arrival,
        length=length,
        gpus=gpus.astype(np.int64),
        cpus=cpus.astype(np.int64),
        kind=kind,
    )


def _job_int(index: int, key: str, value: object, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"job {index}: {key} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"job {index}: {key} must be {allowed}, got {value}")
    return int(value)


def parse_jobs(data: object, config: CuSHConfig) -> JobSet:
    """Validate an explicit job set and return it as a :class:`JobSet`.

    ``data`` is a list of jobs, ``{"jobs": [...]}`` or a :class:`JobSet`. Each job is
    ``{"arrival": int >= 0 (steps), "length": int >= 1 (steps), "gpus": 1..N S^GPU,
    "cpus": 0..N S^CPU, "type": "dgemm" | "daxpy"}``; arrivals must not decrease. Lengths
    may exceed ``max_job_len`` (the generator's bound, not the environment's).
    """
    if isinstance(data, JobSet):
        data = data.to_list()
    if isinstance(data, Mapping):
        extra = sorted(map(str, set(data) - {"jobs"}))
        if "jobs" not in data or extra:
            raise ValueError(
                f'a CuSH job set is {{"jobs": [...]}} or the list itself; got keys '
                f"{sorted(map(str, data))}"
            )
        data = data["jobs"]
    if isinstance(data, str | bytes) or not isinstance(data, Sequence):
        raise ValueError(f"jobs must be a list of job objects, got {type(data).__name__}")
    if not data:
        raise ValueError("a CuSH job set needs at least one job")
    rows = []
    for index, job in enumerate(data):
        if not isinstance(job, Mapping):
            raise ValueError(f"job {index} must be an object with keys {JOB_KEYS}, got {job!r}")
        missing = [key for key in JOB_KEYS if key not in job]
        extra = sorted(map(str, set(job) - set(JOB_KEYS)))
        if missing or extra:
            raise ValueError(
                f"job {index}: keys must be exactly {', '.join(JOB_KEYS)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
        if job["type"] not in JOB_TYPES:
            raise ValueError(
                f"job {index}: type must be one of {', '.join(JOB_TYPES)}, got {job['type']!r}"
            )
        rows.append(
            (
                _job_int(index, "arrival", job["arrival"], 0, None),
                _job_int(index, "length", job["length"], 1, None),
                _job_int(index, "gpus", job["gpus"], 1, config.total_gpus),
                _job_int(index, "cpus", job["cpus"], 0, config.total_cpus),
                JOB_TYPES.index(job["type"]),
            )
        )
    table = np.array(rows, dtype=np.int64)
    if (np.diff(table[:, 0]) < 0).any():
        index = int(np.flatnonzero(np.diff(table[:, 0]) < 0)[0]) + 1
        raise ValueError(
            f"job {index} arrives at step {table[index, 0]}, before job {index - 1} at "
            f"{table[index - 1, 0]}: list jobs in arrival order"
        )
    return JobSet(*(table[:, column].copy() for column in range(5)))


def job_set_workload(jobs: JobSet, config: CuSHConfig, cores_per_socket: float) -> Workload:
    """The simulator's fixed-duration workload of ``jobs`` (see the module docstring)."""
    catalog = get_catalog("cush")
    models = np.array([catalog.index(name) for name in JOB_TYPES], dtype=np.int64)
    count = len(jobs)
    step = config.step_seconds
    return Workload(
        arrival_time=jobs.arrival * step,
        model=models[jobs.kind],
        num_workers=jobs.gpus,
        worker_demand=np.tile([1.0, 0.0], (count, 1)),
        num_ps=jobs.cpus,
        ps_demand=np.tile([0.0, float(cores_per_socket)], (count, 1)),
        duration=jobs.length * step,
        catalog_name=catalog.name,
    )
