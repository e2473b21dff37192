"""Run every benchmark (``bench_*.py`` beside this file), or those named on the command line.

How to run: ``make bench`` or ``python benchmarks/run.py [topology ...]``.
What you get: one table per benchmark and ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from common import selected_names

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    """Import and run each selected benchmark module's ``main()``. ``--help``, an unknown or
    a repeated name: SystemExit before any benchmark runs (see ``common.selected_names``)."""
    available = sorted(path.stem.removeprefix("bench_") for path in HERE.glob("bench_*.py"))
    selected = selected_names(argv, available, "run.py", about=__doc__, kind="benchmark")
    for name in selected:
        importlib.import_module(f"bench_{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
