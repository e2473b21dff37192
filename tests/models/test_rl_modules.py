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
    out = module.forward_inference({Columns.OBS: batch})
    logits = out[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (4, env.action_space("scheduler_0").n)
    assert torch.all(torch.softmax(logits, -1)[batch["action_mask"] == 0] == 0)
    values = module.compute_values({Columns.OBS: batch})
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
    evaluated = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
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
