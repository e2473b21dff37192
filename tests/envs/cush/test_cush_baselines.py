"""004 §4.1's eight baselines (Table 1's rows): choices, tie-breaking, and their experiment."""

from __future__ import annotations

from typing import Any

import pytest

from envs.cush import CuSHEnv
from envs.cush.baselines import CUSH_BASELINES, SET_METRICS, parse_baseline, run_cush_baseline


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
