"""Policies' metrics side by side, for people (tables) and programs (JSON-safe dicts)."""

from __future__ import annotations

import math
from typing import Any

# (column title, metric, format): "hours" shows seconds as hours.
TABLE_COLUMNS = (
    ("jobs", "jobs_finished", "{:d}"),
    ("avg JCT h", "avg_jct", "hours"),
    ("p50 JCT h", "median_jct", "hours"),
    ("p90 JCT h", "p90_jct", "hours"),
    ("p99 JCT h", "p99_jct", "hours"),
    ("makespan h", "makespan", "hours"),
    ("wait h", "avg_wait", "hours"),
    ("slowdown", "avg_slowdown", "{:.2f}"),
    ("util", "gpu_utilization", "{:.3f}"),
    ("frag", "fragmentation", "{:.3f}"),
    ("CS", "avg_contention", "{:.2f}"),
    ("GPU-s", "gpu_seconds", "{:.3g}"),
    ("GPU-s x", "gpu_time_inflation", "{:.2f}"),
)


def _cell(value: Any, style: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, float):
        value += 0.0  # -0.0 (and only it) becomes 0.0: it would print as "-0.00"
    if style == "hours":
        return f"{value / 3600:.2f}"
    if style == "{:d}":
        return f"{value:.0f}" if isinstance(value, float) else f"{value:d}"
    if not isinstance(value, int | float):
        return str(value)
    return style.format(value)


def format_comparison(metrics: dict[str, dict[str, Any]]) -> str:
    """One row per policy: ``{policy: {metric: value}}``.

    Columns: simulate.py's metrics (:data:`TABLE_COLUMNS`) that some policy has, plus the
    RL ``episode_return`` when present; a table with none of simulate.py's metrics (a
    formulation's own summary, e.g. DeepRM's slowdowns) shows every numeric metric.
    """
    present = dict.fromkeys(key for values in metrics.values() for key in values)
    columns = [column for column in TABLE_COLUMNS if column[1] in present]
    known = {key for _, key, _ in TABLE_COLUMNS}
    others = [key for key in present if key not in known]
    if columns:
        others = [key for key in others if key == "episode_return"]
    columns += [(key, key, "{:.4g}") for key in others]
    header = ["policy", *(title for title, _, _ in columns)]
    rows = [
        [name, *(_cell(values.get(key), style) for _, key, style in columns)]
        for name, values in metrics.items()
    ]
    return align_rows(header, rows)


def align_rows(header: list[str], rows: list[list[str]]) -> str:
    """A text table: columns right-aligned to their widest cell, dashes under the header."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def json_safe(value: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by None, recursively."""
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
