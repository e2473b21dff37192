"""``platform/evaluate.py``'s command line: a bad ``--seeds`` is named, and a reader that
stops reading (``| head``) ends it quietly, with the evaluation still logged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "platform" / "evaluate.py"
CONFIG = ROOT / "tune" / "configs" / "demo.yaml"
SMALL = [
    *("--config", str(CONFIG), "--baselines", "fifo+packing", "--seeds", "2000"),
    *("--set", "environment.config.num_jobs=6", "--no-ray"),
]


@pytest.mark.parametrize("seeds", ["-1", "2000,-3", "2000,x", ","])
def test_a_bad_seed_names_the_option(seeds: str) -> None:
    """``--seeds -1`` said "evaluation.seeds must be a non-empty list of integers >= 0":
    a config key the command line never showed."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--config", str(CONFIG), "--seeds", seeds],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "evaluate.py: error: argument --seeds: takes seeds, integers >= 0 separated by commas "
        f"(e.g. 2000,2001), got {seeds!r}\n"
    )


def test_a_reader_that_stops_reading_loses_no_run_and_ends_quietly(
    sqlite_uri: str, run_into_closed_pipe
) -> None:
    """``evaluate.py ... --json --mlflow | head -c 10``: a BrokenPipeError traceback and exit
    1 before, and the runs were never logged; now they are, and the exit is 141 (128 +
    SIGPIPE, as a Unix tool ends) with nothing on stderr."""
    from mlflow.tracking import MlflowClient

    result = run_into_closed_pipe(
        [
            sys.executable,
            str(SCRIPT),
            *SMALL,
            "--json",
            "--mlflow",
            "--set",
            f"tracking.tracking_uri={sqlite_uri}",
        ]
    )
    assert (result.returncode, result.stderr) == (141, "")
    client = MlflowClient(tracking_uri=sqlite_uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert [run.data.tags["policy"] for run in runs] == ["fifo+packing"]
