"""``platform/paper_baselines.py``: one subcommand per formulation, built from the registry,
and the same subcommands through ``platform/simulate.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from envs.registry import formulation_ids
from tests.platform.programs import cap_memory

ROOT = Path(__file__).resolve().parents[2]


def run(program: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "platform" / program), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        **kwargs,
    )


def run_capped(program: str, *args: str) -> subprocess.CompletedProcess:
    """``run`` with the program's memory capped (:func:`tests.platform.programs.cap_memory`)."""
    return run(program, *args, preexec_fn=cap_memory)


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


def test_a_reader_that_stops_reading_ends_it_quietly(run_into_closed_pipe) -> None:
    """``rltaps ... | head -c 10``: "paper_baselines.py: error: [Errno 32] Broken pipe" and
    exit 2 before; now 141 (128 + SIGPIPE, as a Unix tool ends) and nothing on stderr."""
    program = ROOT / "platform" / "paper_baselines.py"
    args = ["rltaps", "--policy", "sjf", "--num-jobs", "20", "--num-sequences", "1"]
    result = run_into_closed_pipe([sys.executable, str(program), *args])
    assert (result.returncode, result.stderr) == (141, "")


def test_a_cush_view_too_large_for_memory_is_one_line() -> None:
    """``cush --queue-size 100000000`` and ``--time-horizon 100000000`` ended in a
    MemoryError traceback; now one line naming the options, before anything is built."""
    for program in ("paper_baselines.py", "simulate.py"):
        queue = run_capped(program, "cush", "--queue-size", "100000000")
        assert queue.returncode == 2 and queue.stderr == (
            f"{program}: error: CuSH's image would have 768 x 5 x 100,000,001 cells (CPU and "
            "GPU columns of the nodes x --time-horizon x --queue-size + 1), more than fit in "
            "memory (at most 268,435,456); lower --queue-size, --time-horizon or the number of "
            "nodes\n"
        )
        horizon = run_capped(program, "cush", "--time-horizon", "100000000")
        assert horizon.returncode == 2 and horizon.stderr == (
            f"{program}: error: --time-horizon must be at most 10,000 (more image rows would "
            "not fit in memory), got 100,000,000\n"
        )


def test_a_bad_value_names_the_option_as_typed(tmp_path: Path) -> None:
    """``sced2 --num-jobs 100000000`` said "num_jobs must be at most ...": not the option
    typed. With ``--jobs-file`` an option's error was put on the file ("jobs.json: nodes
    must be ...")."""
    jobs = tmp_path / "jobs.json"
    jobs.write_text('[{"arrival": 0, "length": 1, "gpus": 1, "cpus": 0, "type": "dgemm"}]')
    for program in ("paper_baselines.py", "simulate.py"):
        for name in ("sced2", "contention", "rltaps"):
            result = run_capped(program, name, "--num-jobs", "100000000")
            assert result.returncode == 2 and result.stderr == (
                f"{program}: error: --num-jobs must be at most 10,000,000 (more would not fit "
                "in memory), got 100,000,000\n"
            )
        result = run(program, "cush", "--jobs-file", str(jobs), "--nodes", "0")
        assert result.returncode == 2
        assert result.stderr == f"{program}: error: --nodes must be an integer >= 1, got 0\n"
    # A check of --policy after the jobs file was read put the name on the file.
    result = run("paper_baselines.py", "rltaps", "--policy", "sjf,fifo", "--jobs-file", str(jobs))
    assert result.returncode == 2 and result.stderr == (
        "paper_baselines.py: error: argument --policy: unknown RL-TAPS baseline 'fifo'; "
        "known: random, sjf, tetris\n"
    )
