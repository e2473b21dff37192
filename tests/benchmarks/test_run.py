"""benchmarks/run.py: --help, and unknown or repeated benchmarks refused before any runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN), *argv], capture_output=True, text=True, check=False, timeout=60
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_the_benchmarks_and_the_default(flag: str) -> None:
    result = run(flag)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("usage: run.py [benchmark ...]\n")
    assert "Run every benchmark" in result.stdout
    listed = result.stdout.splitlines()[-1]
    assert listed.startswith("benchmarks: baselines, ")
    assert "learning" in listed and "(default: all, in that order" in listed


def test_an_unknown_benchmark_is_one_line_on_stderr_and_exit_2() -> None:
    result = run("topology", "nonesuch")
    assert (result.returncode, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert line.startswith("run.py: unknown benchmark(s) nonesuch; known: baselines, ")


def test_a_repeated_benchmark_is_refused_before_any_runs() -> None:
    result = run("topology", "topology")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "run.py: benchmark(s) named more than once: topology; name each at most once"
    ]
