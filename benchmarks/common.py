"""Shared helpers of the benchmarks: timing, a printed table and a JSON file per benchmark."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(function: Callable[[], Any], repeat: int = 3) -> float:
    """Best wall-clock seconds of ``repeat`` calls (the least disturbed run)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows under aligned column headers."""
    cells = [[str(c) for c in columns], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    print(f"\n{title}")
    for index, row in enumerate(cells):
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


def write_results(name: str, records: list[dict[str, Any]]) -> Path:
    """Write ``records`` with machine facts to ``benchmarks/results/<name>.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "results": records,
    }
    path.write_text(json.dumps(payload, indent=2))
    print(f"results written to {path}")
    return path


def earlier_records(name: str, exclude: list[str], key: str = "setting") -> list[dict[str, Any]]:
    """The records of ``results/<name>.json`` whose ``key`` is not in ``exclude``: what a
    benchmark run on some of its settings keeps of the others' last run (none when the file
    is missing or unreadable)."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        return []
    try:
        records = json.loads(path.read_text()).get("results", [])
    except (OSError, ValueError):
        return []
    return [record for record in records if record.get(key) not in exclude]


def selected_names(argv: list[str] | None, known: Sequence[str], program: str) -> list[str]:
    """The names ``argv`` selects (all ``known`` when it names none); SystemExit with the
    known ones when it names another."""
    selected = list(known) if not argv else list(argv)
    unknown = [name for name in selected if name not in known]
    if unknown:
        raise SystemExit(
            f"{program}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    return selected
