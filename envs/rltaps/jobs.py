"""RL-TAPS jobs (003 §4.6.2, §5.1): the CNN table, the job generator, explicit job lists.

**The CNN table** (:mod:`envs.rltaps.cnns`): 35 CNNs of ``albanie/convnet-burden``.

**Jobs.** A job arrives at an integer step, trains one CNN with a mini-batch size from
{32, 64, 128, 256, 512}, asks for ``gpus`` GPUs (``gpusreq``) and is ``len`` image rows
long: its total computational distance is ``len x gpus x d_cell`` FLOPs (003 eq. 11,
``d_cell`` from Appendix A's calibration, :attr:`RLTapsConfig.cell_flops`).

**Generated sequences** (003 §5.1): one job per step for the first ``num_jobs`` steps;
each job independently is long (``len`` uniform in 6..10) with probability
``long_len_share`` (0.5), else short (1..3), and large (``gpus`` uniform in 8..12) with
probability ``large_gpus_share`` (0.5), else small (1..7); model and mini-batch uniform.

**Explicit lists** replay hand-made workloads: ``[{"arrival": 0, "model": "vgg-vd-19",
"minibatch": 256, "len": 3, "gpus": 4}, ...]`` (or ``{"jobs": [...]}``, or a
:class:`JobSet`), sorted by arrival (stably: jobs of one step keep their list order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.rltaps.cnns import CNN_NAMES
from envs.rltaps.config import RLTapsConfig
from envs.validation import check_rng

#: Keys of one explicit job.
JOB_KEYS: tuple[str, ...] = ("arrival", "model", "minibatch", "len", "gpus")


@dataclass(frozen=True, eq=False)
class JobSet:
    """One episode's jobs as int64 arrays in arrival order.

    ``model`` indexes :data:`~envs.rltaps.cnns.CNN_TABLE`; ``length`` is 003's len(j)
    (rows), ``gpus`` its gpusreq(j).
    """

    arrival: np.ndarray
    model: np.ndarray
    minibatch: np.ndarray
    length: np.ndarray
    gpus: np.ndarray

    def __len__(self) -> int:
        return int(self.length.shape[0])

    def to_list(self) -> list[dict[str, Any]]:
        """The explicit form: one ``{"arrival", "model", "minibatch", "len", "gpus"}`` each."""
        return [
            {
                "arrival": int(a),
                "model": CNN_NAMES[int(m)],
                "minibatch": int(b),
                "len": int(n),
                "gpus": int(g),
            }
            for a, m, b, n, g in zip(
                self.arrival, self.model, self.minibatch, self.length, self.gpus, strict=True
            )
        ]


def generate_jobs(config: RLTapsConfig, rng: np.random.Generator) -> JobSet:
    """A job sequence of 003 §5.1 drawn with ``rng`` (see the module docstring)."""
    check_rng(rng)
    count = config.num_jobs
    long_len = rng.random(count) < config.long_len_share
    length = np.where(
        long_len,
        rng.integers(config.long_len[0], config.long_len[1] + 1, size=count),
        rng.integers(config.short_len[0], config.short_len[1] + 1, size=count),
    )
    large = rng.random(count) < config.large_gpus_share
    gpus = np.where(
        large,
        rng.integers(config.large_gpus[0], config.large_gpus[1] + 1, size=count),
        rng.integers(config.small_gpus[0], config.small_gpus[1] + 1, size=count),
    )
    models = np.array([CNN_NAMES.index(name) for name in config.models], dtype=np.int64)
    model = models[rng.integers(len(models), size=count)]
    minibatch = np.asarray(config.minibatch_sizes, dtype=np.int64)[
        rng.integers(len(config.minibatch_sizes), size=count)
    ]
    return JobSet(
        arrival=np.arange(count, dtype=np.int64),
        model=model.astype(np.int64),
        minibatch=minibatch,
        length=length.astype(np.int64),
        gpus=gpus.astype(np.int64),
    )


def _job_ints(index: int, job: Mapping[str, Any], most_gpus: int, most_rows: int) -> dict[str, int]:
    """The integer fields of explicit job ``index``, checked against their ranges."""
    bounds = {
        "arrival": (0, None),
        "minibatch": (1, None),
        "len": (1, most_rows),
        "gpus": (1, most_gpus),
    }
    values = {}
    for key, (low, high) in bounds.items():
        value = job[key]
        integral = isinstance(value, int | np.integer) and not isinstance(value, bool)
        if not integral or value < low or (high is not None and value > high):
            allowed = f">= {low}" if high is None else f"in {low}..{high}"
            raise ValueError(f"job {index}: {key} must be an integer {allowed}, got {value!r}")
        values[key] = int(value)
    return values


def parse_jobs(data: object, config: RLTapsConfig) -> JobSet:
    """Validate an explicit job list and return it as a :class:`JobSet`.

    ``data`` is a list of jobs, ``{"jobs": [...]}`` or a :class:`JobSet`. Each job is
    ``{"arrival": int >= 0 (step), "model": a name of CNN_TABLE, "minibatch": int >= 1,
    "len": 1..horizon (rows: the image shows a job's whole work, 003 §4.6.2), "gpus":
    1..min(max_gpus_request, GPUs of the cluster)}``.
    """
    if isinstance(data, JobSet):
        data = data.to_list()
    if isinstance(data, Mapping):
        if set(map(str, data)) != {"jobs"}:
            raise ValueError(
                f'an RL-TAPS job list is {{"jobs": [...]}} or the list itself; got keys '
                f"{sorted(map(str, data))}"
            )
        data = data["jobs"]
    if isinstance(data, str | bytes) or not isinstance(data, Sequence) or not data:
        raise ValueError(
            f"jobs must be a non-empty list of mappings with the keys {', '.join(JOB_KEYS)}, "
            f"got {type(data).__name__}"
        )
    most_gpus = min(config.max_gpus_request, config.total_gpus)
    rows = []
    for index, job in enumerate(data):
        if not isinstance(job, Mapping) or set(map(str, job)) != set(JOB_KEYS):
            raise ValueError(
                f"job {index} must be a mapping with exactly the keys {', '.join(JOB_KEYS)}, "
                f"got {job!r}"
            )
        if job["model"] not in CNN_NAMES:
            raise ValueError(
                f"job {index}: unknown model {job['model']!r}; known: {', '.join(CNN_NAMES)}"
            )
        ints = _job_ints(index, job, most_gpus, config.horizon)
        model = CNN_NAMES.index(job["model"])
        rows.append((ints["arrival"], model, ints["minibatch"], ints["len"], ints["gpus"]))
    rows.sort(key=lambda row: row[0])
    table = np.array(rows, dtype=np.int64)
    return JobSet(*(table[:, column].copy() for column in range(len(JOB_KEYS))))
