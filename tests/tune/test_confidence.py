"""Means and Student-t confidence intervals over evaluation seeds, checked by hand."""

from __future__ import annotations

import math

import pytest

from tune.confidence import (
    best_heuristic,
    mean_ci,
    paired_relative_ci,
    relative_difference,
    summarize,
    upper_bound,
)


def test_five_values_by_hand() -> None:
    # mean 3; squared deviations 4+1+0+1+4 = 10, s^2 = 10/4 = 2.5, s/sqrt(5) = sqrt(0.5);
    # t(0.975, 4 dof) = 2.7764 from any t table: 2.7764 * 0.70711 = 1.9632.
    mean, half_width = mean_ci([1, 2, 3, 4, 5])
    assert mean == 3.0
    assert half_width == pytest.approx(2.7764 * math.sqrt(0.5), abs=1e-4)
    # 90%: t(0.95, 4) = 2.1318 -> 1.5074.
    assert mean_ci([1, 2, 3, 4, 5], level=0.90)[1] == pytest.approx(
        2.1318 * math.sqrt(0.5), abs=1e-4
    )


def test_one_sided_upper_bound_by_hand() -> None:
    # The same five values: one-sided 95% is t(0.95, 4) = 2.1318 -> 3 + 1.5074, the upper
    # end of the two-sided 90% interval above.
    assert upper_bound([1, 2, 3, 4, 5], 0.95) == pytest.approx(
        3 + 2.1318 * math.sqrt(0.5), abs=1e-4
    )
    assert upper_bound([5, None, 1, math.nan, 3, 2, 4], 0.95) == upper_bound([1, 2, 3, 4, 5], 0.95)
    assert math.isnan(upper_bound([2.0], 0.95)) and math.isnan(upper_bound([], 0.95))
    assert upper_bound([7.0, 7.0, 7.0], 0.99) == 7.0  # no spread: the mean itself


def test_two_values_and_ten_seeds_by_hand() -> None:
    # [2, 4]: mean 3, s = sqrt(2), s/sqrt(2) = 1; t(0.975, 1) = 12.706.
    assert mean_ci([2.0, 4.0]) == pytest.approx((3.0, 12.706), abs=1e-3)
    # Ten seeds, five at 10 and five at 12: mean 11, s^2 = 10/9, s/sqrt(10) = 1/3;
    # t(0.975, 9) = 2.2622 -> 0.75405.
    mean, half_width = mean_ci([10.0] * 5 + [12.0] * 5)
    assert mean == pytest.approx(11.0)
    assert half_width == pytest.approx(2.2622 / 3, abs=1e-4)


def test_degenerate_samples() -> None:
    assert mean_ci([7.0, 7.0, 7.0]) == (7.0, 0.0)
    mean, half_width = mean_ci([5.0])
    assert mean == 5.0 and math.isnan(half_width)
    # Episodes without a value (no job finished: NaN avg JCT) are not samples.
    assert mean_ci([2.0, None, float("nan"), 4.0]) == pytest.approx((3.0, 12.706), abs=1e-3)
    assert all(math.isnan(value) for value in mean_ci([]))


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, True, "0.95"])
def test_level_must_be_a_probability(level) -> None:
    with pytest.raises(ValueError, match=r"level must be a probability in \(0, 1\)"):
        mean_ci([1.0, 2.0], level=level)


def test_summarize_best_heuristic_and_relative_difference() -> None:
    means, half_widths = summarize({"avg_jct": [1, 2, 3, 4, 5], "p90_jct": [2.0, 4.0]})
    assert means == {"avg_jct": 3.0, "p90_jct": 3.0}
    assert half_widths["p90_jct"] == pytest.approx(12.706, abs=1e-3)
    table = {
        "learned-sampled": {"metrics": {"avg_jct": 80.0}},
        "fifo+packing": {"metrics": {"avg_jct": 100.0}},
        "sjf+lif": {"metrics": {"avg_jct": 90.0}},
        "las+lif": {"metrics": {"avg_jct": float("nan")}},
    }
    heuristics = ["fifo+packing", "sjf+lif", "las+lif"]
    # The learned row is not a heuristic; NaN never wins.
    assert best_heuristic(table, heuristics) == "sjf+lif"
    assert best_heuristic(table, ["las+lif"]) is None
    assert relative_difference(80.0, 90.0) == pytest.approx(-1 / 9)
    assert math.isnan(relative_difference(80.0, 0.0))
    assert math.isnan(relative_difference(None, 90.0))


def test_paired_relative_differences_by_hand() -> None:
    # Per seed: (110-100)/100 = 0.10, (180-200)/200 = -0.10, (330-300)/300 = 0.10;
    # mean 1/30, s = sqrt(((2/30)^2 * 2 + (4/30)^2) / 2) = 0.11547, t(0.975, 2) = 4.303.
    mean, half_width = paired_relative_ci([110.0, 180.0, 330.0], [100.0, 200.0, 300.0])
    assert mean == pytest.approx(1 / 30)
    assert half_width == pytest.approx(4.302653 * 0.1154701 / math.sqrt(3), rel=1e-5)
    # A seed missing on either side is left out of both.
    assert paired_relative_ci([110.0, None, 330.0], [100.0, 200.0, 300.0])[0] == pytest.approx(0.1)
    assert paired_relative_ci([110.0, 220.0], [100.0, float("nan")])[0] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="aligned by seed: 2 values, 3 references"):
        paired_relative_ci([1.0, 2.0], [1.0, 2.0, 3.0])
