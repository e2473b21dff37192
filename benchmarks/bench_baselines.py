"""The simulator's baselines against issue 20's goals ("Baselines a researcher can trust").

The replay: the first 10,000 Philly jobs by submit time on a flat cluster of 32 servers x
8 GPUs, as ``platform/simulate.py run --topology flat --servers 32 --gpus 8 --trace
../shared/traces/philly.csv --format philly --jobs 10000`` builds it (seed 0), under both
performance models (``ideal``: every job at its trace duration; ``contention``:
interference and shared links slow jobs), for

* strict FIFO (``fifo+packing``, no backfilling), backfilling FIFO (``fifo+packing``),
* ``las+packing``, ``srtf+packing`` and ``gittins+packing`` (Tiresias' Gittins-index
  variant, on LAS's queues; no goal of its own) with the registry's defaults
  (preemptive; see ``envs.schedulers.registry`` and ``PreemptionSettings``), so the
  figures follow any change of those defaults.

Each row reports avg/median/p90 JCT, makespan (seconds), preemptions, GPU-seconds
consumed, GPU-time inflation and the run's wall and CPU seconds. The goals are then checked
from the rows (never typed in):

* ideal: LAS avg JCT <= 0.1 x strict FIFO's, LAS makespan within 10% of strict FIFO's
  (no more than 10% longer);
* contention: LAS avg JCT < backfilling FIFO's, LAS makespan within 10% of it, LAS
  GPU-time inflation <= 1.1 x its;
* SRTF avg JCT < the mode's FIFO (strict under ideal, backfilling under contention);
* speed: ``las+packing`` wall <= 2 x ``fifo+packing`` (backfilling) wall, in each mode,
  and the same for the process's CPU seconds (``cpu_s``), which a loaded machine inflates
  less than wall time.

One speed case besides: the whole Philly trace (82,247 jobs) on 1,024 GPUs (128 DGX-1
servers on one switch, as ``bench_simulator`` case (b)), ``las+packing`` with the default
(contention) model: goal under 60 s, checked in wall and in CPU seconds; ``fifo+packing``
(backfilling) runs there first, the part of LAS's time that is not preemption. Each
full-trace run has a fresh process of its own, as ``simulate.py run`` would.

Beside each case, the seconds of ``bench_simulator``'s fixed single-threaded loop timed
just before it: machines here are shared, and that number tells how loaded this one was.

How to run: ``python benchmarks/bench_baselines.py [--jobs N | --quick] [--cases ...]``
(or ``make bench`` / ``python benchmarks/run.py baselines`` for the full run; the full
run takes several minutes).
What you get: a table of runs, a table of goal checks, and
``benchmarks/results/baselines.json`` (or ``--out``) with both.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from bench_simulator import reference_loop_seconds
from common import RESULTS, case_list, print_table

from envs.schedulers import make_scheduler
from envs.sim import SimulatorConfig
from envs.sim.perf import perf_switches
from envs.sim.report import json_safe
from envs.sim.runner import simulate
from envs.topology import build_cluster
from envs.workload import TraceOptions, read_philly
from tune.cli import OneLineParser, UsageError
from tune.paths import writable_folder_problem

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "traces" / "philly.csv"
DEFAULT_JOBS = 10_000
QUICK_JOBS = 1_000
#: The performance-model cases, then the full-trace speed case.
CASES: tuple[str, ...] = ("ideal", "contention", "full-trace")
#: (row label, scheduler name, backfill) of every baseline compared.
BASELINES: tuple[tuple[str, str, bool], ...] = (
    ("fifo strict", "fifo+packing", False),
    ("fifo backfill", "fifo+packing", True),
    ("las", "las+packing", True),
    ("srtf", "srtf+packing", True),
    ("gittins", "gittins+packing", True),
)
#: Under each model, the FIFO row LAS and SRTF answer to (the issue's goals).
GOAL_FIFO = {"ideal": "fifo strict", "contention": "fifo backfill"}
FULL_TRACE_GOAL_S = 60.0
METRICS = (
    "jobs_finished",
    "avg_jct",
    "median_jct",
    "p90_jct",
    "makespan",
    "preemptions",
    "gpu_seconds",
    "gpu_time_inflation",
)


def run_one(
    case: str, label: str, policy: str, backfill: bool, cluster: Any, workload: Any, perf: str
) -> dict[str, Any]:
    """Simulate one baseline and return its row (metrics of :data:`METRICS` + wall seconds)."""
    config = SimulatorConfig(**perf_switches(perf)._asdict())
    # A fresh scheduler and random stream per run, seeded as simulate.py's default --seed 0.
    scheduler = make_scheduler(policy, rng=np.random.default_rng(0), backfill=backfill)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = simulate(cluster, workload, scheduler, policy, config)
    wall_s = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    metrics = result.metrics()
    return {
        "case": case,
        "label": label,
        "policy": policy,
        "backfill": backfill,
        "perf": perf,
        "jobs": len(workload),
        **{name: metrics[name] for name in METRICS},
        "wall_s": wall_s,
        "cpu_s": cpu_s,
    }


def _row(rows: Sequence[dict[str, Any]], case: str, label: str) -> dict[str, Any] | None:
    for row in rows:
        if row["case"] == case and row["label"] == label:
            return row
    return None


def _check(
    goal: str, case: str, value: float, target: float, met: bool, rows: Sequence[str]
) -> dict[str, Any]:
    return {"goal": goal, "case": case, "value": value, "target": target, "met": met, "rows": rows}


def goal_checks(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's goals, each computed from ``rows`` (a check whose rows are absent is left out).

    Each check: ``goal`` (text), ``case``, ``value`` (the ratio or seconds measured),
    ``target`` (the bound it is held to), ``met`` and ``rows`` (the labels it reads).
    """
    checks: list[dict[str, Any]] = []
    for case, fifo_label in GOAL_FIFO.items():
        fifo, las, srtf = (_row(rows, case, name) for name in (fifo_label, "las", "srtf"))
        backfill = _row(rows, case, "fifo backfill")
        if fifo is not None and las is not None:
            jct = las["avg_jct"] / fifo["avg_jct"]
            makespan = las["makespan"] / fifo["makespan"]
            if case == "ideal":
                checks.append(
                    _check(
                        "LAS avg JCT <= 0.1 x strict FIFO's",
                        case,
                        jct,
                        0.1,
                        jct <= 0.1,
                        ("las", fifo_label),
                    )
                )
            else:
                checks.append(
                    _check(
                        "LAS avg JCT < backfilling FIFO's",
                        case,
                        jct,
                        1.0,
                        jct < 1.0,
                        ("las", fifo_label),
                    )
                )
            checks.append(
                # "Within 10%": no more than 10% longer; a shorter makespan is no failure.
                _check(
                    f"LAS makespan <= 1.1 x {fifo_label}'s",
                    case,
                    makespan,
                    1.1,
                    makespan <= 1.1,
                    ("las", fifo_label),
                )
            )
            if case == "contention":
                inflation = las["gpu_time_inflation"] / fifo["gpu_time_inflation"]
                checks.append(
                    _check(
                        "LAS GPU-time inflation <= 1.1 x backfilling FIFO's",
                        case,
                        inflation,
                        1.1,
                        inflation <= 1.1,
                        ("las", fifo_label),
                    )
                )
        if fifo is not None and srtf is not None:
            jct = srtf["avg_jct"] / fifo["avg_jct"]
            checks.append(
                _check(
                    f"SRTF avg JCT < {fifo_label}",
                    case,
                    jct,
                    1.0,
                    jct < 1.0,
                    ("srtf", fifo_label),
                )
            )
        if backfill is not None and las is not None:
            speed = las["wall_s"] / backfill["wall_s"]
            checks.append(
                _check(
                    "las+packing wall <= 2 x fifo+packing wall",
                    case,
                    speed,
                    2.0,
                    speed <= 2.0,
                    ("las", "fifo backfill"),
                )
            )
            if "cpu_s" in las and "cpu_s" in backfill:
                # The process's CPU seconds: on a shared machine, wall time also counts
                # the time other processes held the cores.
                cpu = las["cpu_s"] / backfill["cpu_s"]
                checks.append(
                    _check(
                        "las+packing CPU <= 2 x fifo+packing CPU",
                        case,
                        cpu,
                        2.0,
                        cpu <= 2.0,
                        ("las", "fifo backfill"),
                    )
                )
    full = _row(rows, "full-trace", "las")
    if full is not None:
        for measure, column in (("wall", "wall_s"), ("CPU", "cpu_s")):
            if column in full:
                checks.append(
                    _check(
                        f"full Philly trace on 1,024 GPUs, las+packing {measure} "
                        f"< {FULL_TRACE_GOAL_S:g} s",
                        "full-trace",
                        full[column],
                        FULL_TRACE_GOAL_S,
                        full[column] < FULL_TRACE_GOAL_S,
                        ("las",),
                    )
                )
    return checks


def run_cases(jobs: int, cases: Sequence[str], trace: Path = PHILLY) -> list[dict[str, Any]]:
    """Every row of the selected ``cases``; each case starts with a reference-loop timing."""
    rows: list[dict[str, Any]] = []
    replay = [case for case in cases if case in GOAL_FIFO]
    if replay:
        cluster = build_cluster("flat", seed=0, servers=32, gpus_per_server=8)
        workload, _ = read_philly(trace, TraceOptions(max_jobs=jobs), rng=np.random.default_rng(0))
        for case in replay:
            reference = reference_loop_seconds()
            for label, policy, backfill in BASELINES:
                row = run_one(case, label, policy, backfill, cluster, workload, case)
                row["reference_loop_s"] = reference
                rows.append(row)
    if "full-trace" in cases:
        # FIFO first: the simulator's and the walk's share of LAS's time, the floor
        # under it. Each run in a fresh process, as `simulate.py run` makes one: after
        # the replay's ten runs (or FIFO's) a process's grown heap slowed the next
        # full-trace run by a few percent.
        spawn = multiprocessing.get_context("spawn")
        for label, policy in (("fifo backfill", "fifo+packing"), ("las", "las+packing")):
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as fresh:
                rows.append(fresh.submit(full_trace_row, label, policy, trace).result())
    return rows


def full_trace_row(label: str, policy: str, trace: Path) -> dict[str, Any]:
    """The full-trace case's row for ``policy``: the whole trace on 1,024 GPUs, with the
    reference loop timed just before (in the calling process)."""
    cluster = build_cluster("flat", servers=128, server="dgx1")
    workload, _ = read_philly(trace, rng=np.random.default_rng(0))
    reference = reference_loop_seconds()
    row = run_one("full-trace", label, policy, True, cluster, workload, "contention")
    row["reference_loop_s"] = reference
    return row


def print_report(rows: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]]) -> None:
    """The runs table and the goals table."""
    print_table(
        "Baselines on Philly (10k-job replay: 32 x 8 GPUs flat; full trace: 1,024 GPUs)",
        [
            "case",
            "baseline",
            "jobs",
            "done",
            "avg JCT s",
            "median s",
            "p90 s",
            "makespan s",
            "preempt",
            "GPU-s",
            "inflation",
            "wall s",
            "CPU s",
            "ref. loop s",
        ],
        [
            [
                row["case"],
                row["label"],
                row["jobs"],
                row["jobs_finished"],
                f"{row['avg_jct']:,.0f}",
                f"{row['median_jct']:,.0f}",
                f"{row['p90_jct']:,.0f}",
                f"{row['makespan']:,.0f}",
                row["preemptions"],
                f"{row['gpu_seconds']:.4g}",
                f"{row['gpu_time_inflation']:.3f}",
                f"{row['wall_s']:.1f}",
                f"{row['cpu_s']:.1f}",
                f"{row['reference_loop_s']:.2f}",
            ]
            for row in rows
        ],
    )
    print_table(
        "Issue 20's goals, from the rows above (value: ratio of the two rows, or seconds)",
        ["case", "goal", "value", "target", "met"],
        [
            [
                check["case"],
                check["goal"],
                f"{check['value']:.3f}",
                f"{check['target']:g}",
                "yes" if check["met"] else "NO",
            ]
            for check in checks
        ],
    )


def write_payload(
    path: Path, jobs: int, rows: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]]
) -> Path:
    """Write the rows and checks as ``common.write_results`` does, plus ``checks``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "baselines",
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "jobs": jobs,
        "results": list(rows),
        "checks": list(checks),
    }
    path.write_text(json.dumps(json_safe(payload), indent=2))
    print(f"results written to {path}")
    return path


def check_out(path: Path) -> None:
    """ValueError unless a file can be written at ``path``: not a folder itself, its folder
    one this user can create or write (:func:`tune.paths.writable_folder_problem`; made
    here). Checked before the simulations, so that their results are never lost to a bad
    ``--out``."""
    if path.is_dir():
        raise ValueError(f"--out {path} is a folder; give a file's path, e.g. {path / 'out.json'}")
    problem = writable_folder_problem(str(path.parent))
    if problem is not None:
        raise ValueError(f"--out {path}: {problem}")
    path.parent.mkdir(parents=True, exist_ok=True)


def check_trace(path: Path) -> None:
    """ValueError unless ``path`` is a file in Philly's CSV format (its header and first
    job read; the replays read the rest)."""
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise ValueError(f"--trace {path} {what}; give the Philly CSV (default {PHILLY})")
    try:
        read_philly(path, TraceOptions(max_jobs=1), rng=np.random.default_rng(0))
    except ValueError as error:
        raise ValueError(f"--trace: {error}") from None


def build_parser() -> OneLineParser:
    """The options of this benchmark."""
    parser = OneLineParser(
        prog="bench_baselines.py",
        description="Issue 20's baselines on Philly against their goals (see the module doc).",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        help=f"Philly jobs of the replay, first by submit time (default {DEFAULT_JOBS:,})",
    )
    size.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run: {QUICK_JOBS:,} jobs, and no full-trace case unless --cases names it",
    )
    parser.add_argument(
        "--cases",
        help=f"comma-separated cases to run, of {', '.join(CASES)} (default: all)",
    )
    parser.add_argument(
        "--trace", type=Path, default=PHILLY, help=f"the Philly CSV (default {PHILLY})"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / "baselines.json",
        help="where to write the JSON (default benchmarks/results/baselines.json)",
    )
    return parser


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, int, list[str]]:
    """The options, the replay's job count and the cases. A bad command line, a missing
    trace or an ``--out`` that cannot be written: one line, exit 2, before any simulation."""
    parser = build_parser()
    args = parser.parse_or_exit([] if argv is None else argv)
    jobs = QUICK_JOBS if args.quick else args.jobs
    try:
        if jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {jobs}")
        if args.cases is None:
            cases = [case for case in CASES if not (args.quick and case == "full-trace")]
        else:
            cases = case_list(args.cases, list(CASES))
        check_trace(args.trace)
        check_out(args.out)
    except (UsageError, ValueError) as error:
        parser.refuse(error)
    return args, jobs, cases


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the selected cases, print both tables, write the JSON; return rows and checks."""
    args, jobs, cases = parse(argv)
    rows = run_cases(jobs, cases, args.trace)
    checks = goal_checks(rows)
    print_report(rows, checks)
    write_payload(args.out, jobs, rows, checks)
    return {"results": rows, "checks": checks}


if __name__ == "__main__":
    main(sys.argv[1:])
