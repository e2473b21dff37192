"""CuSH's two networks (Domeniconi et al., paper 004 §3.2-3.3) as one RLlib RLModule for PPO.

004 splits the agent into a **job selector (JSM)** and a **policy selector (PSM)** acting
in cascade; ``podsched/CuSH-v0`` exposes their joint choice as one ``MultiDiscrete([Q + 1,
2])`` action ``[job, policy]``. This module reproduces both networks:

* **JSM** (§3.2): the state image ``(sum_R N S^r) x T x (Q + 1)`` (Q + 1 channels: the
  cluster and the Q queue slots) goes through **one convolutional layer of 16 2x2
  filters** (stride 1, no padding), **ReLU**, **batch normalisation**, then a linear layer
  to Q + 1 logits (004's "softmax layer": RLlib's categorical does the softmax), its input
  multiplied by ``features ** -0.5`` (:class:`FanInScale`: without it one Adam update of
  this ~49,000-input layer moves the logits by ~10 and PPO collapsed at once). Infeasible
  choices (empty slot, job that does not fit; ``action_mask[:Q + 1]``) get the float
  minimum as logit, so they have probability 0.
* **PSM** (§3.3): "the input is the workload type" -- the one-hot dgemm/daxpy of the chosen
  job (``job_types``) -- into **one hidden layer of 10 ReLU units**, then 2 logits
  (depth-first, breadth-first), masked by ``action_mask[Q + 1:]``.

**How the PSM is conditioned on the chosen job.** The job choice has only Q + 1 values, so
the module runs the PSM on every slot's job type at once and emits, besides the JSM's
Q + 1 logits, one row of 2 policy logits per job choice (``ACTION_DIST_INPUTS`` =
``[job logits (Q + 1), policy logits (Q + 1) x 2]``). :class:`JobThenPolicy`, the action
distribution, draws the job first and then the policy from the chosen job's row:
``log p(j, p) = log p_JSM(j) + log p_PSM(p | type of j)``, with exact entropy and KL
(``H = H(j) + sum_j p(j) H(p | j)``). This is 004's cascade in one forward pass, with no
second pass and no RLlib autoregressive machinery. For "do nothing" (j = 0) the policy is
irrelevant; its row allows depth-first only, so it contributes nothing to log-probabilities,
entropy or gradients. (RLlib's default for ``MultiDiscrete`` -- a multi-categorical of
independent components -- could not make the policy depend on the chosen job.)

**The critic.** 004 trains with REINFORCE and an average-return baseline, so it has no
value network: ``tune/configs/cush.yaml`` trains the module that way (:mod:`tune.reinforce`,
each network on its own return via :meth:`JobThenPolicy.head_logps` and
:meth:`CuSHModule.policy_head_parameters`) and never trains the critic; PPO
(``cush_ppo.yaml``) needs one. It is separate from the JSM -- its own conv layer of the same
shape with ReLU, no batch norm, then a linear layer over the flattened features (scaled as
the JSM's) and the job types -- so (a) value-loss gradients never reshape the paper's
networks and (b) the value is a function of the observation alone: RLlib's GAE connector
calls ``compute_values`` on the whole train batch outside ``forward_train``, in whatever
train/eval mode the module was left, which batch norm would make batch-dependent. Its
output layer starts at zero and ``value_scale`` multiplies it, so that values reach
returns in the hundreds in a reasonable number of updates.

**Batch norm and RLlib's modes.** RLlib 2.60's ``TorchRLModule.forward_exploration`` and
``forward_inference`` put the module in ``eval()`` mode, ``forward_train`` in ``train()``
mode. So the environment runners act with batch norm's running statistics and the learner
normalises with each minibatch's statistics (and updates the running ones, momentum 0.1):
batch norm's usual split between acting and training (004 does not say which statistics it
acted with). The running statistics are buffers, so they reach the env runners with the
weights. Early in
training they lag the batch statistics (with mean 0 and variance 1 they leave the raw
image's waiting times of tens unnormalised), so PPO's first importance ratios are not
exactly 1. Two things keep this harmless: the output layers start 100x smaller, so both
first policies are near uniform whatever the statistics; and a 2D batch norm pools each
channel over the batch *and* the image (a minibatch of 250 is ~750,000 values per channel),
so once the running statistics have caught up (momentum 0.1: a few dozen minibatches)
acting and training normalise alike. A batch of
one in eval mode gives the same outputs as that row of a larger batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.distribution import Distribution
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import Tensor, nn
from torch.distributions import Categorical

from models.config import settings_from_dict
from models.pod_gnn import MASKED_LOGIT, mask_logits
from models.rl_modules import our_settings

__all__ = ["CuSHModelConfig", "CuSHModule", "FanInScale", "JobThenPolicy"]

#: Allocation policies the PSM chooses among (depth-first, breadth-first; envs.cush).
NUM_POLICIES = 2


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class CuSHModelConfig:
    """Settings of :class:`CuSHModule`.

    ``filters`` and ``kernel_size``: the JSM's (and the critic's) conv layer (004: 16 filters
    of 2x2). ``policy_hidden``: units of the PSM's hidden layer (004: 10). ``value_scale``:
    the critic's output is multiplied by it (about the magnitude of the returns).
    """

    filters: int = 16
    kernel_size: int = 2
    policy_hidden: int = 10
    value_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("filters", "kernel_size", "policy_hidden"):
            _positive_int(name, getattr(self, name))
        if (
            isinstance(self.value_scale, bool)
            or not isinstance(self.value_scale, int | float)
            or not 0 < self.value_scale < float("inf")
        ):
            raise ValueError(f"value_scale must be a number > 0, got {self.value_scale!r}")

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> CuSHModelConfig:
        """Build from an RLModule ``model_config`` (RLlib's own keys already removed);
        unknown keys are refused with the allowed ones listed."""
        return settings_from_dict(cls, model_config)


def _categorical_kl(first: Categorical, second: Categorical) -> Tensor:
    """``KL(first || second)`` from log-probabilities, 0 where ``first`` has probability 0.

    torch's own KL is inf wherever ``second``'s probability underflows to 0, even for a
    finite log-probability (a logit gap over ~100); here such terms stay finite, and
    masked choices (probability 0 in both) add exactly 0 to the value and the gradient.
    """
    probs = first.probs
    terms = probs * (first.logits - second.logits)
    return torch.where(probs > 0, terms, torch.zeros_like(terms)).sum(-1)


class JobThenPolicy(Distribution):
    """The cascade ``job ~ JSM``, then ``policy ~ PSM(chosen job)``, over ``[job, policy]``.

    Built from logits ``[..., J + J * P]``: J job logits, then P policy logits for each job
    choice (row j is the policy distribution used when job j is chosen). Samples and
    ``logp`` values are ``[..., 2]`` integer actions, as ``MultiDiscrete([J, P])`` holds.
    """

    def __init__(self, job_logits: Tensor, policy_logits: Tensor) -> None:
        super().__init__()
        self.job = Categorical(logits=job_logits)  # batch [...], J choices
        self.policy = Categorical(logits=policy_logits)  # batch [..., J], P choices

    @classmethod
    def from_logits(
        cls, logits: Tensor, num_policies: int = NUM_POLICIES, **kwargs: Any
    ) -> JobThenPolicy:
        """Split ``[..., J * (1 + num_policies)]`` logits into the job and policy parts."""
        size = logits.shape[-1]
        if size % (1 + num_policies):
            raise ValueError(
                f"JobThenPolicy needs J * (1 + {num_policies}) logits, got {size} per row"
            )
        choices = size // (1 + num_policies)
        policy = logits[..., choices:].reshape(*logits.shape[:-1], choices, num_policies)
        return cls(logits[..., :choices], policy)

    @staticmethod
    def required_input_dim(space: gymnasium.Space, **kwargs: Any) -> int:
        """``J * (1 + P)`` for ``MultiDiscrete([J, P])``."""
        assert isinstance(space, gymnasium.spaces.MultiDiscrete)
        choices, policies = (int(n) for n in space.nvec)
        return choices * (1 + policies)

    def _policy_row(self, job: Tensor) -> Tensor:
        """Normalised policy log-probabilities [..., P] of the chosen ``job`` [...]."""
        log_probs = self.policy.logits  # torch keeps these normalised
        index = job.long()[..., None, None].expand(*job.shape, 1, log_probs.shape[-1])
        return torch.gather(log_probs, -2, index).squeeze(-2)

    def sample(self, *, sample_shape: torch.Size | tuple[int, ...] | None = None) -> Tensor:
        """Draw the job, then the policy from that job's row."""
        shape = torch.Size(sample_shape or ())
        job = self.job.sample(shape)
        # One policy draw per job choice; keeping the chosen job's is a draw from p(. | job).
        every_policy = self.policy.sample(shape)
        policy = torch.gather(every_policy, -1, job.unsqueeze(-1)).squeeze(-1)
        return torch.stack([job, policy], dim=-1)

    def rsample(self, *, sample_shape: Any = None, **kwargs: Any) -> Tensor:
        """Not defined: the actions are discrete."""
        raise NotImplementedError("JobThenPolicy is discrete; it has no reparameterised sample")

    def logp(self, value: Tensor, **kwargs: Any) -> Tensor:
        """``log p_JSM(job) + log p_PSM(policy | job)`` of actions ``[..., 2]``."""
        job, policy = value[..., 0].long(), value[..., 1].long()
        row = self._policy_row(job)
        return self.job.log_prob(job) + torch.gather(row, -1, policy.unsqueeze(-1)).squeeze(-1)

    def head_logps(self, value: Tensor) -> dict[str, Tensor]:
        """Each network's share of ``logp(value)``: ``{"job": log p_JSM(job), "policy":
        log p_PSM(policy | job)}`` (summing to :meth:`logp`), so that a trainer can weigh
        each by its own network's return (004 Alg. 1 lines 15-16)."""
        job, policy = value[..., 0].long(), value[..., 1].long()
        row = self._policy_row(job)
        return {
            "job": self.job.log_prob(job),
            "policy": torch.gather(row, -1, policy.unsqueeze(-1)).squeeze(-1),
        }

    def entropy(self, **kwargs: Any) -> Tensor:
        """``H(job) + sum_j p(j) H(policy | j)`` (exact)."""
        return self.job.entropy() + (self.job.probs * self.policy.entropy()).sum(-1)

    def kl(self, other: Distribution, **kwargs: Any) -> Tensor:
        """``KL(job) + sum_j p(j) KL(policy | j)`` (exact; ``other`` is a JobThenPolicy)."""
        assert isinstance(other, JobThenPolicy)
        probs = self.job.probs
        policy_kl = _categorical_kl(self.policy, other.policy)  # [..., J]
        return _categorical_kl(self.job, other.job) + (probs * policy_kl).sum(-1)

    def to_deterministic(self) -> TorchDeterministic:
        """Greedy cascade: the most likely job, then its most likely policy."""
        job = self.job.logits.argmax(-1)
        policy = self._policy_row(job).argmax(-1)
        return TorchDeterministic(loc=torch.stack([job, policy], dim=-1))


class FanInScale(nn.Module):
    """Multiplies its input by ``fan_in ** -0.5``, ahead of a wide linear readout.

    Adam moves every weight by about the learning rate per update, so a readout over n
    features moves its output by about ``lr * n`` (n ~ 49,000 for the default image: ~10
    logits per update at lr 3e-4, which collapsed the policy within one PPO iteration);
    with its input scaled by ``n ** -0.5`` it moves by about ``lr * sqrt(n)``. A constant
    factor: the functions the layer can represent are unchanged.
    """

    def __init__(self, fan_in: int) -> None:
        super().__init__()
        self.factor = float(fan_in) ** -0.5

    def forward(self, features: Tensor) -> Tensor:
        """``features * fan_in ** -0.5``."""
        return features * self.factor

    def extra_repr(self) -> str:
        return f"factor={self.factor:.3g}"


class CuSHModule(TorchRLModule, ValueFunctionAPI):
    """004's JSM (conv + ReLU + batch norm) and PSM (10-unit MLP), a separate critic."""

    def setup(self) -> None:
        """Build the networks from ``model_config`` (a :class:`CuSHModelConfig` dict)."""
        self.settings = CuSHModelConfig.from_model_config(our_settings(self.model_config))
        space = self.action_space
        if not isinstance(space, gymnasium.spaces.MultiDiscrete) or space.shape != (2,):
            raise ValueError(
                f"CuSHModule needs the MultiDiscrete([Q + 1, 2]) action of podsched/CuSH-v0, "
                f"got {space}"
            )
        choices, policies = (int(n) for n in space.nvec)
        if policies != NUM_POLICIES:
            raise ValueError(f"the policy selector chooses among {NUM_POLICIES}, got {policies}")
        shapes = {key: box.shape for key, box in self.observation_space.spaces.items()}
        rows, horizon, channels = shapes["image"]
        kernel = self.settings.kernel_size
        if rows < kernel or horizon < kernel:
            raise ValueError(
                f"kernel_size={kernel} does not fit the {rows} x {horizon} image; use a "
                f"kernel of at most {min(rows, horizon)}"
            )
        if channels != choices or shapes["action_mask"] != (choices + policies,):
            raise ValueError(
                f"observation {shapes} does not match the action space {space}: expected "
                f"{choices} image channels and an action_mask of {choices + policies}"
            )
        self.num_choices = choices
        self.type_features = int(np.prod(shapes["job_types"]))
        type_size = shapes["job_types"][-1]
        filters = self.settings.filters
        features = filters * (rows - kernel + 1) * (horizon - kernel + 1)

        self.jsm = nn.Sequential(
            nn.Conv2d(channels, filters, kernel),
            nn.ReLU(),
            nn.BatchNorm2d(filters),
            nn.Flatten(),
            FanInScale(features),
            nn.Linear(features, choices),
        )
        self.psm = nn.Sequential(
            nn.Linear(type_size, self.settings.policy_hidden),
            nn.ReLU(),
            nn.Linear(self.settings.policy_hidden, policies),
        )
        # Policy output layers start 100x smaller (Andrychowicz et al. 2021, "What matters
        # in on-policy RL"): the first policy is near uniform, however batch norm's initial
        # running statistics (mean 0, variance 1) leave the raw image of waiting times, so
        # the first acting and learning policies agree until those statistics catch up.
        for output in (self.jsm[-1], self.psm[-1]):
            with torch.no_grad():
                output.weight.mul_(0.01)
                output.bias.zero_()
        self.critic_features = nn.Sequential(
            nn.Conv2d(channels, filters, kernel), nn.ReLU(), nn.Flatten(), FanInScale(features)
        )
        self.critic_out = nn.Linear(features + self.type_features, 1)
        # Start every value at 0: value_scale would magnify random initial outputs into
        # noise of its own size.
        nn.init.zeros_(self.critic_out.weight)
        nn.init.zeros_(self.critic_out.bias)
        # "Do nothing" places no job: only depth-first is allowed, so its row is certain.
        nothing = torch.full((policies,), MASKED_LOGIT)
        nothing[0] = 0.0
        self.register_buffer("nothing_policy", nothing, persistent=False)

    def policy_head_parameters(self) -> dict[str, list[nn.Parameter]]:
        """The parameters of each network, by the head of :meth:`JobThenPolicy.head_logps`
        it drives: the JSM's and the PSM's (004 trains them at their own learning rates);
        the critic is neither."""
        return {"job": list(self.jsm.parameters()), "policy": list(self.psm.parameters())}

    def get_inference_action_dist_cls(self) -> type[JobThenPolicy]:
        """The cascade distribution (exploration and training use it too)."""
        return JobThenPolicy

    @staticmethod
    def _image(obs: dict[str, Tensor]) -> Tensor:
        # The environment's image is channels last (rows, T, Q + 1); torch wants channels first.
        return obs["image"].float().permute(0, 3, 1, 2)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        obs = batch[Columns.OBS]
        mask = obs["action_mask"]
        job_logits = self.jsm(self._image(obs)) + mask_logits(mask[:, : self.num_choices])
        policy_mask = mask_logits(mask[:, self.num_choices :])
        slot_logits = self.psm(obs["job_types"].float()) + policy_mask.unsqueeze(1)  # [B, Q, P]
        nothing = self.nothing_policy.expand(slot_logits.shape[0], 1, -1)
        policy_logits = torch.cat([nothing, slot_logits], dim=1)  # [B, Q + 1, P]
        logits = torch.cat([job_logits, policy_logits.flatten(1)], dim=-1)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _critic_embeddings(self, obs: dict[str, Tensor]) -> Tensor:
        types = obs["job_types"].float().flatten(1)
        return torch.cat([self.critic_features(self._image(obs)), types], dim=-1)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        # Only training needs the critic: its features ride along as the embeddings that
        # PPO's loss hands back to compute_values, so the learner computes them once.
        out = self._forward(batch, **kwargs)
        out[Columns.EMBEDDINGS] = self._critic_embeddings(batch[Columns.OBS])
        return out

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Tensor:
        """Values [B] (no batch norm: a function of each observation alone)."""
        if embeddings is None:
            embeddings = self._critic_embeddings(batch[Columns.OBS])
        return self.critic_out(embeddings).squeeze(-1) * self.settings.value_scale
