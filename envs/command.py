"""A formulation's baselines on the command line, declared as data.

Each single-agent formulation names its options and what to do with them in a
:class:`BaselineCommand` (its environment class's ``command``); ``platform/paper_baselines.py``
(and ``platform/simulate.py``'s subcommands of the same names) build one subcommand per
formulation from them, so no program holds a copy of any formulation's parser. The command
runs in :meth:`BaselineCommand.run` (options -> a JSON-able summary; bad values raise
ValueError naming the option as typed, ``--num-jobs``) and reads as text through
:attr:`BaselineCommand.report`.
"""

from __future__ import annotations

import argparse
import json
import re
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

    @property
    def dest(self) -> str:
        """The parsed option's name, argparse's: ``--num-jobs`` -> ``num_jobs``."""
        return self.flag.lstrip("-").replace("-", "_")

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

    ``summarize(options)`` takes the parsed options by ``dest`` and returns the summary
    printed as JSON with ``--json`` (:meth:`run` calls it); ``report(summary, options)`` is
    the text printed otherwise.
    """

    help: str
    summarize: Callable[[dict[str, Any]], dict[str, Any]]
    report: Callable[[dict[str, Any], dict[str, Any]], str]
    options: tuple[CommandOption, ...] = field(default_factory=tuple)

    def run(self, options: dict[str, Any]) -> dict[str, Any]:
        """The summary of the parsed ``options``; a bad value is a ValueError that names
        the option as typed, or the ``--jobs-file`` it came from.

        The formulations check their values where the API does too (configs, runners), so
        their messages name config keys (``num_jobs must be at most 10,000,000``), while
        the user typed ``--num-jobs``: such names are rewritten
        (:func:`name_options_as_typed`). Any other error of a run with a ``--jobs-file``
        is about the jobs read from it, and starts with its path.
        """
        path = options.get("jobs_file")
        try:
            return self.summarize(options)
        except ValueError as error:
            message = str(error)
            typed = name_options_as_typed(message, self.options)
            if typed != message:
                raise ValueError(typed) from None
            if path is None or message.startswith(str(path)) or self.names_an_option(message):
                raise
            raise ValueError(f"{path}: {message}") from None
        except (TypeError, KeyError) as error:
            # A job of the wrong shape can fail before its parser names what is wrong.
            if path is None:
                raise
            raise ValueError(f"{path}: {error}") from None

    def names_an_option(self, message: str) -> bool:
        """True when ``message`` names one of the options by flag (``--num-nw must be``)."""
        return any(
            re.search(rf"(?<![\w-]){re.escape(option.flag)}(?![\w-])", message)
            for option in self.options
        )


def name_options_as_typed(message: str, options: tuple[CommandOption, ...]) -> str:
    """``message`` with the options it names by ``dest`` named by flag, as typed.

    A message that starts with an option's name is about that option (``nodes must be an
    integer >= 1``: ``--nodes must be ...``). Further in, only names with an underscore
    are rewritten (``lower queue_size, time_horizon or ...``): a snake_case word is a key,
    where a plain one (``nodes``, ``seed``, ``placement``) is as likely English.
    """
    flags = {option.dest: option.flag for option in options}
    leading = re.match(r"(\w+)\b", message)
    if leading is not None and leading.group(1) in flags:
        message = flags[leading.group(1)] + message[leading.end() :]
    keys = [dest for dest in flags if "_" in dest]
    if not keys:
        return message
    # Not after "-": a flag already rewritten (or typed) keeps its spelling.
    pattern = r"(?<![\w-])(" + "|".join(map(re.escape, keys)) + r")\b"
    return re.sub(pattern, lambda match: flags[match.group(1)], message)


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
        # BaselineCommand.run says which option or file a ValueError is about.
        return runner(options["policy"], jobs=jobs_from_file(options), **params)

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
