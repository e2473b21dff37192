"""The papers' baselines of every single-agent formulation, one subcommand each.

How to run
----------
    python platform/paper_baselines.py deeprm --jobs-file jobs.json --policy sjf --json
    python platform/paper_baselines.py cush --policy sjf+bf --num-sets 10
    python platform/paper_baselines.py sced2 --policy sif --num-jobs 1000
    python platform/paper_baselines.py contention --policy las --mix heavy --json
    python platform/paper_baselines.py rltaps --policy random,sjf,tetris --seed 0 --num-sequences 5
    python platform/paper_baselines.py FORMULATION --help      # its options

What you get
------------
One subcommand per formulation of the registry (``envs.registry.formulation_ids``), built
from the options and report its environment class declares (``command``, see
:mod:`envs.command`); ``platform/simulate.py`` offers the same subcommands.

``deeprm`` replays an explicit DeepRM workload (``{"jobs": [{"arrival_time": 3, "len": 2,
"res": [5, 1]}, ...]}``) under DeepRM's SJF, Packer or Random baseline with the reference
dynamics and prints slowdowns, reward and each job's start and finish (``--json``:
``mean_slowdown``, ``max_slowdown``, ``total_reward``, ``steps``, ``final_time``,
``dropped`` and ``jobs``). ``cush`` runs one of CuSH's baselines (004 Table 1: FCFS, SJF,
DRF, Random, each with depth-first ``df`` or breadth-first ``bf`` allocation) over seeded
20-job sets on a Sierra or Summit cluster: average NTAT, wait, turnaround and rewards.
``sced2`` runs one of SCED2's baselines (002: SIF, DSIF, SAF, LRF, SPF, FIFO, all with
packing) on its 15 x 8 cluster; ``contention`` one of the contention-aware paper's (000:
LAS, SRTF, FIFO) on 4 x 8 GPUs with its model mixes; both print their paper's metrics.
``rltaps`` runs RL-TAPS's baselines (003 §5.3: Random, SJF, Tetris job pickers with the
left-to-right allocator, no preemption) over seeded 400-job sequences on racks of Minsky
machines side by side: mean reward (eq. 16), mean slowdown (eq. 17), finished and dropped
jobs, mean speed, GPU utilization (``--json``: ``{"policies": {name: {...}}}``).

With ``--json`` every subcommand prints one JSON object. Bad arguments print one line on
stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from envs.command import BaselineCommand
from envs.sim.report import json_safe
from tune.cli import OneLineParser, run_subcommand

#: Parsed options that are the program's, not the formulation's.
PROGRAM_OPTIONS = ("command", "handler", "json")


def add_formulation_commands(commands: Any) -> None:
    """One subcommand per single-agent formulation with a ``command``, on ``commands`` (the
    result of ``add_subparsers``)."""
    from envs.registry import formulation, formulation_ids

    for name, env_id in formulation_ids().items():
        command = formulation(env_id).command
        if command is None:
            continue
        parser = commands.add_parser(name, help=command.help)
        for option in command.options:
            parser.add_argument(option.flag, **option.argparse_keywords())
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.set_defaults(handler=partial(run_command, command))


def run_command(command: BaselineCommand, args: argparse.Namespace) -> int:
    """Run a formulation's command on the parsed ``args``; print JSON or its report."""
    options = {key: value for key, value in vars(args).items() if key not in PROGRAM_OPTIONS}
    summary = command.run(options)
    print(json.dumps(json_safe(summary)) if args.json else command.report(summary, options))
    return 0


def subcommand_parser(prog: str, doc: str) -> tuple[OneLineParser, Any]:
    """A program's parser, described by its module docstring ``doc`` up to "How to run",
    and its subcommands (what ``add_subparsers`` returns); every parser of it raises
    :class:`UsageError` on a bad command line."""
    parser = OneLineParser(
        prog=prog,
        description=doc.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    return parser, commands


def build_parser() -> argparse.ArgumentParser:
    """The command line of this program."""
    parser, commands = subcommand_parser("paper_baselines.py", __doc__)
    add_formulation_commands(commands)
    return parser


def run_cli(build: Callable[[], argparse.ArgumentParser], argv: list[str] | None) -> int:
    """Parse ``argv`` with the parser ``build`` makes and run the chosen subcommand's
    ``handler``; a bad command line or value is one line on stderr and exit status 2, a
    closed stdout a quiet exit (:func:`tune.cli.run_subcommand`)."""
    return run_subcommand(build(), argv)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    return run_cli(build_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
