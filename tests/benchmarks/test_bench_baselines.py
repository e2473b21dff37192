"""benchmarks/bench_baselines.py: its goal checks come from its rows; a tiny run's JSON.

Speed is never asserted here (DESIGN.md): only the structure and the arithmetic.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
PHILLY = REPO / ".." / "shared" / "traces" / "philly.csv"
ROW_KEYS = {
    "case",
    "label",
    "policy",
    "backfill",
    "perf",
    "jobs",
    "jobs_finished",
    "avg_jct",
    "median_jct",
    "p90_jct",
    "makespan",
    "preemptions",
    "gpu_seconds",
    "gpu_time_inflation",
    "wall_s",
    "cpu_s",
    "reference_loop_s",
}
CHECK_KEYS = {"goal", "case", "value", "target", "met", "rows"}


#: 200 Philly jobs in the trace's own format (tests/data/traces).
SAMPLE_TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "philly_sample_200.csv"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # Benchmarks are scripts beside their helpers (common.py), not a package.
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("bench_baselines")


def row(case: str, label: str, **values: float) -> dict[str, Any]:
    base = {"avg_jct": 100.0, "makespan": 1000.0, "gpu_time_inflation": 1.0, "wall_s": 10.0}
    return {"case": case, "label": label, **base, **values}


def test_goal_checks_are_computed_from_the_rows(bench: ModuleType) -> None:
    rows = [
        row("ideal", "fifo strict", avg_jct=1000.0, makespan=2000.0),
        row("ideal", "fifo backfill", wall_s=4.0),
        row("ideal", "las", avg_jct=90.0, makespan=2100.0, wall_s=9.0),
        row("ideal", "srtf", avg_jct=1200.0),
        row("contention", "fifo strict"),
        row("contention", "fifo backfill", avg_jct=500.0, makespan=1000.0, gpu_time_inflation=2.0),
        row("contention", "las", avg_jct=400.0, makespan=1200.0, gpu_time_inflation=2.1),
        row("contention", "srtf", avg_jct=450.0),
        row("full-trace", "fifo backfill", wall_s=30.0, cpu_s=28.0),
        row("full-trace", "las", wall_s=75.0, cpu_s=55.0),
    ]
    checks = bench.goal_checks(rows)
    assert all(set(check) == CHECK_KEYS for check in checks)
    table = [(c["case"], c["goal"], c["value"], c["target"], c["met"]) for c in checks]
    assert table == [
        ("ideal", "LAS avg JCT <= 0.1 x strict FIFO's", pytest.approx(0.09), 0.1, True),
        ("ideal", "LAS makespan <= 1.1 x fifo strict's", pytest.approx(1.05), 1.1, True),
        ("ideal", "SRTF avg JCT < fifo strict", pytest.approx(1.2), 1.0, False),
        ("ideal", "las+packing wall <= 2 x fifo+packing wall", pytest.approx(2.25), 2.0, False),
        ("contention", "LAS avg JCT < backfilling FIFO's", pytest.approx(0.8), 1.0, True),
        ("contention", "LAS makespan <= 1.1 x fifo backfill's", pytest.approx(1.2), 1.1, False),
        (
            "contention",
            "LAS GPU-time inflation <= 1.1 x backfilling FIFO's",
            pytest.approx(1.05),
            1.1,
            True,
        ),
        ("contention", "SRTF avg JCT < fifo backfill", pytest.approx(0.9), 1.0, True),
        (
            "contention",
            "las+packing wall <= 2 x fifo+packing wall",
            pytest.approx(1.0),
            2.0,
            True,
        ),
        (
            "full-trace",
            "full Philly trace on 1,024 GPUs, las+packing wall < 60 s",
            75.0,
            60.0,
            False,
        ),
        (
            "full-trace",
            "full Philly trace on 1,024 GPUs, las+packing CPU < 60 s",
            55.0,
            60.0,
            True,
        ),
    ]
    # A change of one row moves its checks, and only those.
    rows[2]["avg_jct"] = 150.0
    changed = bench.goal_checks(rows)
    assert (changed[0]["value"], changed[0]["met"]) == (pytest.approx(0.15), False)
    assert changed[1:] == checks[1:]
    # Checks whose rows are missing are left out, not guessed.
    assert [c["case"] for c in bench.goal_checks(rows[:4])] == ["ideal"] * 4
    assert bench.goal_checks([]) == []


@pytest.mark.skipif(not PHILLY.exists(), reason="needs ../shared/traces/philly.csv")
def test_tiny_run_writes_rows_and_checks(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "baselines.json"
    returned = bench.main(["--jobs", "30", "--cases", "ideal", "--out", str(out)])
    payload = json.loads(out.read_text())
    assert set(payload) == {"benchmark", "machine", "jobs", "results", "checks"}
    assert (payload["benchmark"], payload["jobs"]) == ("baselines", 30)
    rows = payload["results"]
    assert [(r["label"], r["policy"], r["backfill"], r["perf"]) for r in rows] == [
        ("fifo strict", "fifo+packing", False, "ideal"),
        ("fifo backfill", "fifo+packing", True, "ideal"),
        ("las", "las+packing", True, "ideal"),
        ("srtf", "srtf+packing", True, "ideal"),
        ("gittins", "gittins+packing", True, "ideal"),
    ]
    assert all(set(r) == ROW_KEYS and r["jobs"] == 30 for r in rows)
    assert all(r["jobs_finished"] == 30 for r in rows)
    # Under the ideal model every finished job consumes exactly its ideal GPU-seconds.
    assert all(r["gpu_time_inflation"] == pytest.approx(1.0) for r in rows)
    assert all(r["preemptions"] == 0 for r in rows if r["label"].startswith("fifo"))
    # The written checks are the ones the written rows give.
    assert payload["checks"] == json.loads(json.dumps(bench.goal_checks(rows)))
    by_label = {r["label"]: r for r in rows}
    first = payload["checks"][0]
    assert first["goal"] == "LAS avg JCT <= 0.1 x strict FIFO's"
    assert first["value"] == pytest.approx(
        by_label["las"]["avg_jct"] / by_label["fifo strict"]["avg_jct"]
    )
    assert returned["results"] == rows


def test_unknown_case_is_refused(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        bench.main(["--cases", "ideal,fast"])
    assert caught.value.code == 2
    assert "unknown case(s) fast; known: ideal, contention, full-trace" in capsys.readouterr().err


def refusal(bench: ModuleType, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one line a refused command line prints (exit status 2, nothing simulated)."""
    with pytest.raises(SystemExit) as caught:
        bench.parse(argv)
    assert caught.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    return line


def test_a_missing_trace_is_one_line_before_any_simulation(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as caught:
        bench.main(["--trace", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "b.json")])
    assert caught.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"bench_baselines.py: error: --trace {tmp_path / 'nope.csv'} does not exist; give the "
        f"Philly CSV (default {bench.PHILLY})"
    ]
    assert refusal(bench, capsys, ["--trace", str(tmp_path)]).startswith(
        f"bench_baselines.py: error: --trace {tmp_path} is a folder"
    )
    # A file that is not Philly's CSV: its header read up front, not after the replays.
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    assert refusal(bench, capsys, ["--trace", str(other)]) == (
        f"bench_baselines.py: error: --trace: {other}:1: field 'timestamp': column missing "
        "from the header (header has a, b; required: timestamp, duration, num_gpus, cluster)"
    )


def test_an_out_under_a_file_or_naming_a_folder_is_refused_up_front(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("a file, not a folder")
    trace = ["--trace", str(SAMPLE_TRACE)]  # a small Philly CSV: its header passes
    for out in (readme / "x.json", readme / "sub" / "x.json"):
        assert refusal(bench, capsys, [*trace, "--out", str(out)]) == (
            f"bench_baselines.py: error: --out {out}: {readme} is a file, not a folder"
        )
    assert refusal(bench, capsys, [*trace, "--out", str(tmp_path)]) == (
        f"bench_baselines.py: error: --out {tmp_path} is a folder; give a file's path, e.g. "
        f"{tmp_path / 'out.json'}"
    )


def test_an_out_in_a_folder_still_to_make_is_accepted_and_its_folder_made(
    bench: ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "new" / "deeper" / "baselines.json"
    args, jobs, cases = bench.parse(["--quick", "--trace", str(SAMPLE_TRACE), "--out", str(out)])
    assert (args.out, jobs, cases) == (out, bench.QUICK_JOBS, ["ideal", "contention"])
    assert out.parent.is_dir() and not out.exists()
