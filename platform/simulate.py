"""podsched's simulator CLI.

How to run
----------
    python platform/simulate.py describe --topology fat-tree --k 20
    python platform/simulate.py describe --topology vl2 --k 20 --server mixed --json
    python platform/simulate.py describe --topology bcube --n 6 --k 3
    python platform/simulate.py describe --topology racks --racks 2,2,2,2
    python platform/simulate.py describe --topology flat --servers 15 --gpus 8
    python platform/simulate.py describe --topology fat-tree --k 4 --draw fat-tree-k4.png
    python platform/simulate.py run --topology fat-tree --k 4 --workload poisson --jobs 200 \
        --compare fifo+packing,sjf+tetris,las+lif --interval 1800
    python platform/simulate.py run --topology flat --servers 128 --gpus 8 \
        --trace ../shared/traces/philly.csv --jobs 5000 --policy fifo+packing --json
    python platform/simulate.py run --topology flat --servers 32 --gpus 8 \
        --trace ../shared/traces/philly.csv --jobs 10000 --compare fifo+packing,las+packing \
        --perf ideal --no-backfill

What you get
------------
``describe`` prints the cluster's counts (servers, GPUs, CPU sockets, GPU groups, switches
and links per tier, partitions and servers per partition, total and bisection bandwidth)
as a table, or with ``--json`` as one JSON object; ``--draw FILE.png`` also draws it.

``run`` simulates one policy (``--policy ordering+placement``) or several side by side
(``--compare a,b,...``; ``las``, ``srtf`` and ``gittins`` preempt, see ``--no-preemption``,
``--min-run``, ``--las-thresholds``, ``--no-consolidate``, ``--restart-cost``) on a
generated workload or a real trace, under the ``--perf`` model (``contention``, the
default, or ``ideal``: every job at its trace duration) and with backfilling
(``--no-backfill``: strict order), and prints their metrics as a table (JCT
mean/median/p90/p99, makespan, waiting, slowdown, utilization, fragmentation,
contention, GPU-seconds consumed and their inflation over the ideal...), or with
``--json`` one object ``{"policies": {name: {metric: value}}, "perf": ...,
"backfill": ..., "consolidate": ...}`` (times in seconds). ``--plot FILE.png`` draws the
JCT CDF and GPU utilization over time; ``--csv FILE`` writes the table; ``--jobs-csv
FILE`` writes one row per job and policy (arrival, first start, finish -- empty if
unfinished --, GPUs, servers spanned, preemptions, GPU-seconds consumed and ideal). Progress
shows on stderr while it runs. An output path that cannot be written (missing folder, no
permission) is refused before any simulation; the results are printed before the files
are written, so a write that still fails loses no run (exit status 1).

``deeprm``, ``cush``, ``sced2``, ``contention`` and ``rltaps`` run the single-agent
formulations' baselines, exactly as ``platform/paper_baselines.py`` does (see its ``--help``)::

    python platform/simulate.py rltaps --policy random,sjf,tetris --seed 0 --num-sequences 5

Bad arguments print one line on stderr and exit with status 2, as does a cluster or a
generated workload too large to fit in memory (checked before building it). A reader that
closes the output early (``| head``) ends the program quietly with status 141 (128 +
SIGPIPE, as for any Unix tool), after the files asked for are written.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from paper_baselines import add_formulation_commands, subcommand_parser

from envs.command import parse_seed
from envs.schedulers import PreemptionSettings, make_scheduler, scheduler_names
from envs.schedulers.preemption import (
    DEFAULT_LAS_PROMOTE_KNOB,
    DEFAULT_LAS_THRESHOLDS_GPU_S,
    DEFAULT_MIN_RUN_S,
)
from envs.sim import (
    DEFAULT_PERF,
    INTERFERENCE_PRESETS,
    LINK_SHARING,
    PERF_MODELS,
    SimulationResult,
    Simulator,
    SimulatorConfig,
    interference_coefficients,
    perf_switches,
)
from envs.sim.engine import DEFAULT_MAX_CONTENTION
from envs.sim.metrics import write_per_job_csv
from envs.sim.report import format_comparison, json_safe
from envs.sim.runner import drop_jobs_that_never_fit, simulate
from envs.topology import (
    TOPOLOGIES,
    build_from_spec,
    describe_cluster,
    known_server_names,
    make_spec,
)
from envs.workload import (
    MAX_JOBS,
    TRACE_FORMATS,
    Workload,
    make_workload,
    read_trace,
    workload_kinds,
)
from envs.workload.trace_pipeline import TraceOptions
from tune.cli import STDOUT_CLOSED_STATUS, UsageError, run_subcommand, silence_stdout

# Which command-line options each topology takes, and the builder parameter they set.
TOPOLOGY_OPTIONS: dict[str, dict[str, str]] = {
    "fat-tree": {"k": "k"},
    "vl2": {"k": "k"},
    "bcube": {"n": "n", "k": "k"},
    "racks": {"racks": "racks"},
    "flat": {"servers": "servers", "gpus": "gpus_per_server"},
}


def _rack_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--racks takes machines per rack separated by commas (e.g. 2,2,2,2), got {text!r}"
        ) from None


def add_topology_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose a cluster, shared by every subcommand."""
    group = parser.add_argument_group("cluster")
    group.add_argument(
        "--topology",
        default="fat-tree",
        choices=sorted(TOPOLOGIES),
        help="network topology (default: fat-tree)",
    )
    group.add_argument(
        "--k",
        type=int,
        help="fat-tree: switch ports k (even; k pods). vl2: aggregation switches k "
        "(multiple of 4). bcube: levels k (k+1 switch levels). Default 4 / 8 / 1.",
    )
    group.add_argument("--n", type=int, help="bcube: switch ports n (n^(k+1) servers; default 4)")
    group.add_argument(
        "--racks",
        type=_rack_list,
        help="racks: machines per rack, comma separated (default 2,2,2,2 as in RL-TAPS)",
    )
    group.add_argument("--servers", type=int, help="flat: number of servers (default 16)")
    group.add_argument(
        "--gpus",
        type=int,
        help="flat: GPUs per server (two sockets, GPUs split evenly; instead of --server)",
    )
    group.add_argument(
        "--server",
        help="server architecture preset or mix: "
        f"{', '.join(known_server_names())} (default power8; minsky for racks)",
    )


def cluster_from_args(args: argparse.Namespace) -> Any:
    """Build the cluster the topology options describe; UsageError for options that don't apply."""
    return build_from_spec(spec_from_args(args))


def spec_from_args(args: argparse.Namespace) -> Any:
    """The validated spec of the cluster the topology options describe, nothing built yet;
    UsageError for options that don't apply."""
    applicable = TOPOLOGY_OPTIONS[args.topology]
    params: dict[str, Any] = {"seed": args.seed}
    for option in ("k", "n", "racks", "servers", "gpus"):
        value = getattr(args, option)
        if value is None:
            continue
        if option not in applicable:
            takes = ", ".join(f"--{name}" for name in applicable)
            raise UsageError(f"--{option} does not apply to {args.topology} (it takes {takes})")
        params[applicable[option]] = value
    if args.server is not None:
        params["server"] = args.server
    return make_spec(args.topology, **params)


def format_summary(summary: dict[str, Any]) -> str:
    """The describe table, for people."""
    params = ", ".join(f"{key}={value}" for key, value in summary["params"].items())
    per_partition = summary["servers_per_partition"]
    sizes = sorted(set(per_partition))
    partition_text = (
        f"{summary['partitions']} x {sizes[0]} servers"
        if len(sizes) == 1
        else f"{summary['partitions']} partitions of {', '.join(map(str, per_partition))} servers"
    )
    rows: list[tuple[str, str]] = [
        ("topology", f"{summary['topology']} ({params})"),
        ("servers", f"{summary['servers']:,}"),
        ("GPUs", f"{summary['gpus']:,}"),
        ("CPU sockets", f"{summary['cpu_sockets']:,} ({summary['cpu_cores']:,} cores)"),
        ("GPU groups", f"{summary['gpu_groups']:,}"),
        (
            "server types",
            ", ".join(
                f"{name} x {count}" for name, count in summary["server_architectures"].items()
            ),
        ),
        ("partitions", partition_text),
    ]
    rows += [(f"switches: {tier}", f"{count:,}") for tier, count in summary["switches"].items()]
    rows += [(f"links: {tier}", f"{count:,}") for tier, count in summary["links"].items()]
    rows += [
        (f"links in servers: {tier}", f"{count:,}")
        for tier, count in summary["server_links"].items()
    ]
    rows += [
        ("total bandwidth", f"{summary['total_bandwidth_gbps']:,.1f} Gbps"),
        ("bisection bandwidth", f"{summary['bisection_bandwidth_gbps']:,.1f} Gbps"),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def command_describe(args: argparse.Namespace) -> int:
    """``describe``: counts of a cluster as a table or JSON, optionally a drawing."""
    _check_output_path("--draw", args.draw)
    spec = spec_from_args(args)
    if args.draw is not None:
        from topology_drawing import check_drawable  # matplotlib only when asked for

        # Before building: fat-tree k=160 took 6 s and 1.3 GB to be refused afterwards.
        check_drawable(spec)
    cluster = build_from_spec(spec)
    summary = describe_cluster(cluster)
    if args.draw is not None:
        from topology_drawing import draw_cluster

        draw_cluster(cluster, args.draw)
        summary["drawing"] = str(args.draw)
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_summary(summary))
        if args.draw is not None:
            print(f"drawing written to {args.draw}")
    return 0


def _thresholds(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--las-thresholds takes GPU-seconds separated by commas, e.g. 3600,36000; got {text!r}"
        ) from None
    return values


def _promote_knob(text: str) -> float | None:
    if text.strip().lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(
            f"--las-promote takes a number > 0 (e.g. 8) or 'off', got {text!r}"
        )
    return value


def _max_contention(text: str) -> float:
    if text.strip().lower() == "off":
        return math.inf
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 1.0 <= value < math.inf:
        raise argparse.ArgumentTypeError(
            f"--max-contention takes a number >= 1 (e.g. 3) or 'off', got {text!r}"
        )
    return value


def _knob_text(knob: float | None) -> str:
    return "off" if knob is None else f"{knob:g}"


def _option_value(text: str) -> tuple[str, Any]:
    key, separator, raw = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"--workload-arg takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


#: The options that shape a trace's jobs, by destination, with their defaults: without
#: --trace they would be ignored, so a value other than the default is refused.
TRACE_ONLY_DEFAULTS: dict[str, Any] = {
    "format": "philly",
    "task_table": None,
    "map": None,
    "duration_unit": "s",
    "vc": None,
    "start": None,
    "end": None,
    "arrival_scale": 1.0,
    "catalog": "marl",
    "skip_bad_rows": False,
}


def options_given(args: argparse.Namespace, defaults: dict[str, Any]) -> list[str]:
    """The ``--options`` of ``defaults`` (by destination) set to something else."""
    return [
        "--" + name.replace("_", "-")
        for name, default in defaults.items()
        if getattr(args, name, default) != default
    ]


def check_jobs_option(args: argparse.Namespace) -> None:
    """Refuse a ``--jobs`` below 1, or above :data:`envs.workload.MAX_JOBS` for a generated
    workload (more would not fit in memory; checked before the cluster is built). A
    trace's ``--jobs`` only caps the jobs read, so any cap is fine there."""
    if args.jobs is None:
        return
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.trace is None and args.jobs > MAX_JOBS:
        raise UsageError(
            f"--jobs must be at most {MAX_JOBS:,} for a generated workload (more would not "
            f"fit in memory), got {args.jobs:,}"
        )


def check_workload_options(args: argparse.Namespace) -> None:
    """Refuse options the chosen kind of workload would ignore (a trace's without
    ``--trace``, a generator's with it)."""
    if args.trace is None:
        given = options_given(args, TRACE_ONLY_DEFAULTS)
        if given:
            raise UsageError(
                f"trace options without --trace: {', '.join(given)}; a generated workload "
                "takes --workload-arg KEY=VALUE (e.g. rate=10, catalog=deepshare)"
            )
    elif args.workload_arg:
        raise UsageError(
            "--workload-arg applies to a generated workload, not to --trace (whose options "
            "are --vc, --start, --end, --arrival-scale, --catalog, ...)"
        )
    elif args.format != "csv" and args.duration_unit != TRACE_ONLY_DEFAULTS["duration_unit"]:
        # Only a generic CSV's durations need a unit; the other formats fix theirs.
        raise UsageError(
            f"--duration-unit applies to --format csv; --format {args.format} traces give "
            "their durations in their own unit"
        )


#: The contention model's options on ``run`` with their defaults: ``--perf ideal`` switches
#: that model off, so a value other than the default would be ignored.
CONTENTION_ONLY_DEFAULTS: dict[str, Any] = {
    "max_contention": DEFAULT_MAX_CONTENTION,
    "interference_coefficients": "default",
    "link_sharing": "equal",
}


def check_perf_options(args: argparse.Namespace) -> None:
    """Refuse contention-model options under ``--perf ideal``, which ignores them."""
    if args.perf != "ideal":
        return
    given = options_given(args, CONTENTION_ONLY_DEFAULTS)
    if given:
        raise UsageError(
            f"contention-model options with --perf ideal: {', '.join(given)}; the ideal "
            "model has no interference or link sharing (drop them, or use --perf contention)"
        )


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose the jobs: a generator or a trace."""
    group = parser.add_argument_group("workload")
    group.add_argument(
        "--workload",
        default="poisson",
        choices=workload_kinds(),
        help="synthetic workload generator (default: poisson, 15 jobs per interval per "
        "scheduler: per --interval when given, else per 30 min)",
    )
    group.add_argument(
        "--jobs", type=int, help="number of jobs to generate, or to keep from the trace's start"
    )
    group.add_argument(
        "--seed",
        type=parse_seed,
        default=0,
        help="seed of every random draw, an integer >= 0 (default 0)",
    )
    group.add_argument(
        "--workload-arg",
        type=_option_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="generator option, repeatable, e.g. rate=10 or catalog=deepshare",
    )
    group.add_argument("--trace", type=Path, help="read jobs from this trace file instead")
    group.add_argument(
        "--format",
        default=TRACE_ONLY_DEFAULTS["format"],
        choices=TRACE_FORMATS,
        help="trace format (default philly): philly, helios, pai (with --task-table), or csv "
        "(with --map)",
    )
    group.add_argument("--task-table", type=Path, help="pai: the pai_task_table file")
    group.add_argument(
        "--map",
        help="csv: column mapping, e.g. arrival=submit_time,gpus=num_gpus,duration=duration",
    )
    group.add_argument(
        "--duration-unit",
        default=TRACE_ONLY_DEFAULTS["duration_unit"],
        choices=("s", "min", "h"),
        help="csv: unit of durations",
    )
    group.add_argument("--vc", action="append", help="keep only jobs of this cluster/VC")
    group.add_argument("--start", type=float, help="keep jobs arriving from this second on")
    group.add_argument("--end", type=float, help="keep jobs arriving before this second")
    group.add_argument(
        "--arrival-scale",
        type=float,
        default=TRACE_ONLY_DEFAULTS["arrival_scale"],
        help="multiply arrival times (0.5 = twice the load; default 1)",
    )
    group.add_argument(
        "--catalog",
        default=TRACE_ONLY_DEFAULTS["catalog"],
        help="model catalog for trace jobs (default marl)",
    )
    group.add_argument(
        "--skip-bad-rows", action="store_true", help="skip malformed trace rows and count them"
    )
    group.add_argument(
        "--drop-infeasible",
        action="store_true",
        help="drop jobs that can never fit the cluster instead of refusing the run",
    )


def workload_from_args(args: argparse.Namespace, cluster: Any) -> tuple[Workload, list[str]]:
    """The jobs the options describe, and notes for the user (skipped rows, dropped jobs)."""
    notes: list[str] = []
    rng = np.random.default_rng(args.seed)
    check_jobs_option(args)
    check_workload_options(args)
    if args.trace is not None:
        options = TraceOptions(
            vcs=tuple(args.vc) if args.vc else None,
            start_s=args.start,
            end_s=args.end,
            max_jobs=args.jobs,
            arrival_scale=args.arrival_scale,
            skip_bad_rows=args.skip_bad_rows,
            catalog=args.catalog,
        )
        workload, report = read_trace(
            args.trace,
            args.format,
            options,
            rng=rng,
            task_table=args.task_table,
            column_map=args.map,
            duration_unit=args.duration_unit,
        )
        if report.skipped:
            notes.append(f"skipped {report.skipped} malformed row(s) of {args.trace}")
        unfinished = report.filtered.get("no_duration", 0)
        if unfinished:
            # Not a filter the user asked for: say so, as for skipped rows.
            notes.append(
                f"dropped {unfinished} job(s) of {args.trace} without a duration "
                "(no end or duration in the trace: unfinished when it was recorded)"
            )
    else:
        options = dict(args.workload_arg)
        generator_options = _generator_options(args.workload)
        if "num_schedulers" in generator_options and "num_schedulers" not in options:
            options["num_schedulers"] = cluster.num_partitions
        if "interval_s" in generator_options and args.interval is not None:
            # Rates are per the generator's interval: per --interval when one is given,
            # as the pod environment's are per its interval_s.
            options.setdefault("interval_s", args.interval)
        workload = make_workload(
            args.workload, num_jobs=args.jobs if args.jobs else 200, rng=rng, **options
        )
    if args.drop_infeasible:
        workload, dropped = drop_jobs_that_never_fit(cluster, workload)
        if dropped:
            notes.append(f"dropped {dropped} job(s) that can never fit the cluster")
    if not len(workload):
        raise UsageError("no job is left to simulate")
    return workload, notes


def _generator_options(kind: str) -> dict[str, Any]:
    from envs.workload import workload_options

    return workload_options(kind)


class Progress:
    """A one-line progress display on stderr, for terminals only, at most 4 updates/s."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.enabled = sys.stderr.isatty()
        self.last = 0.0

    def update(self, sim: Simulator) -> None:
        """Show how many jobs finished and the simulated time."""
        now = time.monotonic()
        if not self.enabled or now - self.last < 0.25:
            return
        self.last = now
        finished = int(np.isfinite(sim.finish_time).sum())
        print(
            f"\r{self.label}: {finished}/{self.total} jobs finished, "
            f"simulated {sim.now / 3600:.1f} h",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        """Clear the line."""
        if self.enabled:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def command_run(args: argparse.Namespace) -> int:
    """``run``: simulate policies and compare their metrics."""
    if (args.policy is None) == (args.compare is None):
        raise UsageError("give exactly one of --policy NAME or --compare NAME,NAME,...")
    names = (
        [args.policy] if args.policy else [n.strip() for n in args.compare.split(",") if n.strip()]
    )
    if not names:
        raise UsageError("--compare needs policy names, e.g. --compare fifo+packing,las+packing")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(
            f"--compare names {', '.join(repeated)} more than once; each policy runs once"
        )
    if args.interval is not None and not 0 < args.interval < math.inf:
        raise UsageError(f"--interval must be a finite number of seconds > 0, got {args.interval}")
    if not 0 <= args.restart_cost < math.inf:
        raise UsageError(
            f"--restart-cost must be a finite number of seconds >= 0, got {args.restart_cost}"
        )
    if not args.min_run >= 0:
        raise UsageError(f"--min-run must be >= 0 seconds, got {args.min_run}")
    check_jobs_option(args)
    check_perf_options(args)
    named: dict[Path, str] = {}  # each output file, by the option that names it first
    for option, path in (("--plot", args.plot), ("--csv", args.csv), ("--jobs-csv", args.jobs_csv)):
        _check_output_path(option, path)
        if path is None:
            continue
        first = named.setdefault(Path(path).resolve(), option)
        if first != option:
            raise UsageError(
                f"{first} and {option} both name {Path(path).resolve()}: the second would "
                "overwrite the first; give each output its own file"
            )
    preemption = PreemptionSettings(
        enabled=not args.no_preemption,
        min_run_s=args.min_run,
        las_thresholds_gpu_s=args.las_thresholds,
        las_promote_knob=args.las_promote,
        consolidate=args.consolidate,
    )

    def scheduler_for(name: str) -> Any:
        # A fresh scheduler (and random stream) per run, every run with the same settings.
        return make_scheduler(
            name,
            rng=np.random.default_rng(args.seed),
            backfill=args.backfill,
            preemption=preemption,
        )

    # Build every scheduler first so a typo fails before any simulation starts.
    for name in names:
        scheduler_for(name)
    cluster = cluster_from_args(args)
    workload, notes = workload_from_args(args, cluster)
    config = SimulatorConfig(
        interval_s=args.interval,
        link_sharing=args.link_sharing,
        restart_cost_s=args.restart_cost,
        max_contention=args.max_contention,
        coefficients=interference_coefficients(args.interference_coefficients),
        **perf_switches(args.perf)._asdict(),
    )
    results: list[SimulationResult] = []
    for name in names:
        progress = Progress(name, len(workload))
        try:
            result = simulate(cluster, workload, scheduler_for(name), name, config, progress.update)
        except ValueError as error:
            # A job the simulator refuses (too long, never fits): say which trace it came from.
            raise UsageError(f"{args.trace}: {error}" if args.trace else str(error)) from None
        finally:
            progress.close()
        results.append(result)
    metrics = {result.policy: result.metrics() for result in results}
    # Results first, files after: a file that cannot be written loses no finished run,
    # and a reader that stopped reading (``| head``) loses no file asked for.
    try:
        _print_results(args, metrics, len(workload), cluster, notes)
    except BrokenPipeError:
        silence_stdout()
        return _write_outputs(args, results, metrics) or STDOUT_CLOSED_STATUS
    return _write_outputs(args, results, metrics)


def _print_results(
    args: argparse.Namespace,
    metrics: dict[str, dict[str, Any]],
    jobs: int,
    cluster: Any,
    notes: list[str],
) -> None:
    """The run's metrics on stdout: one JSON object with ``--json``, else a table."""
    if args.json:
        payload = {
            "policies": metrics,
            "jobs": jobs,
            "perf": args.perf,
            "max_contention": args.max_contention,
            "interference_coefficients": args.interference_coefficients,
            "backfill": args.backfill,
            "consolidate": args.consolidate,
            "notes": notes,
        }
        print(json.dumps(json_safe(payload)), flush=True)
        return
    for note in notes:
        print(note)
    backfill = "on" if args.backfill else "off (strict order)"
    cap = "" if args.perf == "ideal" else f"; contention capped at {args.max_contention:g}"
    print(f"{jobs} jobs on {cluster!r}; perf {args.perf}, backfill {backfill}{cap}")
    print(format_comparison(metrics), flush=True)


def _write_outputs(
    args: argparse.Namespace, results: list[SimulationResult], metrics: dict[str, dict[str, Any]]
) -> int:
    """Write the files asked for; 1 (after trying every one) if one could not be written,
    else :data:`tune.cli.STDOUT_CLOSED_STATUS` if stdout's reader left before the list of
    files written could be printed."""

    def plot(path: Path) -> None:
        from result_plots import plot_results  # matplotlib only when asked for

        plot_results(results, path)

    writers = (
        (args.plot, "plot", plot),
        (args.csv, "table", lambda path: _write_metrics_csv(metrics, path)),
        (args.jobs_csv, "per-job table", lambda path: write_per_job_csv(results, path)),
    )
    status = 0
    written: list[str] = []
    for target, what, write in writers:
        if target is None:
            continue
        try:
            write(target)
        except OSError as error:
            print(f"simulate.py: error: {what} not written: {error}", file=sys.stderr)
            status = 1
            continue
        written.append(f"{what} written to {target}")
    # Said after every file is written: a reader gone by now leaves none of them unwritten.
    if written and not args.json:
        try:
            print("\n".join(written), flush=True)
        except BrokenPipeError:
            silence_stdout()
            return status or STDOUT_CLOSED_STATUS
    return status


def _check_output_path(option: str, path: Path | None) -> None:
    """UsageError unless ``path`` names a file that can be written (before any simulation)."""
    if path is None:
        return
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{option} {path}: not writable (permission denied)")
    if option in ("--plot", "--draw"):
        # matplotlib would add ".png" to a name without an extension and write elsewhere.
        formats = _plot_formats()
        suffix = path.suffix.lstrip(".").lower()
        if suffix not in formats:
            given = f".{suffix} files" if suffix else "a name without an extension"
            raise UsageError(
                f"{option} {path}: matplotlib cannot write {given}; end the name in one of "
                f".{', .'.join(formats)}"
            )


def _plot_formats() -> list[str]:
    """The file extensions matplotlib writes (its default backend's)."""
    from matplotlib.figure import Figure  # matplotlib only when a plot is asked for

    return sorted(Figure().canvas.get_supported_filetypes())


def _write_metrics_csv(metrics: dict[str, dict[str, Any]], path: Path) -> None:
    keys = list(next(iter(metrics.values())))
    with Path(path).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", *keys])
        for name, values in metrics.items():
            writer.writerow([name, *(values[key] for key in keys)])


def add_link_sharing_argument(parser: argparse._ActionsContainer, default: str) -> None:
    """``--link-sharing``: how jobs crossing one link split its bandwidth."""
    parser.add_argument(
        "--link-sharing",
        default=default,
        choices=LINK_SHARING,
        help=f"split a link equally by job count (003) or by the jobs' traffic duty cycles "
        f"(000 Fig. 1's partner effect); default {default}",
    )


def add_perf_argument(parser: argparse._ActionsContainer) -> None:
    """``--perf``: the performance model, ideal or contention (:mod:`envs.sim.perf`)."""
    parser.add_argument(
        "--perf",
        default=DEFAULT_PERF,
        choices=PERF_MODELS,
        help="performance model: 'contention' slows jobs by interference on shared servers "
        "and by shared links (a trace duration is the job's compute time, to which they "
        "add); 'ideal' runs every job at its trace/catalog duration wherever it is placed, "
        f"as simulators without a network model do (default {DEFAULT_PERF})",
    )
    parser.add_argument(
        "--max-contention",
        type=_max_contention,
        default=CONTENTION_ONLY_DEFAULTS["max_contention"],
        metavar="CS|off",
        help="contention model: the most a job's step may exceed its step alone on the same "
        f"placement (default {DEFAULT_MAX_CONTENTION:g}, the largest CS 000 measured; off: "
        "no cap)",
    )
    parser.add_argument(
        "--interference-coefficients",
        default=CONTENTION_ONLY_DEFAULTS["interference_coefficients"],
        choices=tuple(INTERFERENCE_PRESETS),
        help="the interference model's coefficients (envs/sim/interference.py): 'default' "
        "(chosen values) or 'paper001-fit' (a1, b1 scaled so 001's Fig. 1(a) bin packing "
        "predicts its 30%% mean slowdown); default 'default'",
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line of this program."""
    parser, commands = subcommand_parser("simulate.py", __doc__)
    add_describe_command(commands)
    add_run_command(commands)
    add_formulation_commands(commands)
    return parser


def add_describe_command(commands: Any) -> None:
    """``describe``: the options of a cluster, and how to show it."""
    describe = commands.add_parser(
        "describe", help="print the counts and bandwidths of a cluster topology"
    )
    add_topology_arguments(describe)
    describe.add_argument(
        "--seed",
        type=parse_seed,
        default=0,
        help="seed for placing mixed servers, >= 0 (default 0)",
    )
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    describe.add_argument(
        "--draw", type=Path, metavar="FILE.png", help="also draw the cluster (small ones)"
    )
    describe.set_defaults(handler=command_describe)


def add_run_command(commands: Any) -> None:
    """``run``: a cluster, a workload, the policies and their preemption, the output."""
    run = commands.add_parser("run", help="simulate scheduling policies on a workload")
    add_topology_arguments(run)
    add_workload_arguments(run)
    orderings, placements = scheduler_names()
    policy = run.add_argument_group("policy")
    policy.add_argument(
        "--policy",
        help=f"one policy ORDERING+PLACEMENT; orderings: {', '.join(orderings)}; "
        f"placements: {', '.join(placements)}",
    )
    policy.add_argument("--compare", help="several policies, comma separated, side by side")
    policy.add_argument(
        "--interval",
        type=float,
        help="decide only every this many seconds (001: 1800); default: at every arrival "
        "and completion",
    )
    policy.add_argument(
        "--backfill",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="backfill: a job that does not fit is skipped and smaller jobs behind it may "
        "start (default: on); --no-backfill keeps the order strict: the walk stops at the "
        "first job that does not fit (a strict FIFO)",
    )
    add_link_sharing_argument(policy, default=CONTENTION_ONLY_DEFAULTS["link_sharing"])
    add_perf_argument(policy)
    preemption = run.add_argument_group(
        "preemption (las, srtf, gittins: a waiting job preempts the running jobs it outranks)"
    )
    preemption.add_argument(
        "--no-preemption", action="store_true", help="las, srtf and gittins never preempt"
    )
    preemption.add_argument(
        "--min-run",
        type=float,
        default=DEFAULT_MIN_RUN_S,
        metavar="SECONDS",
        help=f"a job runs this long after (re)starting before it may be preempted "
        f"(default {DEFAULT_MIN_RUN_S:g})",
    )
    preemption.add_argument(
        "--las-thresholds",
        type=_thresholds,
        default=DEFAULT_LAS_THRESHOLDS_GPU_S,
        metavar="GPU_S[,GPU_S...]",
        help="attained GPU-seconds between LAS's (and gittins') queues, increasing (default "
        f"{','.join(f'{t:g}' for t in DEFAULT_LAS_THRESHOLDS_GPU_S)}: "
        f"{len(DEFAULT_LAS_THRESHOLDS_GPU_S) + 1} queues)",
    )
    preemption.add_argument(
        "--las-promote",
        type=_promote_knob,
        default=DEFAULT_LAS_PROMOTE_KNOB,
        metavar="KNOB|off",
        help="Tiresias' starvation promotion: a demoted waiting job returns to LAS's first "
        "queue once it waited KNOB times its run time since its last preemption "
        f"(default {_knob_text(DEFAULT_LAS_PROMOTE_KNOB)})",
    )
    preemption.add_argument(
        "--consolidate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start a job, fresh or resumed, only as compactly as it would be placed alone "
        "(no more servers): a job that fits only spread waits, or preempts for room in one "
        "piece (default: on); --no-consolidate takes any room, as before issue 20",
    )
    preemption.add_argument(
        "--restart-cost",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="seconds a resumed job makes no progress (checkpoint restore; default 0)",
    )
    output = run.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="print one JSON object")
    output.add_argument("--plot", type=Path, metavar="FILE.png", help="JCT CDF and utilization")
    output.add_argument("--csv", type=Path, metavar="FILE.csv", help="write the metrics table")
    output.add_argument(
        "--jobs-csv",
        type=Path,
        metavar="FILE.csv",
        help="write one row per job and policy (one file; the policy column tells runs "
        "apart): policy, job (index), job_id (trace/generator position), arrival, "
        "first_start (empty if it never started), finish (empty if unfinished when the run "
        "ended), gpus, servers (the most servers one of its placements spanned), "
        "preemptions, gpu_seconds (consumed), ideal_gpu_seconds (GPUs x ideal duration)",
    )
    run.set_defaults(handler=command_run)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    return run_subcommand(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
