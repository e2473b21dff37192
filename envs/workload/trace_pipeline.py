"""The pipeline every trace reader shares: options, report, filters, models, Workload.

A reader parses rows into a :class:`TraceJobs` collector (through :func:`collect_rows`,
which stops parsing once ``max_jobs`` or ``end_s`` is provably reached, see
:class:`EarlyStop`) and calls :func:`finish_trace`, which drops jobs the simulator cannot
run, applies the :class:`TraceOptions` filters, orders and re-times arrivals, draws models
and builds the :class:`Workload` plus its :class:`TraceReport`. The steps and their order
are documented in ``envs.workload.traces``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from envs.workload.catalog import DEFAULT_CATALOG, get_catalog
from envs.workload.csvrows import ErrorLog
from envs.workload.jobs import BASE_RESOURCES, Workload
from envs.workload.parsing import MAX_COUNT, FieldError, TraceFormatError

#: A reader's row parser: (0-based data-row index, 1-based line, fields) -> None. It parses
#: the row and adds it to its :class:`TraceJobs`, or hands a malformed row to its ErrorLog.
RowParser = Callable[[int, int, list[str]], None]
#: A reader's arrival parser: fields -> arrival seconds; raises FieldError (or any
#: ValueError/IndexError) when the row's arrival cannot be read.
ArrivalParser = Callable[[list[str]], float]


@dataclass(frozen=True)
class TraceOptions:
    """How to turn a trace into a workload; ``envs.workload.traces`` lists the steps in order."""

    vcs: tuple[str, ...] | None = None
    states: tuple[str, ...] | None = None
    start_s: float | None = None
    end_s: float | None = None
    max_jobs: int | None = None
    arrival_scale: float = 1.0
    rebase: bool = True
    skip_bad_rows: bool = False
    gpu_jobs_only: bool = True
    catalog: str = DEFAULT_CATALOG
    model_weights: tuple[float, ...] | None = None
    cpus_per_gpu: float | None = None

    def __post_init__(self) -> None:
        for label in ("vcs", "states"):
            value = getattr(self, label)
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(item, str) for item in value):
                raise ValueError(
                    f"TraceOptions.{label} must be a list of names, got {value!r} "
                    f"(write {label}=({value!r},) for one name)"
                )
            object.__setattr__(self, label, tuple(value))
        for label in ("start_s", "end_s"):
            value = getattr(self, label)
            if value is not None and (not isinstance(value, int | float) or math.isnan(value)):
                raise ValueError(f"TraceOptions.{label} must be a number of seconds or None")
        if self.start_s is not None and self.end_s is not None and self.end_s < self.start_s:
            raise ValueError(f"TraceOptions: end_s={self.end_s} is before start_s={self.start_s}")
        if self.max_jobs is not None and (
            isinstance(self.max_jobs, bool)
            or not isinstance(self.max_jobs, int)
            or self.max_jobs < 0
        ):
            raise ValueError(
                f"TraceOptions.max_jobs must be an integer >= 0 or None, got {self.max_jobs!r}"
            )
        if not (
            isinstance(self.arrival_scale, int | float)
            and math.isfinite(self.arrival_scale)
            and self.arrival_scale > 0
        ):
            raise ValueError(
                "TraceOptions.arrival_scale must be a finite number > 0, "
                f"got {self.arrival_scale!r}"
            )
        catalog = get_catalog(self.catalog)
        if self.model_weights is not None:
            weights = np.asarray(self.model_weights, dtype=np.float64)
            if (
                weights.shape != (len(catalog),)
                or not np.all(np.isfinite(weights))
                or (weights < 0).any()
                or weights.sum() <= 0
            ):
                raise ValueError(
                    f"TraceOptions.model_weights must be {len(catalog)} numbers >= 0, not all 0 "
                    f"(one per model of {catalog.name!r}: {', '.join(catalog.names)}); "
                    f"got {self.model_weights!r}"
                )
            object.__setattr__(self, "model_weights", tuple(float(w) for w in weights))
        if self.cpus_per_gpu is not None and not (
            isinstance(self.cpus_per_gpu, int | float)
            and math.isfinite(self.cpus_per_gpu)
            and self.cpus_per_gpu >= 0
        ):
            raise ValueError(
                "TraceOptions.cpus_per_gpu must be a number >= 0 or None, "
                f"got {self.cpus_per_gpu!r}"
            )


@dataclass(frozen=True)
class TraceReport:
    """What reading a trace did: rows read, bad rows skipped, jobs filtered out, jobs kept.

    ``rows`` counts every data row of the file(s). ``skimmed`` counts the rows after an
    early stop (see :class:`EarlyStop`) whose arrival alone showed they cannot be selected:
    only their time field was parsed, so ``skipped``/``errors`` and ``filtered`` describe
    the other ``rows - skimmed`` rows (a malformed field in a skimmed row is neither raised
    nor counted), and jobs that ``max_jobs`` or the window would drop among the skimmed
    rows are not in ``filtered`` either. ``skimmed`` is 0 for a full read.
    """

    path: str
    format: str
    rows: int
    skipped: int
    errors: tuple[TraceFormatError, ...]
    filtered: Mapping[str, int] = field(default_factory=dict)
    jobs: int = 0
    skimmed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "filtered", MappingProxyType(dict(self.filtered)))

    @property
    def filtered_total(self) -> int:
        """Jobs removed by filters (not counting skipped bad rows)."""
        return sum(self.filtered.values())

    def summary(self) -> str:
        """One line for a CLI."""
        reasons = ", ".join(f"{reason} {count}" for reason, count in self.filtered.items())
        skimmed = (
            f", {self.skimmed} rows past the last selectable arrival read for their time only"
            if self.skimmed
            else ""
        )
        return (
            f"{self.path} ({self.format}): {self.rows} rows, {self.skipped} bad rows skipped, "
            f"{self.filtered_total} jobs filtered out{f' ({reasons})' if reasons else ''}, "
            f"{self.jobs} jobs kept{skimmed}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "path": self.path,
            "format": self.format,
            "rows": self.rows,
            "skipped": self.skipped,
            "errors": [str(error) for error in self.errors],
            "filtered": dict(self.filtered),
            "jobs": self.jobs,
            "skimmed": self.skimmed,
        }


def split_gpus(gpus: float, text: str, field_name: str) -> tuple[int, float]:
    """(workers, GPUs per worker) for a job of ``gpus`` GPUs: whole GPUs (at most
    :data:`~envs.workload.parsing.MAX_COUNT`) -> one worker each, a fraction below 1 -> one
    worker holding it, 0 -> one GPU-less worker."""
    if gpus < 1:
        return 1, gpus
    if gpus != int(gpus):
        raise FieldError(field_name, "must be a whole number of GPUs, or a fraction below 1", text)
    if gpus > MAX_COUNT:
        raise FieldError(field_name, f"must be at most {MAX_COUNT} GPUs (2^31 - 1)", text)
    return int(gpus), 1.0


class EarlyStop:
    """Whether a reader has parsed enough rows of a trace sorted by arrival.

    The selection of :func:`finish_trace` (filters, stable sort by arrival, window, first
    ``max_jobs``) depends on rows after the ones read so far only through rows that pass
    the filters and arrive early enough. While every row parsed so far arrives no earlier
    than the one before it, this watches the selectable rows (those the filters of steps
    2-3 keep) and reports :attr:`reached` once

    * ``max_jobs`` (> 0) selectable rows lie in the window: a later row changes the
      selection only if it arrives strictly before the last of them (equal arrivals sort
      after it, the sort being stable), or
    * a parsed row arrives ``end_s`` (> 0) or more after the first selectable arrival:
      a later row changes the selection only if it arrives before that end,

    and every name of ``vcs`` and ``states`` has been seen (today an unknown name is an
    error, so a name first seen later must still be found). :meth:`beyond` then tells,
    from a later row's arrival alone, that it cannot change the selection;
    :func:`collect_rows` parses rows in full again from the first one that could. So the
    jobs, their order and the model draws are those of a full read, whatever the file's
    order: an unsorted file is simply read in full. One row arriving before the one
    parsed before it turns the watch off for good.
    """

    def __init__(self, options: TraceOptions) -> None:
        self.max_jobs = options.max_jobs if options.max_jobs else None
        self.end_s = options.end_s if options.end_s is not None and options.end_s > 0 else None
        self.start_s = options.start_s
        self.window_end = options.end_s  # the window itself, whatever its sign
        self.gpu_jobs_only = options.gpu_jobs_only
        self.vcs = None if options.vcs is None else frozenset(options.vcs)
        self.states = None if options.states is None else frozenset(options.states)
        self.missing = {("vc", name) for name in options.vcs or ()} | {
            ("state", name) for name in options.states or ()
        }
        self.sorted = True
        self.previous = -math.inf
        self.origin: float | None = None  # first selectable arrival
        self.in_window = 0
        self.full_at: float | None = None  # arrival of the max_jobs-th job in the window
        self.ended = False  # a row arrived end_s or more after the origin

    @classmethod
    def for_options(cls, options: TraceOptions) -> EarlyStop | None:
        """An EarlyStop when ``options`` can end a read early (``max_jobs`` or ``end_s`` > 0)."""
        if options.max_jobs or (options.end_s is not None and options.end_s > 0):
            return cls(options)
        return None

    @property
    def reached(self) -> bool:
        """True when no later row arriving :meth:`beyond` the cut can change the selection."""
        return self.sorted and not self.missing and (self.full_at is not None or self.ended)

    def beyond(self, arrival: float) -> bool:
        """True when a row after the cut arriving at ``arrival`` cannot be selected."""
        # NaN (an unreadable arrival) compares False: such a row is parsed in full.
        if self.full_at is not None and arrival >= self.full_at:
            return True
        return (
            self.ended
            and self.origin is not None
            and self.end_s is not None
            and arrival - self.origin >= self.end_s
        )

    def observe(
        self,
        arrival: float,
        duration: float,
        total_gpus: float,
        vc: str | None,
        state: str | None,
    ) -> None:
        """Account for one parsed row (in file order)."""
        if arrival < self.previous or math.isnan(arrival):
            self.sorted = False
            return
        self.previous = arrival
        if self.missing:
            self.missing.discard(("vc", vc))
            self.missing.discard(("state", state))
        # Same arithmetic as the window of _select_jobs, so the cut agrees with it.
        if (
            self.origin is not None
            and self.end_s is not None
            and arrival - self.origin >= self.end_s
        ):
            self.ended = True
        # The filters of _select_jobs, row by row (same order of tests, same arithmetic).
        if math.isnan(duration) or duration <= 0:
            return
        if self.gpu_jobs_only and total_gpus <= 0:
            return
        if self.states is not None and state not in self.states:
            return
        if self.vcs is not None and vc not in self.vcs:
            return
        if self.origin is None:
            self.origin = arrival
        since_start = arrival - self.origin
        if self.start_s is not None and not since_start >= self.start_s:
            return
        if self.window_end is not None and not since_start < self.window_end:
            return
        self.in_window += 1
        if self.max_jobs is not None and self.in_window == self.max_jobs:
            self.full_at = arrival


class TraceJobs:
    """Parsed trace jobs as growing columns (one append per row), plus name tables.

    With ``stop`` (see :class:`EarlyStop`), every added row is also shown to it, so a
    reader can tell when it may stop parsing.
    """

    def __init__(self, stop: EarlyStop | None = None) -> None:
        self.stop = stop
        self.arrival: list[float] = []
        self.duration: list[float] = []
        self.workers: list[int] = []
        self.worker_gpus: list[float] = []
        self.worker_cpus: list[float] = []  # NaN: the trace gives none
        self.ps: list[int] = []
        self.ps_gpus: list[float] = []
        self.ps_cpus: list[float] = []
        self.user: list[int] = []
        self.vc: list[int] = []
        self.state: list[int] = []
        self.row: list[int] = []
        self.users: dict[str, int] = {}
        self.vcs: dict[str, int] = {}
        self.states: dict[str, int] = {}

    @staticmethod
    def _code(table: dict[str, int], name: str | None) -> int:
        if not name:
            return -1
        return table.setdefault(name, len(table))

    def add(
        self,
        row: int,
        arrival: float,
        duration: float,
        workers: int,
        worker_gpus: float,
        worker_cpus: float,
        *,
        ps: int = 0,
        ps_gpus: float = 0.0,
        ps_cpus: float = 0.0,
        user: str | None = None,
        vc: str | None = None,
        state: str | None = None,
    ) -> None:
        self.row.append(row)
        self.arrival.append(arrival)
        self.duration.append(duration)
        self.workers.append(workers)
        self.worker_gpus.append(worker_gpus)
        self.worker_cpus.append(worker_cpus)
        self.ps.append(ps)
        self.ps_gpus.append(ps_gpus)
        self.ps_cpus.append(ps_cpus)
        self.user.append(self._code(self.users, user))
        self.vc.append(self._code(self.vcs, vc))
        self.state.append(self._code(self.states, state))
        if self.stop is not None:
            self.stop.observe(
                arrival, duration, workers * worker_gpus + ps * ps_gpus, vc or None, state or None
            )
            if not self.stop.sorted:
                self.stop = None  # an unsorted file is read in full; stop watching

    @property
    def enough(self) -> bool:
        """True when the rows added so far decide the selection (see :class:`EarlyStop`)."""
        return self.stop is not None and self.stop.reached

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns as numpy arrays (integer codes and counts as int64)."""
        integer = ("workers", "ps", "user", "vc", "state", "row")
        floating = ("arrival", "duration", "worker_gpus", "worker_cpus", "ps_gpus", "ps_cpus")
        arrays = {label: np.asarray(getattr(self, label), dtype=np.int64) for label in integer}
        arrays.update(
            {label: np.asarray(getattr(self, label), dtype=np.float64) for label in floating}
        )
        return arrays


def collect_rows(
    rows: Iterable[tuple[int, list[str]]],
    jobs: TraceJobs,
    parse_row: RowParser,
    arrival_of: ArrivalParser,
) -> int:
    """Feed the data rows ``(line, fields)`` to ``parse_row`` until ``jobs`` has enough.

    After that point only each row's arrival is parsed (``arrival_of``); as long as every
    such row arrives :meth:`EarlyStop.beyond` the cut, nothing else of it is read. The
    first row that could change the selection (or whose arrival cannot be read) makes
    this parse in full every row after the point, that one and the rest of the file, as a
    full read would. Returns the number of rows only skimmed (0 after a full read).
    """
    numbered = enumerate(rows)
    for index, (line, fields) in numbered:
        parse_row(index, line, fields)
        if jobs.enough:
            break
    else:
        return 0
    stop = jobs.stop
    assert stop is not None  # jobs.enough implies a watch
    # Skimmed rows are kept so they can still be parsed, in file order, if a later row
    # turns out to matter.
    skimmed: list[tuple[int, int, list[str]]] = []
    for index, (line, fields) in numbered:
        try:
            arrival = arrival_of(fields)
        except (ValueError, IndexError):
            arrival = math.nan
        if stop.beyond(arrival):
            skimmed.append((index, line, fields))
            continue
        jobs.stop = None
        for item in skimmed:
            parse_row(*item)
        parse_row(index, line, fields)
        for index, (line, fields) in numbered:
            parse_row(index, line, fields)
        return 0
    return len(skimmed)


def draw_models(
    count: int, rng: np.random.Generator, catalog: str, weights: Sequence[float] | None
) -> np.ndarray:
    models = get_catalog(catalog)
    if weights is None:
        return rng.integers(len(models), size=count)
    probabilities = np.asarray(weights, dtype=np.float64)
    return rng.choice(len(models), size=count, p=probabilities / probabilities.sum())


def assign_models(
    workload: Workload,
    rng: np.random.Generator,
    *,
    catalog: str | None = None,
    weights: Sequence[float] | None = None,
) -> Workload:
    """``workload`` with every job's model redrawn from ``catalog`` (default: its own).

    Models are i.i.d., uniform or proportional to ``weights`` (one per catalog model).
    Only the model changes; demands and work stay as they are.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    name = workload.catalog_name if catalog is None else catalog
    options = TraceOptions(catalog=name, model_weights=None if weights is None else tuple(weights))
    model = draw_models(len(workload), rng, name, options.model_weights)
    return workload.replace(model=model, catalog_name=name)


def _select_jobs(
    columns: dict[str, np.ndarray],
    jobs: TraceJobs,
    options: TraceOptions,
    removed: dict[str, int],
    *,
    path: str,
    trace_format: str,
) -> np.ndarray:
    """Positions of the jobs to keep, in arrival order; counts what it drops in ``removed``.

    Steps 2-6 of ``envs.workload.traces``.
    """
    arrival, duration = columns["arrival"], columns["duration"]
    keep = np.ones(arrival.shape[0], dtype=bool)

    def drop(reason: str, mask: np.ndarray) -> None:
        newly = int((mask & keep).sum())
        if newly:
            removed[reason] = removed.get(reason, 0) + newly
        keep[mask] = False

    drop("no_duration", np.isnan(duration))
    drop("zero_duration", ~np.isnan(duration) & (duration <= 0))
    if options.gpu_jobs_only:
        total_gpus = (
            columns["workers"] * columns["worker_gpus"] + columns["ps"] * columns["ps_gpus"]
        )
        drop("no_gpu", total_gpus <= 0)
    for label, wanted, table in (
        ("state", options.states, jobs.states),
        ("vc", options.vcs, jobs.vcs),
    ):
        if wanted is None:
            continue
        unknown = sorted(set(wanted) - set(table))
        if unknown:
            known = ", ".join(sorted(table)) or f"none: {trace_format} traces carry no {label}"
            raise ValueError(f"{path}: no job has {label} {', '.join(unknown)}; known: {known}")
        drop(label, ~np.isin(columns[label], [table[name] for name in wanted]))

    positions = np.flatnonzero(keep)
    order = positions[np.argsort(arrival[positions], kind="stable")]
    if order.size and (options.start_s is not None or options.end_s is not None):
        since_start = arrival[order] - arrival[order[0]]
        low = -math.inf if options.start_s is None else options.start_s
        high = math.inf if options.end_s is None else options.end_s
        inside = (since_start >= low) & (since_start < high)
        if (~inside).any():
            removed["window"] = int((~inside).sum())
        order = order[inside]
    if options.max_jobs is not None and order.size > options.max_jobs:
        removed["max_jobs"] = int(order.size - options.max_jobs)
        order = order[: options.max_jobs]
    return order


def finish_trace(
    jobs: TraceJobs,
    options: TraceOptions,
    rng: np.random.Generator | None,
    *,
    path: str,
    trace_format: str,
    rows: int,
    log: ErrorLog,
    filtered: dict[str, int] | None = None,
    skimmed: int = 0,
) -> tuple[Workload, TraceReport]:
    """Steps 2-8 of ``envs.workload.traces``: filter, order, re-time, assign models."""
    if rng is None:
        # A fixed seed keeps trace reading reproducible when the caller passes no generator.
        rng = np.random.default_rng(0)
    elif not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
    removed = dict(filtered or {})
    columns = jobs.arrays()
    order = _select_jobs(columns, jobs, options, removed, path=path, trace_format=trace_format)
    kept = {label: array[order] for label, array in columns.items()}

    arrivals = kept["arrival"]
    if options.rebase and arrivals.size:
        arrivals = arrivals - arrivals[0]
    arrivals = arrivals * options.arrival_scale

    model = draw_models(order.size, rng, options.catalog, options.model_weights)
    if options.cpus_per_gpu is not None:
        fallback = options.cpus_per_gpu * kept["worker_gpus"]
    else:
        fallback = get_catalog(options.catalog).column("cpu_cores")[model]
    worker_cpus = np.where(np.isnan(kept["worker_cpus"]), fallback, kept["worker_cpus"])
    workload = Workload(
        arrival_time=arrivals,
        model=model,
        num_workers=kept["workers"],
        worker_demand=np.column_stack((kept["worker_gpus"], worker_cpus)),
        num_ps=kept["ps"],
        ps_demand=np.column_stack((kept["ps_gpus"], kept["ps_cpus"])),
        duration=kept["duration"],
        catalog_name=options.catalog,
        resource_names=BASE_RESOURCES,
        user=kept["user"],
        user_names=tuple(jobs.users),
        vc=kept["vc"],
        vc_names=tuple(jobs.vcs),
        # The 0-based data row, not the file line (see envs.workload.jobs on job_id).
        job_id=kept["row"],
    )
    report = TraceReport(
        path=path,
        format=trace_format,
        rows=rows,
        skipped=log.count,
        errors=tuple(log.kept),
        filtered=removed,
        jobs=len(workload),
        skimmed=skimmed,
    )
    return workload, report
