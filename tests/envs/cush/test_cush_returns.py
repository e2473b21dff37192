"""The return each CuSH network trains on (004 §3.2-3.4, Alg. 1 lines 10-11), by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs.cush import CuSHEnv
from envs.cush.returns import global_reward, head_returns, psm_returns


def test_the_job_selector_follows_eq1_and_the_policy_selector_its_penalty() -> None:
    # Four steps: a placement with penalty 2, two waits, a placement with none; NTAT 1.25.
    infos = [
        {"local_reward": 0.0, "psm_reward": -2.0},
        {"local_reward": -0.25},
        {"local_reward": -0.5, "psm_reward": -0.0},
        {"local_reward": 0.0, "global_reward": 1.25},
    ]
    returns = head_returns(infos, gamma=0.9)
    # eq. 1, v_t = (sum_{i>=t} 0.9^(i-t) r_i) x r_g, from the end:
    # v_3 = 0; v_2 = -0.5 x 1.25; v_1 = (-0.25 - 0.9 x 0.5) x 1.25; v_0 = 0.9 x (-0.7) x 1.25.
    assert returns["job"] == pytest.approx([-0.7875, -0.875, -0.625, 0.0])
    # 004 §3.3: v_t = r_t = the locality penalty of the step's own placement (minus, so
    # that a larger penalty is worse); the PSM did not act on the waiting steps.
    assert returns["policy"] == pytest.approx([-2.0, 0.0, 0.0, 0.0])
    assert psm_returns(infos) == pytest.approx([-2.0, 0.0, 0.0, 0.0])


def test_a_truncated_episode_is_judged_by_the_jobs_that_finished() -> None:
    assert global_reward({"global_reward": 2.5, "episode": {"avg_ntat": 9.0}}) == 2.5
    assert global_reward({"episode": {"avg_ntat": 3.0}}) == 3.0
    # No job finished: r_g = 1 leaves the discounted local return as it is.
    assert global_reward({"episode": {"avg_ntat": None}}) == 1.0
    assert head_returns([{"local_reward": -1.0, "episode": {"avg_ntat": None}}], 0.9)[
        "job"
    ] == pytest.approx([-1.0])
    with pytest.raises(ValueError, match="at least one step"):
        head_returns([], 0.9)


def job(arrival: int, length: int, gpus: int, cpus: int, kind: str) -> dict[str, Any]:
    return {"arrival": arrival, "length": length, "gpus": gpus, "cpus": cpus, "type": kind}


def test_the_environments_infos_give_each_network_its_reward() -> None:
    """Two Sierra nodes (4 GPUs each), penalties per 4 GPUs: a 4-GPU dgemm placed
    breadth-first spans both nodes (spread 1): f = 0.5 x 1 x 4/4 = 0.5 of its length 2, a
    penalty of 1 step; the daxpy after it can only take 2 + 2 GPUs (spread 1, daxpy pays
    1 - spread = 0): no penalty."""
    env = CuSHEnv(
        nodes=2,
        penalty_scale_gpus=4,
        jobs=[job(0, 2, 4, 1, "dgemm"), job(0, 4, 4, 1, "daxpy")],
    )
    env.reset(seed=0)
    infos = []
    for action in ([1, 1], [2, 0]):
        infos.append(env.step(np.array(action))[-1])
    assert infos[0]["placed"]["penalty"] == pytest.approx(1.0)
    assert infos[1]["placed"]["penalty"] == pytest.approx(0.0)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(np.array([0, 0]))
        infos.append(info)
        done = terminated or truncated
    assert terminated
    returns = head_returns(infos, gamma=0.9)
    assert returns["policy"] == pytest.approx([-1.0, 0.0] + [0.0] * (len(infos) - 2))
    # Nobody waited (both started at 0): every local reward, so every eq. 1 return, is 0.
    assert returns["job"] == pytest.approx(np.zeros(len(infos)))
    # NTAT: the dgemm ran 2 x 1.5 = 3 steps, the daxpy 4; neither waited -> r_g = 1.
    assert info["global_reward"] == pytest.approx(1.0)
    # 004 Fig. 6's shares: the dgemm went breadth-first, the daxpy depth-first.
    assert info["episode"]["dgemm_depth_first"] == 0.0
    assert info["episode"]["daxpy_breadth_first"] == 0.0


def test_the_job_selectors_first_return_is_the_episodes_eq1_return() -> None:
    # Two jobs that each need the whole 2-node cluster: the daxpy waits 2 steps for the dgemm.
    env = CuSHEnv(nodes=2, jobs=[job(0, 2, 8, 1, "dgemm"), job(0, 4, 8, 1, "daxpy")])
    env.reset(seed=0)
    infos, done = [], False
    while not done:
        _, _, terminated, truncated, info = env.step(env.baseline_action("fcfs+bf"))
        infos.append(info)
        done = terminated or truncated
    returns = head_returns(infos, gamma=0.9)
    # Local rewards 0, -1/4, -2/4, 0, 0 (test_cush_rewards); r_g = (1 + 1.5) / 2.
    expected = [(-0.9 * 0.25 - 0.81 * 0.5) * 1.25, (-0.25 - 0.9 * 0.5) * 1.25, -0.625, 0, 0]
    assert returns["job"] == pytest.approx(expected)
    assert returns["job"][0] == pytest.approx(info["episode"]["eq1_return"])
    # FCFS+BF placed both breadth-first.
    assert info["episode"]["dgemm_depth_first"] == 0.0
    assert info["episode"]["daxpy_breadth_first"] == 1.0
