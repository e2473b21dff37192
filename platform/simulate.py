"""podsched's simulator CLI.

How to run
----------
    python platform/simulate.py describe --topology fat-tree --k 20
    python platform/simulate.py describe --topology vl2 --k 20 --server mixed --json
    python platform/simulate.py describe --topology bcube --n 6 --k 3
    python platform/simulate.py describe --topology racks --racks 2,2,2,2
    python platform/simulate.py describe --topology flat --servers 15 --gpus 8
    python platform/simulate.py describe --topology fat-tree --k 4 --draw fat-tree-k4.png

What you get
------------
``describe`` prints the cluster's counts (servers, GPUs, CPU sockets, GPU groups, switches
and links per tier, partitions and servers per partition, total and bisection bandwidth)
as a table, or with ``--json`` as one JSON object; ``--draw FILE.png`` also draws it.
Bad arguments print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from envs.topology import TOPOLOGIES, build_cluster, describe_cluster, known_server_names

# Which command-line options each topology takes, and the builder parameter they set.
TOPOLOGY_OPTIONS: dict[str, dict[str, str]] = {
    "fat-tree": {"k": "k"},
    "vl2": {"k": "k"},
    "bcube": {"n": "n", "k": "k"},
    "racks": {"racks": "racks"},
    "flat": {"servers": "servers", "gpus": "gpus_per_server"},
}


class UsageError(Exception):
    """A bad command line: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print the whole usage
        raise UsageError(message)


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
    group.add_argument(
        "--seed", type=int, default=0, help="seed for placing mixed servers (default 0)"
    )


def cluster_from_args(args: argparse.Namespace) -> Any:
    """Build the cluster the topology options describe; UsageError for options that don't apply."""
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
    return build_cluster(args.topology, **params)


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
    cluster = cluster_from_args(args)
    summary = describe_cluster(cluster)
    if args.draw is not None:
        from topology_drawing import draw_cluster  # matplotlib only when asked for

        draw_cluster(cluster, args.draw)
        summary["drawing"] = str(args.draw)
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_summary(summary))
        if args.draw is not None:
            print(f"drawing written to {args.draw}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line of this program."""
    parser = _Parser(
        prog="simulate.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    describe = commands.add_parser(
        "describe", help="print the counts and bandwidths of a cluster topology"
    )
    add_topology_arguments(describe)
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    describe.add_argument(
        "--draw", type=Path, metavar="FILE.png", help="also draw the cluster (small ones)"
    )
    describe.set_defaults(handler=command_describe)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except (UsageError, ValueError) as error:
        print(f"simulate.py: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
