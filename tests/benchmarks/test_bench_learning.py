"""benchmarks/bench_learning.py: a training run that fails, or ends without its JSON
result, stops the benchmark with one line naming the setting (the training itself is
tested in tests/platform)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("bench_learning")


def stand_in(tmp_path: Path, body: str) -> Path:
    """A program run in train.py's place."""
    program = tmp_path / "train.py"
    program.write_text(f"import sys\n{body}\n")
    return program


def test_a_failed_training_run_names_the_setting_and_its_error(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "print('train.py: error: no such config', file=sys.stderr); sys.exit(2)"
    monkeypatch.setattr(bench, "TRAIN", stand_in(tmp_path, body))
    with pytest.raises(RuntimeError) as error:
        bench.train(bench.SETTINGS["demo"])
    assert str(error.value) == (
        "train.py on demo exited with status 2: train.py: error: no such config"
    )


@pytest.mark.parametrize("body", ["pass", "print('done')"])
def test_a_run_without_its_json_result_is_reported(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str
) -> None:
    monkeypatch.setattr(bench, "TRAIN", stand_in(tmp_path, body))
    with pytest.raises(RuntimeError, match="exited 0 without its JSON result on the last line"):
        bench.train(bench.SETTINGS["contended"])


def test_a_failed_run_stops_the_program_with_one_line(
    bench: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    body = "print('train.py: error: no such config', file=sys.stderr); sys.exit(2)"
    monkeypatch.setattr(bench, "TRAIN", stand_in(tmp_path, body))
    assert bench.cli(["demo"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "bench_learning.py: error: train.py on demo exited with status 2: train.py: error: "
        "no such config"
    )


def test_an_unknown_setting_is_one_line_before_any_training() -> None:
    # An unknown setting: the benchmark stops before training anything.
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_learning.py"), "nonesuch"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "bench_learning.py: unknown setting(s) nonesuch; known: demo, contended, paper001"
    ]
