"""Field-level parsing for trace files: numbers, timestamps, column maps, located errors.

A trace row is turned into numbers by the small functions here; each raises
:class:`FieldError` naming the field, and the reader adds the file and line to make a
:class:`TraceFormatError`. Keeping the location out of the per-field functions keeps them
cheap enough to call ~10^5 times per trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime

#: Keys a user column map (``--map``) may set, and what each column holds.
COLUMN_KEYS: dict[str, str] = {
    "arrival": "submission time: seconds or an ISO-8601 timestamp (required)",
    "gpus": "GPUs of the whole job (required)",
    "duration": "run time, in --duration-unit (required unless start and end are given)",
    "start": "start time, seconds or ISO-8601 (with end, instead of duration)",
    "end": "end time, seconds or ISO-8601 (with start, instead of duration)",
    "cpus": "CPU cores of the whole job (optional)",
    "workers": "number of workers the GPUs are spread over (optional)",
    "user": "user name (optional)",
    "vc": "virtual cluster / partition name (optional)",
}

#: The most GPUs, workers or task instances one trace job may have. No real job comes near
#: it, and it keeps counts -- and their sums and products over a whole trace -- far from
#: overflowing the int64 arrays of a Workload.
MAX_COUNT: int = 2**31 - 1

#: Seconds per unit accepted for durations and numeric arrival times.
TIME_UNITS: dict[str, float] = {"s": 1.0, "min": 60.0, "h": 3600.0}


class TraceFormatError(ValueError):
    """A malformed trace row: names the file, the 1-based line number and the field."""

    def __init__(
        self, path: str, line: int, field: str, problem: str, value: str | None = None
    ) -> None:
        self.path = str(path)
        self.line = int(line)
        self.field = field
        self.problem = problem
        self.value = value
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"{self.path}:{self.line}: field {field!r}: {problem}{shown}")

    def __reduce__(self) -> tuple[type, tuple[str, int, str, str, str | None]]:
        # Exceptions cross process boundaries (Ray workers); keep the structured fields.
        return (type(self), (self.path, self.line, self.field, self.problem, self.value))


class FieldError(ValueError):
    """A bad field value, before the reader knows which file and line it came from."""

    def __init__(self, field: str, problem: str, value: str | None = None) -> None:
        self.field = field
        self.problem = problem
        self.value = value
        super().__init__(f"field {field!r}: {problem}")

    def located(self, path: str, line: int) -> TraceFormatError:
        """The same error with its file and line."""
        return TraceFormatError(path, line, self.field, self.problem, self.value)


def parse_number(text: str, field: str, *, minimum: float | None = 0.0) -> float:
    """A finite float, at least ``minimum`` (None: any sign)."""
    try:
        value = float(text)
    except ValueError:
        problem = "is empty; a number is required" if not text.strip() else "is not a number"
        raise FieldError(field, problem, text) from None
    if not math.isfinite(value):
        raise FieldError(field, "must be a finite number", text)
    if minimum is not None and value < minimum:
        raise FieldError(field, f"must be >= {minimum:g}", text)
    return value


def parse_optional_number(text: str, field: str, *, minimum: float | None = 0.0) -> float:
    """As :func:`parse_number`, but an empty field gives NaN."""
    if not text.strip():
        return math.nan
    return parse_number(text, field, minimum=minimum)


def parse_count(text: str, field: str, *, minimum: int = 0) -> int:
    """A whole number (``"4"`` or ``"4.0"``) from ``minimum`` to :data:`MAX_COUNT`."""
    value = parse_number(text, field, minimum=None)
    if value != int(value):
        raise FieldError(field, "must be a whole number", text)
    if value < minimum:
        raise FieldError(field, f"must be >= {minimum}", text)
    if value > MAX_COUNT:
        raise FieldError(field, f"must be at most {MAX_COUNT} (2^31 - 1)", text)
    return int(value)


def _looks_like_date(text: str) -> bool:
    # "YYYY-MM-DD..." -- checked by position so numbers such as "-1e-5" never qualify.
    return len(text) >= 10 and text[4] == "-" and text[7] == "-" and text[:4].isdigit()


def parse_timestamp(text: str) -> float:
    """Seconds since the Unix epoch of an ISO-8601 timestamp; naive ones are taken as UTC.

    Raises ValueError if ``text`` is not ISO-8601.
    """
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def parse_time(text: str, field: str, *, unit_s: float = 1.0) -> float:
    """A point in time in seconds: a number (times ``unit_s``) or an ISO-8601 timestamp."""
    stripped = text.strip()
    if _looks_like_date(stripped):
        try:
            return parse_timestamp(stripped)
        except ValueError:
            raise FieldError(
                field, "is not a valid ISO-8601 timestamp (YYYY-MM-DD[ HH:MM:SS])", text
            ) from None
    try:
        value = float(stripped)
    except ValueError:
        problem = (
            "is empty; a time is required"
            if not stripped
            else "is neither a number of seconds nor an ISO-8601 timestamp"
        )
        raise FieldError(field, problem, text) from None
    if not math.isfinite(value):
        raise FieldError(field, "must be a finite time", text)
    return value * unit_s


def parse_optional_time(text: str, field: str, *, unit_s: float = 1.0) -> float:
    """As :func:`parse_time`, but an empty field gives NaN."""
    if not text.strip():
        return math.nan
    return parse_time(text, field, unit_s=unit_s)


def parse_name(text: str, field: str) -> str:
    """A non-empty label (user, VC, job name)."""
    name = text.strip()
    if not name:
        raise FieldError(field, "is empty; a name is required", text)
    return name


def time_unit(unit: str, label: str) -> float:
    """Seconds per ``unit`` (s, min or h); ValueError naming ``label`` otherwise."""
    try:
        return TIME_UNITS[unit]
    except (KeyError, TypeError):
        raise ValueError(f"{label} {unit!r} is unknown; allowed: {', '.join(TIME_UNITS)}") from None


def parse_column_map(spec: str | Mapping[str, str]) -> dict[str, str]:
    """A column map from ``"arrival=submit_time,gpus=num_gpus,duration=duration"`` or a dict.

    Keys are :data:`COLUMN_KEYS`; values are CSV header names. ``arrival`` and ``gpus`` are
    required, and either ``duration`` or both ``start`` and ``end``.
    """
    if isinstance(spec, Mapping):
        pairs = [(str(key), str(value)) for key, value in spec.items()]
    elif isinstance(spec, str):
        if not spec.strip():
            raise ValueError(
                "column map is empty; write it as key=column pairs, e.g. "
                "'arrival=submit_time,gpus=num_gpus,duration=duration'"
            )
        pairs = []
        for item in spec.split(","):
            key, sign, column = item.partition("=")
            if not sign:
                raise ValueError(
                    f"column map item {item.strip()!r} has no '='; write key=column, "
                    "e.g. gpus=num_gpus"
                )
            pairs.append((key.strip(), column.strip()))
    else:
        raise TypeError(f"a column map is a 'key=column,...' string or a dict, got {spec!r}")

    mapping: dict[str, str] = {}
    for key, column in pairs:
        if key not in COLUMN_KEYS:
            raise ValueError(
                f"column map key {key!r} is unknown; allowed: {', '.join(COLUMN_KEYS)}"
            )
        if not column:
            raise ValueError(f"column map key {key!r} names no column; write {key}=COLUMN")
        if key in mapping:
            raise ValueError(f"column map sets {key!r} twice ({mapping[key]!r} and {column!r})")
        mapping[key] = column
    missing = [key for key in ("arrival", "gpus") if key not in mapping]
    if missing:
        raise ValueError(f"column map lacks {', '.join(missing)}; arrival and gpus are required")
    has_span = "start" in mapping and "end" in mapping
    if "duration" not in mapping and not has_span:
        raise ValueError("column map needs duration=COLUMN, or both start=COLUMN and end=COLUMN")
    if ("start" in mapping) != ("end" in mapping):
        raise ValueError("column map gives only one of start and end; give both or neither")
    return mapping
