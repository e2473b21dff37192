"""The contention-aware scheduler's policy (Ryu & Eo, paper 000) as an RLlib RLModule for PPO.

000 §IV states the cluster as one ``<Nodes, 2 x GPUs per node>`` tensor (Fig. 2: the
left half the profiles of the jobs on each GPU, the right half the candidates by
placement shape) and picks, among a constant-size set of actions, one candidate and one
node subset -- or nothing. ``podsched/Contention-v0`` gives that tensor as ``"state"``
and a mask of the legal actions as ``"action_mask"`` (``Discrete(K x S + 1)``).

000 trains with stable-baselines3 (its Trainer, §V-B; the reference code builds
``PPO("MlpPolicy", env)``), whose default network this module reproduces:

* the state **flattened** into two separate fully connected networks of two hidden
  layers of 64 **tanh** units each, one for the policy and one for the critic
  (``net_arch=dict(pi=[64, 64], vf=[64, 64])``), orthogonally initialised with gain
  sqrt(2), the policy's output layer with gain 0.01 (a near-uniform first policy);
* the policy's ``K x S + 1`` logits, masked actions set to the float minimum
  (probability 0; stable-baselines3's PPO has no masks -- here an illegal action is
  never drawn instead of being turned into "do nothing" by the environment).

The critic follows podsched's other PPO modules: its output layer starts at zero and
``value_scale`` multiplies it (discounted returns of 000 eq. 2 are tens).

``filters > 0`` puts a convolution over the ``<Nodes, 2 x GPUs>`` tensor (one input
channel, ``filters`` filters of ``kernel_size x kernel_size``, zero padding that
keeps the tensor's size, ReLU) in front of each network, so that neighbouring GPUs and
nodes are read together; 0 (the default) is 000's reference MLP.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import gymnasium
from ray.rllib.core.columns import Columns
from torch import Tensor, nn

from models.actor_critic import SeparateCriticModule, start_at_zero
from models.config import (
    layer_sizes,
    require_positive_int,
    require_positive_number,
    settings_from_dict,
)
from models.pod_gnn import MASKED_LOGIT
from models.rl_modules import our_settings

__all__ = ["ACTIVATIONS", "ContentionModelConfig", "ContentionModule"]

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


@dataclass(frozen=True)
class ContentionModelConfig:
    """Settings of :class:`ContentionModule`.

    ``hidden``: hidden layer sizes of the policy and of the critic (000's reference: 64,
    64); ``activation``: "tanh" (the reference's) or "relu"; ``filters``: 0 for no
    convolution, else its number of filters; ``kernel_size``: its odd kernel size;
    ``value_scale``: the critic's output is multiplied by it.
    """

    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    filters: int = 0
    kernel_size: int = 3
    value_scale: float = 1.0

    def __post_init__(self) -> None:
        # Frozen: a YAML list becomes a tuple through object.__setattr__.
        object.__setattr__(self, "hidden", layer_sizes("hidden", self.hidden))
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation={self.activation!r}; allowed: {', '.join(ACTIVATIONS)}")
        filters = self.filters
        if isinstance(filters, bool) or not isinstance(filters, int) or filters < 0:
            raise ValueError(f"filters must be an integer >= 0, got {self.filters!r}")
        require_positive_int("kernel_size", self.kernel_size)
        if self.kernel_size % 2 == 0:
            raise ValueError(
                f"kernel_size must be odd (padding keeps the state's size), got {self.kernel_size}"
            )
        require_positive_number("value_scale", self.value_scale)

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> ContentionModelConfig:
        """Build from an RLModule ``model_config`` (RLlib's own keys removed); unknown keys
        are refused with the allowed ones listed."""
        return settings_from_dict(cls, our_settings(model_config))


def _network(
    settings: ContentionModelConfig, state_shape: tuple[int, int], outputs: int, gain: float
) -> nn.Sequential:
    """[optional conv] -> flatten -> hidden layers -> ``outputs`` linear units."""
    activation = ACTIVATIONS[settings.activation]
    layers: list[nn.Module] = []
    channels = 1
    if settings.filters:
        layers += [
            nn.Unflatten(1, (1, state_shape[0])),  # [B, H, W] -> one channel [B, 1, H, W]
            nn.Conv2d(1, settings.filters, settings.kernel_size, padding="same"),
            nn.ReLU(),
        ]
        channels = settings.filters
    layers.append(nn.Flatten())
    sizes = [channels * math.prod(state_shape), *settings.hidden]
    for fan_in, fan_out in itertools.pairwise(sizes):
        layers += [nn.Linear(fan_in, fan_out), activation()]
    layers.append(nn.Linear(sizes[-1], outputs))
    # stable-baselines3's initialisation: orthogonal, gain sqrt(2) inside, ``gain`` last.
    linear_and_conv = [m for m in layers if isinstance(m, nn.Linear | nn.Conv2d)]
    for module in linear_and_conv:
        last = module is linear_and_conv[-1]
        nn.init.orthogonal_(module.weight, gain=gain if last else math.sqrt(2))
        nn.init.zeros_(module.bias)
    return nn.Sequential(*layers)


class ContentionModule(SeparateCriticModule):
    """000's MLP policy over the ``<Nodes, 2 x GPUs>`` state, masked; a separate critic."""

    def setup(self) -> None:
        """Build both networks from ``model_config`` (:class:`ContentionModelConfig`)."""
        self.settings = ContentionModelConfig.from_model_config(self.model_config)
        self.value_scale = self.settings.value_scale
        spaces = getattr(self.observation_space, "spaces", None)
        action_space = self.action_space
        if spaces is None or set(spaces) != {"state", "action_mask"}:
            raise ValueError(
                "ContentionModule needs podsched/Contention-v0's Dict observation "
                f"{{'state', 'action_mask'}}, got {self.observation_space}"
            )
        if not isinstance(action_space, gymnasium.spaces.Discrete):
            raise ValueError(f"ContentionModule needs a Discrete action space, got {action_space}")
        state_shape = tuple(spaces["state"].shape)
        actions = int(action_space.n)
        if len(state_shape) != 2 or spaces["action_mask"].shape != (actions,):
            raise ValueError(
                f"expected a 2-D state and an action_mask of {actions}, got "
                f"{spaces['state'].shape} and {spaces['action_mask'].shape}"
            )
        self.policy = _network(self.settings, state_shape, actions, gain=0.01)
        critic = _network(self.settings, state_shape, 1, gain=1.0)
        # Split the critic at its output layer: the features are PPO's embeddings.
        self.critic_hidden = critic[:-1]
        self.critic_out = critic[-1]
        start_at_zero(self.critic_out)

    def policy_logits(self, batch: dict[str, Any]) -> Tensor:
        """Logits [B, K x S + 1]; masked actions get the float minimum (probability 0)."""
        obs = batch[Columns.OBS]
        return self.policy(obs["state"].float()).masked_fill(obs["action_mask"] == 0, MASKED_LOGIT)

    def critic_features(self, batch: dict[str, Any]) -> Tensor:
        """The critic's last hidden layer [B, hidden[-1]]."""
        return self.critic_hidden(batch[Columns.OBS]["state"].float())
