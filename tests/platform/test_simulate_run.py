"""``platform/simulate.py run`` end to end, as a user runs it."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform.programs import cap_memory

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "platform" / "simulate.py"
TRACES = ROOT / "tests" / "data" / "traces"
METRICS = {
    "avg_jct",
    "median_jct",
    "p90_jct",
    "p99_jct",
    "makespan",
    "avg_wait",
    "avg_slowdown",
    "gpu_utilization",
    "fragmentation",
    "jobs_finished",
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


COMPARE = [
    *("--topology", "fat-tree", "--k", "4", "--workload", "poisson", "--jobs", "60"),
    *("--compare", "fifo+packing,sjf+tetris,las+lif", "--interval", "1800", "--json"),
]


def test_compare_policies_json() -> None:
    result = run(*COMPARE)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert list(payload["policies"]) == ["fifo+packing", "sjf+tetris", "las+lif"]
    for metrics in payload["policies"].values():
        assert set(metrics) >= METRICS
        assert metrics["jobs_finished"] == 60
        assert metrics["p99_jct"] >= metrics["p90_jct"] >= metrics["median_jct"] > 0
        assert 0 < metrics["gpu_utilization"] <= 1
    # Same seed, same numbers.
    assert json.loads(run(*COMPARE).stdout)["policies"] == payload["policies"]


def test_trace_run_with_table_plot_and_csv(tmp_path: Path) -> None:
    plot, table = tmp_path / "run.png", tmp_path / "metrics.csv"
    result = run(
        *("--topology", "flat", "--servers", "16", "--gpus", "8", "--jobs", "80"),
        *("--trace", str(TRACES / "philly_sample_200.csv")),
        *("--compare", "fifo+packing,sjf+packing", "--plot", str(plot), "--csv", str(table)),
    )
    assert result.returncode == 0, result.stderr
    assert "fifo+packing" in result.stdout and "avg JCT h" in result.stdout
    assert plot.read_bytes()[:4] == b"\x89PNG"
    rows = table.read_text().splitlines()
    assert rows[0].startswith("policy,") and len(rows) == 3


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--policy", "fifo+teleport"], "unknown placement 'teleport'"),
        (["--policy", "fifo+packing", "--compare", "sjf+packing"], "exactly one of --policy"),
        (["--policy", "fifo+packing", "--trace", "/no/such/file.csv"], "/no/such/file.csv"),
        (["--policy", "fifo+packing", "--jobs", "0"], "--jobs must be >= 1"),
        (["--policy", "fifo+packing", "--workload", "zipf"], "invalid choice: 'zipf'"),
        (["--policy", "las+packing", "--las-thresholds", "900,60"], "thresholds must increase"),
        (["--policy", "las+packing", "--las-thresholds", "1h"], "separated by commas"),
        (["--policy", "srtf+packing", "--min-run", "-1"], "--min-run must be >= 0"),
        (["--policy", "srtf+packing", "--restart-cost", "-5"], "finite number of seconds >= 0"),
        (["--policy", "srtf+packing", "--restart-cost", "inf"], "finite number of seconds >= 0"),
        (["--policy", "fifo+packing", "--interval", "inf"], "--interval must be a finite number"),
        (["--compare", ","], "--compare needs policy names"),
        (["--compare", "fifo+packing,sjf+packing,fifo+packing"], "names fifo+packing more than"),
        (
            ["--policy", "fifo+packing", "--arrival-scale", "0.5"],
            "without --trace: --arrival-scale",
        ),
        (["--policy", "fifo+packing", "--vc", "a", "--catalog", "x"], "trace: --vc, --catalog;"),
        (
            [
                *("--policy", "fifo+packing", "--workload-arg", "rate=3"),
                *("--trace", str(TRACES / "philly_sample_200.csv")),
            ],
            "--workload-arg applies to a generated workload",
        ),
        (["--policy", "fifo+packing", "--perf", "idael"], "invalid choice: 'idael'"),
        (["--policy", "fifo+packing", "--jobs-csv", "tests"], "--jobs-csv tests: is a folder"),
        (["--policy", "fifo+packing", "--max-contention", "0.5"], "takes a number >= 1"),
        (["--policy", "las+packing", "--las-promote", "0"], "takes a number > 0 (e.g. 8) or 'off'"),
        (["--policy", "fifo+packing", "--seed", "-1"], "--seed: a seed is an integer >= 0"),
        # Two outputs into one file: the metrics table would be lost under the per-job one.
        (
            ["--policy", "fifo+packing", "--csv", "out.csv", "--jobs-csv", "./out.csv"],
            "--csv and --jobs-csv both name",
        ),
    ],
)
def test_run_errors_are_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    result = run("--topology", "fat-tree", "--k", "4", *args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and fragment in result.stderr, result.stderr


def test_infeasible_jobs_refused_or_dropped() -> None:
    args = ["--topology", "flat", "--servers", "1", "--gpus", "4", "--trace"]
    args += [str(TRACES / "philly_sample_200.csv"), "--policy", "fifo+packing"]
    refused = run(*args)
    assert refused.returncode == 2 and "can never run on this cluster" in refused.stderr
    dropped = run(*args, "--drop-infeasible", "--json")
    assert dropped.returncode == 0, dropped.stderr
    payload = json.loads(dropped.stdout)
    assert payload["notes"][0].startswith("dropped ")
    assert payload["policies"]["fifo+packing"]["jobs_finished"] == payload["jobs"]


def test_las_and_srtf_preempt_unless_told_not_to() -> None:
    args = [*COMPARE[:8], "--compare", "las+packing,srtf+packing", "--json"]
    args += ["--restart-cost", "60", "--min-run", "60", "--las-thresholds", "1800"]
    preemptive = json.loads(run(*args).stdout)["policies"]
    assert all(metrics["preemptions"] > 0 for metrics in preemptive.values())
    assert all(metrics["jobs_finished"] == 60 for metrics in preemptive.values())
    calm = json.loads(run(*args, "--no-preemption").stdout)["policies"]
    assert all(metrics["preemptions"] == 0 for metrics in calm.values())


def philly_sample_gpu_seconds() -> float:
    """The sample's GPU-seconds by its own gpu_time column (num_gpus x duration)."""
    with (TRACES / "philly_sample_200.csv").open() as handle:
        return sum(float(row["gpu_time"]) for row in csv.DictReader(handle))


TRACE_RUN = [
    *("--topology", "flat", "--servers", "16", "--gpus", "8"),
    *("--trace", str(TRACES / "philly_sample_200.csv"), "--json"),
]


def test_ideal_strict_run_records_its_settings_and_conserves_gpu_time() -> None:
    result = run(*TRACE_RUN, "--compare", "fifo+packing,las+packing", "--perf", "ideal")
    assert result.returncode == 0, result.stderr
    strict = run(
        *TRACE_RUN, "--compare", "fifo+packing,las+packing", "--perf", "ideal", "--no-backfill"
    )
    assert strict.returncode == 0, strict.stderr
    expected = philly_sample_gpu_seconds()  # 4,705,260 GPU-seconds
    for output, backfill in ((result.stdout, True), (strict.stdout, False)):
        payload = json.loads(output)
        assert (payload["perf"], payload["backfill"], payload["jobs"]) == ("ideal", backfill, 200)
        for metrics in payload["policies"].values():
            assert metrics["jobs_finished"] == 200
            assert metrics["gpu_seconds"] == pytest.approx(expected, rel=1e-9)
            assert metrics["ideal_gpu_seconds"] == pytest.approx(expected, rel=1e-9)
            assert metrics["gpu_time_inflation"] == pytest.approx(1.0, rel=1e-9)
    # Strict FIFO lets no job overtake a waiting one: it must differ from backfilling.
    fifo = json.loads(result.stdout)["policies"]["fifo+packing"]
    assert json.loads(strict.stdout)["policies"]["fifo+packing"] != fifo


def test_defaults_are_contention_and_backfill_in_json_help_and_table() -> None:
    payload = json.loads(run(*TRACE_RUN, "--policy", "fifo+packing").stdout)
    assert (payload["perf"], payload["backfill"], payload["consolidate"]) == (
        "contention",
        True,
        True,
    )
    assert payload["policies"]["fifo+packing"]["gpu_time_inflation"] >= 1.0
    table = run(*TRACE_RUN[:-1], "--policy", "fifo+packing", "--no-backfill").stdout
    assert "perf contention, backfill off (strict order)" in table
    assert "GPU-s x" in table
    usage = " ".join(run("--help").stdout.split())
    assert "--backfill, --no-backfill" in usage and "(default: on)" in usage
    assert "--perf {ideal,contention}" in usage and "(default contention)" in usage
    assert "--consolidate, --no-consolidate" in usage


def test_jobs_csv_rows_match_the_trace_and_the_metrics(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    policies = ("fifo+packing", "las+packing")
    # 80 jobs on 32 GPUs: they queue, so LAS preempts.
    result = run(
        *("--topology", "flat", "--servers", "4", "--gpus", "8", "--json"),
        *("--trace", str(TRACES / "philly_sample_200.csv")),
        *("--jobs", "80", "--compare", ",".join(policies), "--perf", "ideal"),
        *("--min-run", "0", "--las-thresholds", "600", "--jobs-csv", str(path)),
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)["policies"]
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [
        *("policy", "job", "job_id", "arrival", "first_start", "finish", "gpus", "servers"),
        *("preemptions", "gpu_seconds", "ideal_gpu_seconds"),
    ]
    with (TRACES / "philly_sample_200.csv").open() as handle:
        trace = list(csv.DictReader(handle))
    assert [row["policy"] for row in rows] == [name for name in policies for _ in range(80)]
    for name in policies:
        own = [row for row in rows if row["policy"] == name]
        assert [int(row["job"]) for row in own] == list(range(80))
        # job_id is the trace row: GPUs and ideal GPU-seconds are the trace's own.
        for row in own:
            source = trace[int(row["job_id"])]
            assert int(row["gpus"]) == int(source["num_gpus"])
            assert float(row["ideal_gpu_seconds"]) == pytest.approx(float(source["gpu_time"]))
            assert int(row["servers"]) >= 1 and row["finish"] != ""
        column_sum = sum(float(row["gpu_seconds"]) for row in own)
        assert column_sum == pytest.approx(metrics[name]["gpu_seconds"], rel=1e-9)
        ideal_sum = sum(float(row["ideal_gpu_seconds"]) for row in own)
        assert ideal_sum == pytest.approx(metrics[name]["ideal_gpu_seconds"], rel=1e-9)
        assert sum(int(row["preemptions"]) for row in own) == metrics[name]["preemptions"]
    assert metrics["las+packing"]["preemptions"] > 0


def test_jobs_csv_into_a_missing_folder_fails_before_anything_runs(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "jobs.csv"
    # The trace does not exist either: the output path is refused before it is read.
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "2", "--policy", "fifo+packing"),
        *("--trace", str(tmp_path / "missing.csv"), "--jobs-csv", str(target)),
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"--jobs-csv {target}: folder {target.parent} does not exist" in result.stderr
    assert not (tmp_path / "no").exists()


def test_jobs_csv_help_says_what_unfinished_jobs_get() -> None:
    usage = " ".join(run("--help").stdout.split())
    assert "--jobs-csv FILE.csv" in usage
    assert "finish (empty if unfinished when the run ended)" in usage


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_write_that_fails_after_the_run_loses_no_result(tmp_path: Path) -> None:
    # /dev/full passes the checks (an existing, writable file) but every write fails.
    table = tmp_path / "metrics.csv"
    result = run(
        *TRACE_RUN,
        *("--jobs", "20", "--policy", "fifo+packing"),
        *("--jobs-csv", "/dev/full", "--csv", str(table)),
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["policies"]["fifo+packing"]["jobs_finished"] == 20
    assert result.stderr.count("\n") == 1 and "per-job table not written" in result.stderr
    assert table.read_text().startswith("policy,")  # the other outputs are still written


def test_contention_cap_and_las_promotion_are_recorded_and_used() -> None:
    las = [*TRACE_RUN, "--policy", "las+packing", "--las-thresholds", "600"]
    default = json.loads(run(*las).stdout)
    assert default["max_contention"] == 3.0
    uncapped = json.loads(run(*las, "--max-contention", "off").stdout)
    assert uncapped["max_contention"] is None  # math.inf, written as JSON null
    promoted = run(*las, "--las-promote", "1")
    assert promoted.returncode == 0, promoted.stderr
    metrics = json.loads(promoted.stdout)["policies"]["las+packing"]
    assert metrics["jobs_finished"] == 200
    # Promoted jobs come back to the first queue and preempt again: more preemptions.
    assert metrics["preemptions"] > default["policies"]["las+packing"]["preemptions"]
    usage = " ".join(run("--help").stdout.split())
    assert "--max-contention CS|off" in usage and "--las-promote KNOB|off" in usage


def test_a_plot_matplotlib_cannot_write_fails_before_the_trace_is_read(tmp_path: Path) -> None:
    # The trace does not exist: had the run started, that would be the error.
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "2", "--policy", "fifo+packing"),
        *("--trace", str(tmp_path / "missing.csv"), "--plot", str(tmp_path / "cdf.txt")),
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(
        f"simulate.py: error: --plot {tmp_path / 'cdf.txt'}: matplotlib cannot write .txt "
        "files; end the name in one of "
    )
    assert (
        ".png" in result.stderr and ".pdf" in result.stderr and not (tmp_path / "cdf.txt").exists()
    )


def test_an_absurd_trace_duration_is_refused_naming_the_file_and_row(tmp_path: Path) -> None:
    trace = tmp_path / "huge.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n0,600,1,600,vc1\n10,1e308,1,1e308,vc1\n"
    )
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "8", "--policy", "fifo+packing"),
        *("--trace", str(trace)),
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    # The second data row (job 1), whose work overflows a float at any model's step time.
    assert result.stderr.startswith(
        f"simulate.py: error: {trace}: job 1 (job_id 1) is too long to simulate: "
        "its duration (1e+308 s) divided by its model's compute time per iteration"
    )
    assert result.stderr.endswith("overflows; 1 job(s) need a finite, smaller duration\n")


def test_a_binary_trace_is_refused_naming_the_file(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv.gz"
    trace.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe\x80\x81 not text")
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "8", "--policy", "fifo+packing"),
        *("--trace", str(trace)),
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr == (
        f"simulate.py: error: {trace}:1: field '(file)': not a UTF-8 text CSV "
        "(a binary or compressed file?)\n"
    )


@pytest.mark.parametrize(
    ("rows", "extra", "expected"),
    [
        # A stray quote in a Philly row (it used to swallow the file after it, silently).
        (
            '0,600,1,600,vc1\n10,600,1,600,"vc1\n' + "20,600,1,600,vc1\n" * 8000,
            [],
            "{trace}:3: field 'cluster': holds a double quote, which this trace format never "
            "has (a stray quote?) (got '\"vc1')",
        ),
        # A GPU count past int64 (an OverflowError traceback before).
        (
            "0,600,1,600,vc1\n10,600,1e19,600,vc1\n",
            [],
            "{trace}:3: field 'num_gpus': must be at most 2147483647 GPUs (2^31 - 1) (got '1e19')",
        ),
        # An unbalanced quote in a generic CSV past csv's field limit (a raw _csv.Error
        # traceback before, even with --skip-bad-rows, which cannot skip it).
        (
            '0,600,1,600,vc1\n10,600,1,600,"vc1\n' + "20,600,1,600,vc1\n" * 8000,
            [
                *("--format", "csv", "--skip-bad-rows"),
                *("--map", "arrival=timestamp,gpus=num_gpus,duration=duration,vc=cluster"),
            ],
            "{trace}:3: field '(row)': a double-quoted field runs from line 3 past line 7713 "
            "and exceeds 131072 characters (an unbalanced quote?)",
        ),
    ],
    ids=["stray-quote", "huge-gpu-count", "unbalanced-quote-in-csv"],
)
def test_a_malformed_trace_is_one_line_and_exit_2(
    tmp_path: Path, rows: str, extra: list[str], expected: str
) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + rows)
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "8", "--policy", "fifo+packing"),
        *("--trace", str(trace), *extra),
    )
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr == f"simulate.py: error: {expected.format(trace=trace)}\n"


def test_a_wrongly_typed_workload_option_is_one_line_and_exit_2() -> None:
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "8", "--policy", "fifo+packing"),
        *("--workload", "deeprm", "--jobs", "5", "--workload-arg", "resource_names=5"),
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "simulate.py: error: resource_names must be a list of non-empty resource names "
        "starting with ('gpu', 'cpu'), got 5\n"
    )


def test_a_trace_job_without_duration_is_dropped_not_refused(tmp_path: Path) -> None:
    trace = tmp_path / "span.csv"
    trace.write_text("submit,start,end,gpus\n0,10,610,1\n5,20,,2\n9,30,90,1\n")
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "8", "--policy", "fifo+packing"),
        *("--trace", str(trace), "--format", "csv", "--json"),
        *("--map", "arrival=submit,start=start,end=end,gpus=gpus"),
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["jobs"] == 2
    assert payload["notes"] == [
        f"dropped 1 job(s) of {trace} without a duration (no end or duration in the trace: "
        "unfinished when it was recorded)"
    ]


@pytest.mark.parametrize(
    ("extra", "window_s"),
    [
        # Uniform: 15 jobs per interval per scheduler (one on a flat cluster), the interval
        # --interval's: 15 in each 10-minute round (all 30 in the first hour before).
        ([], 600),
        # The generator's own interval_s wins: 15 in each 30 minutes.
        (["--workload-arg", "interval_s=1800"], 1800),
    ],
)
def test_a_generators_rate_is_per_the_interval_given(
    tmp_path: Path, extra: list[str], window_s: int
) -> None:
    jobs = tmp_path / "jobs.csv"
    result = run(
        *("--topology", "flat", "--servers", "4", "--gpus", "8", "--workload", "uniform"),
        *("--jobs", "30", "--interval", "600", "--policy", "fifo+packing"),
        *("--jobs-csv", str(jobs), *extra),
    )
    assert result.returncode == 0, result.stderr
    with jobs.open() as handle:
        arrivals = [float(row["arrival"]) for row in csv.DictReader(handle)]
    windows = [int(arrival // window_s) for arrival in arrivals]
    assert [windows.count(0), windows.count(1)] == [15, 15]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--perf", "ideal", "--max-contention", "2", "--link-sharing", "traffic"],
            "simulate.py: error: contention-model options with --perf ideal: --max-contention, "
            "--link-sharing; the ideal model has no interference or link sharing (drop them, "
            "or use --perf contention)",
        ),
        (
            ["--perf", "ideal", "--interference-coefficients", "paper001-fit"],
            "simulate.py: error: contention-model options with --perf ideal: "
            "--interference-coefficients; the ideal model has no interference or link sharing "
            "(drop them, or use --perf contention)",
        ),
    ],
)
def test_options_the_ideal_model_would_ignore_are_one_line(extra: list[str], message: str) -> None:
    result = run(
        *("--topology", "flat", "--servers", "2", "--gpus", "8", "--policy", "fifo+packing"),
        *("--jobs", "5", *extra),
    )
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")


def test_a_duration_unit_for_a_trace_format_that_fixes_its_own_is_one_line() -> None:
    result = run(
        *("--topology", "flat", "--servers", "4", "--policy", "fifo+packing"),
        *("--trace", str(TRACES / "philly_sample_200.csv"), "--jobs", "5", "--duration-unit", "h"),
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "simulate.py: error: --duration-unit applies to --format csv; --format philly traces "
        "give their durations in their own unit\n"
    )


def test_more_jobs_than_fit_in_memory_are_one_line_before_the_cluster_is_built() -> None:
    """``--jobs 100000000`` ended in a MemoryError traceback drawing the jobs."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--policy", "fifo+packing", "--jobs", "100000000"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        preexec_fn=cap_memory,
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr == (
        "simulate.py: error: --jobs must be at most 10,000,000 for a generated workload "
        "(more would not fit in memory), got 100,000,000\n"
    )


def test_a_trace_may_be_capped_at_any_number_of_jobs() -> None:
    """A trace's --jobs only caps the jobs read: a cap beyond the bound allocates nothing."""
    result = run(
        *("--topology", "flat", "--servers", "16", "--gpus", "8", "--jobs", "100000000"),
        *("--trace", str(TRACES / "philly_sample_200.csv"), "--policy", "fifo+packing"),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["jobs"] == 200


def test_a_reader_that_stops_reading_loses_no_file_and_ends_quietly(
    tmp_path: Path, run_into_closed_pipe
) -> None:
    """``run ... --json --csv FILE | head -c 10``: it printed "simulate.py: error: [Errno
    32] Broken pipe", exited 2 and never wrote FILE; now the file is written and the exit
    is 141 (128 + SIGPIPE, as a Unix tool ends), with nothing on stderr."""
    table = tmp_path / "metrics.csv"
    for output in (["--json"], []):
        command = [sys.executable, str(SCRIPT), "run", *COMPARE[:8], "--policy", "fifo+packing"]
        result = run_into_closed_pipe([*command, *output, "--csv", str(table)])
        assert (result.returncode, result.stderr) == (141, "")
        assert table.read_text().startswith("policy,")
        table.unlink()


def test_a_wait_that_rounding_puts_below_zero_prints_as_0_00() -> None:
    """Jobs that never waited made "wait h -0.00" here (avg_wait -5e-15 s)."""
    result = run(
        *("--topology", "flat", "--servers", "256", "--gpus", "8", "--workload", "poisson"),
        *("--jobs", "300", "--seed", "0", "--policy", "fifo+packing", "--perf", "ideal"),
    )
    assert result.returncode == 0, result.stderr
    header, _, row = result.stdout.splitlines()[1:4]
    wait = header.index("wait h") + len("wait h")
    assert row[:wait].split()[-1] == "0.00"
