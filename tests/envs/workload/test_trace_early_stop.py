"""Trace readers stop parsing once ``max_jobs`` / ``end_s`` is decided, with a full read's jobs.

Every test compares against a full read: the same reader with the early stop switched off
(``EarlyStop.for_options`` patched to give no watch), which is exactly the pipeline as it
was before readers could stop.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from envs.workload import (
    TraceFormatError,
    TraceOptions,
    Workload,
    get_catalog,
    read_csv_trace,
    read_helios,
    read_philly,
)
from envs.workload.trace_pipeline import EarlyStop, TraceReport

REPO = Path(__file__).resolve().parents[3]
FULL_PHILLY = REPO / ".." / "shared" / "traces" / "philly.csv"
PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
FIELDS = (
    "arrival_time",
    "model",
    "num_workers",
    "worker_demand",
    "num_ps",
    "ps_demand",
    "duration",
    "vc",
    "user",
    "job_id",
)

# (arrival s, duration s, GPUs, virtual cluster) of one Philly row.
Row = tuple[float, float, float, str]


def write_philly(path: Path, rows: Sequence[Row | str]) -> Path:
    """A Philly CSV of ``rows``; a string row is written verbatim (a malformed line)."""
    lines = [PHILLY_HEADER]
    for row in rows:
        if isinstance(row, str):
            lines.append(row)
        else:
            arrival, duration, gpus, vc = row
            lines.append(f"{arrival:g},{duration:g},{gpus:g},{duration * gpus:g},{vc}")
    path.write_text("\n".join(lines) + "\n")
    return path


def read_full(reader, *args, **kwargs) -> tuple[Workload, TraceReport]:
    """``reader(*args, **kwargs)`` with the early stop switched off: every row parsed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EarlyStop, "for_options", classmethod(lambda cls, options: None))
        return reader(*args, **kwargs)


def assert_same_jobs(early: Workload, full: Workload) -> None:
    """Same jobs, order, ids, demands, user/vc codes and model draws.

    The name tables hold the names of the rows parsed, so after an early stop they are a
    prefix of a full read's (names first seen after the cut are missing); every kept job's
    code, and so its name, is the same.
    """
    assert len(early) == len(full)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(early, name), getattr(full, name), err_msg=name)
    assert early.vc_names == full.vc_names[: len(early.vc_names)]
    assert early.user_names == full.user_names[: len(early.user_names)]
    assert [early.vc_name(j) for j in range(len(early))] == [
        full.vc_name(j) for j in range(len(full))
    ]


def sorted_rows(count: int, *, vc: str = "vcA") -> list[Row]:
    return [(60.0 * index, 100.0 + index, 1.0, vc) for index in range(count)]


def test_sorted_file_stops_after_the_last_kept_job(tmp_path: Path) -> None:
    # Row 5 (line 7) has a malformed duration; a full read raises on it, the early stop
    # never parses it: it only reads its timestamp (300 s, after the cut at 120 s).
    rows: list[Row | str] = [*sorted_rows(5), "300,abc,1,0,vcA"]
    rows += [(360.0, 5.0, 2.0, "vcA"), (420.0, 5.0, 1.0, "vcB")]
    path = write_philly(tmp_path / "sorted.csv", rows)
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path)
    assert (caught.value.line, caught.value.field) == (7, "duration")

    options = TraceOptions(max_jobs=3)
    jobs, report = read_philly(path, options, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(jobs.job_id, [0, 1, 2])
    np.testing.assert_array_equal(jobs.arrival_time, [0.0, 60.0, 120.0])
    np.testing.assert_array_equal(jobs.duration, [100.0, 101.0, 102.0])
    # All 8 data rows were read; the 5 after the third job only for their time.
    assert (report.rows, report.skimmed, report.skipped, report.jobs) == (8, 5, 0, 3)
    assert dict(report.filtered) == {}
    assert report.to_dict()["skimmed"] == 5
    assert report.summary().endswith(
        "3 jobs kept, 5 rows past the last selectable arrival read for their time only"
    )
    # Model draws are those of a full read of the same jobs (same generator, same count).
    models = len(get_catalog(options.catalog))
    np.testing.assert_array_equal(jobs.model, np.random.default_rng(7).integers(models, size=3))


def test_full_read_reports_no_skimmed_rows(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "sorted.csv", sorted_rows(6))
    _, report = read_philly(path)
    assert (report.rows, report.skimmed, report.jobs) == (6, 0, 6)
    assert "read for their time only" not in report.summary()
    # max_jobs larger than the file: never reached, so nothing is skimmed.
    _, report = read_philly(path, TraceOptions(max_jobs=10))
    assert (report.rows, report.skimmed, report.jobs) == (6, 0, 6)


def test_unreadable_time_after_the_cut_falls_back_to_a_full_read(tmp_path: Path) -> None:
    rows: list[Row | str] = [*sorted_rows(4), "not-a-time,5,1,5,vcA", (600.0, 5.0, 1.0, "vcA")]
    path = write_philly(tmp_path / "bad_time.csv", rows)
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path, TraceOptions(max_jobs=2))
    assert (caught.value.line, caught.value.field) == (6, "timestamp")

    options = TraceOptions(max_jobs=2, skip_bad_rows=True)
    jobs, report = read_philly(path, options)
    full, full_report = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    assert report.to_dict() == full_report.to_dict()
    assert (report.skipped, report.skimmed, dict(report.filtered)) == (1, 0, {"max_jobs": 3})


def test_bad_rows_after_the_cut_are_not_counted(tmp_path: Path) -> None:
    # Documented: a skimmed row's other fields are not parsed, so skip_bad_rows counts
    # only the bad rows before the cut.
    rows: list[Row | str] = ["0,abc,1,0,vcA", *sorted_rows(3), "500,-1,1,0,vcA"]
    path = write_philly(tmp_path / "bad.csv", rows)
    options = TraceOptions(max_jobs=2, skip_bad_rows=True)
    jobs, report = read_philly(path, options)
    full, full_report = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    assert (report.rows, report.skipped, report.skimmed) == (5, 1, 2)
    assert (full_report.rows, full_report.skipped, full_report.skimmed) == (5, 2, 0)
    assert [error.line for error in report.errors] == [2]


def test_file_unsorted_after_the_cut_gives_a_full_reads_jobs(tmp_path: Path) -> None:
    # Sorted up to and past the cut, then a job arriving before the third kept one: it
    # must displace it, so the reader goes back to parsing everything.
    rows: list[Row | str] = [*sorted_rows(5), (90.0, 7.0, 2.0, "vcA"), (1000.0, 1.0, 1.0, "vcA")]
    path = write_philly(tmp_path / "late.csv", rows)
    options = TraceOptions(max_jobs=3)
    jobs, report = read_philly(path, options, rng=np.random.default_rng(3))
    full, full_report = read_full(read_philly, path, options, rng=np.random.default_rng(3))
    assert_same_jobs(jobs, full)
    np.testing.assert_array_equal(jobs.job_id, [0, 1, 5])
    assert report.to_dict() == full_report.to_dict()
    assert report.skimmed == 0 and dict(report.filtered) == {"max_jobs": 4}


def test_file_unsorted_before_the_cut_is_read_in_full(tmp_path: Path) -> None:
    rows: list[Row | str] = [(120.0, 1.0, 1.0, "vcA"), *sorted_rows(6)]
    path = write_philly(tmp_path / "unsorted.csv", rows)
    options = TraceOptions(max_jobs=2)
    jobs, report = read_philly(path, options)
    full, full_report = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    np.testing.assert_array_equal(jobs.job_id, [1, 2])
    assert report.to_dict() == full_report.to_dict() and report.skimmed == 0


def test_equal_arrivals_at_the_cut_keep_file_order(tmp_path: Path) -> None:
    rows: list[Row | str] = [
        (0.0, 1.0, 1.0, "vcA"),
        (10.0, 2.0, 1.0, "vcA"),
        (20.0, 3.0, 1.0, "vcA"),
        (20.0, 4.0, 1.0, "vcA"),
        (20.0, 5.0, 1.0, "vcA"),
        (30.0, 6.0, 1.0, "vcA"),
    ]
    path = write_philly(tmp_path / "ties.csv", rows)
    options = TraceOptions(max_jobs=3)
    jobs, report = read_philly(path, options)
    full, _ = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    # The stable sort keeps the first of the three 20 s jobs; the other two come after it.
    np.testing.assert_array_equal(jobs.duration, [1.0, 2.0, 3.0])
    assert report.skimmed == 3
    # A cut inside the tie: max_jobs=4 keeps rows 2 and 3, the third 20 s row is skimmed.
    jobs, report = read_philly(path, TraceOptions(max_jobs=4))
    np.testing.assert_array_equal(jobs.job_id, [0, 1, 2, 3])
    assert report.skimmed == 2


def test_end_s_stops_at_the_first_row_past_the_window(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "window.csv", [*sorted_rows(10), "900,abc,1,0,vcA"])
    # Window [0, 180) s after the first arrival: 0, 60, 120; the 180 s row ends it.
    options = TraceOptions(end_s=180.0)
    jobs, report = read_philly(path, options)
    np.testing.assert_array_equal(jobs.job_id, [0, 1, 2])
    assert (report.rows, report.skimmed, dict(report.filtered)) == (11, 7, {"window": 1})
    # With start_s too, and max_jobs larger than the window holds.
    options = TraceOptions(start_s=60.0, end_s=240.0, max_jobs=5)
    jobs, report = read_philly(path, options)
    np.testing.assert_array_equal(jobs.job_id, [1, 2, 3])
    np.testing.assert_array_equal(jobs.arrival_time, [0.0, 60.0, 120.0])  # re-based
    assert (report.skimmed, dict(report.filtered)) == (6, {"window": 2})


def test_vc_filter_with_max_jobs(tmp_path: Path) -> None:
    rows: list[Row | str] = [
        (0.0, 1.0, 1.0, "vcA"),
        (10.0, 2.0, 1.0, "vcB"),
        (20.0, 3.0, 1.0, "vcA"),
        (30.0, 4.0, 1.0, "vcB"),
        (40.0, 5.0, 1.0, "vcB"),
        (50.0, 6.0, 1.0, "vcA"),
        (60.0, 7.0, 1.0, "vcC"),
    ]
    path = write_philly(tmp_path / "vcs.csv", rows)
    options = TraceOptions(vcs=("vcB",), max_jobs=2)
    jobs, report = read_philly(path, options)
    full, _ = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    np.testing.assert_array_equal(jobs.job_id, [1, 3])
    assert (report.skimmed, dict(report.filtered)) == (3, {"vc": 2})
    # vcC is first named after the cut: the early read's table lacks it, the codes agree.
    assert (jobs.vc_names, full.vc_names) == (("vcA", "vcB"), ("vcA", "vcB", "vcC"))
    # vcC first appears after the cut of vcA: reading goes on until it is seen, so the
    # answer (and the name check) is a full read's.
    options = TraceOptions(vcs=("vcA", "vcC"), max_jobs=2)
    jobs, report = read_philly(path, options)
    full, _ = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    np.testing.assert_array_equal(jobs.job_id, [0, 2])
    assert report.skimmed == 0
    with pytest.raises(ValueError, match="no job has vc vcZ"):
        read_philly(path, TraceOptions(vcs=("vcA", "vcZ"), max_jobs=1))


def test_filtered_rows_do_not_count_toward_max_jobs(tmp_path: Path) -> None:
    rows: list[Row | str] = [
        (0.0, 0.0, 1.0, "vcA"),  # zero duration
        (10.0, 5.0, 0.0, "vcA"),  # no GPU
        (20.0, 5.0, 1.0, "vcA"),
        (30.0, 5.0, 2.0, "vcA"),
        (40.0, 5.0, 1.0, "vcA"),
    ]
    path = write_philly(tmp_path / "filters.csv", rows)
    options = TraceOptions(max_jobs=2)
    jobs, report = read_philly(path, options)
    np.testing.assert_array_equal(jobs.job_id, [2, 3])
    assert report.skimmed == 1
    assert dict(report.filtered) == {"zero_duration": 1, "no_gpu": 1}
    # Without gpu_jobs_only the GPU-less job is selectable, and the cut moves earlier.
    options = TraceOptions(max_jobs=2, gpu_jobs_only=False)
    jobs, report = read_philly(path, options)
    full, _ = read_full(read_philly, path, options)
    assert_same_jobs(jobs, full)
    np.testing.assert_array_equal(jobs.job_id, [1, 2])
    assert report.skimmed == 2


def test_helios_and_csv_readers_stop_too(tmp_path: Path) -> None:
    helios = tmp_path / "helios.csv"
    helios.write_text(
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
        "duration,queue\n"
        + "".join(
            f"j{i},u{i % 2},vc{i % 3},{1 + i % 2},4,1,COMPLETED,{100 * i},,,{50 + i},0\n"
            for i in range(8)
        )
        + "j8,u0,vc0,1,4,1,COMPLETED,900,,,abc,0\n"
    )
    options = TraceOptions(max_jobs=3, states=("COMPLETED",))
    jobs, report = read_helios(helios, options)
    # A full read needs skip_bad_rows for j8's duration, which the early stop never parses.
    full_options = TraceOptions(max_jobs=3, states=("COMPLETED",), skip_bad_rows=True)
    full, _ = read_full(read_helios, helios, full_options)
    assert_same_jobs(jobs, full)
    assert (report.rows, report.skimmed) == (9, 6)

    custom = tmp_path / "custom.csv"
    custom.write_text(
        "submit,gpus,run_min\n" + "".join(f"{i},{1 + i % 4},{i + 1}\n" for i in range(6))
    )
    mapping = "arrival=submit,gpus=gpus,duration=run_min"
    options = TraceOptions(max_jobs=2)
    kwargs = {"arrival_unit": "min", "duration_unit": "min"}
    jobs, report = read_csv_trace(custom, mapping, options, **kwargs)
    full, _ = read_full(read_csv_trace, custom, mapping, options, **kwargs)
    assert_same_jobs(jobs, full)
    np.testing.assert_array_equal(jobs.arrival_time, [0.0, 60.0])
    assert report.skimmed == 4


rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 40).map(float),  # arrival step (sorted files) or arrival
        st.sampled_from([0.0, 5.0, 30.0]),  # duration, 0 is filtered
        st.sampled_from([0.0, 1.0, 2.0]),  # GPUs, 0 is filtered
        st.sampled_from(["vcA", "vcB", "vcC"]),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(
    rows=rows_strategy,
    sort=st.sampled_from(["sorted", "unsorted", "late"]),
    max_jobs=st.sampled_from([None, 0, 1, 2, 3, 5, 8, 12]),
    start_s=st.sampled_from([None, None, 0.0, 20.0, 45.0]),
    end_s=st.sampled_from([None, 0.0, 30.0, 100.0, 250.0]),
    vcs=st.sampled_from([None, None, ("vcA",), ("vcA", "vcB")]),
    gpu_jobs_only=st.booleans(),
)
def test_early_stop_always_gives_a_full_reads_answer(
    rows: list[Row],
    sort: str,
    max_jobs: int | None,
    start_s: float | None,
    end_s: float | None,
    vcs: tuple[str, ...] | None,
    gpu_jobs_only: bool,
) -> None:
    if start_s is not None and end_s is not None and end_s < start_s:
        end_s = None
    if sort != "unsorted":
        # Cumulative steps: a sorted file (ties included); "late" then moves its last row
        # to the middle of the time line, after the cut but arriving before it.
        clock = np.cumsum([row[0] for row in rows])
        rows = [(float(at), *row[1:]) for at, row in zip(clock, rows, strict=True)]
        if sort == "late" and rows:
            last = rows[-1]
            rows[-1] = (last[0] / 2, *last[1:])
    options = TraceOptions(
        max_jobs=max_jobs, start_s=start_s, end_s=end_s, vcs=vcs, gpu_jobs_only=gpu_jobs_only
    )
    with tempfile.TemporaryDirectory() as folder:
        path = write_philly(Path(folder) / "trace.csv", rows)
        try:
            full, full_report = read_full(read_philly, path, options, rng=np.random.default_rng(1))
        except ValueError as expected:
            with pytest.raises(ValueError, match="no job has") as caught:
                read_philly(path, options, rng=np.random.default_rng(1))
            assert str(caught.value) == str(expected)
            return
        jobs, report = read_philly(path, options, rng=np.random.default_rng(1))
    event(f"{sort}, stopped early: {report.skimmed > 0}")
    assert_same_jobs(jobs, full)
    assert report.rows == full_report.rows == len(rows)
    assert report.jobs == full_report.jobs
    if report.skimmed == 0:
        assert report.to_dict() == full_report.to_dict()
    else:
        # Skimmed rows are never kept. An unsorted file may still skim: rows after the cut
        # are read for their time until one out of order makes the reader parse the rest.
        assert report.skimmed <= len(rows) - report.jobs


@pytest.mark.skipif(not FULL_PHILLY.exists(), reason="needs ../shared/traces/philly.csv")
def test_full_philly_first_10000_jobs_match_a_full_read() -> None:
    # The published file is not in submit order (its first 10,000 jobs by submit time
    # reach row 80,944), so every row is parsed, and the answer is the full read's.
    options = TraceOptions(max_jobs=10_000)
    jobs, report = read_philly(FULL_PHILLY, options, rng=np.random.default_rng(0))
    full, full_report = read_full(read_philly, FULL_PHILLY, options, rng=np.random.default_rng(0))
    assert_same_jobs(jobs, full)
    assert report.to_dict() == full_report.to_dict()
    assert (report.rows, report.skimmed, report.jobs) == (82_247, 0, 10_000)
    assert int(jobs.job_id.max()) == 80_944


def test_a_stray_quote_after_the_cut_is_skimmed_unless_it_is_in_the_time(
    tmp_path: Path,
) -> None:
    # A quote outside the timestamp leaves the arrival readable: the row is skimmed like
    # one with any other malformed field. In the timestamp it makes the time unreadable.
    rows: list[Row | str] = [*sorted_rows(3), '500,5,1,5,"vcA', (600.0, 5.0, 1.0, "vcA")]
    path = write_philly(tmp_path / "quote.csv", rows)
    with pytest.raises(TraceFormatError) as caught:
        read_philly(path)
    assert (caught.value.line, caught.value.field) == (5, "cluster")
    jobs, report = read_philly(path, TraceOptions(max_jobs=2))
    np.testing.assert_array_equal(jobs.job_id, [0, 1])
    assert (report.rows, report.skimmed, report.skipped) == (5, 3, 0)

    in_time = write_philly(tmp_path / "time.csv", [*sorted_rows(3), '"500,5,1,5,vcA'])
    with pytest.raises(TraceFormatError) as caught:
        read_philly(in_time, TraceOptions(max_jobs=2))
    assert (caught.value.line, caught.value.field) == (5, "timestamp")
