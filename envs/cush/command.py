"""``cush``: one of CuSH's baselines (004 Table 1) over seeded job sets, or one explicit set."""

from __future__ import annotations

from typing import Any

from envs.command import (
    BaselineCommand,
    CommandOption,
    forward_options,
    jobs_file_option,
    policy_option,
    seed_option,
)
from envs.cush.baselines import CUSH_BASELINES, run_cush_baseline

#: (label, summary key) of the text report.
REPORTED: tuple[tuple[str, str], ...] = (
    ("average NTAT", "avg_ntat"),
    ("average wait (steps)", "avg_wait"),
    ("average turnaround (steps)", "avg_tat"),
    ("rewards (local return)", "local_return"),
    ("eq. 1 return", "eq1_return"),
)


def report(summary: dict[str, Any], options: dict[str, Any]) -> str:
    """Average NTAT, wait, turnaround and returns."""
    lines = [
        f"{summary['policy']} on {summary['cluster']} ({summary['nodes']} nodes), "
        f"{summary['num_sets']} set(s) from seed {summary['seed']}:"
    ]
    lines += [f"  {label:<28}{summary[key]:.3f}" for label, key in REPORTED]
    return "\n".join(lines)


COMMAND = BaselineCommand(
    help="run a CuSH baseline (004 Table 1) over job sets",
    summarize=forward_options(
        run_cush_baseline,
        "seed",
        "num_sets",
        "cluster",
        "nodes",
        optional=("dgemm_fraction", "queue_size", "time_horizon"),
    ),
    report=report,
    options=(
        policy_option("sjf+bf", CUSH_BASELINES),
        seed_option("the first job set"),
        CommandOption("--num-sets", "job sets to average (default 10)", 10, type=int),
        CommandOption(
            "--cluster", "node type (default sierra)", "sierra", choices=("sierra", "summit")
        ),
        CommandOption("--nodes", "nodes (default 128)", 128, type=int),
        CommandOption("--dgemm-fraction", "share of dgemm jobs (default 0.5)", type=float),
        CommandOption("--queue-size", "Q, visible job slots (default 5)", type=int),
        CommandOption("--time-horizon", "T, image rows (default 5)", type=int),
        jobs_file_option("one explicit job set (JSON) instead"),
    ),
)
