"""Shared helpers of the benchmarks: timing, a printed table and a JSON file per benchmark."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
#: A results file's name and a ``--label``: one plain part of a file name, no folders.
NAME_PART = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
NAME_PART_RULE = "letters, digits, '_', '-' and '.' (not first), no '/'"


def check_name_part(text: str, what: str) -> str:
    """``text`` when it is a plain file-name part (:data:`NAME_PART`); else ValueError naming
    ``what`` it is and what is allowed."""
    if not NAME_PART.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not a plain file-name part: use {NAME_PART_RULE}")
    return text


def label_argument(text: str) -> str:
    """An argparse ``type`` for ``--label``: a plain file-name part (:func:`check_name_part`)."""
    try:
        return check_name_part(text, "label")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


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
    """Write ``records`` with machine facts to ``benchmarks/results/<name>.json`` and return
    the path; ValueError when ``name`` is not a plain file-name part (a folder in it, say).

    A measurement can take many minutes, so a results folder that cannot be written (a
    full disk, a file in its place, no permission) loses none of it: the records go to a
    new file in the temporary folder instead, which stderr names and which is returned.
    """
    check_name_part(name, "results name")
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "results": records,
    }
    text = json.dumps(payload, indent=2)
    try:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as error:
        handle, kept = tempfile.mkstemp(prefix=f"{name}-", suffix=".json")
        with os.fdopen(handle, "w") as file:
            file.write(text)
        print(
            f"cannot write {path} ({error.strerror or error}); results written to {kept}",
            file=sys.stderr,
        )
        return Path(kept)
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


def selected_names(
    argv: list[str] | None,
    known: Sequence[str],
    program: str,
    about: str = "",
    kind: str = "setting",
) -> list[str]:
    """The names ``argv`` selects, in its order (all ``known`` when it names none).

    ``-h``/``--help``: prints ``about``, the known names and the default, then SystemExit(0).
    An unknown or a repeated name: one line on stderr, then SystemExit(2), before any work.
    """
    names = list(argv or [])
    if "-h" in names or "--help" in names:
        print(f"usage: {program} [{kind} ...]\n")
        if about.strip():
            print(f"{about.strip()}\n")
        print(f"{kind}s: {', '.join(known)} (default: all, in that order; each at most once)")
        raise SystemExit(0)
    problem = name_problem(names, known, kind)
    if problem:
        print(f"{program}: {problem}", file=sys.stderr)
        raise SystemExit(2)
    return names or list(known)


def name_problem(names: Sequence[str], known: Sequence[str], kind: str) -> str | None:
    """What is wrong with selecting ``names`` of ``known`` (an unknown name, saying which
    are known; a name given twice), or None."""
    unknown = [name for name in names if name not in known]
    if unknown:
        return f"unknown {kind}(s) {', '.join(unknown)}; known: {', '.join(known)}"
    repeated = [name for index, name in enumerate(names) if name in names[:index]]
    if repeated:
        return (
            f"{kind}(s) named more than once: {', '.join(dict.fromkeys(repeated))}; "
            "name each at most once"
        )
    return None


def no_arguments(argv: list[str], program: str, about: str) -> None:
    """The command line of a benchmark that takes none: ``-h``/``--help`` prints ``about``
    and exits 0; anything else is one line on stderr and exit 2, before any work."""
    if not argv:
        return
    if argv[0] in ("-h", "--help"):
        print(f"usage: {program}\n\n{about.strip()}")
        raise SystemExit(0)
    print(f"{program}: takes no arguments, got {' '.join(argv)} (see --help)", file=sys.stderr)
    raise SystemExit(2)


def case_list(text: str, known: Sequence[str]) -> list[str]:
    """The comma-separated case names of ``text``, in order; ValueError (saying which are
    allowed) when one is unknown or repeated, or none is named."""
    cases = [case.strip() for case in text.split(",") if case.strip()]
    if not cases:
        raise ValueError(f"--cases: no case named; known: {', '.join(known)}")
    problem = name_problem(cases, known, "case")
    if problem:
        raise ValueError(f"--cases: {problem}")
    return cases
