"""Per-job credit through RLlib: whole episodes, each agent's rewards the credited ones."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.tune.test_rllib_config import SMALL_POD
from tune.credit import credit_rewards_on_episode_end
from tune.experiment import ConfigError, config_from_dict
from tune.rllib_config import algorithm_config


def _credited_pod() -> dict:
    spec = copy.deepcopy(SMALL_POD)
    spec["environment"]["config"].update(reward="jct", credit="job")
    # Undiscounted, as per-job credit requires (tune.experiment).
    spec["algorithm"].update(gamma=1.0, lambda_=1.0)
    return spec


def test_job_credit_samples_whole_episodes() -> None:
    assert algorithm_config(config_from_dict(SMALL_POD)).batch_mode == "truncate_episodes"
    config = algorithm_config(config_from_dict(_credited_pod()))
    assert config.batch_mode == "complete_episodes"
    assert config.callbacks_on_episode_end is credit_rewards_on_episode_end


@pytest.mark.integration
def test_episodes_reach_the_learner_with_credited_rewards(ray_local) -> None:
    algo = algorithm_config(config_from_dict(_credited_pod()), seed=0).build_algo()
    try:
        episodes = algo.env_runner.sample()
        assert episodes and all(episode.is_done for episode in episodes)
        paid_total = sum(episode.get_return() for episode in episodes)
        moved = 0
        for episode in episodes:
            for agent, agent_episode in episode.agent_episodes.items():
                assert agent_episode.t_started == 0, agent
                credited = agent_episode.get_infos(-1)["credited_rewards"]
                rewards = np.asarray(agent_episode.get_rewards())
                assert np.allclose(rewards, credited, rtol=0, atol=1e-12), agent
                moved += np.count_nonzero(rewards)
        # Rewards were spread over the placement steps, the total left as the env paid it
        # (the env's episode return, summed over agents, is -sum(JCT) / interval).
        env_steps = sum(episode.env_steps() for episode in episodes)
        assert moved > env_steps // 4
        assert np.isfinite(paid_total) and paid_total < 0
        learner = algo.learner_group._learner
        stats = learner.update(episodes=episodes, num_epochs=1, minibatch_size=32, timesteps={})
        assert np.isfinite(float(stats["shared"]["vf_loss"].peek()))
    finally:
        algo.stop()


@pytest.mark.integration
def test_whole_episode_sampling_draws_new_workloads_at_every_call(ray_local) -> None:
    """RLlib resets every sub-environment at each complete-episodes sample call and seeded
    each such reset again, so every call replayed the same two workloads. Only the first
    call's reset is seeded now (as in truncate_episodes mode): the workloads of three
    calls (each episode's first arrival times, 6 jobs) are all different, and a new runner
    with the same seed draws the first call's again."""

    def workloads(algo, calls: int) -> list[tuple]:
        drawn = []
        for _ in range(calls):
            algo.env_runner.sample()
            for env in algo.env_runner.env.envs:
                arrivals = env.unwrapped.par_env.workload.arrival_time
                drawn.append(tuple(np.round(arrivals, 6)))
        return drawn

    algo = algorithm_config(config_from_dict(_credited_pod()), seed=0).build_algo()
    try:
        first = workloads(algo, 3)
    finally:
        algo.stop()
    assert len(set(first)) == len(first) == 6
    again = algorithm_config(config_from_dict(_credited_pod()), seed=0).build_algo()
    try:
        assert workloads(again, 1) == first[:2]
    finally:
        again.stop()


@pytest.mark.parametrize(
    ("algorithm", "sweep", "message"),
    [
        ({"gamma": 0.99}, None, r"algorithm.gamma=0.99 discounts it"),
        ({"gamma": 1.0, "lambda_": 0.95}, None, r"algorithm.lambda_=0.95 discounts it"),
        (
            {"gamma": 1.0, "lambda_": 1.0},
            {"algorithm.gamma": {"uniform": [0.9, 1.0]}},
            r"sweeping algorithm.gamma discounts it",
        ),
    ],
)
def test_job_credit_refuses_discounting(algorithm: dict, sweep: dict | None, message: str) -> None:
    """A placement deferred by k steps would carry its job's running time discounted by
    (gamma lambda)^k: job credit trains undiscounted only."""
    spec = _credited_pod()
    spec["algorithm"].update(algorithm)
    if sweep is not None:
        spec["sweep"] = {"space": sweep}
    with pytest.raises(ConfigError, match=message):
        config_from_dict(spec)


def test_a_credit_sweep_including_job_needs_undiscounted_returns() -> None:
    spec = copy.deepcopy(SMALL_POD)
    spec["environment"]["config"]["reward"] = "jct"
    spec["sweep"] = {"space": {"environment.config.credit": {"choice": ["round", "job"]}}}
    with pytest.raises(ConfigError, match=r"algorithm.gamma=.* discounts it"):
        config_from_dict(spec)
    spec["algorithm"].update(gamma=1.0, lambda_=1.0)
    assert config_from_dict(spec).sweep is not None
    # Round credit pays each stretch when it happens: discounting is a time preference.
    assert config_from_dict(SMALL_POD).algorithm.gamma < 1
