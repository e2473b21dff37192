"""``contention``: one of the contention-aware paper's baselines (000) over seeded job sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.command import BaselineCommand, CommandOption, format_summary, jobs_from_file
from envs.contention.baselines import CONTENTION_BASELINES, run_contention_baseline
from envs.sim import LINK_SHARING

#: The summary keys of the text report.
REPORTED = ("avg_jct", "p90_jct", "gpu_utilization", "avg_contention", "p90_contention")


def run(options: dict[str, Any]) -> dict[str, Any]:
    """:func:`envs.contention.baselines.run_contention_baseline` with the options given."""
    jobs = jobs_from_file(options)
    return run_contention_baseline(
        options["policy"],
        seed=options["seed"],
        mix=options["mix"],
        num_jobs=options["num_jobs"],
        num_sets=options["num_sets"],
        placement=options["placement"],
        jobs=jobs,
        link_sharing=options["link_sharing"],
    )


def report(summary: dict[str, Any], options: dict[str, Any]) -> str:
    """000's metrics."""
    title = (
        f"{options['policy']} on 4 x 8 GPUs, {options['mix']} mix, {options['num_sets']} set(s):"
    )
    return "\n".join([title, format_summary(summary, REPORTED)])


COMMAND = BaselineCommand(
    help="run a contention-aware baseline (000)",
    run=run,
    report=report,
    options=(
        CommandOption("--policy", "baseline (default las)", "las", choices=CONTENTION_BASELINES),
        CommandOption("--seed", "seed of the first job set", 0, type=int),
        CommandOption(
            "--mix",
            "communication intensity of the job set (000 footnote 4)",
            "normal",
            choices=("normal", "heavy", "medium", "low"),
        ),
        CommandOption("--num-jobs", "jobs per set (default 256)", 256, type=int),
        CommandOption("--num-sets", "job sets to average", 1, type=int),
        CommandOption("--placement", "node placement", "spread", choices=("spread", "pack")),
        CommandOption("--jobs-file", "an explicit job list (JSON) instead", type=Path),
        CommandOption(
            "--link-sharing",
            "split a link equally by job count (003) or by the jobs' traffic duty cycles "
            "(000 Fig. 1's partner effect); default traffic",
            "traffic",
            choices=tuple(LINK_SHARING),
        ),
    ),
)
