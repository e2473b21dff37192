"""benchmarks/bench_learning.py: a training run that fails, or ends without its JSON
result, stops the benchmark with one line naming the setting; one that exits non-zero with
its result printed is kept; each setting's record is written as soon as it is done (the
training itself is tested in tests/platform)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("bench_learning")


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """benchmarks/results/ redirected to a temporary folder (not made yet)."""
    folder = tmp_path / "results"
    monkeypatch.setattr(importlib.import_module("common"), "RESULTS", folder)
    return folder


@pytest.fixture
def train_runs(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], None]:
    """``train_runs(body)``: the benchmark runs a program of ``body`` in train.py's place."""

    def install(body: str) -> None:
        program = tmp_path / "train.py"
        program.write_text(f"import sys\n{body}\n")
        monkeypatch.setattr(bench, "TRAIN", program)

    return install


def test_a_failed_training_run_names_the_setting_and_its_error(
    bench: ModuleType, train_runs: Callable[[str], None]
) -> None:
    body = "print('train.py: error: no such config', file=sys.stderr); sys.exit(2)"
    train_runs(body)
    with pytest.raises(RuntimeError) as error:
        bench.train(bench.SETTINGS["demo"])
    assert str(error.value) == (
        "train.py on demo exited with status 2: train.py: error: no such config"
    )


@pytest.mark.parametrize("body", ["pass", "print('done')"])
def test_a_run_without_its_json_result_is_reported(
    bench: ModuleType, train_runs: Callable[[str], None], body: str
) -> None:
    train_runs(body)
    with pytest.raises(RuntimeError, match="exited with status 0 without its JSON result"):
        bench.train(bench.SETTINGS["contended"])


def test_a_failed_run_stops_the_program_with_one_line(
    bench: ModuleType,
    train_runs: Callable[[str], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    body = "print('train.py: error: no such config', file=sys.stderr); sys.exit(2)"
    train_runs(body)
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
    train_runs: Callable[[str], None],
    results: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # train.py exits 1 when only the MLflow logging failed, its JSON still on the last line.
    unlogged = {**PAYLOAD, "evaluation_unlogged": "/results/unlogged-evaluations/demo"}
    train_runs(payload_then_exit(unlogged, 1))
    payload, _, status = bench.train(bench.SETTINGS["demo"])
    assert (payload, status) == (unlogged, 1)
    assert capsys.readouterr().err.splitlines() == [
        "bench_learning.py: warning: demo: train.py exited with status 1; its evaluation was "
        "not logged, the files are in /results/unlogged-evaluations/demo; its result is kept"
    ]
    assert bench.cli(["demo"]) == 0
    [record] = json.loads((results / "learning.json").read_text())["results"]
    assert (record["setting"], record["learned"], record["best_heuristic"]) == (
        "demo",
        "learned-greedy",
        "fifo+tetris",
    )
    assert record["train_exit_status"] == 1
    assert record["evaluation_unlogged"] == "/results/unlogged-evaluations/demo"


def test_each_setting_is_written_when_done_so_a_later_failure_loses_none(
    bench: ModuleType,
    train_runs: Callable[[str], None],
    results: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    results.mkdir()
    last_run = [{"setting": "contended", "run": "last"}, {"setting": "paper001", "run": "last"}]
    (results / "learning.json").write_text(json.dumps({"results": last_run}))
    body = payload_then_exit(PAYLOAD, 0, fail_on="contended")
    train_runs(body)
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


# What train.py --json prints after `--skip-evaluation`: the training's figures, no table.
SKIPPED = {
    "checkpoint": "/runs/demo/checkpoint",
    "tracking_uri": "sqlite:///mlflow.db",
    "experiment": "demo",
    "policies": {},
    "evaluation": {},
    "summary": {},
    "training_s": 600.0,
    "evaluation_s": 0.0,
}


@pytest.mark.parametrize(
    "payload",
    [SKIPPED, {key: value for key, value in SKIPPED.items() if key != "evaluation"}],
    ids=["skip-evaluation", "no-evaluation-part"],
)
def test_a_result_without_its_evaluation_is_a_skipped_row_with_the_training_kept(
    bench: ModuleType,
    train_runs: Callable[[str], None],
    results: Path,
    capsys: pytest.CaptureFixture[str],
    payload: dict,
) -> None:
    train_runs(payload_then_exit(payload, 0))
    assert bench.cli(["demo"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "demo: evaluation skipped, training 10.0 min" in out
    lines = out.splitlines()
    title = lines.index(next(line for line in lines if line.startswith("demo: evaluation")))
    # The header, its rule, then the table's one row.
    assert lines[title + 3].split() == ["evaluation", "skipped", "-", "-", "-", "-"]
    assert "  trained policy: /runs/demo/checkpoint" in lines
    [record] = json.loads((results / "learning.json").read_text())["results"]
    assert record["setting"] == "demo"
    assert record["evaluation_skipped"] is True
    assert (record["goal_met"], record["rows"]) == (None, [])
    assert (record["training_minutes"], record["checkpoint"]) == (10.0, "/runs/demo/checkpoint")
    assert record["train_exit_status"] == 0


def test_an_evaluated_result_is_recorded_as_not_skipped(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    record = bench.report(bench.SETTINGS["demo"], PAYLOAD, 660.0)
    assert record["evaluation_skipped"] is False
    assert [row["policy"] for row in record["rows"]] == ["learned-greedy", "fifo+tetris"]
    assert "goal: learned avg JCT within 3% of the best heuristic -> MET" in capsys.readouterr().out


def test_a_failed_report_keeps_that_result_and_every_other_settings(
    bench: ModuleType,
    train_runs: Callable[[str], None],
    results: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # demo's summary lacks the keys the table is made of; contended's result is whole.
    broken = {**PAYLOAD, "summary": {"learned": "learned-greedy"}}
    body = (
        "import json\n"
        "config = sys.argv[sys.argv.index('--config') + 1]\n"
        f"payload = {broken!r} if config.endswith('/demo.yaml') else {PAYLOAD!r}\n"
        "print(json.dumps(payload))\n"
    )
    train_runs(body)
    assert bench.cli(["demo", "contended"]) == 1
    path = results / "learning.json"
    assert capsys.readouterr().err.splitlines() == [
        f"bench_learning.py: error: demo: the report failed (KeyError: 'best_heuristic'); "
        f"train.py's result is kept in {path} (train_output of its record)",
        f"bench_learning.py: error: the report of demo failed; train.py's result is kept in "
        f"{path} (train_output)",
    ]
    demo, contended = json.loads(path.read_text())["results"]
    assert demo["setting"] == "demo"
    assert demo["report_error"] == "KeyError: 'best_heuristic'"
    assert demo["train_output"] == broken
    assert (demo["training_minutes"], demo["checkpoint"]) == (10.0, "/runs/demo/checkpoint")
    # The setting after the failed report was still trained and reported.
    assert (contended["setting"], contended["learned"]) == ("contended", "learned-greedy")
    assert len(contended["rows"]) == 2


def test_a_failed_report_is_written_before_the_next_setting_trains(
    bench: ModuleType,
    train_runs: Callable[[str], None],
    results: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # demo's report fails, then contended's training fails: demo's result is on disk.
    broken = {**PAYLOAD, "evaluation": {"learned-greedy": {"kind": "learned"}}}
    body = payload_then_exit(broken, 0, fail_on="contended")
    train_runs(body)
    assert bench.cli(["demo", "contended"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("bench_learning.py: error: demo: the report failed (KeyError: ")
    assert err[-1] == (
        "bench_learning.py: error: train.py on contended exited with status 1: "
        "train.py: error: a trial failed: boom"
    )
    [demo] = json.loads((results / "learning.json").read_text())["results"]
    assert (demo["setting"], demo["train_output"]) == ("demo", broken)
