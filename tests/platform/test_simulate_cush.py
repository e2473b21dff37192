"""``platform/simulate.py cush``: CuSH's baselines from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "platform" / "simulate.py"), "cush", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_baseline_json_is_reproducible() -> None:
    first = run("--policy", "sjf+bf", "--num-sets", "2", "--json")
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["policy"], summary["cluster"], summary["num_sets"]) == ("sjf+bf", "sierra", 2)
    assert summary["avg_ntat"] >= 1.0 and summary["local_return"] < 0
    assert len(summary["sets"]) == 2
    assert json.loads(run("--policy", "sjf+bf", "--num-sets", "2", "--json").stdout) == summary


def test_unknown_baseline_is_one_line_exit_2() -> None:
    result = run("--policy", "lifo+df")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "invalid choice: 'lifo+df'" in result.stderr
