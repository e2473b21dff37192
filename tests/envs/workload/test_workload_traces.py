"""Trace readers: each format from a small file, bad rows, filters, scaling, feasibility."""

from __future__ import annotations

import csv
import pickle
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from envs.workload import (
    COLUMN_KEYS,
    InfeasibleJobError,
    TraceFormatError,
    TraceOptions,
    Workload,
    assign_models,
    check_feasible,
    drop_infeasible,
    get_catalog,
    parse_column_map,
    read_csv_trace,
    read_helios,
    read_pai,
    read_philly,
    read_trace,
)
from envs.workload.traces import HELIOS_COLUMNS

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "traces"
FULL_PHILLY = REPO / ".." / "shared" / "traces" / "philly.csv"


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# --- Philly ------------------------------------------------------------------------------------


def test_philly_small_by_hand() -> None:
    jobs, report = read_philly(DATA / "philly_small.csv")
    # Sorted: 09:00 (row 1, vcB, 4 GPUs), 09:30 (row 2, vcA, 8), 10:00 (row 0, vcA, 1),
    # 11:00 (row 3, vcB, 2), next day 09:00 (row 4, vcA, 16); re-based to the first.
    np.testing.assert_array_equal(jobs.arrival_time, [0, 1800, 3600, 7200, 86_400])
    np.testing.assert_array_equal(jobs.job_id, [1, 2, 0, 3, 4])
    np.testing.assert_array_equal(jobs.duration, [120, 60, 3600, 7200, 30])
    np.testing.assert_array_equal(jobs.num_workers, [4, 8, 1, 2, 16])
    np.testing.assert_array_equal(jobs.worker_demand[:, 0], 1.0)
    assert (jobs.num_ps == 0).all()
    assert jobs.is_fixed_duration.all()
    assert jobs.vc_names == ("vcA", "vcB")
    assert [jobs.vc_name(j) for j in range(5)] == ["vcB", "vcA", "vcA", "vcB", "vcA"]
    # No CPU column: a worker gets its model's cpu_cores.
    np.testing.assert_array_equal(
        jobs.worker_demand[:, 1], get_catalog("marl").column("cpu_cores")[jobs.model]
    )
    assert (report.rows, report.skipped, report.jobs) == (5, 0, 5)
    assert dict(report.filtered) == {}
    assert report.format == "philly"


def test_philly_numeric_seconds_and_stable_ties() -> None:
    jobs, _ = read_philly(DATA / "philly_seconds.csv")
    np.testing.assert_array_equal(jobs.arrival_time, [0.0, 0.0, 300.0])
    np.testing.assert_array_equal(jobs.job_id, [1, 2, 0])  # equal arrivals keep file order


def test_philly_filters_scaling_and_absolute_times() -> None:
    path = DATA / "philly_small.csv"
    only_a, report = read_philly(path, TraceOptions(vcs=("vcA",)))
    np.testing.assert_array_equal(only_a.job_id, [2, 0, 4])
    np.testing.assert_array_equal(only_a.arrival_time, [0, 1800, 84_600])  # re-based to 09:30
    assert dict(report.filtered) == {"vc": 2}
    # Window in seconds after the first arrival: [1800, 7200) keeps 09:30 and 10:00.
    windowed, report = read_philly(path, TraceOptions(start_s=1800, end_s=7200))
    np.testing.assert_array_equal(windowed.job_id, [2, 0])
    np.testing.assert_array_equal(windowed.arrival_time, [0, 1800])
    assert dict(report.filtered) == {"window": 3}
    first_two, report = read_philly(path, TraceOptions(max_jobs=2))
    np.testing.assert_array_equal(first_two.job_id, [1, 2])
    assert dict(report.filtered) == {"max_jobs": 3}
    halved, _ = read_philly(path, TraceOptions(arrival_scale=0.5))
    np.testing.assert_array_equal(halved.arrival_time, [0, 900, 1800, 3600, 43_200])
    absolute, _ = read_philly(path, TraceOptions(rebase=False))
    assert absolute.arrival_time[0] == epoch("2017-10-03 09:00:00") == 1_507_021_200.0
    with pytest.raises(ValueError, match="no job has vc vcC; known: vcA, vcB"):
        read_philly(path, TraceOptions(vcs=("vcC",)))
    with pytest.raises(ValueError, match="philly traces carry no state"):
        read_philly(path, TraceOptions(states=("COMPLETED",)))


def test_philly_models_are_seeded_and_weighted() -> None:
    path = DATA / "philly_sample_200.csv"
    first, _ = read_philly(path, rng=np.random.default_rng(3))
    again, _ = read_philly(path, rng=np.random.default_rng(3))
    other, _ = read_philly(path, rng=np.random.default_rng(4))
    assert first == again
    assert not np.array_equal(first.model, other.model)
    default_a, _ = read_philly(path)
    default_b, _ = read_philly(path)
    assert default_a == default_b  # no generator given: a fixed seed
    weighted, _ = read_philly(
        path, TraceOptions(catalog="deepshare", model_weights=(0, 0, 0, 0, 1, 1))
    )
    assert weighted.catalog_name == "deepshare"
    assert set(weighted.model.tolist()) == {4, 5}
    with pytest.raises(ValueError, match="model_weights must be 6 numbers"):
        TraceOptions(catalog="deepshare", model_weights=(1, 1))
    fixed_cpu, _ = read_philly(DATA / "philly_small.csv", TraceOptions(cpus_per_gpu=4.0))
    np.testing.assert_array_equal(fixed_cpu.worker_demand[:, 1], 4.0)


def test_philly_sample_of_the_real_trace() -> None:
    jobs, report = read_philly(DATA / "philly_sample_200.csv")
    assert (report.rows, report.skipped, report.jobs) == (200, 0, 200)
    # Counted in the file: 197 one-GPU jobs, two 4-GPU jobs, one 8-GPU job; 213 GPUs;
    # 2,200,981 s of run time; VCs 6214e9 188, 11cb48 7, 103959 2, ee9e8c 2, 6c71a0 1.
    np.testing.assert_array_equal(
        np.bincount(jobs.total_gpus.astype(int)), [0, 197, 0, 0, 2, 0, 0, 0, 1]
    )
    assert jobs.total_gpus.sum() == 213
    assert jobs.duration.sum() == 2_200_981
    vcs = {name: int((jobs.vc == code).sum()) for code, name in enumerate(jobs.vc_names)}
    assert vcs == {"6214e9": 188, "11cb48": 7, "103959": 2, "ee9e8c": 2, "6c71a0": 1}
    # Earliest is 2017-09-29 07:58:32 (row 2), latest 2017-10-09 07:01:55 (row 0).
    assert jobs.job_id[0] == 2 and jobs.job_id[-1] == 0
    assert jobs.arrival_time[-1] == epoch("2017-10-09 07:01:55") - epoch("2017-09-29 07:58:32")
    assert jobs.arrival_time[-1] == 860_603.0
    eight = int(np.flatnonzero(jobs.total_gpus == 8)[0])
    assert jobs.duration[eight] == 193_256.0 and jobs.num_workers[eight] == 8


def test_full_philly_trace() -> None:
    jobs, report = read_philly(FULL_PHILLY)
    assert len(jobs) == report.rows == 82_247
    assert report.skipped == 0 and report.filtered_total == 0
    assert jobs.arrival_time[0] == 0.0
    assert jobs.total_gpus.max() == 128
    assert len(jobs.vc_names) == 15


def test_philly_bad_rows_name_file_line_and_field() -> None:
    path = DATA / "philly_bad.csv"
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path)
    error = caught.value
    assert (error.line, error.field, error.value) == (3, "duration", "abc")
    assert error.path == str(path)
    assert str(error) == f"{path}:3: field 'duration': is not a number (got 'abc')"
    assert isinstance(error, ValueError)

    jobs, report = read_philly(path, TraceOptions(skip_bad_rows=True))
    assert (report.rows, report.skipped, report.jobs) == (9, 6, 3)
    assert [(e.line, e.field) for e in report.errors] == [
        (3, "duration"),
        (5, "timestamp"),
        (6, "num_gpus"),
        (7, "(row)"),
        (8, "duration"),
        (9, "cluster"),
    ]
    assert "must be >= 0" in str(report.errors[4])
    assert "9 rows, 6 bad rows skipped" in report.summary()
    np.testing.assert_array_equal(jobs.job_id, [0, 2, 8])
    assert report.to_dict()["errors"][0].endswith("(got 'abc')")


def test_trace_format_error_survives_pickling() -> None:
    error = TraceFormatError("a.csv", 7, "gpus", "must be >= 0", "-1")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.line, copy.field, copy.value, str(copy)) == (
        "a.csv",
        7,
        "gpus",
        "-1",
        str(error),
    )


def test_missing_header_column_and_empty_file(tmp_path: Path) -> None:
    no_cluster = tmp_path / "no_cluster.csv"
    no_cluster.write_text("timestamp,duration,num_gpus\n0,1,1\n")
    with pytest.raises(
        TraceFormatError, match=r"no_cluster.csv:1: field 'cluster': column missing"
    ):
        read_philly(no_cluster)
    empty = tmp_path / "empty.csv"
    empty.write_text("\n")
    with pytest.raises(TraceFormatError, match=r"empty.csv:1: field '\(header\)': file is empty"):
        read_philly(empty)


# --- Helios ------------------------------------------------------------------------------------


def test_helios_by_hand() -> None:
    jobs, report = read_helios(DATA / "helios_cluster_log.csv")
    # Kept: 7f1a2b (00:00:10), 9c0d1e (00:02:00), b2c3d4 (01:00:00); dropped: the CPU-only
    # 8a9b0c and a1b2c3, cancelled with duration 0.
    np.testing.assert_array_equal(jobs.arrival_time, [0, 110, 3590])
    np.testing.assert_array_equal(jobs.job_id, [0, 2, 4])
    np.testing.assert_array_equal(jobs.duration, [7200, 600, 1800])
    np.testing.assert_array_equal(jobs.num_workers, [8, 16, 2])
    np.testing.assert_array_equal(jobs.worker_demand, [[1, 6], [1, 6], [1, 6]])  # cpu_num / GPUs
    assert [jobs.user_name(j) for j in range(3)] == ["u1", "u1", "u2"]
    assert [jobs.vc_name(j) for j in range(3)] == ["vc1", "vc1", "vc1"]
    assert dict(report.filtered) == {"zero_duration": 1, "no_gpu": 1}
    assert (report.rows, report.jobs) == (5, 3)

    completed, report = read_helios(
        DATA / "helios_cluster_log.csv", TraceOptions(states=("COMPLETED",))
    )
    np.testing.assert_array_equal(completed.job_id, [0, 4])
    assert report.filtered["state"] == 1
    with_cpu_jobs, _ = read_helios(
        DATA / "helios_cluster_log.csv", TraceOptions(gpu_jobs_only=False)
    )
    np.testing.assert_array_equal(with_cpu_jobs.job_id, [1, 0, 2, 4])
    np.testing.assert_array_equal(with_cpu_jobs.worker_demand[0], [0.0, 4.0])


def test_helios_bad_rows() -> None:
    with pytest.raises(
        TraceFormatError, match=r"helios_bad.csv:3: field 'submit_time': is not a valid ISO"
    ):
        read_helios(DATA / "helios_bad.csv")
    jobs, report = read_helios(DATA / "helios_bad.csv", TraceOptions(skip_bad_rows=True))
    assert [(e.line, e.field) for e in report.errors] == [
        (3, "submit_time"),
        (4, "gpu_num"),
        (5, "cpu_num"),
    ]
    assert "is empty" in str(report.errors[2])
    assert (report.skipped, len(jobs)) == (3, 1)


# --- Alibaba PAI ---------------------------------------------------------------------------------


def test_pai_join_by_hand() -> None:
    jobs, report = read_pai(DATA / "pai_job_table.csv", DATA / "pai_task_table.csv")
    # jobA: 2 workers of 50% GPU and 4 cores, 1 PS of 6 cores; runs 1005..1595.
    # jobB: 1 worker, 1 GPU, 8 cores, 1150..1950. jobC: 4 workers, 1 GPU, 6 cores, 1210..1290.
    np.testing.assert_array_equal(jobs.arrival_time, [0, 100, 200])
    np.testing.assert_array_equal(jobs.job_id, [0, 1, 2])
    np.testing.assert_array_equal(jobs.duration, [590, 800, 80])
    np.testing.assert_array_equal(jobs.num_workers, [2, 1, 4])
    np.testing.assert_array_equal(jobs.num_ps, [1, 0, 0])
    np.testing.assert_array_equal(jobs.worker_demand, [[0.5, 4.0], [1.0, 8.0], [1.0, 6.0]])
    np.testing.assert_array_equal(jobs.ps_demand, [[0.0, 6.0], [0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(jobs.total_gpus, [1.0, 1.0, 4.0])
    assert [jobs.user_name(j) for j in range(3)] == ["userX", "userY", "userX"]
    # jobD never ended, jobE asks for no GPU, jobZ's task has no job.
    assert dict(report.filtered) == {"tasks_without_job": 1, "no_duration": 1, "no_gpu": 1}
    assert (report.rows, report.jobs) == (5 + 7, 3)
    terminated, _ = read_pai(
        DATA / "pai_job_table.csv",
        DATA / "pai_task_table.csv",
        TraceOptions(states=("Terminated",)),
    )
    np.testing.assert_array_equal(terminated.job_id, [0, 1])


def test_pai_bad_task_rows() -> None:
    bad_tasks = DATA / "pai_task_table_bad.csv"
    with pytest.raises(TraceFormatError, match=r"pai_task_table_bad.csv:2: field 'inst_num'"):
        read_pai(DATA / "pai_job_table.csv", bad_tasks)
    jobs, report = read_pai(DATA / "pai_job_table.csv", bad_tasks, TraceOptions(skip_bad_rows=True))
    assert [(Path(e.path).name, e.line, e.field) for e in report.errors] == [
        ("pai_task_table_bad.csv", 2, "inst_num"),
        ("pai_task_table_bad.csv", 3, "plan_cpu"),
    ]
    np.testing.assert_array_equal(jobs.job_id, [0, 2])  # jobA (without its PS) and jobC
    assert (jobs.num_ps == 0).all()
    assert report.filtered["no_tasks"] == 3  # jobB, jobD, jobE lost or lacked their tasks


def test_pai_repeated_job_is_a_bad_row(tmp_path: Path) -> None:
    jobs_file = tmp_path / "jobs.csv"
    jobs_file.write_text("a,i,u,Terminated,1,2\na,i,u,Terminated,3,4\n")
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("a,worker,1,Terminated,1,2,100,1,100,T4\n")
    with pytest.raises(
        TraceFormatError, match=r"jobs.csv:2: field 'job_name': repeats the job of line 1"
    ):
        read_pai(jobs_file, tasks)


# --- generic CSV through a column map -------------------------------------------------------------


def test_csv_iso_timestamps_and_minutes() -> None:
    jobs, report = read_csv_trace(
        DATA / "custom_iso.csv",
        "arrival=submitted,gpus=gpu_count,duration=runtime_min,vc=team,user=owner",
        duration_unit="min",
    )
    # 09:30+02:00 is 07:30Z, before 08:00Z and the zone-less 08:15 (read as UTC).
    np.testing.assert_array_equal(jobs.job_id, [1, 0, 2])
    np.testing.assert_array_equal(jobs.arrival_time, [0, 1800, 2700])
    np.testing.assert_array_equal(jobs.duration, [5400, 1800, 900])
    np.testing.assert_array_equal(jobs.num_workers, [1, 4, 2])
    assert [jobs.user_name(j) for j in range(3)] == ["bob", "alice", "carol"]
    assert [jobs.vc_name(j) for j in range(3)] == ["prod", "research", "research"]
    assert report.format == "csv"
    only_research, _ = read_csv_trace(
        DATA / "custom_iso.csv",
        {"arrival": "submitted", "gpus": "gpu_count", "duration": "runtime_min", "vc": "team"},
        TraceOptions(vcs=("research",)),
        duration_unit="h",
    )
    np.testing.assert_array_equal(only_research.duration, [30 * 3600, 15 * 3600])


def test_csv_start_end_workers_cpus_and_delimiter() -> None:
    jobs, _ = read_csv_trace(
        DATA / "custom_span.csv",
        "arrival=submit,start=begin,end=finish,gpus=gpus,cpus=cpus,workers=workers",
        delimiter=";",
    )
    np.testing.assert_array_equal(jobs.job_id, [1, 0, 2])
    np.testing.assert_array_equal(jobs.arrival_time, [0, 50, 150])
    np.testing.assert_array_equal(jobs.duration, [100, 300, 60])
    np.testing.assert_array_equal(jobs.num_workers, [1, 2, 3])
    np.testing.assert_array_equal(jobs.worker_demand, [[0.5, 2.0], [4.0, 16.0], [1.0, 4.0]])
    minutes, _ = read_csv_trace(
        DATA / "custom_span.csv",
        "arrival=submit,start=begin,end=finish,gpus=gpus",
        delimiter=";",
        arrival_unit="min",
    )
    np.testing.assert_array_equal(minutes.arrival_time, [0, 3000, 9000])
    np.testing.assert_array_equal(minutes.duration, [6000, 18000, 3600])


def test_csv_bad_rows_name_the_csv_column(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("t,g,d\n0,1,10\nsoon,1,10\n5,2.5,10\n6,1,-1\n")
    with pytest.raises(TraceFormatError, match=r"mine.csv:3: field 't': is neither a number"):
        read_csv_trace(path, "arrival=t,gpus=g,duration=d")
    jobs, report = read_csv_trace(
        path, "arrival=t,gpus=g,duration=d", TraceOptions(skip_bad_rows=True)
    )
    assert [(e.line, e.field) for e in report.errors] == [(3, "t"), (4, "g"), (5, "d")]
    assert "whole number of GPUs, or a fraction below 1" in str(report.errors[1])
    assert str(report.errors[2]).endswith("field 'd': must be >= 0 (got '-1')")
    assert len(jobs) == 1
    with pytest.raises(TraceFormatError, match=r"mine.csv:1: field 'gpus': column missing"):
        read_csv_trace(path, "arrival=t,gpus=gpus,duration=d")
    with pytest.raises(ValueError, match="duration unit 'days' is unknown; allowed: s, min, h"):
        read_csv_trace(path, "arrival=t,gpus=g,duration=d", duration_unit="days")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "column map is empty"),
        ("arrival=t,gpus", "item 'gpus' has no '='"),
        ("arrival=t,gpus=g,size=s,duration=d", "key 'size' is unknown; allowed: arrival, gpus"),
        ("arrival=t,gpus=,duration=d", "key 'gpus' names no column"),
        ("arrival=t,arrival=u,gpus=g,duration=d", "sets 'arrival' twice"),
        ("gpus=g,duration=d", "lacks arrival"),
        ("arrival=t,gpus=g", "needs duration=COLUMN, or both start=COLUMN and end=COLUMN"),
        ("arrival=t,gpus=g,duration=d,start=s", "only one of start and end"),
    ],
)
def test_column_map_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_column_map(spec)


@given(
    st.dictionaries(
        st.sampled_from(sorted(set(COLUMN_KEYS) - {"arrival", "gpus", "duration"})),
        st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
    ),
    st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
)
def test_column_map_text_round_trip(extra: dict[str, str], column: str) -> None:
    mapping = {"arrival": column, "gpus": "g", "duration": "d", **extra}
    if ("start" in mapping) != ("end" in mapping):
        mapping.pop("start", None)
        mapping.pop("end", None)
    text = ",".join(f"{key}={value}" for key, value in mapping.items())
    assert parse_column_map(text) == mapping
    assert parse_column_map(text.replace(",", " , ")) == mapping


def test_read_trace_dispatch() -> None:
    philly, _ = read_trace(DATA / "philly_small.csv", "philly")
    assert len(philly) == 5
    helios, _ = read_trace(DATA / "helios_cluster_log.csv", "helios")
    assert len(helios) == 3
    pai, _ = read_trace(DATA / "pai_job_table.csv", "pai", task_table=DATA / "pai_task_table.csv")
    assert len(pai) == 3
    generic, _ = read_trace(
        DATA / "philly_small.csv",
        "csv",
        column_map="arrival=timestamp,gpus=num_gpus,duration=duration,vc=cluster",
    )
    assert generic == philly
    with pytest.raises(ValueError, match="unknown trace format 'slurm'; allowed: philly, helios"):
        read_trace(DATA / "philly_small.csv", "slurm")
    with pytest.raises(ValueError, match="needs the task table"):
        read_trace(DATA / "pai_job_table.csv", "pai")
    with pytest.raises(ValueError, match="needs a column map"):
        read_trace(DATA / "philly_small.csv", "csv")
    with pytest.raises(ValueError, match="applies only to --format csv"):
        read_trace(DATA / "philly_small.csv", "philly", column_map="arrival=a")


def test_trace_options_validation() -> None:
    with pytest.raises(ValueError, match=r"vcs must be a list of names.*vcs=\('vcA',\)"):
        TraceOptions(vcs="vcA")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="end_s=1 is before start_s=5"):
        TraceOptions(start_s=5, end_s=1)
    with pytest.raises(ValueError, match="max_jobs must be an integer >= 0"):
        TraceOptions(max_jobs=-3)
    with pytest.raises(ValueError, match="arrival_scale must be a finite number > 0"):
        TraceOptions(arrival_scale=0)
    with pytest.raises(ValueError, match="unknown model catalog"):
        TraceOptions(catalog="none")


def test_assign_models_changes_only_models() -> None:
    jobs, _ = read_philly(DATA / "philly_small.csv")
    redrawn = assign_models(jobs, np.random.default_rng(1), catalog="cush")
    assert redrawn.catalog_name == "cush"
    assert set(redrawn.model.tolist()) <= {0, 1}
    np.testing.assert_array_equal(redrawn.worker_demand, jobs.worker_demand)
    only_dgemm = assign_models(jobs, np.random.default_rng(1), catalog="cush", weights=(1, 0))
    assert (only_dgemm.model == 0).all()
    with pytest.raises(TypeError, match=r"numpy.random.Generator"):
        assign_models(jobs, 1)  # type: ignore[arg-type]


# --- feasibility ----------------------------------------------------------------------------


def test_infeasible_jobs_refused_with_a_clear_message() -> None:
    jobs, _ = read_philly(DATA / "philly_small.csv", TraceOptions(cpus_per_gpu=4.0))
    # GPUs per job in arrival order: 4, 8, 1, 2, 16 (CPU 4 per GPU).
    check_feasible(jobs, max_gpus_per_job=16, max_cpus_per_job=64)
    with pytest.raises(InfeasibleJobError) as caught:
        check_feasible(jobs, max_gpus_per_job=8, max_cpus_per_job=1000)
    message = str(caught.value)
    assert message.startswith(
        "job 4 (job_id 4, arriving at 86400 s) can never run: one job needs 16 GPUs but the "
        "whole cluster has 8; 1 job(s) in total cannot fit."
    )
    assert "drop_infeasible() (--drop-infeasible)" in message
    assert (caught.value.job, caught.value.job_id) == (4, 4)
    with pytest.raises(
        InfeasibleJobError, match=r"job 1 .* needs 32 CPU cores but the whole cluster has 31"
    ):
        check_feasible(jobs, max_gpus_per_job=100, max_cpus_per_job=31)


def test_drop_infeasible_counts() -> None:
    jobs, _ = read_philly(DATA / "philly_small.csv", TraceOptions(cpus_per_gpu=4.0))
    kept, dropped = drop_infeasible(jobs, max_gpus_per_job=4, max_cpus_per_job=1000)
    assert dropped == 2  # the 8- and 16-GPU jobs
    np.testing.assert_array_equal(kept.total_gpus, [4, 1, 2])
    same, none = drop_infeasible(jobs, 64, None)
    assert none == 0 and same is jobs
    with pytest.raises(ValueError, match="max_gpus_per_job must be > 0"):
        drop_infeasible(jobs, 0, None)


def test_task_that_exceeds_every_server() -> None:
    # A DeepRM-style job: one task holding 10 GPUs cannot sit on an 8-GPU server even
    # though the cluster has 64 GPUs.
    jobs = Workload(
        arrival_time=[0.0, 1.0],
        model=[0, 1],
        num_workers=[1, 1],
        worker_demand=[[4.0, 1.0], [10.0, 2.0]],
        duration=[5.0, 5.0],
        catalog_name="cush",
    )
    check_feasible(jobs, max_gpus_per_job=64)
    with pytest.raises(
        InfeasibleJobError, match=r"job 1 .* one task needs 10 GPUs but the largest server has 8"
    ):
        check_feasible(jobs, max_gpus_per_job=64, max_gpus_per_task=8)
    kept, dropped = drop_infeasible(jobs, 64, max_gpus_per_task=8)
    assert dropped == 1 and len(kept) == 1
    error = pickle.loads(pickle.dumps(InfeasibleJobError("m", 1, 2)))
    assert (str(error), error.job, error.job_id) == ("m", 1, 2)


def test_a_pai_job_with_a_task_still_running_has_no_duration(tmp_path: Path) -> None:
    """jobA's first worker ran 1010..1100, but its PS (from 1010) and a second worker (from
    1200) never ended: its run time is unknown, not 90 s, and it is dropped as
    no_duration. jobB's one task ran 1110..1290: 180 s, arriving 100 s after jobA."""
    jobs_file, tasks = tmp_path / "jobs.csv", tmp_path / "tasks.csv"
    jobs_file.write_text("jobA,i1,u1,Running,1000,\njobB,i2,u1,Terminated,1100,1300\n")
    tasks.write_text(
        "jobA,worker,1,Terminated,1010,1100,100,1,100,T4\n"
        "jobA,ps,1,Running,1010,,100,1,0,MISC\n"
        "jobA,worker2,1,Running,1200,,100,1,100,T4\n"
        "jobB,worker,1,Terminated,1110,1290,100,1,100,T4\n"
    )
    jobs, report = read_pai(jobs_file, tasks)
    assert dict(report.filtered) == {"no_duration": 1}
    np.testing.assert_array_equal(jobs.duration, [180.0])
    np.testing.assert_array_equal(jobs.num_workers, [1])


# --- quotes, over-long fields, huge counts, missing durations --------------------------------

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def test_a_stray_quote_spoils_only_its_own_row(tmp_path: Path) -> None:
    """Philly, Helios and PAI never quote a field: a stray quote used to swallow the rest
    of the file into one field (silently, or past 128 KiB with a raw csv traceback)."""
    path = tmp_path / "philly.csv"
    later = "".join(f"{20 + i},600,1,600,vc1\n" for i in range(8000))  # > 128 KiB after it
    path.write_text(f'{PHILLY_HEADER}0,600,1,600,vc1\n10,600,1,600,"vc1\n{later}')
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path)
    assert str(caught.value) == (
        f"{path}:3: field 'cluster': holds a double quote, which this trace format never "
        "has (a stray quote?) (got '\"vc1')"
    )
    jobs, report = read_philly(path, TraceOptions(skip_bad_rows=True))
    assert (report.rows, report.skipped, report.jobs) == (8002, 1, 8001)
    assert len(jobs) == 8001 and jobs.vc_names == ("vc1",)

    helios = tmp_path / "helios.csv"
    helios.write_text(
        ",".join(HELIOS_COLUMNS) + "\n"
        "a,u1,vc1,1,6,1,COMPLETED,0,0,60,60,0\n"
        'b,"u2,vc1,1,6,1,COMPLETED,5,5,65,60,0\n'
        "c,u1,vc1,1,6,1,COMPLETED,9,9,69,60,0\n"
    )
    jobs, report = read_helios(helios, TraceOptions(skip_bad_rows=True))
    assert [str(error) for error in report.errors] == [
        f"{helios}:3: field 'user': holds a double quote, which this trace format never has "
        "(a stray quote?) (got '\"u2')"
    ]
    assert (report.rows, len(jobs)) == (3, 2)

    job_table, task_table = tmp_path / "jobs.csv", tmp_path / "tasks.csv"
    job_table.write_text(
        'jobA,i1,"userX,Terminated,1000,1600\njobB,i2,userY,Terminated,1100,1200\n'
    )
    task_table.write_text(
        "jobA,worker,1,Terminated,1010,1590,100,1,100,T4\n"
        "jobB,worker,1,Terminated,1110,1190,100,1,100,T4\n"
    )
    with pytest.raises(TraceFormatError) as caught:
        read_pai(job_table, task_table)
    assert str(caught.value) == (
        f"{job_table}:1: field 'user': holds a double quote, which this trace format never "
        "has (a stray quote?) (got '\"userX')"
    )


def test_a_quoted_header_of_a_fixed_format_says_how_to_read_the_file(tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text('"timestamp","duration","num_gpus","gpu_time","cluster"\n0,60,1,60,vc1\n')
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path)
    assert str(caught.value) == (
        f'{path}:1: field \'(header)\': is quoted ("timestamp", "duration", "num_gpus", '
        '"gpu_time", "cluster"); this trace format never quotes fields (read a quoted file '
        "as --format csv with a column map)"
    )


def test_a_generic_csv_may_quote_fields_but_no_field_spans_lines(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text('t,g,d,who\n0,1,10,"smith, j"\n5,"2",10,jones\n')
    jobs, _ = read_csv_trace(path, "arrival=t,gpus=g,duration=d,user=who")
    assert [jobs.user_name(j) for j in range(len(jobs))] == ["smith, j", "jones"]
    np.testing.assert_array_equal(jobs.num_workers, [1, 2])

    stray = tmp_path / "stray.csv"
    stray.write_text('t,g,d,who\n0,1,10,smith\n5,1,10,"jones\n6,1,10,lee\n7,1,10,kim\n')
    expected = (
        f"{stray}:3: field '(row)': a double-quoted field runs from line 3 to line 5; "
        "trace fields cannot span lines (an unbalanced quote?)"
    )
    # Skipping the row would lose the rows it swallowed, so skip_bad_rows raises too.
    for options in (TraceOptions(), TraceOptions(skip_bad_rows=True)):
        with pytest.raises(TraceFormatError) as caught:
            read_csv_trace(stray, "arrival=t,gpus=g,duration=d,user=who", options)
        assert str(caught.value) == expected


def test_an_over_long_field_is_a_located_error(tmp_path: Path) -> None:
    limit = csv.field_size_limit()
    path = tmp_path / "philly.csv"
    path.write_text(
        f"{PHILLY_HEADER}0,600,1,600,vc1\n10,600,1,600,{'x' * (limit + 10)}\n20,6,1,6,v\n"
    )
    expected = (
        f"{path}:3: field '(row)': holds a field longer than {limit} characters, the CSV "
        "reader's limit; trace fields are short numbers and names"
    )
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path)
    assert str(caught.value) == expected
    # One line: the reader resumes after it, so it is skipped like any bad row.
    jobs, report = read_philly(path, TraceOptions(skip_bad_rows=True))
    assert [str(error) for error in report.errors] == [expected]
    assert (report.rows, report.skipped, len(jobs)) == (3, 1, 2)

    # A stray quote in a generic CSV that runs past the limit: never skipped.
    stray = tmp_path / "stray.csv"
    later = "".join(f"{i},1,10,x\n" for i in range(limit // 8))
    stray.write_text(f't,g,d,who\n0,1,10,smith\n5,1,10,"jones\n{later}')
    with pytest.raises(TraceFormatError) as caught:
        read_csv_trace(stray, "arrival=t,gpus=g,duration=d", TraceOptions(skip_bad_rows=True))
    message = str(caught.value)
    assert message.startswith(
        f"{stray}:3: field '(row)': a double-quoted field runs from line 3 past line "
    )
    assert message.endswith(f" and exceeds {limit} characters (an unbalanced quote?)")


def test_counts_beyond_2_31_are_located_errors(tmp_path: Path) -> None:
    """Such counts used to overflow the int64 columns with a raw OverflowError."""
    path = tmp_path / "philly.csv"
    path.write_text(f"{PHILLY_HEADER}0,600,1,600,vc1\n10,600,1e19,600,vc1\n20,60,2147483648,6,v\n")
    _, report = read_philly(path, TraceOptions(skip_bad_rows=True))
    assert [str(error) for error in report.errors] == [
        f"{path}:3: field 'num_gpus': must be at most 2147483647 GPUs (2^31 - 1) (got '1e19')",
        f"{path}:4: field 'num_gpus': must be at most 2147483647 GPUs (2^31 - 1) "
        "(got '2147483648')",
    ]
    largest = tmp_path / "largest.csv"
    largest.write_text(f"{PHILLY_HEADER}0,600,2147483647,600,vc1\n")
    jobs, _ = read_philly(largest)
    np.testing.assert_array_equal(jobs.num_workers, [2**31 - 1])

    custom = tmp_path / "custom.csv"
    custom.write_text("t,g,d,w\n0,8,10,1e19\n")
    with pytest.raises(TraceFormatError) as caught:
        read_csv_trace(custom, "arrival=t,gpus=g,duration=d,workers=w")
    assert str(caught.value) == (
        f"{custom}:2: field 'w': must be at most 2147483647 (2^31 - 1) (got '1e19')"
    )

    job_table, task_table = tmp_path / "jobs.csv", tmp_path / "tasks.csv"
    job_table.write_text("jobA,i1,userX,Terminated,1000,1600\n")
    task_table.write_text("jobA,worker,1e19,Terminated,1010,1590,100,1,100,T4\n")
    with pytest.raises(TraceFormatError) as caught:
        read_pai(job_table, task_table)
    assert str(caught.value) == (
        f"{task_table}:1: field 'inst_num': must be at most 2147483647 (2^31 - 1) (got '1e19')"
    )


def test_an_empty_duration_or_end_is_a_job_without_duration(tmp_path: Path) -> None:
    """As PAI already did and the module doc says: dropped and counted as no_duration."""
    philly = tmp_path / "philly.csv"
    philly.write_text(f"{PHILLY_HEADER}0,600,1,600,vc1\n10,,2,,vc1\n20,60,1,60,vc1\n")
    jobs, report = read_philly(philly)
    assert (report.skipped, dict(report.filtered)) == (0, {"no_duration": 1})
    np.testing.assert_array_equal(jobs.job_id, [0, 2])
    assert report.summary() == (
        f"{philly} (philly): 3 rows, 0 bad rows skipped, 1 jobs filtered out "
        "(no_duration 1), 2 jobs kept"
    )

    helios = tmp_path / "helios.csv"
    helios.write_text(
        ",".join(HELIOS_COLUMNS) + "\n"
        "a,u1,vc1,1,6,1,COMPLETED,0,0,60,60,0\n"
        "b,u2,vc1,1,6,1,RUNNING,5,5,,,0\n"
    )
    jobs, report = read_helios(helios)
    assert (report.skipped, dict(report.filtered), len(jobs)) == (0, {"no_duration": 1}, 1)

    custom = tmp_path / "custom.csv"
    custom.write_text("t,g,d\n0,1,10\n5,1, \n")
    jobs, report = read_csv_trace(custom, "arrival=t,gpus=g,duration=d", duration_unit="min")
    assert (dict(report.filtered), jobs.duration.tolist()) == ({"no_duration": 1}, [600.0])

    span = tmp_path / "span.csv"
    span.write_text("submit,start,end,gpus\n0,10,610,1\n5,20,,2\n7,,,1\n9,30,90,1\n")
    jobs, report = read_csv_trace(span, "arrival=submit,start=start,end=end,gpus=gpus")
    assert (report.skipped, dict(report.filtered)) == (0, {"no_duration": 2})
    np.testing.assert_array_equal(jobs.job_id, [0, 3])
    np.testing.assert_array_equal(jobs.duration, [600.0, 60.0])
