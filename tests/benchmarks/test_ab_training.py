"""benchmarks/ab_training.py: its summary arithmetic and its refusals (no timing asserted)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ab(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    return importlib.import_module("ab_training")


def record(tree: str, steps: float, wall: float, learning: float) -> dict:
    return {
        "tree": tree,
        "env_steps_per_s": steps,
        "iteration_s": wall,
        "learning_s": learning,
        "other_s": wall - learning,
    }


def test_summary_is_mean_and_range_per_tree(ab: ModuleType) -> None:
    records = [
        record("baseline", 250.0, 4.0, 3.0),
        record("this checkout", 300.0, 3.0, 2.0),
        record("baseline", 270.0, 3.6, 2.5),
        record("this checkout", 320.0, 3.2, 2.2),
    ]
    assert ab.summarize(records) == [
        ["baseline", 2, "260 (250-270)", "3.8 (3.6-4)", "2.75 (2.5-3)", "1.05 (1-1.1)"],
        ["this checkout", 2, "310 (300-320)", "3.1 (3-3.2)", "2.1 (2-2.2)", "1 (1-1)"],
    ]


def test_a_baseline_without_the_config_is_refused_before_any_run(
    ab: ModuleType, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit, match=f"ab_training: {tmp_path} has no tune/configs/demo"):
        ab.main(["--baseline", str(tmp_path)])
    with pytest.raises(SystemExit, match="--runs and --iterations must be at least 1"):
        ab.main(["--baseline", str(REPO), "--runs", "0"])
