"""A workload: all jobs of an experiment as one struct of numpy arrays.

The simulator touches every job's fields in vectorized updates, so a workload is not a
list of job objects but a frozen :class:`Workload` of parallel arrays, one entry per job
(index ``j``), sorted by arrival time:

=====================  ========  ==========================================================
field                  shape     meaning
=====================  ========  ==========================================================
arrival_time           (J,)      float64 seconds, non-decreasing, >= 0
model                  (J,)      int64 index into the catalog ``catalog_name``
num_workers            (J,)      int64 >= 1
num_ps                 (J,)      int64 >= 0 parameter servers; 0 = AllReduce-style job
worker_demand          (J, L)    float64 demand of *one* worker over ``resource_names``
ps_demand              (J, L)    float64 demand of one parameter server
epochs                 (J,)      float64 epochs to train (0 for fixed-duration jobs)
iterations_per_epoch   (J,)      int64 mini-batches per epoch (0 for fixed-duration jobs)
duration               (J,)      float64 seconds for fixed-duration jobs, NaN otherwise
user, vc               (J,)      int64 codes into ``user_names`` / ``vc_names``; -1 unknown
partition              (J,)      int64 scheduler (pod) the job is submitted to; -1 = any
job_id                 (J,)      int64 provenance: position in the generator, or trace row
=====================  ========  ==========================================================

**job_id of a trace job** is the 0-based index of its data row: the first row after the
header is 0 (for PAI, a row of the job table; a headerless table's first line is row 0),
and blank lines are not counted. It indexes ``list(csv.DictReader(file))`` directly, but
it is *not* the 1-based file line a :class:`~envs.workload.parsing.TraceFormatError`
names: in a file with a header and no blank lines, data row ``i`` is file line ``i + 2``.

``resource_names`` always starts with ``("gpu", "cpu")`` so column 0 of a demand matrix is
GPUs and column 1 CPU cores; further resources (e.g. ``"mem"``) may follow. Demands are
floats because traces request fractions (Alibaba PAI's 50% GPU).

**Work.** A progress-based job trains ``epochs x iterations_per_epoch`` mini-batches of one
worker's batch size. With ``w`` data-parallel workers one synchronous step processes ``w``
mini-batches, so its ideal duration is ``epochs x iterations_per_epoch x compute_time_s / w``
(001 §VI-A: "the ideal time [is] the time of training with one worker on the whole
dataset divided by the number of assigned workers"). A fixed-duration job (DeepRM, CuSH,
traces) instead runs ``duration`` seconds once placed, plus whatever placement penalty
the simulator applies. Every job is exactly one of the two kinds.

Arrays are copied on construction and made read-only, so a workload can be shared between
environments and simulator runs without defensive copies. Every transformation
(:meth:`Workload.select`, :meth:`Workload.scale_arrivals`, :func:`concatenate`, ...)
returns a new, validated workload.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from envs.workload.catalog import DEFAULT_CATALOG, ModelCatalog, get_catalog

#: Resource names every workload starts with, in this order.
BASE_RESOURCES: tuple[str, str] = ("gpu", "cpu")

#: Identifies the JSON form written by :meth:`Workload.to_dict`.
WORKLOAD_FORMAT = "podsched.workload"
WORKLOAD_FORMAT_VERSION = 1

_JOB_COLUMNS: tuple[str, ...] = (
    "arrival_time",
    "model",
    "num_workers",
    "num_ps",
    "worker_demand",
    "ps_demand",
    "epochs",
    "iterations_per_epoch",
    "duration",
    "user",
    "vc",
    "partition",
    "job_id",
)


def _float_array(label: str, value: Any, shape: tuple[int, ...] | None, ndim: int) -> np.ndarray:
    """``value`` as a fresh float64 array of ``ndim`` dimensions (and ``shape`` if given)."""
    try:
        array = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as error:
        raise TypeError(f"Workload.{label} must be an array of numbers ({error})") from None
    if array.ndim != ndim or (shape is not None and array.shape != shape):
        wanted = shape if shape is not None else f"{ndim} dimension(s)"
        raise ValueError(f"Workload.{label} has shape {array.shape}; expected {wanted}")
    return array


def _int_array(label: str, value: Any, length: int) -> np.ndarray:
    """``value`` as a fresh int64 array of ``length``; floats must hold whole numbers."""
    array = np.asarray(value)
    if array.dtype == np.bool_:
        raise TypeError(f"Workload.{label} must hold integers, not booleans")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise ValueError(f"Workload.{label} must hold whole numbers")
    elif array.dtype.kind not in "iu" and array.size:
        raise TypeError(f"Workload.{label} must be an integer array, got dtype {array.dtype}")
    array = np.array(array, dtype=np.int64, copy=True)
    if array.shape != (length,):
        raise ValueError(f"Workload.{label} has shape {array.shape}; expected ({length},)")
    return array


def _first_bad(mask: np.ndarray) -> int:
    """Index of the first True entry (caller guarantees there is one)."""
    return int(np.flatnonzero(mask)[0])


def _check_names(label: str, names: Any) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"Workload.{label} must be a sequence of strings, got {names!r}")
    names = tuple(names)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"Workload.{label} must contain only strings, got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"Workload.{label} repeats a name: {names!r}; names must be unique")
    return names


def _check_codes(
    label: str, codes: np.ndarray, names: tuple[str, ...], allow_unknown: bool
) -> None:
    low = -1 if allow_unknown else 0
    bad = (codes < low) | (codes >= len(names))
    if bad.any():
        index = _first_bad(bad)
        unknown = " (-1 = unknown)" if allow_unknown else ""
        raise ValueError(
            f"Workload.{label}[{index}] = {codes[index]}; codes must lie in "
            f"[{low}, {len(names) - 1}]{unknown}, indexing the {len(names)} known names"
        )


@dataclass(frozen=True, eq=False)
class Workload:
    """Jobs as parallel read-only numpy arrays; see the module docstring for the fields.

    Optional fields may be left as ``None``: ``num_ps`` and ``ps_demand`` become zeros,
    ``epochs`` and ``iterations_per_epoch`` zeros, ``duration`` NaN, ``user``, ``vc`` and
    ``partition`` -1, ``job_id`` ``0..J-1``. After construction every field is an array.
    """

    arrival_time: np.ndarray
    model: np.ndarray
    num_workers: np.ndarray
    worker_demand: np.ndarray
    num_ps: np.ndarray | None = None
    ps_demand: np.ndarray | None = None
    epochs: np.ndarray | None = None
    iterations_per_epoch: np.ndarray | None = None
    duration: np.ndarray | None = None
    catalog_name: str = DEFAULT_CATALOG
    resource_names: tuple[str, ...] = BASE_RESOURCES
    user: np.ndarray | None = None
    user_names: tuple[str, ...] = ()
    vc: np.ndarray | None = None
    vc_names: tuple[str, ...] = ()
    partition: np.ndarray | None = None
    job_id: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: normalized arrays are stored once, here

        catalog = get_catalog(self.catalog_name)
        resources = _check_names("resource_names", self.resource_names)
        if resources[:2] != BASE_RESOURCES or not all(resources):
            raise ValueError(
                f"Workload.resource_names = {resources!r}; it must start with "
                f"{BASE_RESOURCES!r} (GPU column 0, CPU column 1) and names must be non-empty"
            )
        set_field(self, "resource_names", resources)
        set_field(self, "user_names", _check_names("user_names", self.user_names))
        set_field(self, "vc_names", _check_names("vc_names", self.vc_names))

        arrival = _float_array("arrival_time", self.arrival_time, None, 1)
        count = arrival.shape[0]
        if not np.all(np.isfinite(arrival)) or (arrival < 0).any():
            index = _first_bad(~np.isfinite(arrival) | (arrival < 0))
            raise ValueError(
                f"Workload.arrival_time[{index}] = {arrival[index]}; arrival times must be "
                "finite and >= 0 seconds"
            )
        if count > 1 and (np.diff(arrival) < 0).any():
            index = _first_bad(np.diff(arrival) < 0) + 1
            raise ValueError(
                f"Workload.arrival_time is not sorted: job {index} arrives at {arrival[index]} "
                f"s, before job {index - 1} at {arrival[index - 1]} s; sort jobs by arrival"
            )
        width = len(resources)

        model = _int_array("model", self.model, count)
        _check_codes("model", model, catalog.names, allow_unknown=False)

        workers = _int_array("num_workers", self.num_workers, count)
        if (workers < 1).any():
            index = _first_bad(workers < 1)
            raise ValueError(
                f"Workload.num_workers[{index}] = {workers[index]}; every job needs >= 1 worker"
            )
        servers = _int_array(
            "num_ps", np.zeros(count, np.int64) if self.num_ps is None else self.num_ps, count
        )
        if (servers < 0).any():
            index = _first_bad(servers < 0)
            raise ValueError(
                f"Workload.num_ps[{index}] = {servers[index]}; it must be >= 0 (0 = AllReduce)"
            )

        demands = {}
        for label, value in (("worker_demand", self.worker_demand), ("ps_demand", self.ps_demand)):
            if value is None:
                value = np.zeros((count, width))
            demand = _float_array(label, value, (count, width), 2)
            bad = ~np.isfinite(demand) | (demand < 0)
            if bad.any():
                job, column = np.argwhere(bad)[0]
                raise ValueError(
                    f"Workload.{label}[{job}, {column}] ({resources[column]}) = "
                    f"{demand[job, column]}; demands must be finite and >= 0"
                )
            demands[label] = demand

        epochs = _float_array(
            "epochs", np.zeros(count) if self.epochs is None else self.epochs, (count,), 1
        )
        iterations = _int_array(
            "iterations_per_epoch",
            np.zeros(count, np.int64)
            if self.iterations_per_epoch is None
            else self.iterations_per_epoch,
            count,
        )
        duration = _float_array(
            "duration",
            np.full(count, np.nan) if self.duration is None else self.duration,
            (count,),
            1,
        )
        self._check_work(epochs, iterations, duration)

        optional_codes = {}
        for label, names in (("user", self.user_names), ("vc", self.vc_names)):
            value = getattr(self, label)
            codes = _int_array(label, np.full(count, -1) if value is None else value, count)
            _check_codes(label, codes, names, allow_unknown=True)
            optional_codes[label] = codes
        partition = _int_array(
            "partition", np.full(count, -1) if self.partition is None else self.partition, count
        )
        if (partition < -1).any():
            index = _first_bad(partition < -1)
            raise ValueError(
                f"Workload.partition[{index}] = {partition[index]}; it must be >= -1 (-1 = any)"
            )
        job_id = _int_array(
            "job_id", np.arange(count) if self.job_id is None else self.job_id, count
        )

        normalized = {
            "arrival_time": arrival,
            "model": model,
            "num_workers": workers,
            "num_ps": servers,
            "epochs": epochs,
            "iterations_per_epoch": iterations,
            "duration": duration,
            "partition": partition,
            "job_id": job_id,
            **demands,
            **optional_codes,
        }
        for label, array in normalized.items():
            array.setflags(write=False)
            set_field(self, label, array)

    @staticmethod
    def _check_work(epochs: np.ndarray, iterations: np.ndarray, duration: np.ndarray) -> None:
        """Each job is either progress-based (epochs, iterations) or fixed-duration."""
        fixed = ~np.isnan(duration)
        bad_duration = fixed & ~(np.isfinite(duration) & (duration > 0))
        if bad_duration.any():
            index = _first_bad(bad_duration)
            raise ValueError(
                f"Workload.duration[{index}] = {duration[index]}; a fixed duration must be a "
                "finite number of seconds > 0 (NaN marks a progress-based job)"
            )
        if not np.all(np.isfinite(epochs)):
            index = _first_bad(~np.isfinite(epochs))
            raise ValueError(f"Workload.epochs[{index}] = {epochs[index]}; it must be finite")
        progress = ~fixed
        bad_progress = progress & ((epochs <= 0) | (iterations < 1))
        if bad_progress.any():
            index = _first_bad(bad_progress)
            raise ValueError(
                f"job {index} is progress-based (duration NaN) but has epochs="
                f"{epochs[index]}, iterations_per_epoch={iterations[index]}; it needs "
                "epochs > 0 and iterations_per_epoch >= 1, or a fixed duration"
            )
        mixed = fixed & ((epochs != 0) | (iterations != 0))
        if mixed.any():
            index = _first_bad(mixed)
            raise ValueError(
                f"job {index} has a fixed duration of {duration[index]} s and also epochs="
                f"{epochs[index]}, iterations_per_epoch={iterations[index]}; a fixed-duration "
                "job must have epochs = 0 and iterations_per_epoch = 0"
            )

    # --- sizes and derived per-job quantities ------------------------------------------------

    def __len__(self) -> int:
        return int(self.arrival_time.shape[0])

    @property
    def num_jobs(self) -> int:
        """Number of jobs J."""
        return len(self)

    @property
    def num_resources(self) -> int:
        """Number of resource types L."""
        return len(self.resource_names)

    @property
    def catalog(self) -> ModelCatalog:
        """The model catalog ``model`` indexes into."""
        return get_catalog(self.catalog_name)

    def resource_index(self, name: str) -> int:
        """Column of resource ``name`` in the demand matrices."""
        try:
            return self.resource_names.index(name)
        except ValueError:
            raise ValueError(
                f"unknown resource {name!r}; this workload has {', '.join(self.resource_names)}"
            ) from None

    @cached_property
    def is_fixed_duration(self) -> np.ndarray:
        """Boolean (J,): True where the job runs for a fixed ``duration``."""
        return _read_only(~np.isnan(self.duration))

    @cached_property
    def num_tasks(self) -> np.ndarray:
        """Workers + parameter servers per job."""
        return _read_only(self.num_workers + self.num_ps)

    @cached_property
    def total_demand(self) -> np.ndarray:
        """(J, L): the whole job's demand, workers and parameter servers together."""
        return _read_only(
            self.num_workers[:, None] * self.worker_demand + self.num_ps[:, None] * self.ps_demand
        )

    @property
    def total_gpus(self) -> np.ndarray:
        """GPUs each job needs in total (float: traces may ask for fractions)."""
        return self.total_demand[:, 0]

    @property
    def total_cpus(self) -> np.ndarray:
        """CPU cores each job needs in total."""
        return self.total_demand[:, 1]

    @cached_property
    def max_task_demand(self) -> np.ndarray:
        """(J, L): per resource, the largest demand of any one task of the job."""
        ps_part = np.where(self.num_ps[:, None] > 0, self.ps_demand, 0.0)
        return _read_only(np.maximum(self.worker_demand, ps_part))

    def ideal_duration(self) -> np.ndarray:
        """Seconds each job needs alone without interference or communication.

        Fixed-duration jobs: their ``duration``. Progress-based jobs:
        ``epochs x iterations_per_epoch x compute_time_s / num_workers`` (001 §VI-A).
        """
        compute = self.catalog.column("compute_time_s")[self.model]
        progress = self.epochs * self.iterations_per_epoch * compute / self.num_workers
        return np.where(self.is_fixed_duration, self.duration, progress)

    def model_name(self, job: int) -> str:
        """Catalog name of job ``job``'s model."""
        return self.catalog.profiles[int(self.model[job])].name

    def user_name(self, job: int) -> str | None:
        """User of job ``job``, or None when unknown."""
        code = int(self.user[job])
        return None if code < 0 else self.user_names[code]

    def vc_name(self, job: int) -> str | None:
        """Virtual cluster of job ``job``, or None when unknown."""
        code = int(self.vc[job])
        return None if code < 0 else self.vc_names[code]

    # --- transformations ---------------------------------------------------------------------

    def replace(self, **changes: Any) -> Workload:
        """A copy with some fields replaced, validated again."""
        return dataclasses.replace(self, **changes)

    def _columns(self) -> dict[str, np.ndarray]:
        return {label: getattr(self, label) for label in _JOB_COLUMNS}

    def _take(self, positions: np.ndarray) -> Workload:
        """The jobs at sorted ``positions``, name tables kept."""
        columns = {label: array[positions] for label, array in self._columns().items()}
        return dataclasses.replace(self, **columns)

    def select(self, keys: Any) -> Workload:
        """Jobs chosen by a boolean mask of length J or by integer indices.

        Indices must be unique and in ``[0, J)``; the result keeps arrival order whatever
        order they are given in.
        """
        index = np.asarray(keys)
        if index.dtype == np.bool_:
            if index.shape != (len(self),):
                raise ValueError(
                    f"a boolean selection needs shape ({len(self)},), got {index.shape}"
                )
            return self._take(np.flatnonzero(index))
        if index.size == 0:
            return self._take(np.zeros(0, dtype=np.int64))
        if index.dtype.kind not in "iu":
            raise TypeError(
                f"select() takes a boolean mask or integer indices, got dtype {index.dtype}"
            )
        positions = np.sort(index.ravel().astype(np.int64))
        if positions[0] < 0 or positions[-1] >= len(self):
            raise ValueError(
                f"select() index out of range: indices must lie in [0, {len(self) - 1}]"
            )
        if (np.diff(positions) == 0).any():
            raise ValueError("select() got a repeated index; each job can be selected once")
        return self._take(positions)

    def head(self, count: int) -> Workload:
        """The first ``count`` jobs by arrival (all of them if there are fewer)."""
        if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
            raise ValueError(f"head() needs a job count >= 0, got {count!r}")
        return self._take(np.arange(min(int(count), len(self))))

    def window(self, start_s: float | None = None, end_s: float | None = None) -> Workload:
        """Jobs arriving in ``[start_s, end_s)`` seconds; None leaves that side open."""
        low = -math.inf if start_s is None else float(start_s)
        high = math.inf if end_s is None else float(end_s)
        if math.isnan(low) or math.isnan(high) or high < low:
            raise ValueError(
                f"window() needs start_s <= end_s (either may be None), got {start_s}, {end_s}"
            )
        first, last = np.searchsorted(self.arrival_time, [low, high], side="left")
        return self._take(np.arange(first, last))

    def scale_arrivals(self, factor: float) -> Workload:
        """Arrival times multiplied by ``factor`` (< 1 compresses time: higher load)."""
        if not (isinstance(factor, int | float) and math.isfinite(factor) and factor > 0):
            raise ValueError(f"arrival scale factor must be a finite number > 0, got {factor!r}")
        return dataclasses.replace(self, arrival_time=self.arrival_time * float(factor))

    def rebase(self) -> Workload:
        """Arrival times shifted so that the first job arrives at 0 s."""
        if len(self) == 0:
            return self
        return dataclasses.replace(self, arrival_time=self.arrival_time - self.arrival_time[0])

    # --- serialization -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (lists, no NaN: a progress-based job's duration is None)."""
        jobs: dict[str, Any] = {label: array.tolist() for label, array in self._columns().items()}
        jobs["duration"] = [None if math.isnan(value) else value for value in jobs["duration"]]
        return {
            "format": WORKLOAD_FORMAT,
            "version": WORKLOAD_FORMAT_VERSION,
            "catalog": self.catalog_name,
            "resource_names": list(self.resource_names),
            "user_names": list(self.user_names),
            "vc_names": list(self.vc_names),
            "jobs": jobs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Workload:
        """The inverse of :meth:`to_dict`; ValueError on a wrong format, version or key."""
        if not isinstance(data, Mapping):
            raise TypeError(f"Workload.from_dict needs a mapping, got {type(data).__name__}")
        expected = {"format", "version", "catalog", "resource_names", "user_names", "vc_names"}
        expected.add("jobs")
        unknown = sorted(set(data) - expected)
        missing = sorted(expected - set(data))
        if unknown or missing:
            raise ValueError(
                f"workload dict: unknown keys {unknown}, missing keys {missing}; "
                f"expected exactly {sorted(expected)}"
            )
        if data["format"] != WORKLOAD_FORMAT or data["version"] != WORKLOAD_FORMAT_VERSION:
            raise ValueError(
                f"workload dict has format {data['format']!r} version {data['version']!r}; "
                f"this reader understands {WORKLOAD_FORMAT!r} version {WORKLOAD_FORMAT_VERSION}"
            )
        jobs = data["jobs"]
        if not isinstance(jobs, Mapping) or set(jobs) != set(_JOB_COLUMNS):
            found = sorted(jobs) if isinstance(jobs, Mapping) else type(jobs).__name__
            raise ValueError(
                f"workload dict 'jobs' must have exactly the columns {list(_JOB_COLUMNS)}; "
                f"got {found}"
            )
        columns = dict(jobs)
        columns["duration"] = [math.nan if value is None else value for value in jobs["duration"]]
        width = len(data["resource_names"])
        for label in ("worker_demand", "ps_demand"):
            if len(columns[label]) == 0:
                columns[label] = np.zeros((0, width))
        return cls(
            catalog_name=data["catalog"],
            resource_names=tuple(data["resource_names"]),
            user_names=tuple(data["user_names"]),
            vc_names=tuple(data["vc_names"]),
            **columns,
        )

    def summary(self) -> dict[str, Any]:
        """Headline statistics, JSON-able (for CLIs and logs)."""
        count = len(self)
        gpus = self.total_gpus
        per_model = np.bincount(self.model, minlength=len(self.catalog))
        return {
            "jobs": count,
            "catalog": self.catalog_name,
            "resources": list(self.resource_names),
            "first_arrival_s": float(self.arrival_time[0]) if count else None,
            "last_arrival_s": float(self.arrival_time[-1]) if count else None,
            "fixed_duration_jobs": int(self.is_fixed_duration.sum()),
            "parameter_server_jobs": int((self.num_ps > 0).sum()),
            "total_gpus": float(gpus.sum()),
            "max_gpus_per_job": float(gpus.max()) if count else 0.0,
            "single_gpu_fraction": float(np.mean(gpus == 1)) if count else 0.0,
            "models": {
                name: int(jobs) for name, jobs in zip(self.catalog.names, per_model, strict=True)
            },
        }

    # --- comparison and display --------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workload):
            return NotImplemented
        if (
            self.catalog_name,
            self.resource_names,
            self.user_names,
            self.vc_names,
        ) != (other.catalog_name, other.resource_names, other.user_names, other.vc_names):
            return False
        return all(
            np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f")
            for mine, theirs in zip(
                self._columns().values(), other._columns().values(), strict=True
            )
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled arrays (e.g. a workload shipped to a Ray worker) come back writable;
        # restore the read-only guarantee.
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        self.__dict__.update(state)

    __hash__ = None  # type: ignore[assignment]  # arrays are not hashable; equality is by value

    def __repr__(self) -> str:
        span = (
            f"{self.arrival_time[0]:.0f}..{self.arrival_time[-1]:.0f} s" if len(self) else "empty"
        )
        return (
            f"Workload(jobs={len(self)}, catalog={self.catalog_name!r}, "
            f"resources={self.resource_names!r}, arrivals={span}, "
            f"fixed_duration={int(self.is_fixed_duration.sum())})"
        )


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _merge_names(parts: Sequence[Workload], label: str) -> tuple[tuple[str, ...], list[np.ndarray]]:
    """One name table for all parts, and per part the array mapping old codes to new."""
    merged: dict[str, int] = {}
    remaps = []
    for part in parts:
        names = getattr(part, f"{label}_names")
        remap = np.array([merged.setdefault(name, len(merged)) for name in names], np.int64)
        remaps.append(remap)
    return tuple(merged), remaps


def concatenate(parts: Sequence[Workload]) -> Workload:
    """All jobs of ``parts`` in one workload, merged by arrival time.

    The parts must share the catalog and the resource names. User and VC name tables are
    merged (codes re-mapped); ``job_id`` values are kept as they are, so they may repeat.
    Ties in arrival time keep the order of ``parts``.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("concatenate() needs at least one workload")
    first = parts[0]
    for position, part in enumerate(parts[1:], start=1):
        if not isinstance(part, Workload):
            raise TypeError(f"concatenate() part {position} is a {type(part).__name__}")
        if part.catalog_name != first.catalog_name or part.resource_names != first.resource_names:
            raise ValueError(
                f"concatenate() part {position} uses catalog {part.catalog_name!r} and resources "
                f"{part.resource_names!r}; part 0 uses {first.catalog_name!r} and "
                f"{first.resource_names!r}; all parts must match"
            )
    user_names, user_maps = _merge_names(parts, "user")
    vc_names, vc_maps = _merge_names(parts, "vc")
    columns: dict[str, np.ndarray] = {}
    for label in _JOB_COLUMNS:
        arrays = [getattr(part, label) for part in parts]
        if label in ("user", "vc"):
            maps = user_maps if label == "user" else vc_maps
            arrays = [
                np.where(codes >= 0, remap[np.maximum(codes, 0)] if remap.size else -1, -1)
                for codes, remap in zip(arrays, maps, strict=True)
            ]
        columns[label] = np.concatenate(arrays)
    order = np.argsort(columns["arrival_time"], kind="stable")
    return Workload(
        catalog_name=first.catalog_name,
        resource_names=first.resource_names,
        user_names=user_names,
        vc_names=vc_names,
        **{label: array[order] for label, array in columns.items()},
    )
