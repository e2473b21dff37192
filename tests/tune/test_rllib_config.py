"""The RLlib AlgorithmConfig built from an experiment: resources and the multi-agent sampler."""

from __future__ import annotations

import contextlib

import pytest

from tune.experiment import config_from_dict
from tune.rllib_config import algorithm_class, algorithm_config

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


def test_an_iteration_samples_the_env_steps_the_config_names() -> None:
    # Unset: the algorithm's own rule (PPO: none beyond its batch; DQN: 1,000 env steps).
    assert algorithm_config(config_from_dict(SMALL_POD)).min_sample_timesteps_per_iteration == 0
    dqn = {**SMALL_POD, "algorithm": {"name": "DQN"}, "model": {"name": "pod_mlp"}}
    assert algorithm_config(config_from_dict(dqn)).min_sample_timesteps_per_iteration == 1000
    shorter = {**dqn, "algorithm": {"name": "DQN", "min_env_steps_per_iteration": 200}}
    assert algorithm_config(config_from_dict(shorter)).min_sample_timesteps_per_iteration == 200


def test_tune_gets_each_algorithm_as_its_class() -> None:
    from ray.rllib.algorithms.appo import APPO
    from ray.rllib.algorithms.dqn import DQN
    from ray.rllib.algorithms.ppo import PPO

    assert [algorithm_class(name) for name in ("PPO", "APPO", "DQN")] == [PPO, APPO, DQN]


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


# Short episodes (an untrained greedy policy may wait until the horizon), so that some
# end within a sample and the episode counters move too.
SHORT_EPISODES = {**SMALL_POD["environment"]["config"], "horizon_intervals": 8}
COUNTERS = (
    "num_env_steps_sampled",
    "num_env_steps_sampled_lifetime",
    "num_agent_steps_sampled",
    "num_agent_steps_sampled_lifetime",
    "num_module_steps_sampled",
    "num_module_steps_sampled_lifetime",
    "num_episodes",
    "num_episodes_lifetime",
)


def sampled(config) -> tuple[list, list, dict]:
    """300 env steps sampled greedily (RLlib's exploration draws are not reproducible
    across algorithm builds; its argmax is): the episodes, every agent's actions per
    episode, and the runner's sampling counters."""
    algo = config.build_algo()
    try:
        runner = algo.env_runner
        episodes = runner.sample(num_timesteps=300, explore=False)
        actions = [
            (agent, [int(a) for a in episode.agent_episodes[agent].get_actions(slice(0, None))])
            for episode in episodes
            for agent in sorted(episode.agent_episodes)
        ]
        counters = {}
        for key in COUNTERS:
            with contextlib.suppress(KeyError):  # never logged
                counters[key] = runner.metrics.peek(key)
        return episodes, actions, counters
    finally:
        algo.stop()


@pytest.mark.integration
def test_the_lean_runner_samples_and_counts_as_rllibs_own(ray_local) -> None:
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from tune.env_runner import LeanMultiAgentEnvRunner

    experiment = config_from_dict({**SMALL_POD, "environment": {"config": SHORT_EPISODES}})
    lean = algorithm_config(experiment, seed=0)
    assert lean.env_runner_cls is LeanMultiAgentEnvRunner and lean.normalize_actions is False
    own = algorithm_config(experiment, seed=0).env_runners(env_runner_cls=MultiAgentEnvRunner)
    own = own.environment(normalize_actions=True)
    _, lean_actions, lean_counters = sampled(lean)
    _, own_actions, own_counters = sampled(own)
    # The same seed and weights give the same greedy actions: skipping the (identity)
    # unsquash of Discrete actions changes nothing the environment receives.
    assert lean_actions == own_actions and len(lean_actions) >= 8
    # Every sampling counter has RLlib's value: env, agent and module steps, episodes
    # (the episodes the runner started itself repeat too: the environment continues its
    # seed stream).
    assert lean_counters == own_counters and lean_counters["num_episodes"] >= 1
    agent_steps = sum(len(steps) for _, steps in lean_actions)
    assert sum(lean_counters["num_agent_steps_sampled"].values()) == agent_steps
    assert lean_counters["num_module_steps_sampled"] == {"shared": agent_steps}


@pytest.mark.integration
def test_a_runner_with_helper_processes_samples_as_one_alone(ray_local) -> None:
    from tune.process_vector_env import ProcessVectorMultiAgentEnv

    short = {**SMALL_POD, "environment": {"config": SHORT_EPISODES}}
    alone = config_from_dict(short)
    helped = config_from_dict(
        {**short, "resources": {**SMALL_POD["resources"], "env_processes": 2}}
    )
    config = algorithm_config(helped, seed=0)
    assert config.env_runner_cls.env_processes == 2
    algo = config.build_algo()
    try:
        env = algo.env_runner.env
        assert isinstance(env, ProcessVectorMultiAgentEnv) and env.processes == 2
        assert env.copy is False  # RLlib's on_environment_created callback reached it
        helpers = [helper.process for helper in env._helpers]
    finally:
        algo.stop()
    assert [process.poll() for process in helpers] == [0]  # stopping the algorithm ends them
    episodes, actions, counters = sampled(algorithm_config(helped, seed=0))
    alone_episodes, alone_actions, alone_counters = sampled(algorithm_config(alone, seed=0))
    # The second environment stepped in the helper: the same actions, rewards and counters.
    assert actions == alone_actions and counters == alone_counters

    def rewards(sampled_episodes: list) -> list:
        return [
            [float(r) for r in episode.agent_episodes[agent].get_rewards()]
            for episode in sampled_episodes
            for agent in sorted(episode.agent_episodes)
        ]

    assert rewards(episodes) == rewards(alone_episodes)
    assert counters["num_episodes"] >= 1


@pytest.mark.integration
def test_the_lean_runner_counts_finished_episodes(ray_local) -> None:
    # The counts against a recount of the episodes sampled.
    experiment = config_from_dict({**SMALL_POD, "environment": {"config": SHORT_EPISODES}})
    episodes, _, counters = sampled(algorithm_config(experiment, seed=0))
    finished = sum(episode.is_done for episode in episodes)
    assert finished >= 1
    assert counters["num_episodes"] == counters["num_episodes_lifetime"] == finished
    steps = sum(episode.env_steps() for episode in episodes)
    assert counters["num_env_steps_sampled"] == counters["num_env_steps_sampled_lifetime"] == steps
    per_agent: dict[str, int] = {}
    for episode in episodes:
        for agent, agent_episode in episode.agent_episodes.items():
            per_agent[agent] = per_agent.get(agent, 0) + len(agent_episode)
    assert counters["num_agent_steps_sampled"] == per_agent
    assert counters["num_module_steps_sampled"] == {"shared": sum(per_agent.values())}
