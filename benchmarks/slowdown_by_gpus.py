"""Per-job slowdown by GPU count, from the per-job CSV of ``simulate.py run --jobs-csv``.

A job's slowdown is ``gpu_seconds / ideal_gpu_seconds``: the GPU-seconds it held over
its GPUs x ideal duration (no interference, no communication). With no restart cost that
is exactly the ratio of its mean step time to its compute time. Only finished jobs are
counted (an unfinished job's GPU-seconds are partial).

How to run::

    python platform/simulate.py run ... --jobs-csv jobs.csv
    python benchmarks/slowdown_by_gpus.py --jobs-csv jobs.csv [--jobs-csv other.csv] [--json]

What you get: per file and policy, one row per GPU count -- jobs, mean, median, p90 and
max slowdown, mean and max servers spanned -- and an ``all`` row whose last column is the
GPU-time inflation (GPU-seconds held / ideal GPU-seconds, the ``gpu_time_inflation``
metric restricted to finished jobs). ``--json`` prints the same as JSON instead.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

#: The per-job CSV columns this report reads (a subset of envs.sim.metrics.JOBS_CSV_COLUMNS).
REQUIRED_COLUMNS = ("policy", "finish", "gpus", "servers", "gpu_seconds", "ideal_gpu_seconds")


class JobsCsvError(ValueError):
    """A per-job CSV that is missing, unreadable or not in the expected format."""


@dataclass(frozen=True)
class SlowdownRow:
    """The slowdown statistics of one group of jobs (one GPU count, or ``all``)."""

    gpus: str
    jobs: int
    mean: float
    median: float
    p90: float
    max: float
    servers_mean: float
    servers_max: int
    gpu_time_inflation: float


@dataclass(frozen=True)
class Jobs:
    """Finished jobs of one policy, as arrays."""

    gpus: np.ndarray
    servers: np.ndarray
    gpu_seconds: np.ndarray
    ideal_gpu_seconds: np.ndarray


def read_jobs(path: Path) -> dict[str, Jobs]:
    """Finished jobs with a positive ideal, per policy in file order; raises JobsCsvError."""
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [name for name in REQUIRED_COLUMNS if name not in (reader.fieldnames or [])]
            if missing:
                raise JobsCsvError(
                    f"{path}: not a per-job CSV of simulate.py run --jobs-csv "
                    f"(missing columns {', '.join(missing)})"
                )
            rows = [row for row in reader if row["finish"]]
    except OSError as error:
        raise JobsCsvError(f"cannot read {path}: {error.strerror or error}") from error
    except (csv.Error, UnicodeDecodeError) as error:
        raise JobsCsvError(f"{path}: not a CSV file ({error})") from error
    policies: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        policies.setdefault(row["policy"], []).append(row)
    try:
        jobs = {
            policy: Jobs(
                gpus=np.array([int(row["gpus"]) for row in group], dtype=np.int64),
                servers=np.array([int(row["servers"]) for row in group], dtype=np.int64),
                gpu_seconds=np.array([float(row["gpu_seconds"]) for row in group]),
                ideal_gpu_seconds=np.array([float(row["ideal_gpu_seconds"]) for row in group]),
            )
            for policy, group in policies.items()
        }
    except (TypeError, ValueError) as error:
        raise JobsCsvError(f"{path}: a value is not a number ({error})") from error
    # A zero-length job has no slowdown to speak of; keep the rest.
    return {
        policy: Jobs(*(array[group.ideal_gpu_seconds > 0] for array in asdict(group).values()))
        for policy, group in jobs.items()
    }


def slowdown_rows(jobs: Jobs) -> list[SlowdownRow]:
    """One row per GPU count (ascending), then the ``all`` row."""
    slowdown = jobs.gpu_seconds / jobs.ideal_gpu_seconds
    groups = [(str(g), jobs.gpus == g) for g in np.unique(jobs.gpus).tolist()]
    groups.append(("all", np.ones(len(slowdown), dtype=bool)))
    rows = []
    for label, mask in groups:
        if not mask.any():
            continue
        values = slowdown[mask]
        rows.append(
            SlowdownRow(
                gpus=label,
                jobs=int(mask.sum()),
                mean=float(values.mean()),
                median=float(np.median(values)),
                p90=float(np.percentile(values, 90)),
                max=float(values.max()),
                servers_mean=float(jobs.servers[mask].mean()),
                servers_max=int(jobs.servers[mask].max()),
                gpu_time_inflation=float(
                    jobs.gpu_seconds[mask].sum() / jobs.ideal_gpu_seconds[mask].sum()
                ),
            )
        )
    return rows


def format_table(title: str, rows: list[SlowdownRow]) -> str:
    """Rows as an aligned text table under ``title``."""
    header = ("GPUs", "jobs", "mean", "median", "p90", "max", "servers mean", "max", "GPU-time")
    cells = [header] + [
        (
            row.gpus,
            str(row.jobs),
            f"{row.mean:.2f}",
            f"{row.median:.2f}",
            f"{row.p90:.2f}",
            f"{row.max:.2f}",
            f"{row.servers_mean:.1f}",
            str(row.servers_max),
            f"{row.gpu_time_inflation:.2f}",
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = [title]
    for index, line in enumerate(cells):
        lines.append("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="slowdown_by_gpus.py",
        description="Per-job slowdown (GPU-seconds held / ideal) by GPU count and policy, "
        "from the per-job CSV of simulate.py run --jobs-csv.",
    )
    parser.add_argument(
        "--jobs-csv",
        metavar="FILE",
        type=Path,
        action="append",
        required=True,
        help="per-job CSV written by simulate.py run --jobs-csv; repeat to report several",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the rows as JSON instead of tables"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Print the report; a missing or malformed file is one line on stderr and exit 2."""
    args = parse_args(argv)
    report: dict[str, dict[str, list[dict[str, object]]]] = {}
    try:
        for path in args.jobs_csv:
            jobs = read_jobs(path)
            if not jobs:
                raise JobsCsvError(f"{path}: no finished jobs to report")
            report[str(path)] = {
                policy: [asdict(row) for row in slowdown_rows(group)]
                for policy, group in jobs.items()
            }
    except JobsCsvError as error:
        print(f"slowdown_by_gpus.py: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for path, policies in report.items():
        for policy, rows in policies.items():
            table = format_table(f"{policy} ({path})", [SlowdownRow(**row) for row in rows])
            print(table, end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
