"""Synthetic generators: determinism under a seed, the papers' statistics, option errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.workload import get_catalog, make_workload, workload_kinds, workload_options
from envs.workload.arrivals import (
    bernoulli_arrivals,
    bursty_counts,
    diurnal_counts,
    diurnal_rates,
    fixed_counts,
    interval_arrivals,
    poisson_counts,
    renewal_arrivals,
)
from envs.workload.generators import apportion


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize("kind", workload_kinds())
def test_same_seed_same_workload_other_seed_other_workload(kind: str) -> None:
    first = make_workload(kind, num_jobs=300, rng=rng(11))
    again = make_workload(kind, num_jobs=300, rng=rng(11))
    other = make_workload(kind, num_jobs=300, rng=rng(12))
    assert len(first) == 300
    assert first == again
    assert first != other


def test_generators_never_touch_global_numpy_random() -> None:
    np.random.seed(5)
    expected = np.random.random()
    np.random.seed(5)
    for kind in workload_kinds():
        make_workload(kind, num_jobs=50, rng=rng(1))
    assert np.random.random() == expected


def test_uniform_is_15_jobs_per_interval_per_scheduler() -> None:
    # 20 schedulers x 15 jobs x 4 intervals of 30 minutes.
    jobs = make_workload("uniform", num_jobs=1200, rng=rng(3), num_schedulers=20)
    interval = (jobs.arrival_time // 1800).astype(int)
    counts = np.zeros((4, 20), dtype=int)
    np.add.at(counts, (interval, jobs.partition), 1)
    assert (counts == 15).all()
    # Workers and parameter servers uniform in [1, 4]; every model of 001 appears.
    assert set(jobs.num_workers.tolist()) == {1, 2, 3, 4}
    assert set(jobs.num_ps.tolist()) == {1, 2, 3, 4}
    assert set(jobs.model.tolist()) == set(range(8))
    assert jobs.catalog_name == "marl"
    # A worker takes one GPU and its model's CPU cores; a PS no GPU.
    cpu = get_catalog("marl").column("cpu_cores")[jobs.model]
    np.testing.assert_array_equal(jobs.worker_demand[:, 0], 1.0)
    np.testing.assert_array_equal(jobs.worker_demand[:, 1], cpu)
    np.testing.assert_array_equal(jobs.ps_demand[:, 0], 0.0)
    np.testing.assert_array_equal(
        jobs.epochs, get_catalog("marl").column("default_epochs")[jobs.model]
    )
    assert not jobs.is_fixed_duration.any()


def test_uniform_batch_arrivals_and_allreduce_catalog() -> None:
    jobs = make_workload("uniform", num_jobs=40, rng=rng(3), within_interval="start")
    np.testing.assert_array_equal(jobs.arrival_time, np.repeat([0.0, 1800.0, 3600.0], 15)[:40])
    allreduce = make_workload("uniform", num_jobs=40, rng=rng(3), catalog="deepshare")
    assert (allreduce.num_ps == 0).all()
    forced = make_workload(
        "uniform", num_jobs=40, rng=rng(3), catalog="deepshare", parameter_servers=(2, 2)
    )
    assert (forced.num_ps == 2).all()


def test_poisson_counts_have_mean_and_variance_rate() -> None:
    counts = poisson_counts(30_000, 15.0, 1, rng(4))
    assert counts.sum() >= 30_000
    assert counts[:, 0].mean() == pytest.approx(15.0, rel=0.03)
    assert counts[:, 0].var() / counts[:, 0].mean() == pytest.approx(1.0, abs=0.15)
    jobs = make_workload("poisson", num_jobs=2000, rng=rng(4), rate=5.0, num_schedulers=3)
    assert set(jobs.partition.tolist()) == {0, 1, 2}


@pytest.mark.parametrize("law", ["pareto", "lognormal"])
def test_bursty_counts_are_overdispersed(law: str) -> None:
    counts = bursty_counts(60_000, 15.0, 1, rng(5), law=law)[:, 0]
    # A mixed Poisson with a heavy-tailed intensity: variance far above the mean (a
    # Poisson law would give 1) and a median below the mean rate (a few floods).
    assert counts.var() / counts.mean() > 3.0
    assert np.median(counts) < 15.0
    if law == "lognormal":  # finite variance: the sample mean settles
        assert counts.mean() == pytest.approx(15.0, rel=0.1)
    with pytest.raises(ValueError, match="Pareto shape must be > 1"):
        bursty_counts(10, 15.0, 1, rng(), shape=1.0)
    with pytest.raises(ValueError, match="allowed: pareto, lognormal"):
        bursty_counts(10, 15.0, 1, rng(), law="cauchy")


def test_diurnal_rates_by_hand() -> None:
    # A 4-interval cycle at amplitude 0.5: sin at 0, 1/4, 1/2, 3/4 of a cycle is 0, 1, 0, -1.
    rates = diurnal_rates(8, 10.0, period=4, amplitude=0.5)
    assert rates == pytest.approx([10.0, 15.0, 10.0, 5.0] * 2)
    # A quarter-cycle phase starts the episode at the peak; amplitude 0 is Poisson's constant.
    assert diurnal_rates(2, 10.0, period=4, amplitude=0.5, phase=0.25) == pytest.approx([15, 10])
    assert diurnal_rates(3, 7.0, amplitude=0.0) == pytest.approx([7.0, 7.0, 7.0])
    with pytest.raises(ValueError, match=r"amplitude must lie in \[0, 1\)"):
        diurnal_rates(4, 10.0, amplitude=1.0)
    with pytest.raises(ValueError, match="period must be an integer >= 1"):
        diurnal_rates(4, 10.0, period=0)


def test_diurnal_counts_follow_the_day() -> None:
    # 400 days of half-hour intervals at 2 schedulers: per phase of the day, the mean count
    # is the cycle's rate and the variance its mean (Poisson around the cycle).
    counts = diurnal_counts(400 * 48 * 2 * 15, 15.0, 2, rng(6))
    days = counts[: 400 * 48].reshape(400, 48, 2)
    expected = diurnal_rates(48, 15.0)
    by_phase = days.mean(axis=(0, 2))
    assert by_phase == pytest.approx(expected, rel=0.05)
    assert by_phase.max() / by_phase.min() == pytest.approx(3.0, rel=0.1)
    assert days.var(axis=(0, 2)) / by_phase == pytest.approx(np.ones(48), abs=0.2)
    # The workload kind: 001's models at every scheduler, its peak hours the busiest.
    jobs = make_workload("diurnal", num_jobs=3000, rng=rng(6), rate=10.0, num_schedulers=4)
    assert set(jobs.partition.tolist()) == {0, 1, 2, 3}
    hour_of_day = (jobs.arrival_time // 1800).astype(np.int64) % 48
    peak, trough = np.sum(hour_of_day == 12), np.sum(hour_of_day == 36)
    assert peak > 2 * trough


def test_deeprm_bimodal_statistics_over_10k_jobs() -> None:
    jobs = make_workload("deeprm", num_jobs=10_000, rng=rng(6))
    assert jobs.is_fixed_duration.all()
    steps = jobs.duration  # time_step_s = 1
    short = steps <= 3
    assert set(steps[short].tolist()) == {1.0, 2.0, 3.0}
    assert set(steps[~short].tolist()) == set(map(float, range(10, 16)))
    assert short.mean() == pytest.approx(0.8, abs=0.015)
    demand = jobs.worker_demand
    dominant = demand >= 5
    assert (dominant.sum(axis=1) == 1).all()  # exactly one dominant resource per job
    assert set(demand[dominant].tolist()) == set(map(float, range(5, 11)))
    assert set(demand[~dominant].tolist()) == {1.0, 2.0}
    # The dominant resource is uniform over the two resources.
    assert dominant[:, 0].mean() == pytest.approx(0.5, abs=0.02)
    assert (jobs.num_workers == 1).all() and (jobs.num_ps == 0).all()
    # Bernoulli(0.7) arrivals per step: mean gap 1 / 0.7 steps, whole steps only.
    assert np.diff(jobs.arrival_time).mean() == pytest.approx(1 / 0.7, rel=0.03)
    assert (jobs.arrival_time == np.round(jobs.arrival_time)).all()


def test_deeprm_three_resources_and_time_step() -> None:
    jobs = make_workload(
        "deeprm", num_jobs=500, rng=rng(6), resource_names=("gpu", "cpu", "mem"), time_step_s=10.0
    )
    assert jobs.resource_names == ("gpu", "cpu", "mem")
    assert ((jobs.worker_demand >= 5).sum(axis=1) == 1).all()
    assert set((jobs.duration % 10).tolist()) == {0.0}
    with pytest.raises(ValueError, match="must start with"):
        make_workload("deeprm", num_jobs=5, rng=rng(), resource_names=("cpu", "mem"))


def test_cush_job_sets() -> None:
    jobs = make_workload("cush", num_jobs=8000, rng=rng(7))
    assert jobs.catalog_name == "cush"
    assert (jobs.duration <= 10).mean() == pytest.approx(0.75, abs=0.015)
    assert jobs.duration.max() == 20 and jobs.duration.min() == 1
    assert set(jobs.arrival_time.tolist()) == set(map(float, range(10)))
    assert set(jobs.num_workers.tolist()) == set(range(1, 9))
    np.testing.assert_array_equal(jobs.worker_demand[0], [1.0, 0.5])
    assert set(jobs.model.tolist()) == {0, 1}
    # 75% of a set's lengths are <= 10t, exactly (rounded to whole jobs).
    for count in (20, 7):
        lengths = make_workload("cush", num_jobs=count, rng=rng(count)).duration
        assert (lengths <= 10).sum() == round(0.75 * count)
    dgemm = make_workload("cush", num_jobs=50, rng=rng(8), dgemm_fraction=1.0)
    assert (np.array(get_catalog("cush").names)[dgemm.model] == "dgemm").all()


@pytest.mark.parametrize(
    ("kind", "share"), [("sced2", 0.68), ("sced2-60", 0.60), ("sced2-75", 0.75)]
)
def test_sced2_single_gpu_share(kind: str, share: float) -> None:
    jobs = make_workload(kind, num_jobs=10_000, rng=rng(8))
    assert (jobs.total_gpus == 1).mean() == pytest.approx(share, abs=0.015)
    assert set(jobs.total_gpus.tolist()) <= {1.0, 2.0, 4.0, 8.0, 16.0}
    assert (jobs.num_ps == 0).all()


def test_sced2_arrivals_models_and_durations() -> None:
    jobs = make_workload("sced2", num_jobs=10_000, rng=rng(9))
    assert np.diff(jobs.arrival_time).mean() == pytest.approx(172.0, rel=0.05)
    names = np.array(get_catalog("sced2").names)[jobs.model]
    assert (names == "Transformer").mean() == pytest.approx(0.60, abs=0.015)
    assert (names == "DeepSpeech").mean() == pytest.approx(0.30, abs=0.015)
    ideal = jobs.ideal_duration()
    assert ideal.min() >= 60.0 - 1e-6 and ideal.max() <= 172_800.0 + 1e-6
    assert np.median(ideal) == pytest.approx(1800.0, rel=0.08)
    with pytest.raises(ValueError, match="unknown models \\['GPT'\\]"):
        make_workload("sced2", num_jobs=5, rng=rng(), model_shares={"GPT": 1.0})


@pytest.mark.parametrize(
    ("mix", "counts"),
    [
        ("normal", [43, 43, 43, 43, 42, 42]),
        ("heavy", [22, 22, 21, 21, 85, 85]),
        ("medium", [22, 22, 85, 85, 21, 21]),
        ("low", [86, 86, 21, 21, 21, 21]),
    ],
)
def test_deepshare_mixes_of_footnote_4(mix: str, counts: list[int]) -> None:
    # 256 jobs split GNN:IMG:DLRM:LM:FSDP:MoE by footnote 4, largest remainder, ties to
    # the earlier model: heavy = 256 x (1,1,1,1,4,4)/12 = 21.33.. x4, 85.33.. x2.
    jobs = make_workload(f"deepshare-{mix}", num_jobs=256, rng=rng(10))
    np.testing.assert_array_equal(np.bincount(jobs.model, minlength=6), counts)
    assert jobs == make_workload("deepshare", num_jobs=256, rng=rng(10), mix=mix)


def test_deepshare_jobs_take_one_hour_alone() -> None:
    jobs = make_workload("deepshare", num_jobs=256, rng=rng(11))
    gpus = jobs.total_gpus
    assert set(gpus.tolist()) <= {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}
    assert gpus.max() <= 32
    ratio = get_catalog("deepshare").column("comm_comp_ratio")[jobs.model]
    alone = jobs.ideal_duration() * np.where(gpus > 1, 1 + ratio, 1.0)
    np.testing.assert_allclose(alone, 3600.0)
    assert (jobs.arrival_time == 0).all()
    # Shuffled, not grouped by model.
    assert (np.diff(jobs.model) != 0).sum() > 100
    spaced = make_workload("deepshare", num_jobs=50, rng=rng(11), mean_interarrival_s=60.0)
    assert spaced.arrival_time[-1] > 0
    with pytest.raises(ValueError, match="unknown DeepShare mix 'extreme'"):
        make_workload("deepshare", num_jobs=5, rng=rng(), mix="extreme")
    custom = make_workload("deepshare", num_jobs=10, rng=rng(), mix=(0, 0, 0, 0, 0, 1))
    assert (custom.model == 5).all()


def test_registry_errors_name_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="unknown workload kind 'google'; known: uniform, poisson"):
        make_workload("google", num_jobs=10, rng=rng())
    with pytest.raises(ValueError, match="takes no option 'rate'; allowed: jobs_per_interval"):
        make_workload("uniform", num_jobs=10, rng=rng(), rate=3.0)
    with pytest.raises(ValueError, match="'sced2-60' fixes \\['one_gpu_fraction'\\]"):
        make_workload("sced2-60", num_jobs=10, rng=rng(), one_gpu_fraction=0.5)
    with pytest.raises(ValueError, match="num_jobs must be an integer >= 1"):
        make_workload("uniform", num_jobs=0, rng=rng())
    with pytest.raises(TypeError, match=r"numpy.random.Generator"):
        make_workload("uniform", num_jobs=5, rng=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="workers=\\(0, 4\\); it needs 1 <= low <= high"):
        make_workload("uniform", num_jobs=5, rng=rng(), workers=(0, 4))
    with pytest.raises(ValueError, match="rate must be > 0"):
        make_workload("poisson", num_jobs=5, rng=rng(), rate=0.0)
    assert "one_gpu_fraction" not in workload_options("sced2-75")
    assert workload_options("uniform")["jobs_per_interval"] == 15


def test_arrival_helpers_by_hand() -> None:
    np.testing.assert_array_equal(fixed_counts(31, 15, 1), [[15], [15], [15]])
    times, scheduler = interval_arrivals(np.array([[1, 2], [0, 1]]), 10.0, rng(), within="start")
    np.testing.assert_array_equal(times, [0.0, 0.0, 0.0, 10.0])
    np.testing.assert_array_equal(scheduler, [0, 1, 1, 1])
    with pytest.raises(ValueError, match="allowed: uniform, start"):
        interval_arrivals(np.array([[1]]), 10.0, rng(), within="end")
    steps = bernoulli_arrivals(1000, 1.0, 2.0, rng())
    np.testing.assert_array_equal(steps, np.arange(1000) * 2.0)  # p = 1: one job per step
    gaps = np.diff(renewal_arrivals(20_000, 172.0, rng(2), law="lognormal"))
    assert gaps.mean() == pytest.approx(172.0, rel=0.05)
    assert renewal_arrivals(3, 1.0, rng())[0] == 0.0
    np.testing.assert_array_equal(apportion(10, np.array([0.5, 0.25, 0.25])), [5, 3, 2])


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(workload_kinds()),
    num_jobs=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_kind_any_size_gives_exactly_that_many_valid_jobs(
    kind: str, num_jobs: int, seed: int
) -> None:
    jobs = make_workload(kind, num_jobs=num_jobs, rng=rng(seed))
    assert len(jobs) == num_jobs
    assert (np.diff(jobs.arrival_time) >= 0).all()
    assert (jobs.ideal_duration() > 0).all()
    assert (jobs.total_gpus > 0).all()


@pytest.mark.parametrize(
    ("kind", "option", "value", "message"),
    [
        (
            "sced2",
            "duration_range_s",
            5,
            "duration_range_s must be (shortest, longest) seconds with 0 < shortest <= longest, "
            "got 5",
        ),
        (
            "sced2",
            "duration_range_s",
            [60, "x"],
            "duration_range_s must be (shortest, longest) seconds with 0 < shortest <= longest, "
            "got [60, 'x']",
        ),
        (
            "sced2",
            "model_shares",
            5,
            "model_shares must map model names to shares (numbers >= 0), "
            "e.g. {'Transformer': 0.6}, got 5",
        ),
        (
            "sced2",
            "model_shares",
            [1],
            "model_shares must map model names to shares (numbers >= 0), "
            "e.g. {'Transformer': 0.6}, got [1]",
        ),
        (
            "sced2",
            "model_shares",
            {"VGG16": "x"},
            "model_shares must map model names to shares (numbers >= 0), "
            "e.g. {'Transformer': 0.6}, got {'VGG16': 'x'}",
        ),
        (
            "deeprm",
            "resource_names",
            5,
            "resource_names must be a list of non-empty resource names starting with "
            "('gpu', 'cpu'), got 5",
        ),
        (
            "deeprm",
            "resource_names",
            ["gpu", "cpu", 5],
            "resource_names must be a list of non-empty resource names starting with "
            "('gpu', 'cpu'), got ['gpu', 'cpu', 5]",
        ),
        (
            "deeprm",
            "resource_names",
            ["gpu", "cpu", "mem", "mem"],
            "resource_names must not repeat a name, got ('gpu', 'cpu', 'mem', 'mem')",
        ),
    ],
)
def test_wrongly_typed_options_are_value_errors_naming_the_option(
    kind: str, option: str, value: object, message: str
) -> None:
    # TypeError escaped these before; the CLI turns only ValueError into one line, exit 2.
    with pytest.raises(ValueError) as caught:
        make_workload(kind, num_jobs=5, rng=rng(), **{option: value})
    assert str(caught.value) == message


def test_option_pairs_as_json_gives_them_still_work() -> None:
    # --workload-arg values are JSON: lists, not tuples or dicts of every shape.
    listed = make_workload(
        "sced2",
        num_jobs=50,
        rng=rng(3),
        duration_range_s=[60, 600],
        model_shares=[["Transformer", 1]],
    )
    assert set(np.array(get_catalog("sced2").names)[listed.model]) == {"Transformer"}
    assert listed.ideal_duration().max() <= 600 + 1e-6
    three = make_workload("deeprm", num_jobs=5, rng=rng(), resource_names=["gpu", "cpu", "mem"])
    assert three.resource_names == ("gpu", "cpu", "mem")


@pytest.mark.parametrize("kind", ["uniform", "poisson", "deeprm", "sced2", "deepshare"])
def test_more_jobs_than_fit_in_memory_are_refused_before_drawing(kind: str) -> None:
    """100 million jobs ended in a MemoryError; now refused up front, naming the bound."""
    from envs.workload import MAX_JOBS

    # No generator: the check must come before the rng is even looked at (without it,
    # the missing rng is refused instead and the test fails without allocating anything).
    with pytest.raises(ValueError, match=r"num_jobs must be at most 10,000,000 \(more would"):
        make_workload(kind, num_jobs=100_000_000, rng=None)  # type: ignore[arg-type]
    assert MAX_JOBS == 10_000_000 > 82_247  # the whole Philly trace fits 120 times over
