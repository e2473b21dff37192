"""DeepRM's policy network as an RLModule: shapes, batching, gradients, checkpoints, PPO."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

from envs.deeprm import DeepRMEnv
from models.deeprm_module import DeepRMModelConfig, DeepRMModule
from models.registry import module_class

CONFIG = Path(__file__).resolve().parents[2] / "tune" / "configs" / "deeprm.yaml"


def observations(env: DeepRMEnv, count: int, seed: int = 0) -> torch.Tensor:
    """``count`` consecutive observations of an SJF episode, stacked."""
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    while len(seen) < count:
        obs, _, terminated, truncated, _ = env.step(env.baseline_action("sjf"))
        seen.append(obs)
        if terminated or truncated:
            obs, _ = env.reset(seed=seed + len(seen))
    return torch.as_tensor(np.stack(seen))


def make_module(env: DeepRMEnv, **model_config) -> DeepRMModule:
    torch.manual_seed(0)
    return DeepRMModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=model_config,
    )


@pytest.mark.parametrize("observation", ["image", "compact"])
def test_shapes_and_the_one_hidden_layer_of_20(observation: str) -> None:
    env = DeepRMEnv(observation=observation)
    # vf_share_layers is RLlib's own key: it must be accepted and ignored.
    module = make_module(env, vf_share_layers=True)
    batch = observations(env, 7)
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (7, env.config.num_nw + 1)
    assert torch.isfinite(logits).all()
    values = module.compute_values({Columns.OBS: batch})
    assert values.shape == (7,) and torch.isfinite(values).all()
    hidden, output = module.policy[0], module.policy[2]
    assert hidden.in_features == math.prod(env.observation_space.shape)
    assert hidden.out_features == 20 and output.out_features == env.config.num_nw + 1


def test_no_action_is_masked() -> None:
    # DeepRM has no mask: an empty slot or a job that does not fit means "move on", a
    # legal action, so every action keeps a positive probability.
    env = DeepRMEnv()
    module = make_module(env)
    logits = module.forward_inference({Columns.OBS: observations(env, 20)})[
        Columns.ACTION_DIST_INPUTS
    ]
    assert (torch.softmax(logits, -1) > 0).all()


def test_a_batch_of_one_equals_its_row_in_a_batch() -> None:
    env = DeepRMEnv()
    module = make_module(env)
    batch = observations(env, 9)
    together = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    for row in range(len(batch)):
        alone = module.forward_inference({Columns.OBS: batch[row : row + 1]})
        assert torch.allclose(alone[Columns.ACTION_DIST_INPUTS][0], together[row], atol=1e-6)
    values = module.compute_values({Columns.OBS: batch})
    assert torch.allclose(module.compute_values({Columns.OBS: batch[3:4]})[0], values[3], atol=1e-6)


def test_gradients_reach_every_parameter() -> None:
    env = DeepRMEnv()
    module = make_module(env)
    # The critic's output layer starts at zero (so values start at 0), which blocks the
    # gradient to its hidden layer until the first update moves it; move it here.
    torch.nn.init.normal_(module.critic_out.weight)
    batch = {Columns.OBS: observations(env, 16)}
    out = module.forward_train(batch)
    values = module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS])
    log_probs = torch.log_softmax(out[Columns.ACTION_DIST_INPUTS], -1)
    (log_probs[:, 0].sum() + values.sum()).backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_value_embeddings_match_a_fresh_computation() -> None:
    env = DeepRMEnv()
    module = make_module(env, value_scale=100.0)
    batch = {Columns.OBS: observations(env, 5)}
    out = module.forward_train(batch)
    assert torch.allclose(
        module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS]),
        module.compute_values(batch),
    )


def test_checkpoint_restores_identical_outputs(tmp_path: Path) -> None:
    env = DeepRMEnv(observation="compact")
    module = make_module(env, hidden=12)
    batch = {Columns.OBS: observations(env, 6)}
    before = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    module.save_to_path(str(tmp_path / "module"))
    restored = RLModule.from_checkpoint(str(tmp_path / "module"))
    assert restored.settings == module.settings
    after = restored.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(before, after)
    assert torch.equal(module.compute_values(batch), restored.compute_values(batch))


def test_settings_are_validated() -> None:
    assert DeepRMModelConfig() == DeepRMModelConfig(hidden=20, value_hidden=20, value_scale=1.0)
    with pytest.raises(ValueError, match="unknown DeepRMModelConfig key"):
        DeepRMModelConfig.from_model_config({"hiden": 20})
    with pytest.raises(ValueError, match="hidden must be an integer >= 1"):
        DeepRMModelConfig(hidden=0)
    with pytest.raises(ValueError, match="value_scale must be a number > 0"):
        DeepRMModelConfig(value_scale=-1.0)


def test_registry_and_config_name_the_module() -> None:
    from tune.experiment import load_config

    experiment = load_config(CONFIG)
    assert module_class(experiment.model.name) is DeepRMModule
    assert experiment.environment.name == "podsched/DeepRM-v0"


def test_evaluation_compares_the_module_with_the_baselines(tmp_path: Path) -> None:
    from tune.evaluation.single_agent import evaluate_single_agent

    env = DeepRMEnv()
    make_module(env).save_to_path(str(tmp_path / "module"))
    table = evaluate_single_agent("podsched/DeepRM-v0", {}, [1000, 1001], str(tmp_path / "module"))
    assert list(table) == ["learned", "sjf", "packer", "random"]
    for entry in table.values():
        assert len(entry["episodes"]) == 2
        assert {"episode_return", "mean_slowdown", "dropped", "truncated"} <= set(entry["metrics"])
    # SJF books every job that fits: the episodes end "all_done", with the return exactly
    # minus the sum of the slowdowns (see envs.deeprm).
    sjf = table["sjf"]["episodes"][0]
    assert sjf["truncated"] == 0.0
    assert math.isclose(sjf["episode_return"], sjf["total_reward"])


def test_evaluation_leaves_truncated_episodes_out_of_the_slowdown() -> None:
    from tune.evaluation.single_agent import evaluate_single_agent

    # Five steps book a few jobs of a 50-step workload: a slowdown over those alone would
    # flatter the policy, so the summary metrics cover complete episodes only.
    table = evaluate_single_agent(
        "podsched/DeepRM-v0", {"max_episode_steps": 5}, [1000, 1001], None, ["sjf"]
    )
    metrics = table["sjf"]["metrics"]
    assert metrics["truncated"] == 1.0
    assert math.isnan(metrics["mean_slowdown"]) and math.isnan(metrics["steps"])
    assert math.isfinite(metrics["episode_return"])
    assert all(episode["steps"] == 5 for episode in table["sjf"]["episodes"])


@pytest.mark.integration
def test_ppo_trains_two_iterations_from_the_config(ray_local, tmp_path: Path) -> None:
    from tune.evaluation import module_paths
    from tune.evaluation.single_agent import evaluate_single_agent
    from tune.experiment import load_config
    from tune.rllib_config import algorithm_config

    experiment = load_config(
        CONFIG,
        [
            "algorithm.train_batch_size=200",
            "algorithm.minibatch_size=50",
            "algorithm.num_epochs=1",
        ],
    )
    algo = algorithm_config(experiment, seed=0).build_algo()
    try:
        results = [algo.train() for _ in range(2)]
        checkpoint = algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    for result in results:
        runners = result["env_runners"]
        assert runners["num_env_steps_sampled"] > 0
        assert math.isfinite(result["learners"]["default_policy"]["total_loss"])
    assert "episode_return_mean" in results[-1]["env_runners"]
    path = module_paths(checkpoint, ["default_policy"])["default_policy"]
    table = evaluate_single_agent(experiment.environment.name, {}, [1000], path, ["sjf"])
    assert set(table) == {"learned", "sjf"}
