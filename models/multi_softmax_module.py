"""RL-TAPS's multi-softmax policy (Ryu et al., paper 003 §4.5) as an RLlib RLModule for PPO.

003 assigns each of the M GPUs to one of N job slots or to none with **one softmax per
GPU**, all reading **one shared fully connected hidden layer** over the flattened state
(§4.5.1, Fig. 1); the joint action's probability is the product of the M softmaxes
(eq. 7). With N = 10 and M = 32 there are 32 x 11 = 352 outputs and the hidden layer has
1.5 x 352 = 528 units (§5.1: 1.5 times the outputs, rounded up).

This module is generic: any ``Box`` observation (flattened, each entry divided by its
finite positive upper bound, as :mod:`models.deeprm_module` does) and any 1-D
``MultiDiscrete(nvec)`` action (component g has ``nvec[g]`` choices; RL-TAPS's is
``MultiDiscrete([N + 1] * M)``). ``ACTION_DIST_INPUTS`` are the components' logits
concatenated in order, ``sum(nvec)`` of them, as RLlib's ``TorchMultiCategorical`` takes
them; the action distribution is :class:`IndependentCategoricals`, the same distribution
(one independent categorical per component: eq. 7) as one batched torch ``Categorical``
over ``[..., M, max(nvec)]`` (shorter components padded with impossible choices) instead
of M separate ones: RLlib's builds, samples and scores 32 Categorical objects per step,
which took 3 of the 4.6 ms of an RL-TAPS environment step. The hidden layer
is ReLU (003 builds on DeepRM's network, whose hidden layer is; 003 does not name it);
its size defaults to ``ceil(1.5 x sum(nvec))``.

003 trains with REINFORCE and a baseline: the mean return over E episodes of the same
job sequence at each time step (eq. 8-9), not a network; ``rltaps_reinforce.yaml`` trains
the module so (:mod:`tune.reinforce`, through :meth:`IndependentCategoricals.head_logps`
and :meth:`MultiSoftmaxModule.policy_head_parameters`). PPO's baseline is a learned
value function: a separate one-hidden-layer critic (``value_hidden`` ReLU units) whose
output starts at zero and is multiplied by ``value_scale``; it shares nothing with the
policy, so value-loss gradients never reshape 003's network. The policy's output layer
starts 100x smaller than torch's default, so every softmax starts near uniform.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.distribution import Distribution
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic
from torch import Tensor, nn
from torch.distributions import Categorical

from models.actor_critic import SeparateCriticModule, start_at_zero, start_near_uniform
from models.config import require_positive_int, require_positive_number, settings_from_dict
from models.deeprm_module import input_scale
from models.pod_gnn import MASKED_LOGIT
from models.rl_modules import our_settings

__all__ = [
    "HIDDEN_PER_OUTPUT",
    "IndependentCategoricals",
    "MultiSoftmaxModelConfig",
    "MultiSoftmaxModule",
]

#: 003 §5.1: hidden units = 1.5 x output units, rounded up.
HIDDEN_PER_OUTPUT = 1.5


@dataclass(frozen=True)
class MultiSoftmaxModelConfig:
    """Settings of :class:`MultiSoftmaxModule`.

    ``hidden``: units of the shared hidden layer (None: ``ceil(1.5 x sum(nvec))``, 003's
    rule); ``value_hidden``: units of the critic's hidden layer; ``value_scale``: the
    critic's output is multiplied by it.
    """

    hidden: int | None = None
    value_hidden: int = 64
    value_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.hidden is not None:
            require_positive_int("hidden", self.hidden)
        require_positive_int("value_hidden", self.value_hidden)
        require_positive_number("value_scale", self.value_scale)

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> MultiSoftmaxModelConfig:
        """Build from an RLModule ``model_config`` (RLlib's own keys removed); unknown keys
        are refused with the allowed ones listed."""
        return settings_from_dict(cls, our_settings(model_config))


def softmax_sizes(action_space: Any) -> list[int]:
    """The choices of each component of a 1-D ``MultiDiscrete`` starting at 0 (else
    ValueError)."""
    if not isinstance(action_space, gymnasium.spaces.MultiDiscrete) or action_space.nvec.ndim != 1:
        raise ValueError(
            f"MultiSoftmaxModule needs a 1-D MultiDiscrete action space, got {action_space}"
        )
    if np.any(action_space.start != 0):
        raise ValueError(
            f"MultiSoftmaxModule needs MultiDiscrete components starting at 0, got start="
            f"{action_space.start.tolist()}"
        )
    return [int(n) for n in action_space.nvec]


class IndependentCategoricals(Distribution):
    """Independent categoricals, one per action component, as one batched ``Categorical``.

    Built from the components' logits concatenated (``[..., sum(sizes)]``, RLlib's layout
    for ``MultiDiscrete(sizes)``); samples and ``logp`` values are ``[..., M]`` integer
    actions. ``logp`` and ``entropy`` are sums over the components (eq. 7), ``kl`` too.
    """

    def __init__(self, logits: Tensor) -> None:
        super().__init__()
        self.components = Categorical(logits=logits)  # batch [..., M], max(sizes) choices

    @classmethod
    def from_logits(
        cls, logits: Tensor, sizes: list[int], **kwargs: Any
    ) -> IndependentCategoricals:
        """Cut ``[..., sum(sizes)]`` into ``[..., M, max(sizes)]``, padding shorter
        components with the float minimum (probability 0, never drawn)."""
        if logits.shape[-1] != sum(sizes):
            raise ValueError(
                f"IndependentCategoricals needs sum(sizes) = {sum(sizes)} logits, got "
                f"{logits.shape[-1]} per row"
            )
        widest = max(sizes)
        if all(size == widest for size in sizes):
            return cls(logits.reshape(*logits.shape[:-1], len(sizes), widest))
        parts = [
            nn.functional.pad(part, (0, widest - part.shape[-1]), value=MASKED_LOGIT)
            for part in torch.split(logits, sizes, dim=-1)
        ]
        return cls(torch.stack(parts, dim=-2))

    @staticmethod
    def required_input_dim(space: gymnasium.Space, **kwargs: Any) -> int:
        """``sum(nvec)`` of a ``MultiDiscrete``."""
        return sum(softmax_sizes(space))

    def sample(self, *, sample_shape: torch.Size | tuple[int, ...] | None = None) -> Tensor:
        """One choice per component: ``[..., M]``."""
        return self.components.sample(torch.Size(sample_shape or ()))

    def rsample(self, *, sample_shape: Any = None, **kwargs: Any) -> Tensor:
        """Not defined: the actions are discrete."""
        raise NotImplementedError("IndependentCategoricals is discrete; no reparameterised sample")

    def logp(self, value: Tensor, **kwargs: Any) -> Tensor:
        """``sum_g log p_g(a_g)`` of actions ``[..., M]``."""
        return self.components.log_prob(value.long()).sum(-1)

    def head_logps(self, value: Tensor) -> dict[str, Tensor]:
        """``{"joint": logp(value)}``: one head, the product of the softmaxes (eq. 7), which
        003's REINFORCE weighs by one return."""
        return {"joint": self.logp(value)}

    def entropy(self, **kwargs: Any) -> Tensor:
        """``sum_g H(p_g)``."""
        return self.components.entropy().sum(-1)

    def kl(self, other: Distribution, **kwargs: Any) -> Tensor:
        """``sum_g KL(p_g || q_g)``; choices this distribution cannot take (padding)
        add exactly 0."""
        assert isinstance(other, IndependentCategoricals)
        probs = self.components.probs
        terms = probs * (self.components.logits - other.components.logits)
        return torch.where(probs > 0, terms, torch.zeros_like(terms)).sum((-2, -1))

    def to_deterministic(self) -> TorchDeterministic:
        """Each component's most likely choice (003 §4.5.2's inference)."""
        return TorchDeterministic(loc=self.components.logits.argmax(-1))


class MultiSoftmaxModule(SeparateCriticModule):
    """003's shared hidden layer and one softmax per action component; a separate critic."""

    def setup(self) -> None:
        """Build both networks from ``model_config`` (:class:`MultiSoftmaxModelConfig`)."""
        self.settings = MultiSoftmaxModelConfig.from_model_config(self.model_config)
        self.value_scale = self.settings.value_scale
        if not isinstance(self.observation_space, gymnasium.spaces.Box):
            raise ValueError(
                f"MultiSoftmaxModule needs a Box observation, got {self.observation_space}"
            )
        sizes = softmax_sizes(self.action_space)
        outputs = sum(sizes)
        hidden = self.settings.hidden or math.ceil(HIDDEN_PER_OUTPUT * outputs)
        scale = input_scale(self.observation_space)
        # A buffer, so it follows the module to its device (not saved: derived).
        self.register_buffer("input_scale", torch.from_numpy(scale), persistent=False)
        self.hidden = nn.Sequential(nn.Linear(scale.size, hidden), nn.ReLU())
        self.heads = nn.Linear(hidden, outputs)
        start_near_uniform(self.heads)
        self.critic_hidden = nn.Sequential(
            nn.Linear(scale.size, self.settings.value_hidden), nn.ReLU()
        )
        self.critic_out = nn.Linear(self.settings.value_hidden, 1)
        start_at_zero(self.critic_out)
        self.action_dist_cls = IndependentCategoricals.get_partial_dist_cls(sizes=sizes)

    def policy_head_parameters(self) -> dict[str, list[nn.Parameter]]:
        """The policy's parameters (hidden layer and softmaxes) under its one head,
        ``"joint"``; the critic's are not among them."""
        return {"joint": [*self.hidden.parameters(), *self.heads.parameters()]}

    def _flat(self, batch: dict[str, Any]) -> Tensor:
        obs = batch[Columns.OBS]
        return obs.float().reshape(obs.shape[0], -1) / self.input_scale

    def policy_logits(self, batch: dict[str, Any]) -> Tensor:
        """The M softmaxes' logits, concatenated: [B, sum(nvec)]."""
        return self.heads(self.hidden(self._flat(batch)))

    def critic_features(self, batch: dict[str, Any]) -> Tensor:
        """The critic's hidden layer [B, value_hidden]."""
        return self.critic_hidden(self._flat(batch))
