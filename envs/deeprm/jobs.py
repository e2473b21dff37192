"""DeepRM's job sequences: the reference's bimodal generator and explicit replay lists.

A :class:`JobSequence` holds one episode's jobs in arrival order (at most one per time
step). :func:`generate_sequence` draws one as the reference's
``generate_sequence_work``; :func:`parse_jobs` and :func:`load_jobs_file` validate an
explicit workload ``{"jobs": [{"arrival_time": 3, "len": 2, "res": [5, 1]}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from envs.deeprm.config import DeepRMConfig
from envs.validation import check_rng
from envs.workload.generators import deeprm_jobs

JOB_KEYS: tuple[str, ...] = ("arrival_time", "len", "res")


@dataclass(frozen=True, eq=False)
class JobSequence:
    """Jobs of one episode in arrival order: at most one per time step, arrivals >= 1.

    ``simu_len`` is the reference's sequence length: no job arrives at or after it, and the
    ``no_new_job`` end fires at the move-on that reaches it.
    """

    arrival_times: np.ndarray
    lengths: np.ndarray
    sizes: np.ndarray
    simu_len: int

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The replay-file form ``{"jobs": [{"arrival_time", "len", "res"}, ...]}``."""
        return {
            "jobs": [
                {"arrival_time": int(t), "len": int(n), "res": [int(x) for x in r]}
                for t, n, r in zip(self.arrival_times, self.lengths, self.sizes, strict=True)
            ]
        }


def generate_sequence(config: DeepRMConfig, rng: np.random.Generator) -> JobSequence:
    """A job sequence drawn as the reference's ``generate_sequence_work(simu_len)``.

    At each time step a job arrives with probability ``new_job_rate`` (Bernoulli); it is
    short (``short_len_range``) with probability ``job_small_chance`` else long; one
    uniformly drawn resource gets ``dominant_size_range``, the others ``other_size_range``.
    Index 0 is left empty because the reference never reads it (arrivals happen only when
    time advances).
    """
    check_rng(rng)
    short_low, short_high = config.short_len_range
    long_low, long_high = config.long_len_range
    dom_low, dom_high = config.dominant_size_range
    other_low, other_high = config.other_size_range
    if short_high < short_low or other_high < other_low or dom_low < 1:
        raise ValueError(
            "the bimodal generator needs max_job_len >= 5 and max_job_size >= 5 (short jobs "
            "last 1..max_job_len//5 steps, small demands are 1..max_job_size//5); got "
            f"max_job_len={config.max_job_len}, max_job_size={config.max_job_size}: "
            "pass an explicit job list instead"
        )
    steps = config.simu_len
    arrives = rng.random(steps) < config.new_job_rate
    lengths, sizes = deeprm_jobs(
        steps,
        config.num_res,
        rng,
        short_fraction=config.job_small_chance,
        short=(short_low, short_high),
        long=(long_low, long_high),
        dominant=(dom_low, dom_high),
        other=(other_low, other_high),
    )
    arrives[0] = False
    times = np.flatnonzero(arrives)
    return JobSequence(
        arrival_times=times.astype(np.int64),
        lengths=lengths[times].astype(np.int64),
        sizes=sizes[times].astype(np.int64),
        simu_len=steps,
    )


def _job_int(index: int, key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"job {index}: {key} must be an integer, got {value!r}")
    return int(value)


def parse_jobs(data: object, config: DeepRMConfig) -> JobSequence:
    """Validate an explicit workload and return it as a :class:`JobSequence`.

    ``data`` is ``{"jobs": [...]}`` (the replay-file form), the list itself, or a
    :class:`JobSequence`. Each job is ``{"arrival_time": int >= 1, "len": 1..max_job_len,
    "res": [num_res ints in 0..max_job_size, not all 0]}``; arrival times strictly increase
    (at most one job per time step, listed in arrival order). ValueError says what is wrong.
    """
    if isinstance(data, JobSequence):
        checked = parse_jobs(data.to_dict(), config)
        if data.simu_len < checked.simu_len:
            raise ValueError(
                f"simu_len {data.simu_len} must exceed the last arrival time {checked.simu_len - 1}"
            )
        return replace(checked, simu_len=data.simu_len)
    if isinstance(data, Mapping):
        extra = sorted(set(data) - {"jobs"})
        if "jobs" not in data or extra:
            raise ValueError(
                'a DeepRM workload is {"jobs": [...]}, got keys '
                f"{sorted(map(str, data))}; remove {extra or 'nothing'} and give 'jobs'"
            )
        data = data["jobs"]
    if isinstance(data, str | bytes) or not isinstance(data, Sequence):
        raise ValueError(f"jobs must be a list of job objects, got {type(data).__name__}")
    count = len(data)
    times = np.zeros(count, dtype=np.int64)
    lengths = np.zeros(count, dtype=np.int64)
    sizes = np.zeros((count, config.num_res), dtype=np.int64)
    previous = 0
    for index, job in enumerate(data):
        if not isinstance(job, Mapping):
            raise ValueError(f"job {index} must be an object with keys {JOB_KEYS}, got {job!r}")
        missing = [key for key in JOB_KEYS if key not in job]
        extra = sorted(set(job) - set(JOB_KEYS))
        if missing or extra:
            raise ValueError(
                f"job {index}: keys must be exactly {', '.join(JOB_KEYS)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(map(str, extra))}" if extra else "")
            )
        arrival = _job_int(index, "arrival_time", job["arrival_time"])
        if arrival < 1:
            raise ValueError(
                f"job {index}: arrival_time must be >= 1 (jobs arrive only when time "
                f"advances from 0), got {arrival}"
            )
        if arrival <= previous:
            raise ValueError(
                f"job {index}: arrival_time {arrival} must be greater than the previous "
                f"job's {previous} (at most one job per time step, in arrival order)"
            )
        length = _job_int(index, "len", job["len"])
        if not 1 <= length <= config.max_job_len:
            raise ValueError(
                f"job {index}: len must be in 1..max_job_len={config.max_job_len}, got {length}"
            )
        res = job["res"]
        if isinstance(res, str | bytes) or not isinstance(res, Sequence):
            raise ValueError(f"job {index}: res must be a list of {config.num_res} integers")
        if len(res) != config.num_res:
            raise ValueError(
                f"job {index}: res must list num_res={config.num_res} demands, got {len(res)}"
            )
        demand = [_job_int(index, "res", value) for value in res]
        if any(not 0 <= value <= config.max_job_size for value in demand):
            raise ValueError(
                f"job {index}: each res must be in 0..max_job_size={config.max_job_size}, "
                f"got {demand}"
            )
        if not any(demand):
            raise ValueError(f"job {index}: res must demand at least one unit, got {demand}")
        times[index], lengths[index], sizes[index] = arrival, length, demand
        previous = arrival
    return JobSequence(times, lengths, sizes, simu_len=previous + 1)


def load_jobs_file(path: str | Path, config: DeepRMConfig) -> JobSequence:
    """Read and validate a replay file ``{"jobs": [...]}`` (see :func:`parse_jobs`)."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    try:
        jobs = parse_jobs(data, config)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    if not len(jobs):
        # A replay of nothing has no slowdowns to report.
        raise ValueError(f"{path}: a DeepRM replay needs at least one job")
    return jobs
