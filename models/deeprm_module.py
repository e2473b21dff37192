"""DeepRM's policy network (Mao et al., HotNets'16) as an RLlib RLModule for PPO.

The structure reproduced is the paper's, as the reference implementation builds it
(``hongzimao/deeprm``, ``pg_network.build_pg_network``; later commits of that repository
switched ``PGLearner`` to a small conv net, which the paper does not describe): the
observation of ``podsched/DeepRM-v0`` (the image or the compact vector) is flattened and
fed to **one fully connected hidden layer of 20 ReLU units**, followed by a linear layer
to the ``num_nw + 1`` action logits (slot 0..num_nw-1 or void), both initialised as the
reference's (weights normal with standard deviation 0.01, biases 0); the reference's
softmax is RLlib's categorical distribution over these logits.

What is added for PPO, kept apart so the policy network stays exactly DeepRM's:

* **A critic.** DeepRM trains with REINFORCE and a time-based baseline, so it has no value
  network. PPO needs one; it is a separate MLP of the same shape (one hidden layer of
  ``value_hidden`` units), so value-loss gradients never reshape the policy's hidden layer.
  Its output layer starts at zero and is multiplied by ``value_scale``: DeepRM's returns
  are minus the sum of the episode's slowdowns (hundreds), which a 20-unit head moving by
  about the learning rate per step would otherwise take thousands of updates to reach.
* **Input scaling.** Every observation entry is divided by the observation space's upper
  bound. The image is already in [0, 1] (unchanged); the compact vector's counts (up to
  a few hundred) are brought to [0, 1] too. This is a fixed reparametrisation of the first
  layer, not a change of the network.

DeepRM's action space has no mask: booking an empty slot or a job that does not fit means
"move on", a legal action, so no logit is masked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import Tensor, nn

from models.config import settings_from_dict
from models.rl_modules import our_settings

__all__ = ["DeepRMModelConfig", "DeepRMModule"]


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class DeepRMModelConfig:
    """Settings of :class:`DeepRMModule`.

    ``hidden``: units of the policy's one hidden layer (DeepRM: 20). ``value_hidden``:
    units of the critic's one hidden layer. ``value_scale``: the critic's output is
    multiplied by it (about the magnitude of the returns; DeepRM's are in the hundreds).
    """

    hidden: int = 20
    value_hidden: int = 20
    value_scale: float = 1.0

    def __post_init__(self) -> None:
        _positive_int("hidden", self.hidden)
        _positive_int("value_hidden", self.value_hidden)
        if (
            isinstance(self.value_scale, bool)
            or not isinstance(self.value_scale, int | float)
            or not 0 < self.value_scale < float("inf")
        ):
            raise ValueError(f"value_scale must be a number > 0, got {self.value_scale!r}")

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> DeepRMModelConfig:
        """Build from an RLModule ``model_config`` (RLlib's own keys already removed);
        unknown keys are refused with the allowed ones listed."""
        return settings_from_dict(cls, model_config)


def input_scale(space: Any) -> np.ndarray:
    """Per-entry divisor of a Box observation: its upper bound where finite and > 0, else 1."""
    high = np.broadcast_to(np.asarray(space.high, dtype=np.float64), space.shape).reshape(-1)
    usable = np.isfinite(high) & (high > 0)
    return np.where(usable, high, 1.0).astype(np.float32)


class DeepRMModule(TorchRLModule, ValueFunctionAPI):
    """DeepRM's one-hidden-layer policy network and a separate critic (see module doc)."""

    def setup(self) -> None:
        """Build both networks from ``model_config`` (a :class:`DeepRMModelConfig` dict)."""
        self.settings = DeepRMModelConfig.from_model_config(our_settings(self.model_config))
        if not hasattr(self.action_space, "n"):
            raise ValueError(
                f"DeepRMModule needs a Discrete action space (podsched/DeepRM-v0), got "
                f"{self.action_space}"
            )
        scale = input_scale(self.observation_space)
        # A buffer, so it follows the module to its device and into checkpoints.
        self.register_buffer("input_scale", torch.from_numpy(scale), persistent=False)
        inputs = scale.size
        self.policy = nn.Sequential(
            nn.Linear(inputs, self.settings.hidden),
            nn.ReLU(),
            nn.Linear(self.settings.hidden, int(self.action_space.n)),
        )
        # The reference's initialisation (Lasagne DenseLayer with W=Normal(0.01), b=0):
        # tiny weights, so the first policy is near uniform over the actions.
        for layer in (self.policy[0], self.policy[2]):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)
        self.critic_hidden = nn.Sequential(nn.Linear(inputs, self.settings.value_hidden), nn.ReLU())
        self.critic_out = nn.Linear(self.settings.value_hidden, 1)
        # Start every value at 0: scaled random outputs would be noise of size value_scale.
        nn.init.zeros_(self.critic_out.weight)
        nn.init.zeros_(self.critic_out.bias)

    def _flat(self, batch: dict[str, Any]) -> Tensor:
        obs = batch[Columns.OBS]
        return obs.float().reshape(obs.shape[0], -1) / self.input_scale

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        return {Columns.ACTION_DIST_INPUTS: self.policy(self._flat(batch))}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        # Only training needs the critic: its features ride along as the embeddings that
        # PPO's loss hands back to compute_values, so the learner computes them once.
        flat = self._flat(batch)
        return {
            Columns.ACTION_DIST_INPUTS: self.policy(flat),
            Columns.EMBEDDINGS: self.critic_hidden(flat),
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Tensor:
        """Values [B]; the critic's hidden layer is recomputed only when not passed in."""
        if embeddings is None:
            embeddings = self.critic_hidden(self._flat(batch))
        return self.critic_out(embeddings).squeeze(-1) * self.settings.value_scale
