"""A formulation's baselines on the command line, declared as data.

Each single-agent formulation names its options and what to do with them in a
:class:`BaselineCommand` (its environment class's ``command``); ``platform/paper_baselines.py``
(and ``platform/simulate.py``'s subcommands of the same names) build one subcommand per
formulation from them, so no program holds a copy of any formulation's parser. The command
runs in :attr:`BaselineCommand.run` (options -> a JSON-able summary; bad values raise
ValueError) and reads as text through :attr:`BaselineCommand.report`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CommandOption:
    """One ``--option``: argparse's keywords for it (``dest`` is the flag in snake case)."""

    flag: str
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    choices: tuple[Any, ...] | None = None
    required: bool = False

    def argparse_keywords(self) -> dict[str, Any]:
        """The keywords of ``parser.add_argument(self.flag, ...)``."""
        keywords: dict[str, Any] = {"help": self.help, "default": self.default}
        if self.type is not None:
            keywords["type"] = self.type
        if self.choices is not None:
            keywords["choices"] = self.choices
        if self.required:
            keywords["required"] = True
        return keywords


@dataclass(frozen=True)
class BaselineCommand:
    """``NAME [options] [--json]``: run a formulation's baselines and report them.

    ``run(options)`` takes the parsed options by ``dest`` and returns the summary printed
    as JSON with ``--json``; ``report(summary, options)`` is the text printed otherwise.
    """

    help: str
    run: Callable[[dict[str, Any]], dict[str, Any]]
    report: Callable[[dict[str, Any], dict[str, Any]], str]
    options: tuple[CommandOption, ...] = field(default_factory=tuple)


def jobs_from_file(options: dict[str, Any]) -> Any:
    """The explicit job list of ``--jobs-file`` (JSON), or None when it was not given."""
    path = options.get("jobs_file")
    return None if path is None else json.loads(Path(path).read_text())


def format_summary(summary: dict[str, Any], keys: tuple[str, ...]) -> str:
    """``keys`` of ``summary``, one per line (those it has), floats to four digits."""
    lines = []
    for key in keys:
        if key not in summary:
            continue
        value = summary[key]
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        lines.append(f"  {key:<26}{shown}")
    return "\n".join(lines)


def int_list(text: str) -> tuple[int, ...]:
    """``"2,2,2,2"`` as integers (an option's ``type``: argparse shows the message)."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"takes integers separated by commas (e.g. 2,2,2,2), got {text!r}"
        ) from None
