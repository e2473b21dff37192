"""benchmarks/bench_headroom.py: each setting's goal as an avg JCT, and a printed row.

The bound itself is tested in tests/envs; the tables come from the evaluation code.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("bench_headroom")


# A small contended workload: queues form, so the heuristics differ.
CONTENDED = {
    "server": "mixed",
    "workload": "poisson",
    "workload_params": {"rate": 10.0},
    "num_jobs": 30,
}


def contended_table(names: list[str]) -> dict[str, dict[str, Any]]:
    """The table of ``names`` on CONTENDED's seeds 0 and 1, with its statistics."""
    from tune.evaluation import add_statistics, evaluate

    return add_statistics(evaluate("pod_scheduling_v0", CONTENDED, [0, 1], names))


def never_above(per_seed: list[float], table: dict[str, dict[str, Any]], name: str) -> bool:
    """Whether each seed's value is at most ``name``'s avg JCT on that seed."""
    reference = [episode["avg_jct"] for episode in table[name]["episodes"]]
    return all(mine <= theirs for mine, theirs in zip(per_seed, reference, strict=True))


def table(**avg_jct: float) -> dict[str, dict[str, Any]]:
    return {
        name.replace("_", "+"): {"metrics": {"avg_jct": value}} for name, value in avg_jct.items()
    }


def test_goals_as_the_largest_avg_jct_that_meets_them(bench: ModuleType) -> None:
    settings = bench.SETTINGS
    rows = table(spf_locality=1000.0, fifo_tetris=2000.0, fifo_lif=1100.0)
    rows["fifo+load-balancing"] = {"metrics": {"avg_jct": 3000.0}}
    # demo: within 3% of the best.
    assert bench.goal_jct(settings["demo"], rows, "spf+locality") == pytest.approx(1030.0)
    # contended: 10% below the best.
    assert bench.goal_jct(settings["contended"], rows, "spf+locality") == pytest.approx(900.0)
    # paper001: 20% below each of tetris, load balancing and LIF, and no worse than the
    # best: LIF's 1,100 x 0.8 = 880 is the tightest.
    assert bench.goal_jct(settings["paper001"], rows, "spf+locality") == pytest.approx(880.0)


def test_a_row_prints_hours_and_ratios(bench: ModuleType) -> None:
    record = {
        "setting": "demo",
        "lower_bound": 3600.0,
        "lower_bound_ci95": 360.0,
        "best_ideal": 5400.0,
        "best_ideal_ci95": 180.0,
        "best_ideal_policy": "spf+packing",
        "best": 7200.0,
        "best_ci95": 720.0,
        "best_policy": "fifo+packing",
        "switching": 7020.0,
        "switching_ci95": 36.0,
        "switching_vs_best": -0.025,
        "switching_vs_best_ci95": 0.004,
        "search": 6840.0,
        "search_ci95": 72.0,
        "search_vs_best": -0.05,
        "search_vs_best_ci95": 0.012,
        "goal_jct": 7416.0,
        "best_over_bound": 2.0,
        "goal_over_bound": 2.06,
    }
    assert bench.row_of(record) == [
        "demo",
        "1.000 ± 0.100",
        "1.500 ± 0.050 (spf+packing)",
        "2.000 ± 0.200 (fifo+packing)",
        "1.950 ± 0.010 (-2.5 ± 0.4%)",
        "1.900 ± 0.020 (-5.0 ± 1.2%)",
        "2.060",
        "2.00x",
        "2.06x",
    ]


def test_unknown_setting_is_refused_before_ray_starts(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        bench.main(["nope"])
    assert caught.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "bench_headroom.py: unknown setting(s) nope; known: demo, contended, paper001"
    ]


def test_help_lists_the_settings_before_ray_starts(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        bench.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "How much room each learning setting leaves a learned scheduler" in out
    assert "settings: demo, contended, paper001 (default: all" in out


def test_a_partial_run_keeps_the_other_settings_last_records(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    common = importlib.import_module("common")
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    assert common.earlier_records("headroom", exclude=["demo"]) == []  # no file yet
    common.write_results("headroom", [{"setting": "demo", "x": 1}, {"setting": "contended"}])
    assert common.earlier_records("headroom", exclude=["demo"]) == [{"setting": "contended"}]
    (tmp_path / "headroom.json").write_text("{not json")
    assert common.earlier_records("headroom", exclude=[]) == []


def test_settings_are_selected_by_name(bench: ModuleType) -> None:
    common = importlib.import_module("common")
    known = ["demo", "contended"]
    assert common.selected_names(None, known, "x.py") == known
    assert common.selected_names(["contended"], known, "x.py") == ["contended"]
    with pytest.raises(SystemExit) as caught:  # the line itself: tests/benchmarks/test_common.py
        common.selected_names(["k20"], known, "x.py")
    assert caught.value.code == 2


def test_switching_plays_the_best_heuristics_and_is_paired_with_the_best(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["fifo+packing", "dsif-patient+quiet-packing", "saf-patient+quiet-packing"]
    table = contended_table(names)
    monkeypatch.setattr(bench, "SWITCH_AMONG", 2)
    ranked = sorted(names, key=lambda name: table[name]["metrics"]["avg_jct"])
    record = bench.switching_record(CONTENDED, [0, 1], table, ranked[0])
    assert record["switching_among"] == ranked[:2]
    # Each episode is at most the best heuristic's (the rollouts' improvement property).
    assert never_above(record["switching_per_seed"], table, ranked[0])
    assert record["switching_vs_best"] <= 0


def test_the_search_uses_the_best_placement_and_never_ends_above_its_start(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["dsif-patient+quiet-packing", "dsif-patient+packing"]
    table = contended_table(names)
    monkeypatch.setattr(bench, "SEARCH_EVALUATIONS", 5)
    record = bench.search_record(CONTENDED, [0, 1], table, names[0])
    assert record["search_placement"] == "quiet-packing"
    assert record["search_start"] == "dsif-patient"  # the best heuristic's own order
    assert record["search_evaluations"] == 5
    # The search starts from dsif-patient with that placement: never above it.
    assert never_above(record["search_per_seed"], table, names[0])
    assert record["search_vs_best"] <= 0


def test_a_best_heuristic_of_changing_order_starts_the_search_at_dsif_patient(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # saf-patient orders by estimates taken as the run goes: no fixed order to start from.
    names = ["saf-patient+quiet-packing", "spf-patient+packing"]
    table = contended_table(names)
    monkeypatch.setattr(bench, "SEARCH_EVALUATIONS", 2)
    assert bench.search_record(CONTENDED, [0, 1], table, names[0])["search_start"] == (
        "dsif-patient"
    )
    spf = bench.search_record(CONTENDED, [0, 1], table, names[1])
    assert spf["search_start"] == "spf-patient"
    # From the best heuristic itself: never above it.
    assert never_above(spf["search_per_seed"], table, names[1])


def test_the_learning_goal_is_met_at_and_below_that_avg_jct(bench: ModuleType) -> None:
    learning = importlib.import_module("bench_learning")
    contended = learning.SETTINGS["contended"]
    evaluation = table(spf_locality=1000.0)

    def payload(learned: float) -> dict[str, Any]:
        rows = {**evaluation, "learned-greedy": {"metrics": {"avg_jct": learned}}}
        summary = {"learned": "learned-greedy", "best_heuristic": "spf+locality"}
        return {"summary": summary, "evaluation": rows}

    assert learning.goal_met(contended, payload(900.0)) is True
    assert learning.goal_met(contended, payload(901.0)) is False
    # paper001 names heuristics this table lacks: no limit, so not met.
    assert math.isnan(learning.goal_jct(learning.SETTINGS["paper001"], evaluation, "spf+locality"))
    assert learning.goal_met(learning.SETTINGS["paper001"], payload(1.0)) is False


def test_the_switching_planner_ranks_a_nan_mean_last(bench: ModuleType) -> None:
    """A plain sort with a NaN key left h3 second and h4 (the best) out of the top two."""
    means = {"h1": 5.0, "h3": math.nan, "h4": 1.0, "h5": 2.0, "h2": 4.0}
    table = {name: {"metrics": {"avg_jct": value}} for name, value in means.items()}
    assert bench.ranked_by_avg_jct(table) == ["h4", "h5", "h2", "h1", "h3"]
