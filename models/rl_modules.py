"""RLlib RLModules (new API stack) of the per-pod schedulers.

``PodGNNModule``: :class:`~models.pod_gnn.PodGNN` (001's hierarchical GNN) as a
``TorchRLModule`` with ``ValueFunctionAPI`` for PPO. ``PodMLPModule``: the baseline MLP
over the flattened observation, to show what the graph structure buys. Both read their
settings from ``model_config`` through our dataclasses (unknown keys fail), return
``Columns.ACTION_DIST_INPUTS`` (masked logits) and ``Columns.EMBEDDINGS`` (the state, so
``compute_values`` reuses the encoder pass).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import Tensor, nn

from models.config import GNNModelConfig, MLPModelConfig
from models.pod_gnn import PodGNN, mask_logits, mlp

# Observation entries that are structure (indices, masks) rather than features.
STRUCTURE_KEYS = ("edge_index", "inter_edge_index", "forward_targets", "action_mask")
# Keys RLlib itself adds to every model_config (e.g. PPO's vf_share_layers).
RLLIB_KEYS = frozenset(field.name for field in dataclasses.fields(DefaultModelConfig))


def our_settings(model_config: dict[str, Any] | None) -> dict[str, Any]:
    """``model_config`` without RLlib's own keys, for our strict dataclasses."""
    return {key: value for key, value in (model_config or {}).items() if key not in RLLIB_KEYS}


class PodGNNModule(TorchRLModule, ValueFunctionAPI):
    """001's hierarchical edge-conditioned GNN actor-critic (see :mod:`models.pod_gnn`)."""

    def setup(self) -> None:
        """Build the network from ``model_config`` (a :class:`GNNModelConfig` dict)."""
        self.settings = GNNModelConfig.from_model_config(our_settings(self.model_config))
        self.net = PodGNN(self.observation_space, int(self.action_space.n), self.settings)

    def train(self, mode: bool = True) -> PodGNNModule:
        """Set the training flag of this module only.

        RLlib switches a module to evaluation mode and back around every sampling
        forward pass; ``nn.Module.train`` walks all submodules to do so. No layer of this
        network behaves differently in training and evaluation (no dropout, no
        normalization: a test checks), so the walk only cost time (about a twentieth of
        sampling at k=4).
        """
        self.training = mode
        return self

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        logits, state = self.net(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: state}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        """The learner's pass: the same outputs as :meth:`_forward`, with autograd only
        where a gradient can flow (:meth:`PodGNN.training_forward`)."""
        logits, state = self.net.training_forward(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: state}

    def _act(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        """Acting (sampling or greedy): the network runs only for agents with a choice.

        RLlib's PPO reads nothing but the action distribution from these passes (values
        come from the learner's own pass), and the distribution is exactly the full
        pass's (:meth:`PodGNN.acting_logits`).
        """
        with torch.no_grad():
            return {Columns.ACTION_DIST_INPUTS: self.net.acting_logits(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        return self._act(batch)

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        return self._act(batch)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Tensor:
        """Values [B] from the state, recomputed only when not passed in."""
        if embeddings is None:
            embeddings = self.net.states(batch[Columns.OBS])
        return self.net.value(embeddings)


class PodMLPModule(TorchRLModule, ValueFunctionAPI):
    """An MLP over every feature of the observation, flattened (no graph structure)."""

    def setup(self) -> None:
        """Build the MLP from ``model_config`` (a :class:`MLPModelConfig` dict)."""
        self.settings = MLPModelConfig.from_model_config(our_settings(self.model_config))
        self.feature_keys = sorted(
            key for key in self.observation_space.spaces if key not in STRUCTURE_KEYS
        )
        inputs = sum(
            int(torch.tensor(self.observation_space[key].shape).prod()) for key in self.feature_keys
        )
        sizes = [inputs, *self.settings.hidden]
        self.encoder = nn.Sequential(mlp(sizes), nn.ReLU())
        self.policy = nn.Linear(sizes[-1], int(self.action_space.n))
        self.critic = nn.Linear(sizes[-1], 1)

    def _encode(self, obs: dict[str, Tensor]) -> Tensor:
        batch = obs["action_mask"].shape[0]
        flat = torch.cat([obs[key].float().reshape(batch, -1) for key in self.feature_keys], dim=-1)
        return self.encoder(flat)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        obs = batch[Columns.OBS]
        state = self._encode(obs)
        logits = self.policy(state) + mask_logits(obs["action_mask"])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: state}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Tensor:
        """Values [B]."""
        if embeddings is None:
            embeddings = self._encode(batch[Columns.OBS])
        return self.critic(embeddings).squeeze(-1)
