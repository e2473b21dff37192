"""``simulate.py rltaps``: RL-TAPS's baselines side by side, by command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import job

ROOT = Path(__file__).resolve().parents[3]


def simulate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "platform" / "simulate.py"), "rltaps", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_json_compares_the_named_baselines() -> None:
    result = simulate("--policy", "sjf,tetris", "--seed", "2", "--num-jobs", "40", "--json")
    assert result.returncode == 0, result.stderr
    policies = json.loads(result.stdout)["policies"]
    assert list(policies) == ["sjf", "tetris"]
    for name, summary in policies.items():
        assert summary["policy"] == name and summary["seed"] == 2
        assert summary["sequences"][0]["jobs_arrived"] == 40
    again = simulate("--policy", "sjf,tetris", "--seed", "2", "--num-jobs", "40", "--json")
    assert json.loads(again.stdout) == json.loads(result.stdout)


def test_table_and_explicit_jobs_file(tmp_path: Path) -> None:
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps({"jobs": [job("vgg-vd-19", 256, 1, 4)]}))
    result = simulate("--policy", "sjf", "--jobs-file", str(jobs_file))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("RL-TAPS baselines on racks [2,2,2,2]")
    header = [cell.strip() for cell in lines[1].split("|")]
    row = dict(zip(header, (cell.strip() for cell in lines[3].split("|")), strict=True))
    # The job of test_one_job_replayed_by_hand: 4 cells in two steps, slowdown 2.
    assert row["policy"] == "sjf" and row["mean reward"] == "4.0" and row["mean slowdown"] == "2.00"


def test_bad_arguments_exit_2_with_one_line() -> None:
    for args in (
        ("--policy", "sjf,fifo"),
        ("--num-sequences", "0"),
        ("--racks", "1"),
        ("--racks", "two"),
    ):
        result = simulate(*args)
        assert result.returncode == 2, args
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("simulate.py: error:")
    assert "unknown RL-TAPS baseline 'fifo'" in simulate("--policy", "sjf,fifo").stderr
