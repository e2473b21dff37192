"""CSV rows of a trace file with 1-based line numbers, and the bad-row log.

Trace readers iterate :class:`CsvFile` and hand every malformed row's
:class:`~envs.workload.parsing.TraceFormatError` to an :class:`ErrorLog`, which raises it
or -- with ``skip_bad_rows`` -- counts it and keeps the first few for the report.

**Quotes.** The published Philly, Helios and PAI files never quote a field, so their
readers open them with ``quoted=False``: a double quote is an ordinary character that
:meth:`CsvFile.check_row` rejects in its field, and a stray quote spoils only its own
row. A generic CSV (``quoted=True``) may quote fields (``"a,b"``), but no field may span
lines: such a row is almost always an unbalanced quote that swallowed the rows after it,
so it is an error even with ``skip_bad_rows`` (skipping it would lose those rows).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from os import PathLike
from types import TracebackType

from envs.workload.parsing import FieldError, TraceFormatError

#: How many skipped-row errors a report keeps verbatim (all are counted).
MAX_REPORTED_ERRORS = 20

PathType = str | PathLike[str]


class ErrorLog:
    """Raises a row's error, or with ``skip`` counts it and keeps the first few."""

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.count = 0
        self.kept: list[TraceFormatError] = []

    def record(self, error: TraceFormatError) -> None:
        """Raise ``error``, or count and keep it when skipping bad rows."""
        if not self.skip:
            raise error
        self.count += 1
        if len(self.kept) < MAX_REPORTED_ERRORS:
            self.kept.append(error)


class CsvFile:
    """A CSV file's header and data rows, with 1-based line numbers; blank lines skipped.

    ``quoted=False`` reads a file whose fields are never quoted (see the module doc);
    ``log`` receives a data row too long for the CSV reader (raised without one).
    """

    def __init__(
        self,
        path: PathType,
        delimiter: str = ",",
        *,
        quoted: bool = True,
        log: ErrorLog | None = None,
    ) -> None:
        self.path = str(path)
        self.quoted = quoted
        self._log = log
        self._handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed in __exit__
        self._reader = csv.reader(
            self._handle,
            delimiter=delimiter,
            quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        )
        self._pending: tuple[int, list[str]] | None = None
        self._line = 0  # last line the reader consumed
        self._names: list[str] = []
        self.width = 0
        self.rows = 0

    def __enter__(self) -> CsvFile:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._handle.close()

    def _next_row(self, *, data: bool = True) -> tuple[int, list[str]] | None:
        """The next non-blank row and its first line; with ``data``, an over-long row is a
        bad data row (counted in ``rows``, handed to the log), else it is raised."""
        reader = self._reader
        while True:
            try:
                for row in reader:
                    start = self._line + 1
                    self._line = reader.line_num
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue
                    # Blank lines come back as empty rows, so a row ending past its first
                    # line holds a quoted line break.
                    if self._line != start:
                        raise TraceFormatError(
                            self.path,
                            start,
                            "(row)",
                            f"a double-quoted field runs from line {start} to line "
                            f"{self._line}; trace fields cannot span lines (an unbalanced quote?)",
                        )
                    return start, row
                return None
            except UnicodeDecodeError:
                raise TraceFormatError(
                    self.path,
                    reader.line_num + 1,
                    "(file)",
                    "not a UTF-8 text CSV (a binary or compressed file?)",
                ) from None
            except csv.Error as error:
                start = self._line + 1
                self._line = reader.line_num
                too_long = self._csv_error(start, error)
                if not data or self._log is None or self._line != start:
                    raise too_long from None
                # One over-long line: the reader resumes at the next line, so it is a bad
                # row like any other and can be skipped.
                self.rows += 1
                self._log.record(too_long)

    def _csv_error(self, start: int, error: csv.Error) -> TraceFormatError:
        """The located error for ``error``, which csv raises for an over-long field."""
        limit = csv.field_size_limit()
        if "field limit" not in str(error):
            # Not raised by any input the dialects used here accept; keep csv's words.
            return TraceFormatError(self.path, start, "(row)", f"unreadable CSV: {error}")
        if self._line != start:
            return TraceFormatError(
                self.path,
                start,
                "(row)",
                f"a double-quoted field runs from line {start} past line {self._line} and "
                f"exceeds {limit} characters (an unbalanced quote?)",
            )
        return TraceFormatError(
            self.path,
            start,
            "(row)",
            f"holds a field longer than {limit} characters, the CSV reader's limit; "
            "trace fields are short numbers and names",
        )

    def header(
        self, required: Sequence[str], *, positional: Sequence[str] | None = None
    ) -> dict[str, int]:
        """Column positions by name, read from the header line.

        With ``positional``, a file whose first row is not a header (Alibaba releases its
        tables headerless) is read as having exactly those columns in that order.
        """
        first = self._next_row(data=False)
        if first is None:
            raise TraceFormatError(
                self.path,
                1,
                "(header)",
                f"file is empty; expected a header with {', '.join(required)}",
            )
        line, row = first
        names = [name.strip() for name in row]
        missing = [name for name in required if name not in names]
        if not missing:
            self.width = len(names)
            self._names = names
            return {name: position for position, name in enumerate(names)}
        if positional is not None and names[0] != positional[0]:
            self._pending = first
            self.width = len(positional)
            self._names = list(positional)
            return {name: position for position, name in enumerate(positional)}
        if not self.quoted and any('"' in name for name in names):
            raise TraceFormatError(
                self.path,
                line,
                "(header)",
                f"is quoted ({', '.join(names)}); this trace format never quotes fields "
                "(read a quoted file as --format csv with a column map)",
            )
        raise TraceFormatError(
            self.path,
            line,
            missing[0],
            f"column missing from the header (header has {', '.join(names)}; "
            f"required: {', '.join(required)})",
        )

    def data(self) -> Iterator[tuple[int, list[str]]]:
        """(line number, fields) of every data row; counts them in ``rows``."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self.rows += 1
            yield pending
        while (item := self._next_row()) is not None:
            self.rows += 1
            yield item

    def check_width(self, row: list[str]) -> None:
        """FieldError unless ``row`` has as many fields as the header."""
        if len(row) != self.width:
            raise FieldError("(row)", f"has {len(row)} fields; the header has {self.width}")

    def check_row(self, row: list[str]) -> None:
        """:meth:`check_width`, and in a file that is never quoted, FieldError for a field
        holding a double quote. (A reader skimming rows for their arrival after an early
        stop checks only the width: a quote elsewhere does not change the arrival.)"""
        self.check_width(row)
        # One C-level scan of the joined row; the per-field search runs only on a hit.
        if not self.quoted and '"' in "".join(row):
            position = next(i for i, text in enumerate(row) if '"' in text)
            raise FieldError(
                self._names[position],
                "holds a double quote, which this trace format never has (a stray quote?)",
                row[position],
            )
