"""``simulate.py sced2`` and ``simulate.py contention``: the papers' baselines by command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "platform" / "simulate.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_sced2_baseline_json() -> None:
    result = run("sced2", "--policy", "sif", "--num-jobs", "120", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert 0 < summary["execution_effectiveness"] <= 1
    assert (
        json.loads(run("sced2", "--policy", "sif", "--num-jobs", "120", "--json").stdout) == summary
    )


def test_contention_baseline_json() -> None:
    result = run("contention", "--policy", "fifo", "--num-jobs", "48", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["avg_contention"] >= 1.0 and 0 < summary["gpu_utilization"] <= 1


def test_unknown_policies_exit_2() -> None:
    for command, policy in (("sced2", "sjf"), ("contention", "drf")):
        result = run(command, "--policy", policy)
        assert result.returncode == 2 and f"invalid choice: '{policy}'" in result.stderr
