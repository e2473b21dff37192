"""``rltaps``: RL-TAPS's baselines (003 §5.3) side by side over seeded job sequences."""

from __future__ import annotations

import argparse
from typing import Any

from envs.command import (
    BaselineCommand,
    CommandOption,
    int_list,
    jobs_file_option,
    jobs_from_file,
    seed_option,
)
from envs.rltaps.baselines import format_baseline_table, parse_baselines, run_rltaps_baseline


def baseline_names(text: str) -> list[str]:
    """``--policy``'s baselines (an option's ``type``): argparse names the option in the
    message, which a check after the jobs file was read would have put on the file."""
    try:
        return parse_baselines(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def run(options: dict[str, Any]) -> dict[str, Any]:
    """``{"policies": {name: run_rltaps_baseline(name, ...)}}`` for every baseline named."""
    policies = parse_baselines(options["policy"])
    jobs = jobs_from_file(options)
    params: dict[str, Any] = {"racks": options["racks"]}
    if options["num_jobs"] is not None:
        params["num_jobs"] = options["num_jobs"]
    results = {
        name: run_rltaps_baseline(
            name,
            seed=options["seed"],
            num_sequences=options["num_sequences"],
            jobs=jobs,
            **params,
        )
        for name in policies
    }
    return {"policies": results}


def report(summary: dict[str, Any], options: dict[str, Any]) -> str:
    """The baselines side by side (:func:`envs.rltaps.baselines.format_baseline_table`)."""
    results = summary["policies"]
    racks = ",".join(map(str, options["racks"]))
    count = next(iter(results.values()))["num_sequences"]
    title = f"RL-TAPS baselines on racks [{racks}] of Minsky machines, {count} sequence(s):"
    return "\n".join([title, format_baseline_table(results)])


COMMAND = BaselineCommand(
    help="run RL-TAPS's baselines (003: random, sjf, tetris) side by side",
    summarize=run,
    report=report,
    options=(
        CommandOption(
            "--policy",
            "baselines, comma separated, of random, sjf, tetris (default all three)",
            "random,sjf,tetris",
            type=baseline_names,
        ),
        seed_option("the first job sequence"),
        CommandOption("--num-sequences", "job sequences to average (default 1)", 1, type=int),
        CommandOption("--num-jobs", "jobs per sequence, one per step (default 400)", type=int),
        CommandOption(
            "--racks",
            "Minsky machines per rack, comma separated (default 2,2,2,2: 32 GPUs)",
            (2, 2, 2, 2),
            type=int_list,
        ),
        jobs_file_option(),
    ),
)
