"""benchmarks/bench_training.py: a bad command line is one line and exit 2, before Ray
starts (the training it times runs only in the benchmark itself)."""

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
    return importlib.import_module("bench_training")


def test_seeds_label_and_cases_are_parsed_up_front(bench: ModuleType) -> None:
    args, cases = bench.parse(["--seeds", "2, 0,11", "--label", "before.v2", "--cases", "k20"])
    assert (args.seeds, args.label, cases) == ([2, 0, 11], "before.v2", ["k20"])
    args, cases = bench.parse([])
    assert (args.seeds, args.label, args.iterations) == ([0], "after", 5)
    assert cases == ["demo-0", "demo-1", "demo-2", "k20"]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--seeds", "x"], "argument --seeds: 'x': give comma-separated non-negative integers"),
        (["--seeds", "0,x"], "argument --seeds: '0,x': give comma-separated non-negative"),
        (["--seeds=-1"], "argument --seeds: '-1': give comma-separated non-negative integers"),
        (["--seeds", "0,1,0"], "argument --seeds: '0,1,0': seed 0 is named more than once"),
        (["--label", "a/b"], "argument --label: label 'a/b' is not a plain file-name part"),
        (["--iterations", "0"], "argument --iterations: must be an integer >= 1, got '0'"),
        (["--cases", "demo-9"], "--cases: unknown case(s) demo-9; known: demo-0"),
        (
            ["--cases", "demo-0,demo-0"],
            "--cases: case(s) named more than once: demo-0; name each at most once",
        ),
        (
            ["--cases", "demo-0", "--set", "algorithm.nope=1"],
            "case demo-0 with --set ['algorithm.nope=1']: unknown key(s) algorithm.nope",
        ),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        bench.parse(argv)
    assert caught.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"bench_training.py: error: {error}")


def test_the_program_refuses_bad_seeds_before_ray_starts() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_training.py"), "--seeds", "0,x"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "bench_training.py: error: argument --seeds: '0,x': give comma-separated non-negative "
        "integers, such as 0,1,2"
    ]
