"""The mean-JCT lower bound (:mod:`envs.sim.bounds`): values derived by hand, and never
above a feasible schedule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from envs.sim.bounds import mean_jct_lower_bound

# The program is solved to HiGHS' default tolerances (about 1e-7 relative).
TOLERANCE = 1e-6


def test_one_job_waits_for_its_round_then_runs_its_time() -> None:
    # Arrives at 100 s, the first decision is at 1800 s, runs 600 s: done at 2400 s at
    # the earliest, a JCT of 2300 s.
    bound = mean_jct_lower_bound([100.0], [1800.0], [1], [600.0], total_gpus=1)
    assert bound.mean_jct_s == pytest.approx(2300.0, abs=TOLERANCE)
    assert bound.completion_s == pytest.approx([2400.0], abs=TOLERANCE)


def test_two_jobs_sharing_one_gpu_by_hand() -> None:
    # Two 600 s jobs on one GPU, both there at 0, slots of 300 s. The GPU is busy in the
    # first four slots whatever the order, so the progress-weighted slot starts add up to
    # 300 x (0 + 300 + 600 + 900) GPU-s, i.e. M_a + M_b = 900 s. C_j = max(M_j + 300,
    # 0 + 600) is smallest in sum at M_a = 300, M_b = 600: 600 + 900, a mean of 750 s
    # (the best real schedule runs one after the other: 600 and 1200, a mean of 900 s).
    bound = mean_jct_lower_bound([0.0, 0.0], [0.0, 0.0], [1, 1], [600.0, 600.0], total_gpus=1)
    assert bound.mean_jct_s == pytest.approx(750.0, abs=TOLERANCE)
    assert sorted(bound.completion_s) == pytest.approx([600.0, 900.0], abs=TOLERANCE)


def test_room_for_every_job_gives_each_its_own_time() -> None:
    # 1 + 2 + 3 GPUs on 6: nobody waits for anybody; each job's JCT is its wait for the
    # first round plus its run time: (1800 - 10 + 600), (1800 - 1000 + 1200), (3600 -
    # 2000 + 900); mean (2390 + 2000 + 2500) / 3.
    bound = mean_jct_lower_bound(
        [10.0, 1000.0, 2000.0], [1800.0, 1800.0, 3600.0], [1, 2, 3], [600.0, 1200.0, 900.0], 6
    )
    assert bound.mean_jct_s == pytest.approx((2390.0 + 2000.0 + 2500.0) / 3, abs=TOLERANCE)


def test_a_short_first_horizon_is_grown_to_the_same_answer() -> None:
    arrival = np.array([0.0, 0.0, 300.0, 900.0])
    args = (arrival, arrival, np.array([2, 1, 2, 1]), np.array([900.0, 600.0, 1500.0, 300.0]), 2)
    default = mean_jct_lower_bound(*args)
    grown = mean_jct_lower_bound(*args, horizon_s=300.0)
    assert grown.horizon_s > 300.0
    assert grown.mean_jct_s == pytest.approx(default.mean_jct_s, abs=TOLERANCE)


def test_a_job_without_gpus_is_bounded_by_its_own_time_alone() -> None:
    # Two 600 s one-GPU jobs share one GPU (750 s, as above); a third job needs no GPU,
    # waits for its round at 1800 s and runs 300 s: 2100 - 100 s, whoever holds the GPU.
    bound = mean_jct_lower_bound(
        [0.0, 100.0, 0.0], [0.0, 1800.0, 0.0], [1, 0, 1], [600.0, 300.0, 600.0], total_gpus=1
    )
    assert bound.completion_s[1] == pytest.approx(2100.0, abs=TOLERANCE)
    assert bound.mean_jct_s == pytest.approx((600.0 + 900.0 + 2000.0) / 3, abs=TOLERANCE)
    alone = mean_jct_lower_bound([100.0], [1800.0], [0], [300.0], total_gpus=1)
    assert alone.mean_jct_s == pytest.approx(2000.0, abs=TOLERANCE)


def test_a_horizon_that_cannot_grow_enough_is_reported() -> None:
    # 300 jobs of 300 s on one GPU need 90,000 s; a first horizon of one 300 s slot,
    # doubled 8 times, ends at 38,400 s: the error names the last horizon tried.
    jobs = np.zeros(300)
    with pytest.raises(RuntimeError, match="at a horizon of 38400 s after 8 doublings"):
        mean_jct_lower_bound(jobs, jobs, jobs + 1, jobs + 300.0, 1, horizon_s=1.0)


def _list_schedule_mean_jct(
    order: tuple[int, ...], arrival: np.ndarray, gpus: np.ndarray, run: np.ndarray, total: int
) -> float:
    """Mean JCT of starting the jobs in ``order``, each as soon as it has arrived, its
    predecessor in the order has started, and enough GPUs are free (a feasible schedule)."""
    running: list[tuple[float, int]] = []  # (end, gpus)
    now, jct = 0.0, []
    for job in order:
        now = max(now, arrival[job])
        while total - sum(held for end, held in running if end > now) < gpus[job]:
            now = min(end for end, _ in running if end > now)
        running.append((now + run[job], int(gpus[job])))
        jct.append(now + run[job] - arrival[job])
    return float(np.mean(jct))


@pytest.mark.parametrize("seed", range(6))
def test_never_above_a_feasible_schedule(seed: int) -> None:
    # Small random workloads on 4 GPUs: the bound is at most the best of every order's
    # list schedule (each one feasible), and at least each job's own run time.
    rng = np.random.default_rng(seed)
    jobs = 5
    arrival = np.sort(rng.integers(0, 4, jobs) * 300.0)
    gpus = rng.integers(1, 5, jobs)
    run = rng.integers(1, 8, jobs) * 300.0
    bound = mean_jct_lower_bound(arrival, arrival, gpus, run, total_gpus=4).mean_jct_s
    best = min(
        _list_schedule_mean_jct(order, arrival, gpus, run, 4)
        for order in itertools.permutations(range(jobs))
    )
    assert run.mean() - TOLERANCE <= bound <= best + TOLERANCE


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (([0.0], [0.0], [3], [60.0], 2), "gpus must be in [0, 2]; job 0 breaks it (1 jobs in all)"),
        (([0.0], [0.0], [-1], [60.0], 2), "gpus must be in [0, 2]; job 0"),
        (([0.0], [np.inf], [1], [60.0], 2), "earliest_start_s must be finite; job 0"),
        (
            ([0.0, 5.0], [0.0, 1.0], [1, 1], [60.0, 60.0], 2),
            "earliest_start_s must be >= arrival_s; job 1",
        ),
        (([0.0], [0.0], [1], [0.0], 2), "min_run_s must be finite and > 0; job 0"),
        (([-1.0], [0.0], [1], [60.0], 2), "arrival_s must be finite and >= 0; job 0"),
        (([0.0], [0.0, 1.0], [1], [60.0], 2), "must be 1-D arrays of one length"),
        (([0.0], [0.0], [1], [60.0], 0), "total_gpus must be a positive integer; got 0"),
        (([0.0], [0.0], [1], [60.0], 2.5), "total_gpus must be a positive integer; got 2.5"),
    ],
)
def test_bad_input_is_refused_with_the_rule(arguments: tuple, message: str) -> None:
    with pytest.raises(ValueError) as error:
        mean_jct_lower_bound(*arguments)
    assert message in str(error.value)


def test_bad_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="slot_s must be a positive number of seconds; got 0"):
        mean_jct_lower_bound([0.0], [0.0], [1], [60.0], 1, slot_s=0)


def test_no_jobs_have_no_mean() -> None:
    bound = mean_jct_lower_bound([], [], [], [], total_gpus=4)
    assert np.isnan(bound.mean_jct_s)
    assert len(bound.completion_s) == 0
