"""The PPO side shared by the single-agent policy networks: a policy and a separate critic.

The papers' networks are policies (or Q-networks) with no value function; PPO needs one.
:class:`SeparateCriticModule` keeps it apart from the paper's network, so value-loss
gradients never reshape the policy: a subclass builds ``critic_out`` (a linear layer to
one unit) and implements :meth:`~SeparateCriticModule.policy_logits` and
:meth:`~SeparateCriticModule.critic_features`; the base returns
``Columns.ACTION_DIST_INPUTS`` from every forward pass and, in training, the critic's
features as ``Columns.EMBEDDINGS``, which PPO's loss hands back to ``compute_values``
so the learner computes them once. Values are ``critic_out(features) * value_scale``.

:func:`start_near_uniform` and :func:`start_at_zero` are the two output initialisations
these modules use: policy logits 100x smaller than the default (Andrychowicz et al. 2021,
"What matters in on-policy RL": a near-uniform first policy), and a critic whose first
values are exactly 0 (``value_scale`` would magnify random outputs into noise of its own
size).
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import Tensor, nn

__all__ = ["SeparateCriticModule", "start_at_zero", "start_near_uniform"]


def start_near_uniform(layer: nn.Linear) -> None:
    """Scale a policy output layer's weights by 0.01 and zero its bias."""
    with torch.no_grad():
        layer.weight.mul_(0.01)
        layer.bias.zero_()


def start_at_zero(layer: nn.Linear) -> None:
    """Zero a critic output layer, so every first value is 0."""
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)


class SeparateCriticModule(TorchRLModule, ValueFunctionAPI):
    """A PPO module whose critic shares nothing with its policy (see module doc).

    Subclasses set ``self.value_scale`` in ``setup()`` and provide ``critic_out`` (a layer
    or a property).
    """

    value_scale: float
    critic_out: nn.Linear

    def policy_logits(self, batch: dict[str, Any]) -> Tensor:
        """The action-distribution inputs (masked where the formulation masks)."""
        raise NotImplementedError

    def critic_features(self, batch: dict[str, Any]) -> Tensor:
        """The critic's last hidden features [B, H], the input of ``critic_out``."""
        raise NotImplementedError

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        return {Columns.ACTION_DIST_INPUTS: self.policy_logits(batch)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        out = self._forward(batch, **kwargs)
        out[Columns.EMBEDDINGS] = self.critic_features(batch)
        return out

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Tensor:
        """Values [B]; the critic's features are recomputed only when not passed in."""
        if embeddings is None:
            embeddings = self.critic_features(batch)
        return self.critic_out(embeddings).squeeze(-1) * self.value_scale
