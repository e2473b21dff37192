"""How 004's three rewards map onto the environment: local r_t, global r_g and eq. 1, PSM."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs.cush import CuSHEnv
from envs.cush.core import eq1_returns
from envs.sim import SimulationResult


def job(arrival: int, length: int, gpus: int, cpus: int, kind: str) -> dict[str, Any]:
    return {"arrival": arrival, "length": length, "gpus": gpus, "cpus": cpus, "type": kind}


# Two jobs that each need the whole 2-node cluster: j1 waits for j0.
JOBS = [job(0, 2, 8, 1, "dgemm"), job(0, 4, 8, 1, "daxpy")]


def play(env: CuSHEnv) -> tuple[list[float], dict[str, Any]]:
    env.reset(seed=0)
    rewards = []
    done = False
    while not done:
        _, reward, terminated, truncated, info = env.step(env.baseline_action("fcfs+bf"))
        rewards.append(reward)
        done = terminated or truncated
    return rewards, info


def test_local_reward_is_minus_waiting_time_over_length_and_global_is_ntat() -> None:
    env = CuSHEnv(nodes=2, jobs=JOBS)
    rewards, info = play(env)
    # t=0: place j0 (j1 waited 0) -> 0; do nothing to t=1 -> -1/4; to t=2 -> -2/4;
    # place j1 at t=2 -> 0; do nothing to the end -> 0.
    assert rewards == pytest.approx([0.0, -0.25, -0.5, 0.0, 0.0])
    assert info["local_reward"] == 0.0
    # NTAT: j0 (0 + 2) / 2 = 1, j1 (2 + 4) / 4 = 1.5 -> r_g = 1.25 (BF: no daxpy penalty).
    assert info["global_reward"] == pytest.approx(1.25)
    metrics = SimulationResult.from_simulator(env.core.sim, "cush").metrics()
    assert info["global_reward"] == pytest.approx(metrics["avg_ntat"])
    summary = info["episode"]
    assert summary["avg_wait"] == pytest.approx(1.0)
    assert summary["avg_tat"] == pytest.approx(4.0)
    assert summary["local_return"] == pytest.approx(-0.75)
    # eq. 1 at t = 0 with gamma 0.9: (0 - 0.9 x 0.25 - 0.81 x 0.5) x 1.25.
    assert summary["eq1_return"] == pytest.approx((-0.9 * 0.25 - 0.81 * 0.5) * 1.25)


def test_global_scaled_reward_makes_the_return_eq1_at_gamma_one() -> None:
    local, _ = play(CuSHEnv(nodes=2, jobs=JOBS))
    scaled, info = play(CuSHEnv(nodes=2, jobs=JOBS, reward="global_scaled"))
    assert scaled[:-1] == local[:-1]
    assert sum(scaled) == pytest.approx(sum(local) * info["global_reward"])


def test_eq1_returns_discount_the_local_rewards_and_scale_by_the_global() -> None:
    rewards = np.array([-1.0, -2.0, 0.0, -4.0])
    expected = [
        sum(0.5**k * r for k, r in enumerate(rewards[t:])) * 3.0 for t in range(len(rewards))
    ]
    np.testing.assert_allclose(eq1_returns(rewards, 3.0, 0.5), expected)
    assert eq1_returns(np.zeros(0), 3.0, 0.5).shape == (0,)


def test_psm_reward_is_minus_the_locality_penalty_on_each_placement() -> None:
    env = CuSHEnv(nodes=4, penalty_scale_gpus=16, jobs=[job(0, 10, 8, 0, "daxpy")])
    env.reset(seed=0)
    _, reward, _, _, info = env.step([1, 0])  # daxpy depth-first: f = 0.5, p = 5 steps
    assert info["psm_reward"] == pytest.approx(-5.0)
    assert reward == 0.0  # the JSM's local reward is unaffected
    _, _, _, _, info = env.step([0, 0])
    assert "psm_reward" not in info
