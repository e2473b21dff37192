"""004 §4.1's eight baselines (Table 1's rows): choices, tie-breaking, and their experiment."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs.cush import CuSHEnv
from envs.cush.baselines import (
    CUSH_BASELINES,
    SET_METRICS,
    baseline_action,
    parse_baseline,
    run_cush_baseline,
)


def job(arrival: int, length: int, gpus: int, cpus: int, kind: str) -> dict[str, Any]:
    return {"arrival": arrival, "length": length, "gpus": gpus, "cpus": cpus, "type": kind}


def test_the_eight_rows_of_table_1() -> None:
    assert CUSH_BASELINES == (
        "fcfs+df",
        "fcfs+bf",
        "sjf+df",
        "sjf+bf",
        "drf+df",
        "drf+bf",
        "random+df",
        "random+bf",
    )
    assert parse_baseline("SJF+BF") == ("sjf", 1)
    for bad in ("sjf", "sjf+", "lifo+df", "sjf+xf"):
        with pytest.raises(ValueError, match="unknown CuSH baseline"):
            parse_baseline(bad)


@pytest.mark.parametrize("policy", CUSH_BASELINES)
def test_every_baseline_runs_job_sets_to_the_end(policy: str) -> None:
    result = run_cush_baseline(policy, seed=3, num_sets=2, nodes=32)
    assert result["policy"] == policy and result["num_sets"] == 2
    assert result["truncated_sets"] == 0
    for key in SET_METRICS:
        assert isinstance(result[key], float)
    assert result["avg_ntat"] >= 1.0 and result["avg_wait"] >= 0.0
    assert result["local_return"] <= 0.0 and result["eq1_return"] <= 0.0
    assert [record["seed"] for record in result["sets"]] == [3, 4]
    assert all(record["jobs_finished"] == 20 for record in result["sets"])


# Three jobs waiting at once on 2 Sierra nodes (8 GPUs, 4 CPUs); each fits alone.
TIES = [
    job(0, 5, 2, 1, "dgemm"),  # slot 1
    job(0, 3, 6, 1, "dgemm"),  # slot 2: same arrival, shorter -> FCFS's pick
    job(1, 3, 1, 3, "daxpy"),  # slot 3: as short as slot 2, later -> SJF picks slot 2
]


@pytest.mark.parametrize(
    ("policy", "first"),
    [
        ("fcfs+df", 2),  # first arrived; tie at step 0 -> the shorter one
        ("sjf+bf", 2),  # shortest; tie at length 3 -> the first arrived
        # Dominant shares: slot 1 max(2/8, 1/4) = 0.25, slot 2 0.75, slot 3 0.75 -> slot 1.
        ("drf+df", 1),
    ],
)
def test_orderings_and_their_tie_breaking(policy: str, first: int) -> None:
    env = CuSHEnv(nodes=2, jobs=TIES)
    env.reset(seed=0)
    env.step([0, 0])  # all three wait at step 1
    action = env.baseline_action(policy)
    assert action.tolist() == [first, parse_baseline(policy)[1]]


def test_random_picks_only_jobs_that_fit_and_does_nothing_when_none_does() -> None:
    env = CuSHEnv(nodes=2, jobs=TIES)
    env.reset(seed=0)
    env.step([0, 0])
    env.step([2, 0])  # 6 GPUs taken: slot 3 (1 GPU, 3 CPUs) fits, slot 1 (2 GPUs, 1 CPU) too
    picks = {int(env.baseline_action("random+bf")[0]) for _ in range(50)}
    assert picks == {1, 3}
    env.step([1, 0])  # now 0 GPUs free
    assert env.baseline_action("random+bf").tolist() == [0, 1]
    assert env.baseline_action("fcfs+df").tolist() == [0, 0]


# One Sierra node (4 GPUs, 2 CPUs): every placement is the same, so no job pays a penalty.
# A runs 0-4 on 3 GPUs; B (2 GPUs) arrives at 1 and cannot start before A ends; C (1 GPU)
# arrives at 2 behind B and would fit in A's spare GPU and socket.
HEAD_BLOCKS = [
    job(0, 4, 3, 1, "dgemm"),  # A
    job(1, 2, 2, 1, "dgemm"),  # B
    job(2, 1, 1, 1, "daxpy"),  # C
]


def test_fcfs_is_a_fifo_queue_the_head_that_does_not_fit_blocks_the_rest() -> None:
    env = CuSHEnv(nodes=1, jobs=HEAD_BLOCKS)
    env.reset(seed=0)
    assert env.step(env.baseline_action("fcfs+df"))[-1]["placed"]["job"] == 0  # A at 0
    env.step([0, 0])  # step 1: B waits
    env.step([0, 0])  # step 2: C arrives behind B (slots 1 and 2)
    assert env.core.time == 2 and env.core.action_mask()[1:3].tolist() == [0, 1]
    # 004: FCFS "treats the waiting jobs as a FIFO queue": B heads it and does not fit,
    # so FCFS does nothing though C fits; with backfilling C would start.
    assert env.baseline_action("fcfs+df").tolist() == [0, 0]
    core, rng = env.core, np.random.default_rng(0)
    assert baseline_action(core, "fcfs+df", rng, backfill=True).tolist() == [2, 0]
    # SJF, DRF and Random choose among the jobs that fit: C.
    for policy in ("sjf+df", "drf+df", "random+df"):
        assert env.baseline_action(policy).tolist() == [2, 0], policy


@pytest.mark.parametrize(
    ("backfill", "starts", "ntat"),
    [
        # A 0-4; B and C both start when A ends (B first: it heads the queue).
        # NTAT = (4/4 + (3 + 2)/2 + (2 + 1)/1) / 3 = (1 + 2.5 + 3) / 3.
        (False, [0, 4, 4], 6.5 / 3),
        # C backfills at 2 into A's spare GPU and socket: (1 + 2.5 + 1) / 3.
        (True, [0, 4, 2], 4.5 / 3),
    ],
)
def test_fcfs_with_and_without_backfilling_by_hand(
    backfill: bool, starts: list[int], ntat: float
) -> None:
    result = run_cush_baseline(
        "fcfs+bf", nodes=1, jobs=HEAD_BLOCKS, include_jobs=True, backfill=backfill
    )
    records = result["sets"][0]["jobs"]
    assert [record["start"] for record in records] == starts
    assert [record["penalty"] for record in records] == [0.0, 0.0, 0.0]
    assert result["avg_ntat"] == pytest.approx(ntat)
    assert result["backfill"] is backfill
    with pytest.raises(ValueError, match="backfill must be true or false"):
        run_cush_baseline("fcfs+bf", nodes=1, jobs=HEAD_BLOCKS, backfill="yes")


# 2 Sierra nodes (8 GPUs, 4 CPUs). R holds 1 GPU and 2 CPUs: 7 GPUs and 2 CPUs stay free.
# Y (5 GPUs, 1 CPU) and X (1 GPU, 2 CPUs) arrive at 1, both fit.
DOMINANT = [
    job(0, 10, 1, 2, "dgemm"),  # R
    job(1, 5, 5, 1, "dgemm"),  # Y, slot 1
    job(1, 5, 1, 2, "dgemm"),  # X, slot 2
]


def test_drf_shares_are_of_the_clusters_capacity_not_of_what_is_free() -> None:
    env = CuSHEnv(nodes=2, jobs=DOMINANT)
    env.reset(seed=0)
    env.step([1, 0])  # R starts
    env.step([0, 0])  # step 1: Y in slot 1, X in slot 2
    assert env.core.slots[:2] == [1, 2] and env.core.action_mask()[1:3].tolist() == [1, 1]
    # Of the capacity (8 GPUs, 4 CPUs; 004's "environment availability", DRF's total):
    # Y max(5/8, 1/4) = 0.625, X max(1/8, 2/4) = 0.5 -> X. Shares of the free 7 GPUs and
    # 2 CPUs would rank them the other way: Y max(5/7, 1/2) = 0.71, X max(1/7, 2/2) = 1.
    assert env.baseline_action("drf+df").tolist() == [2, 0]


def test_baseline_sets_are_the_environments_sets() -> None:
    result = run_cush_baseline("sjf+bf", seed=11, num_sets=1, nodes=16, include_jobs=True)
    env = CuSHEnv(nodes=16)
    env.reset(seed=11)
    jobs = env.core.jobs.to_list()
    assert [(r["arrival"], r["length"], r["gpus"]) for r in result["sets"][0]["jobs"]] == [
        (j["arrival"], j["length"], j["gpus"]) for j in jobs
    ]
    done = False
    while not done:
        *_, terminated, truncated, info = env.step(env.baseline_action("sjf+bf"))
        done = terminated or truncated
    assert info["episode"]["avg_ntat"] == result["avg_ntat"]


def test_an_explicit_job_set_runs_once() -> None:
    result = run_cush_baseline("fcfs+bf", nodes=2, num_sets=5, jobs=TIES)
    assert result["num_sets"] == 1 and result["sets"][0]["jobs_finished"] == 3
    with pytest.raises(ValueError, match="num_sets"):
        run_cush_baseline("fcfs+bf", num_sets=0)
    with pytest.raises(ValueError, match="unknown CuSH parameter"):
        run_cush_baseline("fcfs+bf", num_sets=1, colour="red")


@pytest.mark.parametrize("ordering", ["fcfs", "sjf", "drf", "random"])
def test_dgemm_heavy_sets_favour_depth_first_and_daxpy_heavy_breadth_first(
    ordering: str,
) -> None:
    def run(allocation: str, dgemm_fraction: float) -> dict[str, Any]:
        return run_cush_baseline(
            f"{ordering}+{allocation}", seed=0, num_sets=8, dgemm_fraction=dgemm_fraction
        )

    dgemm_df, dgemm_bf = run("df", 1.0), run("bf", 1.0)
    daxpy_df, daxpy_bf = run("df", 0.0), run("bf", 0.0)
    assert dgemm_df["avg_penalty"] < dgemm_bf["avg_penalty"]
    assert daxpy_bf["avg_penalty"] < daxpy_df["avg_penalty"]
    for key in ("avg_ntat", "avg_wait"):
        assert dgemm_df[key] < dgemm_bf[key]
        assert daxpy_bf[key] < daxpy_df[key]
    assert dgemm_df["local_return"] > dgemm_bf["local_return"]
    assert daxpy_bf["local_return"] > daxpy_df["local_return"]
    assert dgemm_df["truncated_sets"] == daxpy_bf["truncated_sets"] == 0
