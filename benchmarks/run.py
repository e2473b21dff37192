"""Run every benchmark (``bench_*.py`` beside this file), or those named on the command line.

How to run: ``make bench`` or ``python benchmarks/run.py [topology ...]``.
What you get: one table per benchmark and ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    """Import and run each selected benchmark module's ``main()``."""
    available = sorted(path.stem.removeprefix("bench_") for path in HERE.glob("bench_*.py"))
    selected = argv or available
    unknown = sorted(set(selected) - set(available))
    if unknown:
        print(f"run.py: unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(available)}")
        return 2
    for name in selected:
        importlib.import_module(f"bench_{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
