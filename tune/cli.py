"""What the programs share on their command lines: a bad one is one line,
``<prog>: error: <message>``, and exit status 2 (``train.py``, ``evaluate.py``,
``sweep.py``, ``simulate.py``, ``reproduce.py``, ``paper_baselines.py``); a reader that
closes their output early (``simulate.py ... --json | head -c 10``) ends them quietly
with :data:`STDOUT_CLOSED_STATUS` (:func:`run_subcommand`, :func:`silence_stdout`; for a
long run that prints as it goes, :class:`GuardedStdout`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn, TextIO

#: The exit status of a program whose reader closed its stdout (``... | head``): 128 +
#: SIGPIPE (13), the status a shell reports for any Unix tool that SIGPIPE ended (``cat
#: big.txt | head``). Not 2: nothing was wrong with the command line; not 0: the output
#: was cut short, which ``set -o pipefail`` scripts may want to see. A plain pipeline's
#: status is its last command's (``head``'s), so ``| head`` stays a success there.
STDOUT_CLOSED_STATUS = 128 + 13


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


def silence_stdout() -> None:
    """Send stdout to the null device, after a write to it raised BrokenPipeError.

    The reader is gone, so what is still buffered and whatever is printed later has no
    one to go to; without this, every later print and the interpreter's own flush at exit
    raise again (the latter prints "Exception ignored ... BrokenPipeError" and exits 120).
    A stream without a file descriptor (a test's captured stdout) is replaced instead.
    """
    if not _point_at_null_device(sys.stdout):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- stdout, open until exit


def _point_at_null_device(stream: Any) -> bool:
    """Point ``stream``'s file descriptor at the null device; False if it has none."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return False
    finally:
        os.close(devnull)
    return True


def run_subcommand(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv`` and run the chosen subcommand's ``handler`` (set with
    ``set_defaults(handler=...)``); returns the exit status.

    A bad command line or value (:class:`UsageError`, ValueError, OSError) is one line on
    stderr and status 2; a reader that closed stdout ends the program quietly with
    :data:`STDOUT_CLOSED_STATUS` (checked first: BrokenPipeError is an OSError, and a
    closed pipe is no mistake of the command line).
    """
    try:
        args = parser.parse_args(argv)
        return args.handler(args)
    except BrokenPipeError:
        silence_stdout()
        return STDOUT_CLOSED_STATUS
    except (UsageError, ValueError, OSError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2


class GuardedStdout:
    """A stand-in for stdout (``contextlib.redirect_stdout``) through a long run whose
    reader may leave (``train.py ... | head``), so that the run goes on and finishes.

    Without it, the first print that found the reader gone raised BrokenPipeError from
    wherever it was: from Tune's progress table before the first trial, or from the final
    ``--json`` print after the training -- a traceback, and no training or no exit status
    to trust. Here the first write or flush that finds the reader gone silences stdout (as
    :func:`silence_stdout` does) and sets :attr:`reader_left`; later output is dropped.
    Everything else (``fileno``, ``encoding``, ``isatty``) is the real stream's.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        #: True once a write or flush found the reader gone.
        self.reader_left = False

    def write(self, text: str) -> int:
        """Write ``text`` to the real stream while it has a reader."""
        if not self.reader_left:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        """Flush the real stream while it has a reader."""
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self.reader_left = True
        # The real stream's buffer still holds what could not be written: flushed at exit,
        # it goes to the null device instead of raising again. (A stream without a file
        # descriptor is written no more: this guard drops what follows.)
        _point_at_null_device(self._stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
