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
    # PPO is not bitwise reproducible across machines (float reductions differ with the CPU's
    # kernels and threads), so the same seed learns at a different pace on another CPU: a
    # fresh-clone run once still waited 9.2% of the time after 15 iterations (random: 9.9%)
    # where this machine's runs of seeds 0-2 were at 0-0.4%. Training goes on in blocks of 5
    # iterations, up to 30, until the policy waits less than 60% as often as random on
    # validation workloads; the assertion is then made on held-out ones.
    validation, held_out = range(200, 208), range(100, 116)
    random_validation = wait_rate(None, validation)
    curve = []
    try:
        for _ in range(6):
            for _ in range(5):
                algo.train()
            curve.append(round(wait_rate(algo.get_module("shared"), validation), 4))
            if curve[-1] < 0.6 * random_validation:
                break
        learned, random = wait_rate(algo.get_module("shared"), held_out), wait_rate(None, held_out)
    finally:
        algo.stop()
    # Runs of seeds 0-2 here waited 5.2%, 1.9% and 6.2% after 5 iterations and 0-0.4% after
    # 15, against random's 9.9%: the margin asserted, 40% fewer, is what every run reached.
    assert learned < 0.6 * random, (learned, random, "validation curve every 5 iterations", curve)
