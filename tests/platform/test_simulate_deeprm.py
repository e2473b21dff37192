"""``platform/simulate.py deeprm``: replay of an explicit workload, checked by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "platform" / "simulate.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "deeprm", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_replay_by_hand(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.json"
    jobs.write_text(
        json.dumps(
            {
                "jobs": [
                    {"arrival_time": 1, "len": 2, "res": [5, 1]},
                    {"arrival_time": 2, "len": 3, "res": [6, 2]},
                    {"arrival_time": 3, "len": 1, "res": [2, 2]},
                ]
            }
        )
    )
    result = run("--jobs-file", str(jobs), "--policy", "sjf", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    # Job 0 runs [1, 3). Job 1 needs 6 of resource 0 while job 0 holds 5 of 10: it starts
    # when job 0 leaves, [3, 6). Job 2 (2 units) fits beside job 1 at once: [3, 4).
    assert summary["jobs"] == [
        {"arrival_time": 1, "start": 1, "finish": 3},
        {"arrival_time": 2, "start": 3, "finish": 6},
        {"arrival_time": 3, "start": 3, "finish": 4},
    ]
    # Slowdowns (finish - arrival) / len: 1, 4/3, 1.
    assert summary["mean_slowdown"] == pytest.approx(10 / 9)
    assert summary["max_slowdown"] == pytest.approx(4 / 3)
    assert summary["dropped"] == 0 and summary["final_time"] == 6
    table = run("--jobs-file", str(jobs), "--policy", "packer")
    assert table.returncode == 0 and "arrival  start  finish" in table.stdout


def test_bad_jobs_file_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"jobs": [{"arrival_time": 0, "len": 2, "res": [5, 1]}]}))
    result = run("--jobs-file", str(bad))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "arrival_time must be >= 1" in result.stderr
