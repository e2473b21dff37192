"""Real cluster traces as workloads: Philly, Helios, Alibaba PAI, and any CSV via a column map.

Every reader returns ``(Workload, TraceReport)``. Trace jobs are **fixed-duration** jobs:
the trace says how long each ran, not how much work it did. Readers share one pipeline
(:class:`TraceOptions`), applied in this order:

1. parse rows -- a malformed row raises :class:`TraceFormatError` (file, 1-based line,
   field), or with ``skip_bad_rows=True`` is skipped and counted in the report. Philly,
   Helios and PAI never quote a field, so a double quote in one is a malformed field; a
   generic CSV may quote fields, but a quoted field spanning lines (an unbalanced quote,
   which hides the rows after it) is raised even with ``skip_bad_rows``. Counts of GPUs,
   workers and instances are at most ``parsing.MAX_COUNT`` (2^31 - 1);
2. drop jobs the simulator cannot run: no duration (unfinished: an empty ``duration``,
   or an empty start or end time where the run time is their difference -- PAI's tasks,
   a column map's ``start``/``end``), zero duration, and -- with ``gpu_jobs_only``
   (default) -- jobs without GPUs (Helios and PAI log CPU jobs); each is counted in
   ``TraceReport.filtered`` (``no_duration``, ``zero_duration``, ``no_gpu``), not as a
   bad row;
3. keep only the given ``states`` and ``vcs`` (virtual clusters; Philly's ``cluster``);
4. sort by arrival (stable, so equal arrivals keep file order);
5. keep arrivals in ``[start_s, end_s)`` seconds after the first remaining arrival;
6. keep the first ``max_jobs``;
7. shift arrivals so the first is at 0 (``rebase``) and multiply them by ``arrival_scale``
   (< 1 compresses time: more load);
8. draw each job's model from ``catalog`` with the given generator (traces carry none).

**Stopping early.** With ``max_jobs`` or ``end_s`` (> 0), the Philly, Helios and CSV
readers stop parsing rows once the rows parsed so far decide steps 2-6: the file has been
in arrival order so far, ``max_jobs`` selectable jobs lie in the window (or a row arrived
``end_s`` after the first selectable one), and every name of ``vcs``/``states`` has been
seen. Each later row is then read for its arrival only; the first one that could still
enter the selection (it arrives earlier than the cut, or its time cannot be read) makes
the reader parse it and the rest in full. So the jobs kept, their order, ids and model
draws are always those of a full read, whatever the file's order: a file out of order
before the cut (the published Philly file is) is read in full, one out of order after it
is read in full from the first row that matters. What changes is the report of an early
stop: ``TraceReport.skimmed`` counts the rows read for their time only, and a malformed
field of such a row is neither raised nor counted in ``skipped``; and the workload's name
tables (``vc_names``, ``user_names``) list the names of the rows parsed, a prefix of a
full read's tables (every job's codes are the same; only names first seen after the cut,
which no kept job has, are missing). PAI is always read in full (its task table must be,
to join it).

**GPUs to workers.** A job asking for ``g`` GPUs becomes ``g`` data-parallel workers of
one GPU each and no parameter server (the usual AllReduce reading; Philly, Helios and
most DL jobs use whole GPUs). A fractional request ``g < 1`` (PAI's "50% of a GPU") is one
worker holding that fraction. A PAI job keeps its own task structure: instances of its
``ps`` task become parameter servers, all other instances workers, each with the mean
demand of its role so the job's totals are preserved. A column map may name a
``workers`` column; the GPUs are then split evenly over that many workers. A worker's
CPU demand is the trace's CPUs divided over the workers; where a trace has no CPU column
it is ``cpus_per_gpu x GPUs`` if that option is set, else the assigned model's
``cpu_cores``.

Jobs that can never fit a cluster are refused by :func:`check_feasible` or dropped and
counted by :func:`drop_infeasible` (re-exported here from ``envs.workload.feasibility``).

Times: numeric timestamps are seconds (``arrival_unit`` for the generic reader); ISO-8601
timestamps (``2017-10-09 07:01:55``, the real Philly file's format) are read as UTC when
they carry no zone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from envs.workload.csvrows import CsvFile, ErrorLog, PathType
from envs.workload.feasibility import (
    InfeasibleJobError,
    check_feasible,
    drop_infeasible,
    infeasible_mask,
)
from envs.workload.jobs import Workload
from envs.workload.parsing import (
    FieldError,
    TraceFormatError,
    parse_column_map,
    parse_count,
    parse_name,
    parse_number,
    parse_optional_number,
    parse_optional_time,
    parse_time,
    time_unit,
)
from envs.workload.trace_pipeline import (
    EarlyStop,
    TraceJobs,
    TraceOptions,
    TraceReport,
    assign_models,
    collect_rows,
    finish_trace,
    split_gpus,
)

__all__ = [
    "HELIOS_COLUMNS",
    "PAI_JOB_COLUMNS",
    "PAI_TASK_COLUMNS",
    "PHILLY_COLUMNS",
    "TRACE_FORMATS",
    "InfeasibleJobError",
    "TraceFormatError",
    "TraceOptions",
    "TraceReport",
    "assign_models",
    "check_feasible",
    "drop_infeasible",
    "infeasible_mask",
    "parse_column_map",
    "read_csv_trace",
    "read_helios",
    "read_pai",
    "read_philly",
    "read_trace",
    "split_gpus",
]

TRACE_FORMATS: tuple[str, ...] = ("philly", "helios", "pai", "csv")

PHILLY_COLUMNS: tuple[str, ...] = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
HELIOS_COLUMNS: tuple[str, ...] = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
#: Alibaba's cluster-trace-gpu-v2020 files ship without a header line (the names are in
#: separate .header files), so the PAI reader accepts both forms.
PAI_JOB_COLUMNS: tuple[str, ...] = (
    "job_name",
    "inst_id",
    "user",
    "status",
    "start_time",
    "end_time",
)
PAI_TASK_COLUMNS: tuple[str, ...] = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)


def read_philly(
    path: PathType, options: TraceOptions | None = None, *, rng: np.random.Generator | None = None
) -> tuple[Workload, TraceReport]:
    """Microsoft Philly as published with Pollux: ``timestamp,duration,num_gpus,gpu_time,cluster``.

    ``timestamp`` is the submission time (ISO-8601 or seconds), ``duration`` seconds
    (empty: the job has no duration and is dropped as ``no_duration``), ``cluster`` the
    virtual cluster (``vcs`` filters on it). ``gpu_time`` is redundant (duration x GPUs)
    and not read.
    """
    options = options or TraceOptions()
    log = ErrorLog(options.skip_bad_rows)
    jobs = TraceJobs(EarlyStop.for_options(options))
    with CsvFile(path, quoted=False, log=log) as source:
        column = source.header(("timestamp", "duration", "num_gpus", "cluster"))
        at, took, gpus_at, vc_at = (
            column[n] for n in ("timestamp", "duration", "num_gpus", "cluster")
        )

        def parse_row(index: int, line: int, row: list[str]) -> None:
            try:
                source.check_row(row)
                arrival = parse_time(row[at], "timestamp")
                duration = parse_optional_number(row[took], "duration")
                gpus = parse_number(row[gpus_at], "num_gpus")
                workers, per_worker = split_gpus(gpus, row[gpus_at], "num_gpus")
                vc = parse_name(row[vc_at], "cluster")
            except FieldError as error:
                log.record(error.located(source.path, line))
                return
            jobs.add(index, arrival, duration, workers, per_worker, math.nan, vc=vc)

        def arrival_of(row: list[str]) -> float:
            source.check_width(row)
            return parse_time(row[at], "timestamp")

        skimmed = collect_rows(source.data(), jobs, parse_row, arrival_of)
        rows = source.rows
    return finish_trace(
        jobs,
        options,
        rng,
        path=str(path),
        trace_format="philly",
        rows=rows,
        log=log,
        skimmed=skimmed,
    )


def read_helios(
    path: PathType, options: TraceOptions | None = None, *, rng: np.random.Generator | None = None
) -> tuple[Workload, TraceReport]:
    """SenseTime Helios ``cluster_log.csv`` (job_id, user, vc, gpu_num, cpu_num, node_num,
    state, submit_time, start_time, end_time, duration, queue).

    Arrival is ``submit_time`` (ISO-8601 or seconds); run time is ``duration`` seconds
    (empty: the job has no duration and is dropped as ``no_duration``); ``cpu_num`` CPUs
    are divided evenly over the ``gpu_num`` workers. ``state`` (COMPLETED, CANCELLED,
    FAILED, ...) can be filtered with ``states``, ``vc`` with ``vcs``. Helios logs CPU-only
    jobs (gpu_num 0), which ``gpu_jobs_only`` drops.
    """
    options = options or TraceOptions()
    log = ErrorLog(options.skip_bad_rows)
    jobs = TraceJobs(EarlyStop.for_options(options))
    needed = ("user", "vc", "gpu_num", "cpu_num", "state", "submit_time", "duration")
    with CsvFile(path, quoted=False, log=log) as source:
        column = source.header(needed)
        user_at, vc_at, gpus_at, cpus_at, state_at, submit_at, took = (column[n] for n in needed)

        def parse_row(index: int, line: int, row: list[str]) -> None:
            try:
                source.check_row(row)
                gpus = parse_number(row[gpus_at], "gpu_num")
                workers, per_worker = split_gpus(gpus, row[gpus_at], "gpu_num")
                cpus = parse_number(row[cpus_at], "cpu_num")
                arrival = parse_time(row[submit_at], "submit_time")
                duration = parse_optional_number(row[took], "duration")
                state = parse_name(row[state_at], "state")
            except FieldError as error:
                log.record(error.located(source.path, line))
                return
            jobs.add(
                index,
                arrival,
                duration,
                workers,
                per_worker,
                cpus / workers,
                user=row[user_at].strip(),
                vc=row[vc_at].strip(),
                state=state,
            )

        def arrival_of(row: list[str]) -> float:
            source.check_width(row)
            return parse_time(row[submit_at], "submit_time")

        skimmed = collect_rows(source.data(), jobs, parse_row, arrival_of)
        rows = source.rows
    return finish_trace(
        jobs,
        options,
        rng,
        path=str(path),
        trace_format="helios",
        rows=rows,
        log=log,
        skimmed=skimmed,
    )


@dataclass
class _PaiJobTasks:
    """One PAI job's tasks, summed by role."""

    workers: int = 0
    worker_gpus: float = 0.0
    worker_cpus: float = 0.0
    ps: int = 0
    ps_gpus: float = 0.0
    ps_cpus: float = 0.0
    first_start: float = math.inf
    last_end: float = -math.inf
    # A task that never started or never ended: the job's run time is unknown.
    unfinished: bool = False

    def add(
        self, role: str, instances: int, gpus: float, cpus: float, start: float, end: float
    ) -> None:
        if role == "ps":
            self.ps += instances
            self.ps_gpus += instances * gpus
            self.ps_cpus += instances * cpus
        else:
            self.workers += instances
            self.worker_gpus += instances * gpus
            self.worker_cpus += instances * cpus
        if math.isnan(start) or math.isnan(end):
            self.unfinished = True
        else:
            self.first_start = min(self.first_start, start)
            self.last_end = max(self.last_end, end)

    @property
    def duration(self) -> float:
        """Run time from the first task start to the last task end; NaN if unknown (a
        task never started or never ended: the end of the others is not the job's)."""
        if (
            self.unfinished
            or math.isinf(self.first_start)
            or math.isinf(self.last_end)
            or self.last_end < self.first_start
        ):
            return math.nan
        return self.last_end - self.first_start


def _read_pai_tasks(path: PathType, log: ErrorLog) -> tuple[dict[str, _PaiJobTasks], int]:
    tasks: dict[str, _PaiJobTasks] = {}
    with CsvFile(path, quoted=False, log=log) as source:
        column = source.header(
            ("job_name", "task_name", "inst_num", "start_time", "end_time", "plan_cpu", "plan_gpu"),
            positional=PAI_TASK_COLUMNS,
        )
        name_at, role_at, count_at, start_at, end_at, cpu_at, gpu_at = (
            column[n]
            for n in (
                "job_name",
                "task_name",
                "inst_num",
                "start_time",
                "end_time",
                "plan_cpu",
                "plan_gpu",
            )
        )
        for line, row in source.data():
            try:
                source.check_row(row)
                name = parse_name(row[name_at], "job_name")
                instances = parse_count(row[count_at], "inst_num", minimum=1)
                # Percentages: plan_cpu 600 = 6 cores, plan_gpu 50 = half a GPU; empty = none.
                cpus = parse_optional_number(row[cpu_at], "plan_cpu")
                gpus = parse_optional_number(row[gpu_at], "plan_gpu")
                start = parse_optional_time(row[start_at], "start_time")
                end = parse_optional_time(row[end_at], "end_time")
            except FieldError as error:
                log.record(error.located(source.path, line))
                continue
            tasks.setdefault(name, _PaiJobTasks()).add(
                row[role_at].strip(),
                instances,
                0.0 if math.isnan(gpus) else gpus / 100.0,
                0.0 if math.isnan(cpus) else cpus / 100.0,
                start,
                end,
            )
        rows = source.rows
    return tasks, rows


def read_pai(
    job_table: PathType,
    task_table: PathType,
    options: TraceOptions | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> tuple[Workload, TraceReport]:
    """Alibaba PAI (cluster-trace-gpu-v2020): ``pai_job_table`` joined with ``pai_task_table``
    on ``job_name``; either file may have a header line or none (as released).

    Arrival is the job's ``start_time`` (its submission time); run time spans its tasks'
    earliest ``start_time`` to latest ``end_time`` (jobs whose tasks never started or never
    ended are dropped as ``no_duration``). ``plan_gpu`` and ``plan_cpu`` are percentages
    per instance; ``inst_num`` instances of the ``ps`` task become parameter servers, all
    other instances workers. ``status`` can be filtered with ``states`` (Terminated,
    Failed, Running, Waiting). PAI has no virtual clusters.
    """
    options = options or TraceOptions()
    log = ErrorLog(options.skip_bad_rows)
    tasks, task_rows = _read_pai_tasks(task_table, log)
    jobs = TraceJobs()
    filtered: dict[str, int] = {}
    seen: dict[str, int] = {}
    with CsvFile(job_table, quoted=False, log=log) as source:
        column = source.header(
            ("job_name", "user", "status", "start_time"), positional=PAI_JOB_COLUMNS
        )
        name_at, user_at, status_at, start_at = (
            column[n] for n in ("job_name", "user", "status", "start_time")
        )
        for index, (line, row) in enumerate(source.data()):
            try:
                source.check_row(row)
                name = parse_name(row[name_at], "job_name")
                if name in seen:
                    raise FieldError("job_name", f"repeats the job of line {seen[name]}", name)
                arrival = parse_time(row[start_at], "start_time")
            except FieldError as error:
                log.record(error.located(source.path, line))
                continue
            seen[name] = line
            job_tasks = tasks.get(name)
            if job_tasks is None or job_tasks.workers == 0:
                reason = "no_tasks" if job_tasks is None else "no_workers"
                filtered[reason] = filtered.get(reason, 0) + 1
                continue
            ps = job_tasks.ps
            jobs.add(
                index,
                arrival,
                job_tasks.duration,
                job_tasks.workers,
                job_tasks.worker_gpus / job_tasks.workers,
                job_tasks.worker_cpus / job_tasks.workers,
                ps=ps,
                ps_gpus=job_tasks.ps_gpus / ps if ps else 0.0,
                ps_cpus=job_tasks.ps_cpus / ps if ps else 0.0,
                user=row[user_at].strip(),
                state=row[status_at].strip(),
            )
        rows = source.rows
    orphans = len(set(tasks) - set(seen))
    if orphans:
        filtered["tasks_without_job"] = orphans
    workload, report = finish_trace(
        jobs,
        options,
        rng,
        path=str(job_table),
        trace_format="pai",
        rows=rows,
        log=log,
        filtered=filtered,
    )
    # Rows of both tables count; errors already carry their own file names.
    return workload, TraceReport(
        path=report.path,
        format=report.format,
        rows=report.rows + task_rows,
        skipped=report.skipped,
        errors=report.errors,
        filtered=report.filtered,
        jobs=report.jobs,
        skimmed=report.skimmed,
    )


def read_csv_trace(
    path: PathType,
    column_map: str | Mapping[str, str],
    options: TraceOptions | None = None,
    *,
    rng: np.random.Generator | None = None,
    duration_unit: str = "s",
    arrival_unit: str = "s",
    delimiter: str = ",",
) -> tuple[Workload, TraceReport]:
    """Any CSV with a header, through a column map (see :func:`parse_column_map`).

    ``column_map`` is e.g. ``"arrival=submit_time,gpus=num_gpus,duration=duration"``.
    Arrival (and start/end) columns hold numbers in ``arrival_unit`` or ISO-8601
    timestamps; durations are numbers in ``duration_unit`` (s, min or h). An empty
    duration, start or end marks a job with no duration (never started or never ended),
    dropped as ``no_duration``. Fields may be double-quoted, but a field may not span
    lines (see ``envs.workload.csvrows``). Errors name the CSV column.
    """
    mapping = parse_column_map(column_map)
    duration_factor = time_unit(duration_unit, "duration unit")
    arrival_factor = time_unit(arrival_unit, "arrival unit")
    options = options or TraceOptions()
    log = ErrorLog(options.skip_bad_rows)
    jobs = TraceJobs(EarlyStop.for_options(options))
    with CsvFile(path, delimiter=delimiter, log=log) as source:
        column = source.header(list(dict.fromkeys(mapping.values())))
        at = {key: column[name] for key, name in mapping.items()}

        def parse_row(index: int, line: int, row: list[str]) -> None:
            try:
                source.check_row(row)
                arrival = parse_time(row[at["arrival"]], mapping["arrival"], unit_s=arrival_factor)
                # An empty duration, start or end: the job has no duration (as in PAI).
                if "duration" in at:
                    duration = (
                        parse_optional_number(row[at["duration"]], mapping["duration"])
                        * duration_factor
                    )
                else:
                    start = parse_optional_time(
                        row[at["start"]], mapping["start"], unit_s=arrival_factor
                    )
                    end = parse_optional_time(row[at["end"]], mapping["end"], unit_s=arrival_factor)
                    if end < start:
                        raise FieldError(mapping["end"], "is before the start time", row[at["end"]])
                    duration = end - start
                gpus = parse_number(row[at["gpus"]], mapping["gpus"])
                if "workers" in at:
                    workers = parse_count(row[at["workers"]], mapping["workers"], minimum=1)
                    per_worker = gpus / workers
                else:
                    workers, per_worker = split_gpus(gpus, row[at["gpus"]], mapping["gpus"])
                cpus = (
                    parse_number(row[at["cpus"]], mapping["cpus"]) / workers
                    if "cpus" in at
                    else math.nan
                )
            except FieldError as error:
                log.record(error.located(source.path, line))
                return
            jobs.add(
                index,
                arrival,
                duration,
                workers,
                per_worker,
                cpus,
                user=row[at["user"]].strip() if "user" in at else None,
                vc=row[at["vc"]].strip() if "vc" in at else None,
            )

        def arrival_of(row: list[str]) -> float:
            source.check_width(row)
            return parse_time(row[at["arrival"]], mapping["arrival"], unit_s=arrival_factor)

        skimmed = collect_rows(source.data(), jobs, parse_row, arrival_of)
        rows = source.rows
    return finish_trace(
        jobs,
        options,
        rng,
        path=str(path),
        trace_format="csv",
        rows=rows,
        log=log,
        skimmed=skimmed,
    )


def read_trace(
    path: PathType,
    trace_format: str = "philly",
    options: TraceOptions | None = None,
    *,
    rng: np.random.Generator | None = None,
    task_table: PathType | None = None,
    column_map: str | Mapping[str, str] | None = None,
    duration_unit: str = "s",
    arrival_unit: str = "s",
) -> tuple[Workload, TraceReport]:
    """Dispatch on ``trace_format`` (philly, helios, pai, csv), as the CLI's ``--format``.

    ``pai`` needs ``task_table`` (``path`` is the job table); ``csv`` needs ``column_map``.
    """
    if trace_format not in TRACE_FORMATS:
        raise ValueError(
            f"unknown trace format {trace_format!r}; allowed: {', '.join(TRACE_FORMATS)}"
        )
    if trace_format != "csv" and column_map is not None:
        raise ValueError(f"a column map applies only to --format csv, not {trace_format!r}")
    if trace_format != "pai" and task_table is not None:
        raise ValueError(f"a task table applies only to --format pai, not {trace_format!r}")
    if trace_format == "philly":
        return read_philly(path, options, rng=rng)
    if trace_format == "helios":
        return read_helios(path, options, rng=rng)
    if trace_format == "pai":
        if task_table is None:
            raise ValueError(
                "--format pai needs the task table (pai_task_table) besides the job table"
            )
        return read_pai(path, task_table, options, rng=rng)
    if column_map is None:
        raise ValueError(
            "--format csv needs a column map, "
            "e.g. arrival=submit_time,gpus=num_gpus,duration=duration"
        )
    return read_csv_trace(
        path, column_map, options, rng=rng, duration_unit=duration_unit, arrival_unit=arrival_unit
    )
