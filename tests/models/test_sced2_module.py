"""SCED2's shared-weight network (002 eq. 3-5): the PPO and DQN modules, their masks, the
shared server sub-network, target networks, gradients and checkpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from ray.rllib.algorithms.dqn.dqn_learner import QF_NEXT_PREDS, QF_PREDS, QF_TARGET_NEXT_PREDS
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

from envs.sced2 import Sced2Env
from envs.sced2.core import split_observation
from models.registry import module_class
from models.sced2_module import Sced2ModelConfig, Sced2Module, Sced2QModule

CONFIGS = Path(__file__).resolve().parents[2] / "tune" / "configs"
# 3 servers, busy, multi-GPU jobs: the window fills and holds jobs that do not fit, so the
# batch has masked slots next to legal ones.
SMALL = {
    "servers": 3,
    "num_jobs": 40,
    "interval_scale": 0.2,
    "workload_options": {"multi_gpu_sizes": (2, 4, 8), "multi_gpu_weights": (0.4, 0.4, 0.2)},
}
ACTIONS = 11  # J = 10 visible jobs + hold


def assert_same_q(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Q-values from the same parameters, maybe through different batch shapes: masked
    entries are -inf in both, the rest agree to float32 rounding (|Q| is O(1) here)."""
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


def observations(env: Sced2Env, count: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """``count`` consecutive observations of a SIF episode, stacked per key."""
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    while len(seen) < count:
        obs, _, terminated, truncated, _ = env.step(env.baseline_action("sif"))
        seen.append(obs)
        if terminated or truncated:
            obs, _ = env.reset(seed=seed + len(seen))
            seen.append(obs)
    return {key: torch.as_tensor(np.stack([o[key] for o in seen[:count]])) for key in seen[0]}


def make(cls: type, env: Sced2Env, **model_config):
    torch.manual_seed(0)
    return cls(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"servers": 3, **model_config},
    )


@pytest.fixture(scope="module")
def env() -> Sced2Env:
    return Sced2Env(**SMALL)


@pytest.fixture(scope="module")
def batch(env: Sced2Env) -> dict[str, torch.Tensor]:
    obs = observations(env, 32)
    jobs = split_observation(obs["observation"].numpy(), env.config)["jobs"]
    present = torch.as_tensor(jobs[..., -2] > 0)  # a visible job has a GPU demand
    legal = obs["action_mask"][:, :10] == 1
    # Slots with a job that does not fit, and several legal jobs at once: masks bite.
    assert (present & ~legal).any() and (legal.sum(-1) >= 3).any()
    return obs


def test_shapes_and_the_papers_structure(env: Sced2Env, batch: dict) -> None:
    module = make(Sced2Module, env, vf_share_layers=False)  # RLlib's own key: ignored
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (32, ACTIONS)
    assert module.compute_values({Columns.OBS: batch}).shape == (32,)
    network = module.policy
    # w_shared reads one server's M = 8 GPUs; w_1 the 10 x (4 + 2) job values + 4 statistics.
    assert network.server[0][0].in_features == 8 and network.server[0][-1].out_features == 16
    assert network.jobs[0][0].in_features == 10 * 6 + 4
    # E = Concat(F_1..F_3, G): 3 x 16 + 64; w_2 one hidden layer of 128; w_3 to J + 1.
    assert network.embedding_size == 3 * 16 + 64 == network.hidden[0].in_features
    assert network.out.out_features == ACTIONS
    q_values = make(Sced2QModule, env).compute_q_values({Columns.OBS: batch})[QF_PREDS]
    assert q_values.shape == (32, ACTIONS)


def test_the_server_sub_network_is_shared(env: Sced2Env, batch: dict) -> None:
    network = make(Sced2Module, env).policy
    observation = batch["observation"].float()
    features = network.server_features(observation)  # [B, 3, 16]
    # Every row goes through the very same weights: F_i = f(S_i; w_shared).
    gpu = observation[:, :24].reshape(32, 3, 8)
    for server in range(3):
        assert torch.allclose(features[:, server], network.server(gpu[:, server]))
    # Permuting the servers permutes their features the same way, nothing else changes.
    order = [2, 0, 1]
    permuted = observation.clone()
    permuted[:, :24] = gpu[:, order].reshape(32, 24)
    assert torch.allclose(network.server_features(permuted), features[:, order])
    embedding, moved = network.embedding(observation), network.embedding(permuted)
    assert torch.allclose(moved[:, :48], features[:, order].flatten(1))
    assert torch.equal(moved[:, 48:], embedding[:, 48:])  # G only reads jobs and statistics
    # Its size does not depend on the number of servers.
    bigger = Sced2Env(servers=15)
    wide = make(Sced2Module, bigger, servers=15).policy
    count = sum(p.numel() for p in network.server.parameters())
    assert count == sum(p.numel() for p in wide.server.parameters()) == 8 * 32 + 32 + 32 * 16 + 16


def test_masked_actions_get_probability_zero(env: Sced2Env, batch: dict) -> None:
    module = make(Sced2Module, env)
    out = module.forward_inference({Columns.OBS: batch})
    dist = module.get_inference_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    probabilities = torch.softmax(out[Columns.ACTION_DIST_INPUTS], -1)
    mask = batch["action_mask"]
    assert torch.all(probabilities[mask == 0] == 0)
    assert torch.all(probabilities[mask == 1] > 0)
    # The first policy is near uniform over the legal actions.
    legal_count = mask.sum(-1, keepdim=True).float()
    assert torch.allclose(probabilities, mask / legal_count, atol=1e-2)
    samples = torch.stack([dist.sample() for _ in range(200)])  # [200, B]
    assert torch.all(torch.gather(mask.expand(200, -1, -1), -1, samples[..., None]) == 1)


def test_masked_q_values_are_minus_infinity_and_never_chosen(env: Sced2Env, batch: dict) -> None:
    mask = batch["action_mask"]
    for dueling in (False, True):
        module = make(Sced2QModule, env, dueling=dueling, epsilon=1.0)
        q_values = module.compute_q_values({Columns.OBS: batch})[QF_PREDS]
        assert torch.all(q_values[mask == 0] == float("-inf"))
        assert torch.isfinite(q_values[mask == 1]).all()
        greedy = module.forward_inference({Columns.OBS: batch})[Columns.ACTIONS]
        assert torch.equal(greedy, q_values.argmax(-1))
        assert torch.all(mask.gather(-1, greedy[:, None]) == 1)
        # epsilon = 1: every action random, drawn among the legal ones only, all of them.
        drawn = torch.stack(
            [
                module.forward_exploration({Columns.OBS: batch}, t=0)[Columns.ACTIONS]
                for _ in range(120)
            ]
        )
        hits = torch.zeros_like(mask)
        hits.scatter_(1, drawn.T, 1)
        assert torch.equal(hits, mask)
    # epsilon = 0: exploration is the greedy choice.
    module = make(Sced2QModule, env, epsilon=0.0)
    explored = module.forward_exploration({Columns.OBS: batch}, t=0)[Columns.ACTIONS]
    assert torch.equal(explored, module.forward_inference({Columns.OBS: batch})[Columns.ACTIONS])


def test_epsilon_follows_rllibs_schedule(env: Sced2Env, batch: dict) -> None:
    module = make(Sced2QModule, env, epsilon=[[0, 1.0], [100, 0.0]])
    module.forward_exploration({Columns.OBS: batch}, t=50)
    assert float(module.epsilon_schedule.get_current_value()) == pytest.approx(0.5)
    module.forward_exploration({Columns.OBS: batch}, t=400)
    assert float(module.epsilon_schedule.get_current_value()) == 0.0


def test_dueling_centres_the_advantages_on_legal_actions(env: Sced2Env, batch: dict) -> None:
    module = make(Sced2QModule, env, dueling=True)
    network = module.q_net
    observation = batch["observation"].float()
    legal = batch["action_mask"] == 1
    q_values = network(observation, legal)
    value = network.value(network.advantage.embedding(observation))  # [B, 1]
    # Q - V is the advantage minus its mean over the legal actions: it sums to 0 there.
    centred = torch.where(legal, q_values - value, torch.zeros_like(q_values))
    assert torch.allclose(centred.sum(-1), torch.zeros(32), atol=1e-5)


def test_target_network_and_train_outputs(env: Sced2Env, batch: dict) -> None:
    module = make(Sced2QModule, env, double_q=True)
    module.make_target_networks()
    [(online, target)] = module.get_target_network_pairs()
    assert online is module.q_net and not any(p.requires_grad for p in target.parameters())
    train_batch = {Columns.OBS: {k: v[:-1] for k, v in batch.items()}}
    train_batch[Columns.NEXT_OBS] = {k: v[1:] for k, v in batch.items()}
    out = module.forward_train(train_batch)
    assert {QF_PREDS, QF_NEXT_PREDS, QF_TARGET_NEXT_PREDS} == set(out)
    # Freshly copied, the target holds exactly the online parameters ...
    for (name, weight), (_, copied) in zip(
        online.named_parameters(), target.named_parameters(), strict=True
    ):
        assert torch.equal(weight, copied), name
    # ... so its Q-values of the next observations match the online ones. Double Q computes
    # the online ones inside a batch twice as large (current and next together): another
    # GEMM blocking, so equal only to float32 rounding, not bit for bit.
    assert_same_q(out[QF_NEXT_PREDS], out[QF_TARGET_NEXT_PREDS])
    assert_same_q(out[QF_PREDS], module.compute_q_values(train_batch)[QF_PREDS])
    with torch.no_grad():
        online.advantage.out.bias.add_(1.0)
    after = module.forward_target({Columns.OBS: train_batch[Columns.NEXT_OBS]})[QF_PREDS]
    assert torch.equal(after, out[QF_TARGET_NEXT_PREDS])  # the target did not move
    # Env runners (inference only) hold no target copy; the learner's state fits them.
    runner = Sced2QModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"servers": 3, "double_q": True},
        inference_only=True,
    )
    state = module.get_state(inference_only=True)
    assert not any(key.startswith("_target_q_net") for key in state)
    runner.set_state(state)
    assert torch.equal(
        runner.compute_q_values({Columns.OBS: batch})[QF_PREDS],
        module.compute_q_values({Columns.OBS: batch})[QF_PREDS],
    )


def test_gradients_reach_every_parameter(env: Sced2Env, batch: dict) -> None:
    obs = {key: value.clone() for key, value in batch.items()}
    obs["action_mask"][:] = 1  # every output matters
    module = make(Sced2Module, env)
    # The critic's output starts at zero, which blocks its gradient; move it.
    torch.nn.init.normal_(module.critic.out.weight, std=1e-3)
    out = module.forward_train({Columns.OBS: obs})
    dist = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    values = module.compute_values({Columns.OBS: obs}, embeddings=out[Columns.EMBEDDINGS])
    actions = torch.arange(32) % ACTIONS
    (dist.logp(actions).sum() + values.sum()).backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    q_module = make(Sced2QModule, env, dueling=True)
    q_values = q_module.compute_q_values({Columns.OBS: obs})[QF_PREDS]
    q_values.gather(-1, actions[:, None]).sum().backward()
    for name, parameter in q_module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_checkpoints_restore_identical_outputs(env: Sced2Env, batch: dict, tmp_path: Path) -> None:
    module = make(Sced2Module, env, head_hidden=32, value_scale=5.0)
    module.save_to_path(str(tmp_path / "ppo"))
    restored = RLModule.from_checkpoint(str(tmp_path / "ppo"))
    assert restored.settings == module.settings
    before = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    after = restored.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(before, after)
    assert torch.equal(
        module.compute_values({Columns.OBS: batch}), restored.compute_values({Columns.OBS: batch})
    )
    q_module = make(Sced2QModule, env, dueling=True)
    q_module.make_target_networks()  # as a learner's module: the target is saved too
    q_module.save_to_path(str(tmp_path / "dqn"))
    q_restored = RLModule.from_checkpoint(str(tmp_path / "dqn"))
    assert q_restored.uses_dueling
    assert torch.equal(
        q_module.compute_q_values({Columns.OBS: batch})[QF_PREDS],
        q_restored.compute_q_values({Columns.OBS: batch})[QF_PREDS],
    )


def test_settings_and_spaces_are_validated(env: Sced2Env) -> None:
    assert Sced2ModelConfig(row_hidden=[8, 4]).row_hidden == (8, 4)
    with pytest.raises(ValueError, match="unknown Sced2ModelConfig key"):
        Sced2ModelConfig.from_model_config({"rows": 3})
    with pytest.raises(ValueError, match="row_hidden must be a non-empty list"):
        Sced2ModelConfig(row_hidden=[])
    # The default 15 x 8 does not fit the 3-server environment's observation.
    with pytest.raises(ValueError, match="does not hold servers=15 x gpus_per_server=8"):
        Sced2Module(
            observation_space=env.observation_space, action_space=env.action_space, model_config={}
        )
    with pytest.raises(ValueError, match="num_atoms=51"):
        make(Sced2QModule, env, num_atoms=51)


@pytest.mark.parametrize(
    ("config", "cls", "algorithm"),
    [("sced2.yaml", Sced2Module, "PPO"), ("sced2_dqn.yaml", Sced2QModule, "DQN")],
)
def test_configs_name_the_modules(config: str, cls: type, algorithm: str) -> None:
    from tune.experiment import load_config
    from tune.rllib_config import algorithm_config

    experiment = load_config(CONFIGS / config)
    assert module_class(experiment.model.name) is cls
    assert experiment.environment.name == "podsched/SCED2-v0"
    rllib = algorithm_config(experiment)
    assert rllib.algo_class.__name__ == algorithm
    if algorithm == "DQN":
        # 002: DQN with prioritized replay and epsilon-greedy exploration.
        assert rllib.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer"
        assert rllib.epsilon[0] == [0, 1.0]
        assert rllib.minibatch_size is None  # PPO's keys stay out of DQN's config
