"""``deeprm``: replay an explicit workload under DeepRM's SJF, Packer or Random baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.command import BaselineCommand, CommandOption, policy_option, seed_option
from envs.deeprm.baselines import POLICIES, replay
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.jobs import load_jobs_file


def run(options: dict[str, Any]) -> dict[str, Any]:
    """The replay's summary (:func:`envs.deeprm.baselines.replay`)."""
    if options["num_nw"] < 1:
        raise ValueError(f"--num-nw must be >= 1, got {options['num_nw']}")
    jobs = load_jobs_file(options["jobs_file"], DeepRMConfig(num_nw=options["num_nw"]))
    return replay(jobs, options["policy"], num_nw=options["num_nw"], seed=options["seed"])


def report(summary: dict[str, Any], options: dict[str, Any]) -> str:
    """Slowdowns, reward, and each job's arrival, start and finish."""
    lines = [
        f"{len(summary['jobs'])} jobs ({summary['dropped']} dropped) under {options['policy']}: "
        f"mean slowdown {summary['mean_slowdown']:.3f}, max {summary['max_slowdown']:.3f}, "
        f"total reward {summary['total_reward']:.3f}, {summary['steps']} steps, "
        f"final time {summary['final_time']}",
        "arrival  start  finish",
    ]
    lines += [
        f"{job['arrival_time']:>7}  {job['start']:>5}  {job['finish']:>6}"
        for job in summary["jobs"]
    ]
    return "\n".join(lines)


COMMAND = BaselineCommand(
    help="replay an explicit DeepRM workload under SJF, Packer or Random",
    summarize=run,
    report=report,
    options=(
        CommandOption(
            "--jobs-file",
            'JSON {"jobs": [{"arrival_time", "len", "res"}]}',
            type=Path,
            required=True,
        ),
        policy_option("sjf", tuple(POLICIES)),
        CommandOption("--num-nw", "visible job slots (default 5)", 5, type=int),
        seed_option("the random baseline"),
    ),
)
