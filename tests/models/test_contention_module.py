"""The contention-aware policy (000): stable-baselines3's MLP over the <Nodes, 2 x GPUs>
state, masks, the conv option, initialisation, gradients and checkpoints."""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

from envs.contention import ContentionEnv
from models.contention_module import ContentionModelConfig, ContentionModule
from models.registry import module_class

CONFIG = Path(__file__).resolve().parents[2] / "tune" / "configs" / "contention.yaml"
ACTIONS = 6 * 11 + 1  # K = 6 candidates x S = 11 node subsets of 4 nodes, + do nothing


def observations(env: ContentionEnv, count: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """``count`` consecutive observations, acting with the first legal action."""
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    while len(seen) < count:
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        seen.append(obs)
        if terminated or truncated:
            obs, _ = env.reset(seed=seed + len(seen))
            seen.append(obs)
    return {key: torch.as_tensor(np.stack([o[key] for o in seen[:count]])) for key in seen[0]}


def make_module(env: ContentionEnv, **model_config) -> ContentionModule:
    torch.manual_seed(0)
    return ContentionModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=model_config,
    )


@pytest.fixture(scope="module")
def env() -> ContentionEnv:
    return ContentionEnv(num_jobs=24)


@pytest.fixture(scope="module")
def batch(env: ContentionEnv) -> dict[str, torch.Tensor]:
    obs = observations(env, 20)
    legal = obs["action_mask"].sum(-1)
    assert (legal > 1).any() and (legal < ACTIONS).all()  # masks bite
    return obs


def test_shapes_and_the_reference_mlp(env: ContentionEnv, batch: dict) -> None:
    module = make_module(env, vf_share_layers=True)  # RLlib's own key: ignored
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (20, ACTIONS)
    assert module.compute_values({Columns.OBS: batch}).shape == (20,)
    linear = [layer for layer in module.policy if isinstance(layer, torch.nn.Linear)]
    # <4 nodes, 2 x 8 GPUs> flattened -> 64 -> 64 (tanh) -> K x S + 1.
    assert [(layer.in_features, layer.out_features) for layer in linear] == [
        (64, 64),
        (64, 64),
        (64, ACTIONS),
    ]
    assert sum(isinstance(layer, torch.nn.Tanh) for layer in module.policy) == 2
    # The critic is its own 64-64 network (no layer shared with the policy).
    assert module.critic_hidden[1].in_features == 64 and module.critic_out.in_features == 64
    policy_ids = {id(p) for p in module.policy.parameters()}
    assert not policy_ids & {id(p) for p in module.critic_hidden.parameters()}


def test_stable_baselines_initialisation(env: ContentionEnv) -> None:
    module = make_module(env)
    hidden, output = module.policy[1], module.policy[-1]
    # Orthogonal with gain g: a square (or tall) W has W^T W = g^2 I.
    assert torch.allclose(hidden.weight.T @ hidden.weight, 2.0 * torch.eye(64), atol=1e-4)
    assert torch.allclose(output.weight.T @ output.weight, 1e-4 * torch.eye(64), atol=1e-7)
    assert torch.equal(hidden.bias, torch.zeros(64))
    assert torch.equal(module.critic_out.weight, torch.zeros(1, 64))  # values start at 0


def test_masked_actions_get_probability_zero(env: ContentionEnv, batch: dict) -> None:
    module = make_module(env)
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    probabilities = torch.softmax(logits, -1)
    mask = batch["action_mask"]
    assert torch.all(probabilities[mask == 0] == 0)
    assert torch.all(probabilities[mask == 1] > 0)
    dist = module.get_inference_action_dist_cls().from_logits(logits)
    samples = torch.stack([dist.sample() for _ in range(200)])
    assert torch.all(torch.gather(mask.expand(200, -1, -1), -1, samples[..., None]) == 1)
    greedy = dist.to_deterministic().sample()
    assert torch.all(mask.gather(-1, greedy[:, None]) == 1)


def test_the_conv_option_reads_the_state_as_an_image(env: ContentionEnv, batch: dict) -> None:
    module = make_module(env, filters=4, kernel_size=3, activation="relu")
    conv = module.policy[1]
    assert isinstance(conv, torch.nn.Conv2d) and (conv.in_channels, conv.out_channels) == (1, 4)
    # "same" padding keeps <4, 16>: 4 filters x 64 cells reach the first hidden layer.
    first = next(layer for layer in module.policy if isinstance(layer, torch.nn.Linear))
    assert first.in_features == 4 * 4 * 16
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert torch.all(torch.softmax(logits, -1)[batch["action_mask"] == 0] == 0)
    # A convolution sees neighbours: changing one GPU cell changes only the features of
    # the cells within the kernel around it.
    state = batch["state"][:1].float()
    moved = state.clone()
    moved[0, 1, 5] += 0.5
    features = module.policy[:3](state)[0]  # [filters, 4, 16] after the ReLU
    changed = (module.policy[:3](moved)[0] != features).any(0)
    assert not changed[:, 8:].any() and not changed[:, :3].any()


def test_gradients_reach_every_parameter(env: ContentionEnv, batch: dict) -> None:
    for settings in ({}, {"filters": 2}):
        module = make_module(env, **settings)
        torch.nn.init.normal_(module.critic_out.weight, std=1e-3)  # it starts at zero
        obs = {key: value.clone() for key, value in batch.items()}
        obs["action_mask"][:] = 1
        out = module.forward_train({Columns.OBS: obs})
        dist = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
        values = module.compute_values({Columns.OBS: obs}, embeddings=out[Columns.EMBEDDINGS])
        (dist.logp(torch.arange(20) * 3).sum() + values.sum()).backward()
        for name, parameter in module.named_parameters():
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_checkpoint_restores_identical_outputs(
    env: ContentionEnv, batch: dict, tmp_path: Path
) -> None:
    module = make_module(env, hidden=[32], filters=2, value_scale=10.0)
    module.save_to_path(str(tmp_path / "module"))
    restored = RLModule.from_checkpoint(str(tmp_path / "module"))
    assert restored.settings == module.settings
    assert torch.equal(
        module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS],
        restored.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS],
    )
    assert torch.equal(
        module.compute_values({Columns.OBS: batch}), restored.compute_values({Columns.OBS: batch})
    )


def test_settings_are_validated(env: ContentionEnv) -> None:
    assert ContentionModelConfig(hidden=[64, 64]) == ContentionModelConfig()
    with pytest.raises(ValueError, match="activation='gelu'; allowed: tanh, relu"):
        ContentionModelConfig(activation="gelu")
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        ContentionModelConfig(kernel_size=2)
    with pytest.raises(ValueError, match="filters must be an integer >= 0"):
        ContentionModelConfig(filters=-1)
    with pytest.raises(ValueError, match="unknown ContentionModelConfig key"):
        ContentionModelConfig.from_model_config({"channels": 3})
    fewer = gymnasium.spaces.Discrete(5)
    with pytest.raises(ValueError, match="an action_mask of 5, got"):
        ContentionModule(
            observation_space=env.observation_space, action_space=fewer, model_config={}
        )


def test_config_names_the_module() -> None:
    from tune.experiment import load_config
    from tune.rllib_config import algorithm_config

    experiment = load_config(CONFIG)
    assert module_class(experiment.model.name) is ContentionModule
    rllib = algorithm_config(experiment)
    # stable-baselines3's PPO defaults, as 000's reference trains.
    assert (rllib.minibatch_size, rllib.num_epochs, rllib.grad_clip) == (64, 10, 0.5)
    assert rllib.use_kl_loss is False and math.isinf(rllib.vf_clip_param)
