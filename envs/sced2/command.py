"""``sced2``: one of SCED2's baselines (002, all with packing) over seeded traces."""

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
from envs.sced2.baselines import SCED2_BASELINES, run_sced2_baseline

COMMAND = BaselineCommand(
    help="run a SCED2 baseline (002) with packing",
    summarize=forward_options(
        run_sced2_baseline, "seed", "num_jobs", "num_traces", "workload", "interval_scale"
    ),
    report=titled_report(
        "{policy}+packing on 15 x 8 GPUs, {num_traces} trace(s):",
        ("execution_effectiveness", "avg_jct", "p90_jct", "makespan", "fragmentation"),
    ),
    options=(
        policy_option("sif", SCED2_BASELINES, "job selection"),
        seed_option("the first trace"),
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
        jobs_file_option(),
    ),
)
