"""``platform/paper_baselines.py``: one subcommand per formulation, built from the registry,
and the same subcommands through ``platform/simulate.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envs.registry import formulation_ids

ROOT = Path(__file__).resolve().parents[2]


def run(program: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "platform" / program), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_every_formulation_is_a_subcommand() -> None:
    result = run("paper_baselines.py", "--help")
    assert result.returncode == 0
    for name in formulation_ids():
        assert name in result.stdout


def test_both_programs_give_the_same_json() -> None:
    args = ("rltaps", "--policy", "sjf,tetris", "--num-jobs", "30", "--json")
    new, old = run("paper_baselines.py", *args), run("simulate.py", *args)
    assert new.returncode == 0 and old.returncode == 0, new.stderr + old.stderr
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert list(json.loads(new.stdout)["policies"]) == ["sjf", "tetris"]


def test_bad_values_are_one_line_exit_2() -> None:
    for args, message in (
        (("rltaps", "--racks", "2,x"), "takes integers separated by commas"),
        (("cush", "--policy", "lifo+df"), "invalid choice: 'lifo+df'"),
        (("nosuch",), "invalid choice: 'nosuch'"),
    ):
        result = run("paper_baselines.py", *args)
        assert result.returncode == 2 and result.stderr.count("\n") == 1
        assert message in result.stderr


def test_a_bad_job_file_is_named(tmp_path: Path) -> None:
    wrong = tmp_path / "jobs.json"
    wrong.write_text('[{"bad": 1}]')
    binary = tmp_path / "jobs.bin"
    binary.write_bytes(b"\xff\xfe\x00binary")
    for path, problem in (
        (
            wrong,
            "job 0 must be a mapping with exactly the keys arrival, model, gpus, duration, "
            "got {'bad': 1}",
        ),
        (binary, "not a JSON job list ("),
    ):
        result = run("simulate.py", "sced2", "--jobs-file", str(path), "--policy", "sif")
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"simulate.py: error: {path}: {problem}")


def test_a_deeprm_replay_of_no_job_is_refused(tmp_path: Path) -> None:
    """It printed a TypeError traceback (no slowdown to format), or null with --json."""
    empty = tmp_path / "jobs.json"
    empty.write_text('{"jobs": []}')
    for extra in ((), ("--json",)):
        result = run("paper_baselines.py", "deeprm", "--jobs-file", str(empty), *extra)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "a DeepRM replay needs at least one job" in result.stderr


def test_a_negative_seed_names_the_option() -> None:
    """``cush --seed -1`` said "seed must be an integer >= 0, got -1": not which option."""
    for program in ("paper_baselines.py", "simulate.py"):
        for name in ("cush", "sced2", "contention", "rltaps"):
            result = run(program, name, "--seed", "-1")
            assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
            assert result.stderr == (
                f"{program}: error: argument --seed: a seed is an integer >= 0, got '-1'\n"
            )


def test_a_reader_that_stops_reading_ends_it_quietly() -> None:
    """``rltaps ... | head -c 10``: "paper_baselines.py: error: [Errno 32] Broken pipe" and
    exit 2 before; now 141 (128 + SIGPIPE, as a Unix tool ends) and nothing on stderr."""
    program = ROOT / "platform" / "paper_baselines.py"
    args = ["rltaps", "--policy", "sjf", "--num-jobs", "20", "--num-sequences", "1"]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        result = subprocess.run(
            [sys.executable, str(program), *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (141, "")
