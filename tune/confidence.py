"""Statistics of a held-out evaluation: means with Student-t confidence intervals over seeds,
and the comparison of a learned policy with the best heuristic.

Each evaluation seed is one independent episode (its own workload draw), so a policy's
per-seed figures are an i.i.d. sample and the mean's confidence interval is Student's t
with ``n - 1`` degrees of freedom: ``mean ± t_{(1+level)/2, n-1} * s / sqrt(n)``, ``s`` the
sample standard deviation (``ddof=1``). With ten seeds the 95% interval is
``mean ± 2.262 s / sqrt(10)``. The intervals are per policy. Two policies played on the
same seeds are also compared pairwise (:func:`paired_relative_ci`): the per-seed relative
differences share each workload's difficulty, so their interval is much narrower than the
two policies' intervals side by side, and it is the one that says whether a difference is
real.

How to use::

    from tune.confidence import mean_ci, best_heuristic

    mean, half_width = mean_ci([7.1, 7.4, 6.9])      # 95%: mean ± half_width
    best = best_heuristic(table, ["fifo+packing", "sjf+lif"], "avg_jct")
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The metrics a comparison reports first (lower is better for each).
HEADLINE_METRICS: tuple[str, ...] = ("avg_jct", "p90_jct", "makespan", "avg_contention")
#: Suffix of a confidence half-width's metric name (``avg_jct_ci95``).
CI_SUFFIX = "_ci95"


def finite_values(values: Iterable[Any]) -> list[float]:
    """The values that are real numbers (None, NaN and infinities dropped)."""
    kept = []
    for value in values:
        if value is None or isinstance(value, bool):
            continue
        number = float(value)
        if math.isfinite(number):
            kept.append(number)
    return kept


def mean_ci(values: Iterable[Any], level: float = 0.95) -> tuple[float, float]:
    """The mean of ``values`` and the half-width of its ``level`` Student-t interval.

    None and non-finite values are left out (an episode where no job finished has no
    average JCT; the count ``n`` is of the values kept). With no value both are NaN;
    with one value the half-width is NaN (one sample says nothing about the spread);
    equal values give a half-width of 0. Raises ValueError unless ``0 < level < 1``.
    """
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise ValueError(f"level must be a probability in (0, 1), e.g. 0.95; got {level!r}")
    kept = finite_values(values)
    count = len(kept)
    if count == 0:
        return float("nan"), float("nan")
    if count == 1:
        return kept[0], float("nan")
    mean, standard_error = _mean_and_standard_error(kept)
    return mean, _student_t_quantile((1.0 + level) / 2.0, count - 1) * standard_error


def upper_bound(values: Iterable[Any], confidence: float) -> float:
    """The one-sided ``confidence`` Student-t upper bound of the mean of ``values``:
    ``mean + t_{confidence, n-1} * s / sqrt(n)`` over the finite values, NaN with fewer
    than two (``mean_ci``'s interval at ``level`` is this bound at ``(1 + level) / 2``)."""
    kept = finite_values(values)
    if len(kept) < 2:
        return float("nan")
    mean, standard_error = _mean_and_standard_error(kept)
    return mean + _student_t_quantile(confidence, len(kept) - 1) * standard_error


def _mean_and_standard_error(kept: list[float]) -> tuple[float, float]:
    """The mean of two or more numbers and its standard error (``ddof=1``)."""
    count = len(kept)
    mean = math.fsum(kept) / count
    variance = math.fsum((value - mean) ** 2 for value in kept) / (count - 1)
    return mean, math.sqrt(variance / count)


def _student_t_quantile(probability: float, degrees_of_freedom: int) -> float:
    """Student's t quantile (scipy, imported only when an interval is computed)."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(probability, degrees_of_freedom))


def summarize(
    per_seed: Mapping[str, Sequence[Any]], level: float = 0.95
) -> tuple[dict[str, float], dict[str, float]]:
    """``(means, half_widths)`` of every metric of ``{metric: per-seed values}``."""
    means, half_widths = {}, {}
    for metric, values in per_seed.items():
        means[metric], half_widths[metric] = mean_ci(values, level)
    return means, half_widths


def best_heuristic(
    table: Mapping[str, Mapping[str, Any]], heuristics: Iterable[str], metric: str = "avg_jct"
) -> str | None:
    """The heuristic of ``table`` with the lowest mean ``metric`` (``table[name]["metrics"]``);
    ties go to the first listed. None when no heuristic has a finite value."""
    best, best_value = None, math.inf
    for name in heuristics:
        value = table.get(name, {}).get("metrics", {}).get(metric)
        if value is None or isinstance(value, bool):
            continue
        value = float(value)
        if math.isfinite(value) and value < best_value:
            best, best_value = name, value
    return best


def relative_difference(value: Any, reference: Any) -> float:
    """``(value - reference) / reference``: -0.12 means 12% lower than the reference.

    NaN when either is missing or not finite, or the reference is 0.
    """
    if value is None or reference is None:
        return float("nan")
    value, reference = float(value), float(reference)
    if not (math.isfinite(value) and math.isfinite(reference)) or reference == 0:
        return float("nan")
    return (value - reference) / reference


def paired_relative_ci(
    values: Sequence[Any], references: Sequence[Any], level: float = 0.95
) -> tuple[float, float]:
    """Mean and ``level`` Student-t half-width of the per-seed relative differences
    ``(values[i] - references[i]) / references[i]`` -- a paired comparison of two policies
    played on the same seeds (index ``i`` is one seed). Seeds where either is missing or
    not finite, or the reference is 0, are left out. Raises ValueError when the two
    sequences differ in length (they must be aligned by seed)."""
    if len(values) != len(references):
        raise ValueError(
            f"paired values must be aligned by seed: {len(values)} values, "
            f"{len(references)} references"
        )
    differences = [
        relative_difference(value, reference)
        for value, reference in zip(values, references, strict=True)
    ]
    return mean_ci(differences, level)
