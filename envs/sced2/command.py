"""``sced2``: one of SCED2's baselines (002, all with packing) over seeded traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.command import BaselineCommand, CommandOption, format_summary, jobs_from_file
from envs.sced2.baselines import SCED2_BASELINES, run_sced2_baseline

#: The summary keys of the text report.
REPORTED = ("execution_effectiveness", "avg_jct", "p90_jct", "makespan", "fragmentation")


def run(options: dict[str, Any]) -> dict[str, Any]:
    """:func:`envs.sced2.baselines.run_sced2_baseline` with the options given."""
    jobs = jobs_from_file(options)
    return run_sced2_baseline(
        options["policy"],
        seed=options["seed"],
        num_jobs=options["num_jobs"],
        num_traces=options["num_traces"],
        workload=options["workload"],
        interval_scale=options["interval_scale"],
        jobs=jobs,
    )


def report(summary: dict[str, Any], options: dict[str, Any]) -> str:
    """002's metrics."""
    title = f"{options['policy']}+packing on 15 x 8 GPUs, {options['num_traces']} trace(s):"
    return "\n".join([title, format_summary(summary, REPORTED)])


COMMAND = BaselineCommand(
    help="run a SCED2 baseline (002) with packing",
    run=run,
    report=report,
    options=(
        CommandOption("--policy", "job selection (default sif)", "sif", choices=SCED2_BASELINES),
        CommandOption("--seed", "seed of the first trace", 0, type=int),
        CommandOption("--num-jobs", "jobs per trace (default 1000)", 1000, type=int),
        CommandOption("--num-traces", "traces to average (default 1)", 1, type=int),
        CommandOption(
            "--workload",
            "share of 1-GPU jobs: 68%% (default), 60%% or 75%%",
            "sced2",
            choices=("sced2", "sced2-60", "sced2-75"),
        ),
        CommandOption(
            "--interval-scale", "scale arrival gaps (0.4 = heavier load)", 1.0, type=float
        ),
        CommandOption("--jobs-file", "an explicit job list (JSON) instead", type=Path),
    ),
)
