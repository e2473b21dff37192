"""PPO with the GNN module learns behaviour that beats random, on a tiny instance.

One scheduler, four servers on one switch; every job is one worker of an AllReduce model,
so it runs alone at its ideal speed wherever it goes (interference and communication
off), and the reward is minus the jobs in the system. The one thing that matters is
not to send a job back to wait a whole interval: a random valid policy does so once in
nine decisions, a trained one should learn not to. Real Ray, real RLlib, and the
evaluation samples the learned policy's own distribution (no argmax shortcut).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from envs.pod.env import PodSchedulingEnv
from envs.sim import SimulationResult

ENV = {
    "topology": "flat",
    "topology_params": {"servers": 4},
    "num_jobs": 16,
    "reward": "jct",
    "workload": "poisson",
    "workload_params": {"catalog": "deepshare", "workers": [1, 1], "rate": 2.0},
    "interference": False,
    "communication": False,
}
MODEL = {
    "hidden": 16,
    "inner_layers": 2,
    "inter_layers": 1,
    "encoder_hidden": 32,
    "head_hidden": 32,
}


def wait_rate(module, seeds: range) -> float:
    """How often a job is sent back to wait although it could be placed; ``module`` None
    plays uniformly random valid actions, else the module samples its own distribution."""
    from tune.evaluation import policy_actions

    waits = choices = 0
    for seed in seeds:
        env = PodSchedulingEnv(**ENV)
        observations, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        generator = torch.Generator().manual_seed(seed)
        while env.agents:
            if module is None:
                actions = {
                    agent: int(rng.choice(np.flatnonzero(obs["action_mask"])))
                    for agent, obs in observations.items()
                }
            else:
                mapping = dict.fromkeys(observations, "shared")
                actions = policy_actions({"shared": module}, mapping, observations, generator)
            for agent, obs in observations.items():
                if obs["action_mask"][:-1].any():  # it could place (or forward) its task
                    choices += 1
                    waits += actions[agent] == len(obs["action_mask"]) - 1
            observations, *_ = env.step(actions)
        assert SimulationResult.from_simulator(env.sim, "episode").metrics()["jobs_finished"] == 16
    return waits / choices


@pytest.mark.integration
def test_ppo_beats_random_within_a_few_iterations(ray_local) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from models.rl_modules import PodGNNModule
    from tune.rllib_envs import register_rllib_env

    register_rllib_env("pod_scheduling_v0")
    config = (
        PPOConfig()
        .environment("pod_scheduling_v0", env_config=ENV)
        .env_runners(num_env_runners=0, episodes_to_numpy=False)
        .training(
            train_batch_size=512, minibatch_size=128, num_epochs=6, lr=1e-3, entropy_coeff=0.0
        )
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent, episode, **kw: "shared")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "shared": RLModuleSpec(module_class=PodGNNModule, model_config=MODEL)
                }
            )
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        # PPO is not bitwise reproducible across runs (float reductions over torch threads):
        # after 10 iterations one clean-clone run still waited 6% of the time (random: 10%),
        # so train 15 for a margin.
        for _ in range(15):
            algo.train()
        # 16 held-out episodes: the wait rates are counts over a few hundred decisions.
        held_out = range(100, 116)
        learned, random = wait_rate(algo.get_module("shared"), held_out), wait_rate(None, held_out)
    finally:
        algo.stop()
    # Clean-clone runs of this test ended at 4-6% waits against random's 9.9% (PPO here
    # is not bit-reproducible): the margin asserted is what every run showed, 40% fewer.
    assert learned < 0.6 * random, (learned, random)
