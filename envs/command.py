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


def policy_option(default: str, choices: tuple[str, ...], what: str = "baseline") -> CommandOption:
    """``--policy``: one of a formulation's baselines, ``default`` unless given."""
    return CommandOption("--policy", f"{what} (default {default})", default, choices=choices)


def seed_option(of: str) -> CommandOption:
    """``--seed`` (default 0): the seed of ``of`` (e.g. "the first job set")."""
    return CommandOption("--seed", f"seed of {of}, an integer >= 0 (default 0)", 0, type=parse_seed)


def parse_seed(text: str) -> int:
    """A seed, an integer >= 0, as an option's ``type``: argparse names the option in its
    message (the formulations' own check, run later, could not say which option it was)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        # numpy's generators take no negative seed.
        raise argparse.ArgumentTypeError(f"a seed is an integer >= 0, got {text!r}")
    return value


def jobs_file_option(text: str = "an explicit job list (JSON) instead") -> CommandOption:
    """``--jobs-file`` (help ``text``): an explicit job list to play instead of seeded ones."""
    return CommandOption("--jobs-file", text, type=Path)


def forward_options(
    runner: Callable[..., dict[str, Any]], *keys: str, optional: tuple[str, ...] = ()
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A command's ``run`` that calls ``runner(policy, jobs=..., **options)``: the
    ``--policy``, the ``--jobs-file`` list (None without one), the options ``keys``, and
    those of ``optional`` that were given (the others keep the runner's defaults)."""

    def run(options: dict[str, Any]) -> dict[str, Any]:
        params = {key: options[key] for key in keys}
        params.update({key: options[key] for key in optional if options[key] is not None})
        jobs = jobs_from_file(options)
        try:
            return runner(options["policy"], jobs=jobs, **params)
        except (ValueError, TypeError, KeyError) as error:
            path = options.get("jobs_file")
            if jobs is None or str(error).startswith(str(path)):
                raise
            # A bad job list: say which file it came from.
            raise ValueError(f"{path}: {error}") from None

    run.__doc__ = f":func:`{runner.__module__}.{runner.__qualname__}` with the options given."
    return run


def jobs_from_file(options: dict[str, Any]) -> Any:
    """The explicit job list of ``--jobs-file`` (JSON), or None when it was not given."""
    path = options.get("jobs_file")
    if path is None:
        return None
    try:
        return json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON job list ({error})") from None


def titled_report(
    title: str, keys: tuple[str, ...]
) -> Callable[[dict[str, Any], dict[str, Any]], str]:
    """A command's ``report``: ``title`` filled in with the options (``str.format`` by
    ``dest``), then the summary's ``keys`` (:func:`format_summary`)."""

    def report(summary: dict[str, Any], options: dict[str, Any]) -> str:
        return "\n".join([title.format(**options), format_summary(summary, keys)])

    return report


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
