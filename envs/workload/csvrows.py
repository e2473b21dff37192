"""CSV rows of a trace file with 1-based line numbers, and the bad-row log.

Trace readers iterate :class:`CsvFile` and hand every malformed row's
:class:`~envs.workload.parsing.TraceFormatError` to an :class:`ErrorLog`, which raises it
or -- with ``skip_bad_rows`` -- counts it and keeps the first few for the report.
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
    """A CSV file's header and data rows, with 1-based line numbers; blank lines skipped."""

    def __init__(self, path: PathType, delimiter: str = ",") -> None:
        self.path = str(path)
        self._handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed in __exit__
        self._reader = csv.reader(self._handle, delimiter=delimiter)
        self._pending: tuple[int, list[str]] | None = None
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

    def _next_row(self) -> tuple[int, list[str]] | None:
        try:
            for row in self._reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                return self._reader.line_num, row
        except UnicodeDecodeError:
            raise TraceFormatError(
                self.path,
                self._reader.line_num + 1,
                "(file)",
                "not a UTF-8 text CSV (a binary or compressed file?)",
            ) from None
        return None

    def header(
        self, required: Sequence[str], *, positional: Sequence[str] | None = None
    ) -> dict[str, int]:
        """Column positions by name, read from the header line.

        With ``positional``, a file whose first row is not a header (Alibaba releases its
        tables headerless) is read as having exactly those columns in that order.
        """
        first = self._next_row()
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
            return {name: position for position, name in enumerate(names)}
        if positional is not None and names[0] != positional[0]:
            self._pending = first
            self.width = len(positional)
            return {name: position for position, name in enumerate(positional)}
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
