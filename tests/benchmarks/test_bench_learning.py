"""benchmarks/bench_learning.py: a training run that fails, or ends without its JSON
result, stops the benchmark with one line naming the setting; one that exits non-zero with
its result printed is kept; each setting's record is written as soon as it is done (the
training itself is tested in tests/platform)."""

from __future__ import annotations

import importlib
import json
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
    with pytest.raises(RuntimeError, match="exited with status 0 without its JSON result"):
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


def bench_learning(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_learning.py"), *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_an_unknown_setting_is_one_line_before_any_training() -> None:
    # An unknown setting: the benchmark stops before training anything.
    result = bench_learning("demo", "nonesuch")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.strip().splitlines() == [
        "bench_learning.py: unknown setting(s) nonesuch; known: demo, contended, paper001"
    ]


def test_a_repeated_setting_is_refused_rather_than_trained_twice() -> None:
    result = bench_learning("demo", "demo")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.strip().splitlines() == [
        "bench_learning.py: setting(s) named more than once: demo; name each at most once"
    ]


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_shows_the_settings_and_the_default(flag: str) -> None:
    result = bench_learning(flag)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("usage: bench_learning.py [setting ...]\n")
    assert "Learned schedulers against the full heuristic table" in result.stdout
    assert result.stdout.splitlines()[-1].startswith(
        "settings: demo, contended, paper001 (default: all, in that order"
    )


# train.py's --json object, as small as a table can be: one learned row, one heuristic.
PAYLOAD = {
    "checkpoint": "/runs/demo/checkpoint",
    "training_s": 600.0,
    "evaluation_s": 60.0,
    "evaluation": {
        "learned-greedy": {
            "kind": "learned",
            "metrics": {"avg_jct": 3600.0, "p90_jct": 7200.0, "avg_contention": 0.1},
            "ci95": {"avg_jct": 36.0},
            "seeds": [0, 1],
        },
        "fifo+tetris": {
            "kind": "heuristic",
            "metrics": {"avg_jct": 4000.0},
            "ci95": {},
            "seeds": [0, 1],
        },
    },
    "summary": {
        "best_heuristic": "fifo+tetris",
        "learned": "learned-greedy",
        "heuristics": 1,
        "seeds": [0, 1],
        "relative_to_best": {"learned-greedy": -0.1, "fifo+tetris": 0.0},
    },
}


def payload_then_exit(payload: dict, status: int, fail_on: str = "") -> str:
    """A stand-in body: prints ``payload`` last and exits ``status``; on the config named
    ``fail_on``, fails without a result."""
    return (
        "import json\n"
        "config = sys.argv[sys.argv.index('--config') + 1]\n"
        f"if {fail_on!r} and config.endswith('/{fail_on}.yaml'):\n"
        "    print('train.py: error: a trial failed: boom', file=sys.stderr)\n"
        "    sys.exit(1)\n"
        "print('progress')\n"
        f"print(json.dumps({payload!r}))\n"
        f"sys.exit({status})"
    )


def test_a_result_printed_before_a_non_zero_exit_is_kept_and_recorded(
    bench: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # train.py exits 1 when only the MLflow logging failed, its JSON still on the last line.
    monkeypatch.setattr(importlib.import_module("common"), "RESULTS", tmp_path / "results")
    unlogged = {**PAYLOAD, "evaluation_unlogged": "/results/unlogged-evaluations/demo"}
    monkeypatch.setattr(bench, "TRAIN", stand_in(tmp_path, payload_then_exit(unlogged, 1)))
    payload, _, status = bench.train(bench.SETTINGS["demo"])
    assert (payload, status) == (unlogged, 1)
    assert capsys.readouterr().err.splitlines() == [
        "bench_learning.py: warning: demo: train.py exited with status 1; its evaluation was "
        "not logged, the files are in /results/unlogged-evaluations/demo; its result is kept"
    ]
    assert bench.cli(["demo"]) == 0
    [record] = json.loads((tmp_path / "results" / "learning.json").read_text())["results"]
    assert (record["setting"], record["learned"], record["best_heuristic"]) == (
        "demo",
        "learned-greedy",
        "fifo+tetris",
    )
    assert record["train_exit_status"] == 1
    assert record["evaluation_unlogged"] == "/results/unlogged-evaluations/demo"


def test_each_setting_is_written_when_done_so_a_later_failure_loses_none(
    bench: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = tmp_path / "results"
    monkeypatch.setattr(importlib.import_module("common"), "RESULTS", results)
    results.mkdir()
    last_run = [{"setting": "contended", "run": "last"}, {"setting": "paper001", "run": "last"}]
    (results / "learning.json").write_text(json.dumps({"results": last_run}))
    body = payload_then_exit(PAYLOAD, 0, fail_on="contended")
    monkeypatch.setattr(bench, "TRAIN", stand_in(tmp_path, body))
    assert bench.cli(["demo", "contended"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "bench_learning.py: error: train.py on contended exited with status 1: "
        "train.py: error: a trial failed: boom"
    )
    written = json.loads((results / "learning.json").read_text())["results"]
    # demo's new record, and the last records of the failed setting and the one not run.
    assert [(r["setting"], r.get("run", "new")) for r in written] == [
        ("contended", "last"),
        ("paper001", "last"),
        ("demo", "new"),
    ]
    assert written[2]["train_exit_status"] == 0
