"""SCED2's shared-weight network (Luan et al., paper 002 §III-E, eq. 3-5) as RLlib RLModules.

002 reads its state in three parts -- the GPU state ``S_i`` of each server i (the
remaining times of its M GPUs), the job state ``J_1 .. J_n`` of the visible jobs and the
statistics ``Stat`` of the rest of the queue -- and builds (eq. 3-5)::

    F_i = f(S_i; w_shared)           one sub-network, the same weights for every server
    G   = f(J_1, ..., J_n, Stat; w_1)
    E   = Concat(F_1, ..., F_N, G)   the embedding state
    A   = f(f(E; w_2); w_3)

``podsched/SCED2-v0`` gives that state flat (``envs.sced2.core.observation_layout``: N x M
remaining times server-major, J rows of k + 2 job values, 4 statistics, all times in
hours); :class:`SharedWeightNetwork` cuts it with the environment's own layout and
applies eq. 3-5. ``f`` is a fully connected ReLU network; 002 gives no sizes, so the
defaults are ours (:class:`Sced2ModelConfig`): the server sub-network ``M -> 32 -> 16``,
the job sub-network ``J (k + 2) + 4 -> 128 -> 64``, ``w_2`` one hidden layer of 128 and
``w_3`` the linear output. The server sub-network is one ``nn.Sequential`` applied to the
``[B, N, M]`` tensor, so every row goes through the same weights and its parameter count
does not grow with N.

Two modules, one per algorithm (002 trains a Q-network with DQN; PPO is the alternative):

* :class:`Sced2QModule` for **DQN** (``algorithm.name: DQN``): ``A`` is the J + 1
  Q-values (a visible job, or hold). It implements RLlib's ``QNetAPI``
  (``compute_q_values``), ``TargetNetworkAPI`` (a frozen copy of the whole Q-network as
  target, synced by RLlib's DQN learner every ``target_network_update_freq`` steps with
  ``tau``) and ``InferenceOnlyAPI`` (env runners hold no target copy). Masked actions
  get Q = -inf, RLlib's own convention for illegal actions (its DQN learner maps -inf to
  0 before using a value): greedy choices, the double-Q argmax and the bootstrap max
  never pick them, and epsilon-greedy exploration draws uniformly among the legal
  actions only. RLlib's ``dueling`` switch adds a value stream ``f(f(E; w_2'); w_3')``
  next to the advantage stream ``A``: ``Q = V + A - mean(A over legal actions)``
  (Wang et al. 2016); ``double_q`` is honoured; distributional Q (``num_atoms > 1``) is
  not supported and refused. Prioritized replay (002 §III-F) is RLlib's
  ``PrioritizedEpisodeReplayBuffer``, set in the training config, not here.
* :class:`Sced2Module` for **PPO**: ``A`` is the J + 1 policy logits, masked ones set to
  the float minimum (probability 0). Its critic is a separate copy of the same
  architecture with one output, so value-loss gradients never reshape the policy; its
  output layer starts at zero and ``value_scale`` multiplies it (returns are sums of
  002's execution effectiveness, one per placed job: tens). The policy's output layer
  starts 100x smaller, so the first policy is near uniform over the legal actions.

The network cannot tell N from M in a flat observation, so ``servers`` and
``gpus_per_server`` are settings (the environment's defaults, 15 x 8); J comes from the
action space and k from the observation size, and a mismatch is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from ray.rllib.algorithms.dqn.dqn_learner import QF_NEXT_PREDS, QF_PREDS, QF_TARGET_NEXT_PREDS
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.schedules.scheduler import Scheduler
from torch import Tensor, nn

from envs.sced2.config import JOB_EXTRA_FEATURES, NUM_STATISTICS, Sced2Config
from envs.sced2.core import observation_layout
from models.actor_critic import SeparateCriticModule, start_at_zero, start_near_uniform
from models.config import (
    layer_sizes,
    require_positive_int,
    require_positive_number,
    settings_from_dict,
)
from models.pod_gnn import MASKED_LOGIT, mlp
from models.rl_modules import our_settings

__all__ = [
    "DQN_MODEL_KEYS",
    "Sced2ModelConfig",
    "Sced2Module",
    "Sced2QModule",
    "SharedWeightNetwork",
]

#: Keys RLlib's DQNConfig adds to every model_config (``_model_config_auto_includes``).
DQN_MODEL_KEYS = frozenset(
    {"double_q", "dueling", "epsilon", "num_atoms", "std_init", "v_max", "v_min"}
)
#: RLlib DQNConfig's default exploration schedule, for a module built outside DQN.
DEFAULT_EPSILON = [(0, 1.0), (10000, 0.05)]


@dataclass(frozen=True)
class Sced2ModelConfig:
    """Settings of :class:`Sced2Module` and :class:`Sced2QModule`.

    ``servers`` N and ``gpus_per_server`` M: the environment's cluster (15 x 8).
    ``row_hidden``: layer sizes of the shared server sub-network ``w_shared`` (the last is
    the size of each ``F_i``); ``job_hidden``: of the job/statistics sub-network ``w_1``
    (the last is the size of ``G``); ``head_hidden``: units of ``w_2``'s hidden layer.
    ``value_scale``: the PPO critic's output is multiplied by it.
    """

    servers: int = 15
    gpus_per_server: int = 8
    row_hidden: tuple[int, ...] = (32, 16)
    job_hidden: tuple[int, ...] = (128, 64)
    head_hidden: int = 128
    value_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("servers", "gpus_per_server", "head_hidden"):
            require_positive_int(name, getattr(self, name))
        for name in ("row_hidden", "job_hidden"):
            # Frozen: YAML lists become tuples through object.__setattr__.
            object.__setattr__(self, name, layer_sizes(name, getattr(self, name)))
        require_positive_number("value_scale", self.value_scale)

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> Sced2ModelConfig:
        """Build from an RLModule ``model_config`` (RLlib's own keys, DQN's included,
        removed); unknown keys are refused with the allowed ones listed."""
        ours = {
            key: value
            for key, value in our_settings(model_config).items()
            if key not in DQN_MODEL_KEYS
        }
        return settings_from_dict(cls, ours)


def environment_layout(
    settings: Sced2ModelConfig, observation_space: Any, action_space: Any
) -> dict[str, tuple[slice, tuple[int, ...]]]:
    """The environment's observation layout for these spaces (ValueError on a mismatch)."""
    spaces = getattr(observation_space, "spaces", None)
    if spaces is None or set(spaces) != {"observation", "action_mask"}:
        raise ValueError(
            "the SCED2 modules need podsched/SCED2-v0's Dict observation "
            f"{{'observation', 'action_mask'}}, got {observation_space}"
        )
    if not hasattr(action_space, "n") or int(action_space.n) < 2:
        raise ValueError(
            f"the SCED2 modules need a Discrete(J + 1) action space, got {action_space}"
        )
    window = int(action_space.n) - 1
    size = int(spaces["observation"].shape[0])
    gpus = settings.servers * settings.gpus_per_server
    per_job, remainder = divmod(size - gpus - NUM_STATISTICS, window)
    if remainder or per_job <= JOB_EXTRA_FEATURES:
        raise ValueError(
            f"an observation of {size} values does not hold servers={settings.servers} x "
            f"gpus_per_server={settings.gpus_per_server} remaining times, J={window} jobs "
            f"of k + {JOB_EXTRA_FEATURES} values and {NUM_STATISTICS} statistics; set "
            "model.config.servers and gpus_per_server to the environment's"
        )
    config = Sced2Config(
        servers=settings.servers,
        gpus_per_server=settings.gpus_per_server,
        window=window,
        profiles=per_job - JOB_EXTRA_FEATURES,
    )
    return observation_layout(config)


class SharedWeightNetwork(nn.Module):
    """002 eq. 3-5 over the flat observation, ending in ``outputs`` linear units."""

    def __init__(
        self,
        layout: dict[str, tuple[slice, tuple[int, ...]]],
        settings: Sced2ModelConfig,
        outputs: int,
    ) -> None:
        super().__init__()
        self.layout = layout
        servers, gpus_per_server = layout["gpu"][1]
        job_inputs = layout["jobs"][0].stop - layout["jobs"][0].start + NUM_STATISTICS
        # mlp() leaves its last layer linear; each sub-network's output is a ReLU feature.
        self.server = nn.Sequential(mlp([gpus_per_server, *settings.row_hidden]), nn.ReLU())
        self.jobs = nn.Sequential(mlp([job_inputs, *settings.job_hidden]), nn.ReLU())
        self.embedding_size = servers * settings.row_hidden[-1] + settings.job_hidden[-1]
        self.hidden = nn.Sequential(nn.Linear(self.embedding_size, settings.head_hidden), nn.ReLU())
        self.out = nn.Linear(settings.head_hidden, outputs)

    def server_features(self, observation: Tensor) -> Tensor:
        """``F_i`` of every server: [B, N, row_hidden[-1]] (eq. 3, shared weights)."""
        where, shape = self.layout["gpu"]
        return self.server(observation[:, where].reshape(-1, *shape))

    def embedding(self, observation: Tensor) -> Tensor:
        """``E = Concat(F_1, ..., F_N, G)`` (eq. 4): [B, embedding_size]."""
        jobs = observation[:, self.layout["jobs"][0]]
        statistics = observation[:, self.layout["statistics"][0]]
        job_features = self.jobs(torch.cat([jobs, statistics], dim=-1))
        return torch.cat([self.server_features(observation).flatten(1), job_features], dim=-1)

    def features(self, observation: Tensor) -> Tensor:
        """``f(E; w_2)``: [B, head_hidden]."""
        return self.hidden(self.embedding(observation))

    def forward(self, observation: Tensor) -> Tensor:
        """``A = f(f(E; w_2); w_3)`` (eq. 5): [B, outputs]."""
        return self.out(self.features(observation))


def _flat(batch: dict[str, Any]) -> tuple[Tensor, Tensor]:
    """The flat observation (float) and the boolean action mask of a batch."""
    obs = batch[Columns.OBS]
    return obs["observation"].float(), obs["action_mask"] > 0


class Sced2Module(SeparateCriticModule):
    """PPO: eq. 3-5 as masked policy logits over the J + 1 actions; a separate critic."""

    def setup(self) -> None:
        """Build the policy and the critic from ``model_config`` (:class:`Sced2ModelConfig`)."""
        self.settings = Sced2ModelConfig.from_model_config(self.model_config)
        self.value_scale = self.settings.value_scale
        layout = environment_layout(self.settings, self.observation_space, self.action_space)
        self.policy = SharedWeightNetwork(layout, self.settings, int(self.action_space.n))
        self.critic = SharedWeightNetwork(layout, self.settings, 1)
        start_near_uniform(self.policy.out)
        start_at_zero(self.critic.out)

    @property
    def critic_out(self) -> nn.Linear:
        """The critic's ``w_3``."""
        return self.critic.out

    def policy_logits(self, batch: dict[str, Any]) -> Tensor:
        """Logits [B, J + 1]; masked actions get the float minimum (probability 0)."""
        observation, legal = _flat(batch)
        return self.policy(observation).masked_fill(~legal, MASKED_LOGIT)

    def critic_features(self, batch: dict[str, Any]) -> Tensor:
        """The critic's ``f(E; w_2)`` [B, head_hidden]."""
        return self.critic.features(_flat(batch)[0])


class Sced2QNetwork(nn.Module):
    """Masked Q-values [B, J + 1] from eq. 3-5, plain or dueling."""

    def __init__(
        self,
        layout: dict[str, tuple[slice, tuple[int, ...]]],
        settings: Sced2ModelConfig,
        actions: int,
        dueling: bool,
    ) -> None:
        super().__init__()
        self.advantage = SharedWeightNetwork(layout, settings, actions)
        self.value: nn.Module | None = None
        if dueling:
            # The value stream reads the same embedding E (Wang et al. 2016).
            self.value = nn.Sequential(
                nn.Linear(self.advantage.embedding_size, settings.head_hidden),
                nn.ReLU(),
                nn.Linear(settings.head_hidden, 1),
            )

    def forward(self, observation: Tensor, legal: Tensor) -> Tensor:
        """Q-values with -inf on illegal actions."""
        if self.value is None:
            q_values = self.advantage(observation)
        else:
            embedding = self.advantage.embedding(observation)
            advantage = self.advantage.out(self.advantage.hidden(embedding))
            # Centre on the legal actions only: illegal ones never compete.
            legal_float = legal.float()
            mean = (advantage * legal_float).sum(-1, keepdim=True) / legal_float.sum(
                -1, keepdim=True
            ).clamp(min=1.0)
            q_values = self.value(embedding) + advantage - mean
        return q_values.masked_fill(~legal, float("-inf"))


class Sced2QModule(TorchRLModule, QNetAPI, TargetNetworkAPI, InferenceOnlyAPI):
    """DQN: eq. 3-5 as masked Q-values over the J + 1 actions, with a target network."""

    def setup(self) -> None:
        """Build the Q-network from ``model_config`` (:class:`Sced2ModelConfig` plus the
        keys RLlib's DQNConfig adds: ``dueling``, ``double_q``, ``epsilon``, ...)."""
        self.settings = Sced2ModelConfig.from_model_config(self.model_config)
        config = self.model_config or {}
        if int(config.get("num_atoms", 1)) != 1:
            raise ValueError(
                f"Sced2QModule learns expected Q-values; distributional Q-learning "
                f"(num_atoms={config['num_atoms']}) is not supported: set num_atoms=1"
            )
        self.uses_dueling = bool(config.get("dueling", False))
        self.uses_double_q = bool(config.get("double_q", False))
        self.epsilon_schedule = Scheduler(
            fixed_value_or_schedule=config.get("epsilon", DEFAULT_EPSILON), framework="torch"
        )
        layout = environment_layout(self.settings, self.observation_space, self.action_space)
        self.q_net = Sced2QNetwork(
            layout, self.settings, int(self.action_space.n), self.uses_dueling
        )

    # -- QNetAPI / TargetNetworkAPI / InferenceOnlyAPI -----------------------------------------

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        """``{"qf_preds": [B, J + 1]}``, -inf on masked actions."""
        return {QF_PREDS: self.q_net(*_flat(batch))}

    def make_target_networks(self) -> None:
        """A frozen copy of the whole Q-network (RLlib's learner calls this once)."""
        self._target_q_net = make_target_network(self.q_net)

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        """``[(q_net, target)]``, synced by the learner."""
        return [(self.q_net, self._target_q_net)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Tensor]:
        """The target network's masked Q-values, ``{"qf_preds": [B, J + 1]}``."""
        return {QF_PREDS: self._target_q_net(*_flat(batch))}

    def get_non_inference_attributes(self) -> list[str]:
        """Env runners act with the online network only."""
        return ["_target_q_net"]

    # -- forward passes -----------------------------------------------------------------------

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        q_values = self.compute_q_values(batch)[QF_PREDS]
        # The masked Q-values double as action-distribution inputs: a Categorical's
        # deterministic action over them is the greedy one, which evaluators read.
        return {Columns.ACTIONS: q_values.argmax(-1), Columns.ACTION_DIST_INPUTS: q_values}

    def _forward_exploration(
        self, batch: dict[str, Any], t: int = 0, **kwargs: Any
    ) -> dict[str, Tensor]:
        """Epsilon-greedy over the legal actions (epsilon from RLlib's schedule at ``t``)."""
        observation, legal = _flat(batch)
        greedy = self.q_net(observation, legal).argmax(-1)
        self.epsilon_schedule.update(t)
        epsilon = float(self.epsilon_schedule.get_current_value())
        # A row with no legal action (never produced by the environment) draws from all.
        choices = legal | ~legal.any(-1, keepdim=True)
        random = torch.multinomial(choices.float(), 1).squeeze(-1)
        explore = torch.rand(greedy.shape, device=greedy.device) < epsilon
        return {Columns.ACTIONS: torch.where(explore, random, greedy)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Tensor]:
        """Q of the batch, target Q of the next observations, and (double Q) the online Q
        of the next observations, under RLlib's DQN learner's keys."""
        if self.inference_only:
            raise RuntimeError("an inference-only Sced2QModule (an env runner's) cannot train")
        current = batch[Columns.OBS]
        following = batch[Columns.NEXT_OBS]
        out: dict[str, Tensor] = {}
        if self.uses_double_q:
            # One pass over current and next observations together.
            both = {key: torch.cat([current[key], following[key]]) for key in current}
            q_values = self.compute_q_values({Columns.OBS: both})[QF_PREDS]
            out[QF_PREDS], out[QF_NEXT_PREDS] = torch.chunk(q_values, 2)
        else:
            out[QF_PREDS] = self.compute_q_values({Columns.OBS: current})[QF_PREDS]
        out[QF_TARGET_NEXT_PREDS] = self.forward_target({Columns.OBS: following})[QF_PREDS]
        return out
