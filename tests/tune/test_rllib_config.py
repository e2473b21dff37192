"""The RLlib AlgorithmConfig built from an experiment: resources and the multi-agent sampler."""

from __future__ import annotations

import pytest

from tune.experiment import config_from_dict
from tune.rllib_config import algorithm_config

SMALL_POD = {
    "name": "small-pod",
    "environment": {
        "name": "pod_scheduling_v0",
        "config": {"topology": "fat-tree", "topology_params": {"k": 4}, "num_jobs": 6},
    },
    "model": {
        "name": "pod_gnn",
        "config": {"hidden": 8, "inner_layers": 1, "inter_layers": 1, "head_hidden": 16},
    },
    "algorithm": {"name": "PPO", "train_batch_size": 64, "minibatch_size": 32},
    "resources": {"num_envs_per_env_runner": 2, "num_cpus_per_learner": 2},
}


def test_resources_reach_rllib() -> None:
    config = algorithm_config(config_from_dict(SMALL_POD))
    assert config.num_envs_per_env_runner == 2
    assert config.num_cpus_per_learner == 2
    assert config.episodes_to_numpy is False


@pytest.mark.integration
def test_vectorized_pod_sampling_hands_observations_on_uncopied(ray_local) -> None:
    algo = algorithm_config(config_from_dict(SMALL_POD), seed=0).build_algo()
    try:
        runner = algo.env_runner
        assert runner.env.num_envs == 2 and runner.env.copy is False
        episodes = runner.sample(num_timesteps=60)
        assert sum(episode.env_steps() for episode in episodes) >= 60
        space = runner.env.envs[0].unwrapped.observation_space["scheduler_0"]
        for episode in episodes:
            observations = episode.get_observations(-1)
            for agent, observation in observations.items():
                assert space.contains(observation), agent
        # Without the copy the runner still sees a fresh array every step: the environment
        # builds new ones (the copy guarded environments that refill theirs in place).
        first = episodes[0].agent_episodes["scheduler_0"]
        features = [obs["node_features"] for obs in first.get_observations(slice(0, 3))]
        assert len({id(array) for array in features}) == len(features)
    finally:
        algo.stop()
