"""``contention``: one of the contention-aware paper's baselines (000) over seeded job sets."""

from __future__ import annotations

from envs.command import (
    BaselineCommand,
    CommandOption,
    forward_options,
    jobs_file_option,
    policy_option,
    seed_option,
    titled_report,
)
from envs.contention.baselines import CONTENTION_BASELINES, run_contention_baseline
from envs.sim import LINK_SHARING

COMMAND = BaselineCommand(
    help="run a contention-aware baseline (000)",
    summarize=forward_options(
        run_contention_baseline, "seed", "mix", "num_jobs", "num_sets", "placement", "link_sharing"
    ),
    report=titled_report(
        "{policy} on 4 x 8 GPUs, {mix} mix, {num_sets} set(s):",
        ("avg_jct", "p90_jct", "gpu_utilization", "avg_contention", "p90_contention"),
    ),
    options=(
        policy_option("las", CONTENTION_BASELINES),
        seed_option("the first job set"),
        CommandOption(
            "--mix",
            "communication intensity of the job set (000 footnote 4)",
            "normal",
            choices=("normal", "heavy", "medium", "low"),
        ),
        CommandOption("--num-jobs", "jobs per set (default 256)", 256, type=int),
        CommandOption("--num-sets", "job sets to average", 1, type=int),
        CommandOption("--placement", "node placement", "spread", choices=("spread", "pack")),
        jobs_file_option(),
        CommandOption(
            "--link-sharing",
            "split a link equally by job count (003) or by the jobs' traffic duty cycles "
            "(000 Fig. 1's partner effect); default traffic",
            "traffic",
            choices=tuple(LINK_SHARING),
        ),
    ),
)
