"""What the programs share on their command lines: a bad one is one line,
``<prog>: error: <message>``, and exit status 2 (``train.py``, ``evaluate.py``,
``sweep.py``, ``simulate.py``, ``reproduce.py``, ``paper_baselines.py``)."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """A bad command line: reported as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise :class:`UsageError` instead of printing the
    usage block and exiting (``--help`` still shows the usage); programs that report
    their own errors catch it, the others parse with :meth:`parse_or_exit`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def parse_or_exit(self, argv: list[str] | None = None) -> argparse.Namespace:
        """``parse_args``; a mistake is printed as one line and exits with status 2."""
        try:
            return self.parse_args(argv)
        except UsageError as error:
            self.refuse(error)

    def refuse(self, problem: object) -> NoReturn:
        """Print ``<prog>: error: <problem>`` as one line on stderr and exit with status 2:
        for what a program checks itself after parsing, before any work."""
        self.exit(2, f"{self.prog}: error: {problem}\n")
