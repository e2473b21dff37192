"""pod_scheduling_v0's advice: a heuristic's planned action in every observation."""

from __future__ import annotations

import re

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from envs.pod.env import PodSchedulingEnv
from envs.pod.heuristic import HeuristicPodPolicy
from envs.sim import SimulationResult


def follow_advice(env: PodSchedulingEnv, seed: int) -> int:
    """Play one episode taking the advised action everywhere; the steps with advice."""
    observations, _ = env.reset(seed=seed)
    advised_steps = 0
    while env.agents:
        actions = {}
        for agent in env.agents:
            advice = observations[agent]["advice"]
            # While a round is open every agent has exactly one advised, legal action.
            assert advice.sum() == 1
            assert observations[agent]["action_mask"][advice.argmax()] == 1
            actions[agent] = int(advice.argmax())
        advised_steps += 1
        observations, _, _, _, infos = env.step(actions)
        assert not any(info["illegal_action"] for info in infos.values())
    return advised_steps


@pytest.mark.parametrize(
    ("heuristic", "queue_order"),
    [("dsif+locality", "ideal-time"), ("fifo+packing", "arrival"), ("sjf+lif", "arrival")],
)
def test_following_the_advice_is_the_heuristic(heuristic: str, queue_order: str) -> None:
    settings = {"num_jobs": 40, "queue_order": queue_order, "room_features": True}
    advised = PodSchedulingEnv(advice=heuristic, **settings)
    steps = follow_advice(advised, seed=11)
    driven = PodSchedulingEnv(**settings)
    driven.reset(seed=11)
    driver = HeuristicPodPolicy(driven, heuristic)
    driven_steps = 0
    while driven.agents:
        driven.step(driver.actions())
        driven_steps += 1
    assert steps == driven_steps
    metrics = SimulationResult.from_simulator(advised.sim, heuristic).metrics()
    assert metrics == SimulationResult.from_simulator(driven.sim, heuristic).metrics()
    assert metrics["jobs_finished"] == 40


def test_advice_is_legal_or_absent_after_deviations() -> None:
    """Random play leaves the plan; whatever is advised then is still one legal action."""
    env = PodSchedulingEnv(num_jobs=30, advice="dsif+locality", queue_order="ideal-time")
    observations, _ = env.reset(seed=5)
    rng = np.random.default_rng(5)
    absent = present = 0
    while env.agents:
        actions = {}
        for agent in env.agents:
            mask, advice = observations[agent]["action_mask"], observations[agent]["advice"]
            assert advice.dtype == np.int8 and advice.sum() <= 1
            assert not (advice & (1 - mask)).any()
            present += int(advice.sum())
            absent += int(advice.sum() == 0)
            actions[agent] = int(rng.choice(np.flatnonzero(mask)))
        observations, *_ = env.step(actions)
    assert present > 0 and absent > 0  # both happen when the agents ignore the plan


def test_advice_changes_nothing_else() -> None:
    """The same seed draws the same jobs and homes, and every other key is the same."""
    plain = PodSchedulingEnv(num_jobs=20)
    advised = PodSchedulingEnv(num_jobs=20, advice="fifo+packing")
    plain_obs, _ = plain.reset(seed=3)
    advised_obs, _ = advised.reset(seed=3)
    assert np.array_equal(plain.homes, advised.homes)
    assert set(advised_obs["scheduler_0"]) == set(plain_obs["scheduler_0"]) | {"advice"}
    for agent, observation in plain_obs.items():
        for key, value in observation.items():
            assert np.array_equal(value, advised_obs[agent][key]), key
    assert advised.observation_space("scheduler_0")["advice"].shape == (
        advised.builder.num_actions,
    )


def test_pettingzoo_api_with_advice() -> None:
    parallel_api_test(PodSchedulingEnv(num_jobs=12, advice="sjf+packing"), num_cycles=200)


@pytest.mark.parametrize(
    ("advice", "message"),
    [
        ("fifo", "not of the form ordering+placement"),
        ("fifo+nowhere", "unknown placement 'nowhere'"),
        ("lifo+packing", "unknown ordering 'lifo'"),
        (3, "advice must be a heuristic name"),
    ],
)
def test_unknown_advice_is_refused(advice: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        PodSchedulingEnv(advice=advice)
