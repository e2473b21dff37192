"""003's multi-softmax policy, generic over Box observations and MultiDiscrete actions:
sizes, the product of independent softmaxes (eq. 7), greedy actions, gradients,
checkpoints, and PPO through RLlib on a small hand-made environment."""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

from models.multi_softmax_module import (
    IndependentCategoricals,
    MultiSoftmaxModelConfig,
    MultiSoftmaxModule,
)
from models.registry import module_class

NVEC = [3, 2, 4]  # three components of different sizes


class MatchTheTarget(gymnasium.Env):
    """Each step shows a target (one value per component, scaled to [0, 1]); the reward
    is the number of components the action matches. Ten steps per episode."""

    observation_space = gymnasium.spaces.Box(0.0, 4.0, (len(NVEC),), np.float32)
    action_space = gymnasium.spaces.MultiDiscrete(NVEC)

    def __init__(self, config: dict | None = None) -> None:
        super().__init__()  # RLlib hands every environment its env_config

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self._draw(), {}

    def _draw(self) -> np.ndarray:
        self.target = np.array([self.np_random.integers(n) for n in NVEC])
        return self.target.astype(np.float32)

    def step(self, action):
        reward = float(np.sum(np.asarray(action) == self.target))
        self.steps += 1
        return self._draw(), reward, self.steps >= 10, False, {}


def make_module(observation_space, action_space, **model_config) -> MultiSoftmaxModule:
    torch.manual_seed(0)
    return MultiSoftmaxModule(
        observation_space=observation_space, action_space=action_space, model_config=model_config
    )


@pytest.fixture(scope="module")
def batch() -> torch.Tensor:
    rng = np.random.default_rng(0)
    return torch.as_tensor(rng.integers(0, 4, size=(16, len(NVEC))).astype(np.float32))


def test_rl_taps_sizes() -> None:
    # 003 §5.1: M = 32 GPUs x (N + 1 = 11) choices = 352 outputs, 1.5 x 352 = 528 hidden.
    module = make_module(
        gymnasium.spaces.Box(0.0, 1.0, (1580,), np.float32),
        gymnasium.spaces.MultiDiscrete([11] * 32),
    )
    assert (module.hidden[0].in_features, module.hidden[0].out_features) == (1580, 528)
    assert module.heads.out_features == 352
    assert isinstance(module.hidden[1], torch.nn.ReLU)
    # Odd totals round up: 1.5 x 9 = 13.5 -> 14.
    odd = make_module(MatchTheTarget.observation_space, gymnasium.spaces.MultiDiscrete([4, 5]))
    assert odd.hidden[0].out_features == math.ceil(13.5) == 14


def test_joint_probability_is_the_product_of_the_softmaxes(batch: torch.Tensor) -> None:
    env = MatchTheTarget()
    module = make_module(env.observation_space, env.action_space)
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (16, sum(NVEC))
    dist = module.get_inference_action_dist_cls().from_logits(logits)
    actions = dist.sample()
    assert actions.shape == (16, 3)
    assert all(env.action_space.contains(action.numpy()) for action in actions)
    # eq. 7: log p(A) = sum over components of log softmax(logits of g)[a_g].
    parts = torch.split(logits, NVEC, dim=-1)
    expected = sum(
        torch.log_softmax(part, -1).gather(-1, actions[:, [g]]).squeeze(-1)
        for g, part in enumerate(parts)
    )
    assert torch.allclose(dist.logp(actions), expected, atol=1e-6)
    entropy = sum(torch.distributions.Categorical(logits=part).entropy() for part in parts)
    assert torch.allclose(dist.entropy(), entropy, atol=1e-6)
    # 003 §4.5.2: at inference each component takes its most likely choice.
    greedy = dist.to_deterministic().sample()
    assert torch.equal(greedy, torch.stack([part.argmax(-1) for part in parts], dim=-1))
    # Every softmax starts near uniform.
    for part, size in zip(parts, NVEC, strict=True):
        assert torch.allclose(torch.softmax(part, -1), torch.full_like(part, 1 / size), atol=0.01)


def test_one_head_carries_the_joint_log_probability(batch: torch.Tensor) -> None:
    """003's REINFORCE weighs the joint action's logp (eq. 7) by one return; the head's
    parameters are the policy's (hidden layer and softmaxes), not the critic's."""
    env = MatchTheTarget()
    module = make_module(env.observation_space, env.action_space)
    out = module.forward_inference({Columns.OBS: batch})
    dist = module.get_inference_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    actions = dist.sample()
    assert torch.equal(dist.head_logps(actions)["joint"], dist.logp(actions))
    (params,) = module.policy_head_parameters().values()
    policy = [*module.hidden.parameters(), *module.heads.parameters()]
    assert [id(p) for p in params] == [id(p) for p in policy]


@pytest.mark.parametrize("sizes", [[3, 2, 4], [5, 5, 5]])
def test_the_batched_distribution_is_rllibs_multi_categorical(sizes: list[int]) -> None:
    from ray.rllib.core.distribution.torch.torch_distribution import TorchMultiCategorical

    generator = torch.Generator().manual_seed(0)
    first, second = (torch.randn(8, sum(sizes), generator=generator) * 2 for _ in range(2))
    ours = [IndependentCategoricals.from_logits(logits, sizes=sizes) for logits in (first, second)]
    rllib = [
        TorchMultiCategorical.from_logits(logits, input_lens=sizes) for logits in (first, second)
    ]
    actions = torch.stack([torch.arange(8) % size for size in sizes], dim=-1)
    assert torch.allclose(ours[0].logp(actions), rllib[0].logp(actions), atol=1e-6)
    assert torch.allclose(ours[0].entropy(), rllib[0].entropy(), atol=1e-5)
    assert torch.allclose(ours[0].kl(ours[1]), rllib[0].kl(rllib[1]), atol=1e-5)
    assert torch.allclose(ours[0].kl(ours[0]), torch.zeros(8), atol=1e-6)
    assert torch.equal(ours[0].to_deterministic().sample(), rllib[0].to_deterministic().sample())
    # Padding is never drawn: every sample is inside its component's range.
    drawn = ours[0].sample(sample_shape=(500,))  # [500, 8, M]
    assert torch.all(drawn < torch.tensor(sizes))
    assert IndependentCategoricals.required_input_dim(gymnasium.spaces.MultiDiscrete(sizes)) == sum(
        sizes
    )


def test_inputs_are_scaled_by_the_upper_bound(batch: torch.Tensor) -> None:
    env = MatchTheTarget()
    module = make_module(env.observation_space, env.action_space)
    assert torch.equal(module._flat({Columns.OBS: batch}), batch / 4.0)
    # An unbounded entry is left as it is.
    unbounded = gymnasium.spaces.Box(0.0, np.inf, (len(NVEC),), np.float32)
    raw = make_module(unbounded, env.action_space)
    assert torch.equal(raw._flat({Columns.OBS: batch}), batch)


def test_gradients_reach_every_parameter(batch: torch.Tensor) -> None:
    env = MatchTheTarget()
    module = make_module(env.observation_space, env.action_space)
    torch.nn.init.normal_(module.critic_out.weight, std=1e-3)  # it starts at zero
    out = module.forward_train({Columns.OBS: batch})
    dist = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    values = module.compute_values({Columns.OBS: batch}, embeddings=out[Columns.EMBEDDINGS])
    actions = torch.stack([torch.arange(16) % n for n in NVEC], dim=-1)
    (dist.logp(actions).sum() + values.sum()).backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_checkpoint_restores_identical_outputs(batch: torch.Tensor, tmp_path: Path) -> None:
    env = MatchTheTarget()
    module = make_module(env.observation_space, env.action_space, hidden=7, value_scale=3.0)
    module.save_to_path(str(tmp_path / "module"))
    restored = RLModule.from_checkpoint(str(tmp_path / "module"))
    assert restored.settings == module.settings and restored.hidden[0].out_features == 7
    assert torch.equal(
        module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS],
        restored.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS],
    )
    assert torch.equal(
        module.compute_values({Columns.OBS: batch}), restored.compute_values({Columns.OBS: batch})
    )


def test_spaces_and_settings_are_validated() -> None:
    box = MatchTheTarget.observation_space
    with pytest.raises(ValueError, match="needs a 1-D MultiDiscrete action space"):
        make_module(box, gymnasium.spaces.Discrete(4))
    with pytest.raises(ValueError, match="needs a 1-D MultiDiscrete action space"):
        make_module(box, gymnasium.spaces.MultiDiscrete([[2, 2], [2, 2]]))
    with pytest.raises(ValueError, match=r"starting at 0, got start=\[1, 0\]"):
        make_module(box, gymnasium.spaces.MultiDiscrete([3, 3], start=[1, 0]))
    with pytest.raises(ValueError, match="needs a Box observation"):
        make_module(gymnasium.spaces.Dict({"x": box}), MatchTheTarget.action_space)
    with pytest.raises(ValueError, match="hidden must be an integer >= 1"):
        MultiSoftmaxModelConfig(hidden=0)
    with pytest.raises(ValueError, match="unknown MultiSoftmaxModelConfig key"):
        MultiSoftmaxModelConfig.from_model_config({"heads": 3})
    assert module_class("multi_softmax") is MultiSoftmaxModule


@pytest.mark.integration
def test_ppo_trains_it_on_a_multi_discrete_environment(ray_local, tmp_path: Path) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    config = (
        PPOConfig()
        .environment(MatchTheTarget)
        .env_runners(num_env_runners=0)
        .training(train_batch_size=200, minibatch_size=50, num_epochs=2, lr=1e-3)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=MultiSoftmaxModule))
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(2)]
        checkpoint = algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    for result in results:
        assert result["env_runners"]["num_env_steps_sampled"] == 200
        stats = result["learners"]["default_policy"]
        assert math.isfinite(stats["total_loss"]) and stats["entropy"] > 0
    # A random policy matches 1/3 + 1/2 + 1/4 components per step, 10.8 per episode.
    assert 5.0 < results[0]["env_runners"]["episode_return_mean"] < 17.0
    restored = RLModule.from_checkpoint(
        f"{checkpoint}/learner_group/learner/rl_module/default_policy"
    )
    assert isinstance(restored, MultiSoftmaxModule)
