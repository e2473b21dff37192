"""A pod evaluation row's means count every seed, and its per-job times every job that
arrived: a seed where a metric is undefined is not dropped from the row's mean, and a job
unfinished at the horizon keeps its time so far, marked unfinished."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import tune.evaluation.multi_agent as multi_agent
from tune.evaluation import evaluate, run_episode
from tune.evaluation.multi_agent import seed_means

nan = float("nan")
POD = "pod_scheduling_v0"


def test_a_metric_undefined_on_a_seed_leaves_the_row_mean_undefined() -> None:
    per_seed = [
        {"avg_jct": 100.0, "avg_contention": 1.2},
        {"avg_jct": 200.0, "avg_contention": nan},
        {"avg_jct": 300.0, "avg_contention": None},  # NaN as JSON writes it
    ]
    means, undefined = seed_means(per_seed, [7, 8, 9])
    assert means["avg_jct"] == pytest.approx(200.0)  # (100 + 200 + 300) / 3
    # Over the seeds where it is defined it would read 1.2, from one seed of three.
    assert math.isnan(means["avg_contention"])
    assert undefined == {"avg_contention": [8, 9]}
    # Every seed defined: a plain mean, nothing listed.
    assert seed_means(per_seed[:1], [7]) == ({"avg_jct": 100.0, "avg_contention": 1.2}, {})
    with pytest.raises(ValueError, match="2 seeds' metrics for 3 seeds"):
        seed_means(per_seed[:2], [7, 8, 9])


def test_evaluate_averages_every_seed_and_keeps_every_job(monkeypatch) -> None:
    # Three seeds of one heuristic, played by a stand-in: on seed 3 no job ran (no
    # contention to average) and one of its two jobs was still queued at the 10 h horizon.
    played = {
        1: ({"avg_jct": 3600.0, "makespan": 7200.0, "avg_contention": 1.1}, [3600.0], [False]),
        2: ({"avg_jct": 5400.0, "makespan": 9000.0, "avg_contention": 1.3}, [5400.0], [False]),
        3: (
            {"avg_jct": 19800.0, "makespan": 36000.0, "avg_contention": nan},
            [3600.0, 36000.0],
            [False, True],
        ),
    }

    def play(env_name: str, config: dict, seed: int, policy: str, modules: Any) -> dict:
        metrics, seconds, unfinished = played[seed]
        return {
            "policy": policy,
            "seed": seed,
            "metrics": metrics,
            "jct": {"seconds": seconds, "unfinished": unfinished},
            "episode_return": -float(seed),
        }

    monkeypatch.setattr(
        multi_agent, "play_episodes", lambda function, calls, local: [play(*c) for c in calls]
    )
    row = evaluate(POD, {}, [1, 2, 3], ["fifo+packing"])["fifo+packing"]
    assert row["seeds"] == [1, 2, 3]
    assert row["metrics"]["avg_jct"] == pytest.approx((3600.0 + 5400.0 + 19800.0) / 3)
    assert row["metrics"]["makespan"] == pytest.approx((7200.0 + 9000.0 + 36000.0) / 3)
    # Not (1.1 + 1.3) / 2 = 1.2 under a row that says three seeds.
    assert math.isnan(row["metrics"]["avg_contention"])
    assert row["undefined_seeds"] == {"avg_contention": [3]}
    assert row["episode_return"] == pytest.approx(-2.0)  # (-1 - 2 - 3) / 3
    # Every episode's jobs in seed order, the one cut at the horizon marked.
    assert row["jct"] == {
        "seconds": [3600.0, 5400.0, 3600.0, 36000.0],
        "unfinished": [False, False, False, True],
    }


def test_a_pod_episode_cut_at_the_horizon_keeps_each_jobs_time_so_far() -> None:
    # One interval: the episode ends before any of the four jobs runs.
    config = {
        "topology": "flat",
        "topology_params": {"servers": 4},
        "num_jobs": 4,
        "horizon_intervals": 1,
    }
    episode = run_episode(POD, config, 3, "fifo+packing")
    metrics, times = episode["metrics"], episode["jct"]
    assert metrics["jobs_finished"] == 0 and len(times["seconds"]) == metrics["jobs_total"] == 4
    assert times["unfinished"] == [True] * 4
    seconds = np.asarray(times["seconds"])
    assert np.isfinite(seconds).all() and (seconds > 0).all()  # no NaN: time so far
    assert metrics["avg_jct"] == pytest.approx(seconds.mean())
    # At least the time from the first arrival to the horizon: the first job's time so far.
    assert metrics["makespan"] == pytest.approx(seconds.max())
    # No job ran, so no contention: the row's mean says so rather than skip the seed.
    assert math.isnan(metrics["avg_contention"])
    row = evaluate(POD, config, [3], ["fifo+packing"])["fifo+packing"]
    assert row["undefined_seeds"]["avg_contention"] == [3]
    assert row["jct"] == times


def test_an_undefined_mean_has_no_interval() -> None:
    """CS undefined on one of three seeds: the row's mean is NaN, and so is its half-width
    (the other two seeds alone would give one); avg JCT's is t(0.975, 2) s / sqrt(3) with
    values 4, 6, 5 (s = 1): 4.303 x 0.5774 = 2.484."""
    from tune.evaluation.comparison import add_statistics

    table = {
        "fifo+packing": {
            "metrics": {"avg_contention": math.nan, "avg_jct": 5.0},
            "episodes": [
                {"avg_contention": 1.0, "avg_jct": 4.0},
                {"avg_contention": math.nan, "avg_jct": 6.0},
                {"avg_contention": 2.0, "avg_jct": 5.0},
            ],
        }
    }
    half_widths = add_statistics(table)["fifo+packing"]["ci95"]
    assert math.isnan(half_widths["avg_contention"])
    assert half_widths["avg_jct"] == pytest.approx(4.3027 / math.sqrt(3), abs=1e-3)
