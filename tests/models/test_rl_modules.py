"""The RLlib wrappers: forward passes, values, RLlib's own keys, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

from envs.pod.env import PodSchedulingEnv
from models.registry import module_class
from models.rl_modules import PodGNNModule, PodMLPModule


@pytest.fixture(scope="module")
def env_and_batch():
    env = PodSchedulingEnv(num_jobs=20)
    obs, _ = env.reset(seed=0)
    space = env.observation_space("scheduler_0")
    batch = {key: torch.as_tensor(np.stack([o[key] for o in obs.values()])) for key in space.spaces}
    return env, batch


@pytest.mark.parametrize("module_type", [PodGNNModule, PodMLPModule])
def test_forward_and_values(env_and_batch, module_type) -> None:
    env, batch = env_and_batch
    torch.manual_seed(0)
    module = module_type(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        # vf_share_layers is RLlib's own key: it must be accepted and ignored.
        model_config={"vf_share_layers": True},
    )
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (4, env.action_space("scheduler_0").n)
    assert torch.all(torch.softmax(logits, -1)[batch["action_mask"] == 0] == 0)
    values = module.compute_values({Columns.OBS: batch})
    out = module.forward_train({Columns.OBS: batch})
    again = module.compute_values({Columns.OBS: batch}, embeddings=out[Columns.EMBEDDINGS])
    assert values.shape == (4,) and torch.isfinite(values).all()
    assert torch.allclose(values, again)


def test_checkpoint_restores_identical_outputs(env_and_batch, tmp_path) -> None:
    env, batch = env_and_batch
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config={"hidden": 8, "inner_layers": 2, "edge_network": "factorized"},
    )
    before = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    module.save_to_path(str(tmp_path / "module"))
    restored = RLModule.from_checkpoint(str(tmp_path / "module"))
    assert restored.settings == module.settings
    after = restored.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(before, after)


def test_gnn_module_has_no_mode_dependent_layers(env_and_batch) -> None:
    """PodGNNModule.train sets only its own flag, which is right only while no layer
    behaves differently in training and evaluation: forward passes in both modes agree,
    and no dropout or normalization layer exists."""
    env, batch = env_and_batch
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config={},
    )
    mode_dependent = (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._NormBase)
    assert not [m for m in module.modules() if isinstance(m, mode_dependent)]
    assert module.train(False) is module and module.training is False
    with torch.no_grad():
        evaluated = module._forward({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    module.train()
    assert module.training is True
    trained = module.forward_train({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(evaluated, trained.detach())


def test_registry_names_the_modules() -> None:
    assert module_class("pod_gnn") is PodGNNModule
    assert module_class("pod_mlp") is PodMLPModule
    with pytest.raises(
        ValueError,
        match="unknown model 'pod_cnn'; known: contention, cush, deeprm, multi_softmax, pod_gnn",
    ):
        module_class("pod_cnn")


@pytest.fixture(scope="module")
def mixed_batch():
    """Observations of a few random legal steps: rows with one legal action and rows
    with a choice."""
    env = PodSchedulingEnv(num_jobs=20)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    rows = []
    while len(rows) < 64 and env.agents:
        rows.extend(obs.values())
        actions = {
            agent: int(rng.choice(np.flatnonzero(o["action_mask"]))) for agent, o in obs.items()
        }
        obs, *_ = env.step(actions)
    space = env.observation_space("scheduler_0")
    batch = {key: torch.as_tensor(np.stack([o[key] for o in rows])) for key in space.spaces}
    return env, batch


def test_acting_gives_the_full_pass_distribution_and_skips_forced_rows(mixed_batch) -> None:
    env, batch = mixed_batch
    choice = (batch["action_mask"] > 0).sum(-1) > 1
    assert 0 < int(choice.sum()) < len(choice)  # both kinds of rows are present
    torch.manual_seed(0)
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config={},
    )
    sizes = []
    network = module.net.forward

    def counted(obs):
        sizes.append(len(obs["action_mask"]))
        return network(obs)

    module.net.forward = counted
    acting = module.forward_exploration({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert sizes == [int(choice.sum())]
    assert module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS].equal(acting)
    with torch.no_grad():
        full = network(batch)[0]
    # Forced rows: log-probability exactly 0 on the legal action in both passes.
    legal = batch["action_mask"][~choice].argmax(-1, keepdim=True)
    for logits in (acting, full):
        assert torch.all(torch.log_softmax(logits[~choice], -1).gather(1, legal) == 0)
    # Rows with a choice: the same logits up to float32 rounding (another batch shape).
    assert torch.allclose(acting[choice], full[choice], rtol=1e-5, atol=1e-5)
    assert torch.allclose(torch.softmax(acting, -1), torch.softmax(full, -1), atol=1e-6)


def test_acting_on_forced_rows_only_never_runs_the_network(mixed_batch) -> None:
    env, batch = mixed_batch
    forced = (batch["action_mask"] > 0).sum(-1) == 1
    only_forced = {key: value[forced] for key, value in batch.items()}
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config={},
    )

    def refuse(obs):
        raise AssertionError("the network ran on rows without a choice")

    module.net.forward = refuse
    logits = module.forward_exploration({Columns.OBS: only_forced})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(logits.argmax(-1), only_forced["action_mask"].argmax(-1))
    assert torch.all(torch.softmax(logits, -1) == only_forced["action_mask"].float())


def _ppo_like_loss(module: PodGNNModule, batch: dict, train: bool) -> torch.Tensor:
    """Policy-gradient, entropy and value terms of a fixed batch, as PPO combines them."""
    rows = len(batch["action_mask"])
    generator = torch.Generator().manual_seed(1)
    advantages = torch.randn(rows, generator=generator)
    targets = torch.randn(rows, generator=generator)
    legal = batch["action_mask"].float()
    actions = torch.multinomial(legal, 1, generator=generator).squeeze(-1)
    forward = module.forward_train if train else module._forward
    out = forward({Columns.OBS: batch})
    log_probs = torch.log_softmax(out[Columns.ACTION_DIST_INPUTS], -1)
    taken = log_probs.gather(1, actions[:, None]).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    values = module.compute_values({Columns.OBS: batch}, out[Columns.EMBEDDINGS])
    return (-(taken * advantages) - 0.01 * entropy + (values - targets) ** 2).mean()


@pytest.mark.parametrize("critic_gradient", ["head", "shared"])
def test_the_training_pass_records_a_graph_only_where_gradients_flow(
    mixed_batch, critic_gradient: str
) -> None:
    """With a head-only critic, rows without a choice run without autograd (the network's
    graph covers the rows with a choice only); loss and every gradient are the full
    pass's up to float32 rounding. With the shared critic every row keeps its graph."""
    env, batch = mixed_batch
    choice = (batch["action_mask"] > 0).sum(-1) > 1
    gradients = {}
    for train in (False, True):
        torch.manual_seed(0)
        module = PodGNNModule(
            observation_space=env.observation_space("scheduler_0"),
            action_space=env.action_space("scheduler_0"),
            model_config={"critic_gradient": critic_gradient},
        )
        graphs = []
        network = module.net.forward

        def recorded(obs, network=network, graphs=graphs):
            logits, state = network(obs)
            graphs.append((len(obs["action_mask"]), state.requires_grad))
            return logits, state

        module.net.forward = recorded
        loss = _ppo_like_loss(module, batch, train)
        loss.backward()
        gradients[train] = (
            float(loss.detach()),
            {n: p.grad.clone() for n, p in module.named_parameters()},
        )
        if train and critic_gradient == "head":
            assert graphs == [(int(choice.sum()), True)]
        else:
            assert graphs == [(len(choice), True)]
    (full_loss, full), (split_loss, split) = gradients[False], gradients[True]
    assert split_loss == pytest.approx(full_loss, rel=1e-5, abs=1e-6)
    assert full.keys() == split.keys()
    for name, gradient in full.items():
        assert torch.allclose(split[name], gradient, rtol=1e-4, atol=1e-6), name
