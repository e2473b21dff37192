"""REINFORCE with a Monte-Carlo baseline per time step: 003's and 004's training protocol.

Both RL-TAPS (003 §4.5.2, Alg. 1) and CuSH (004 §3.4, Alg. 1) train without a critic. A
job sequence is played **E times** with the current stochastic policy; at every time step
t the baseline is the mean return over those E episodes,

    b_t = (1/E) sum_{i=1..E} G_t^i                          (003 eq. 9; 004 Alg. 1 line 13)

(an episode that has already ended contributes G_t^i = 0, its return after its end), and
the policy moves along ``sum_i sum_t (G_t^i - b_t) grad log pi(a_t^i | s_t^i)`` averaged
over the B x E episodes of an update (003 Alg. 1 lines 14-16). CuSH has two networks, each
with its own return: the job selector's is 004 eq. 1 minus that baseline, the policy
selector's is its locality penalty with no baseline (004 Alg. 1 lines 15-16;
:mod:`envs.cush.returns`).

How it runs inside RLlib's PPO loop (so ``platform/train.py --config`` trains it like any
other experiment):

* :class:`SequenceGroupEnvRunner` -- each ``sample()`` draws B job sequences with its own
  seeded generator and plays each E times (the environment replays a held sequence,
  :meth:`envs.base.ConfiguredEnv.hold_jobs`), tagging every episode with its sequence's id;
  PPO's loop therefore receives whole groups only (``train_batch_size: 1`` = one call).
* :class:`MonteCarloAdvantages` -- the learner connector that replaces PPO's GAE: per
  head, the returns of every episode, minus the per-time-step mean of its group where the
  head has a baseline; and each row's weight 1 / (number of episodes).
* :class:`ReinforceTorchLearner` -- the loss ``-sum_rows weight x sum_heads A_head x
  log pi_head(a)``, one gradient step per batch (``num_epochs`` and ``minibatch_size``
  are ignored), one optimizer per head (004: RMSprop at 1e-4 for the job selector, 1e-3
  for the policy selector; 003: Adam at 1e-3). The module names its heads' parameters
  (``policy_head_parameters``) and its action distribution splits ``logp`` by head
  (``head_logps``); the critic is never trained.

An experiment selects it with ``algorithm.extra.learner_config_dict.reinforce`` (a mapping
of :class:`ReinforceSettings`); :func:`use_reinforce` installs the three parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

from envs.cush.returns import JSM_HEAD, head_returns
from envs.discounting import discounted_sums as discounted_returns  # 003 Alg. 1 line 10
from tune.ppo_learner import LeanPPOTorchLearner

__all__ = [
    "REINFORCE_KEY",
    "RETURNS",
    "MonteCarloAdvantages",
    "ReinforceSettings",
    "ReinforceTorchLearner",
    "SequenceGroupEnvRunner",
    "advantage_column",
    "cush_policy_shares",
    "discounted_returns",
    "group_advantages",
    "timestep_baseline",
    "use_reinforce",
]

#: The key of ``learner_config_dict`` that selects this protocol.
REINFORCE_KEY = "reinforce"
#: ``episode.custom_data`` key of the id of the job sequence an episode played.
SEQUENCE_KEY = "job_sequence"
#: The batch column of each row's weight, 1 / (episodes in the train batch).
WEIGHT_COLUMN = "reinforce_weight"

#: How each formulation's returns are made: the heads and which of them take the
#: per-time-step baseline. ``discounted``: one head (003: the joint action of all GPUs)
#: on ``G_t = sum_{k>=t} gamma^(k-t) R_k``. ``cush``: 004's job selector on eq. 1 with the
#: baseline, its policy selector on -p_j without.
RETURNS: dict[str, dict[str, bool]] = {
    "discounted": {"joint": True},
    "cush": {JSM_HEAD: True, "policy": False},
}
OPTIMIZERS = ("adam", "rmsprop")


def advantage_column(head: str) -> str:
    """The batch column holding ``head``'s advantages."""
    return f"advantages_{head}"


@dataclass(frozen=True)
class ReinforceSettings:
    """``learner_config_dict.reinforce``: the protocol's settings.

    ``returns``: a key of :data:`RETURNS` (``discounted`` for RL-TAPS, ``cush``).
    ``episodes_per_sequence``: E, episodes of each job sequence (003: 20; 004's M: 24).
    ``sequences_per_update``: B, job sequences per gradient step (004: the 10 job sets of
    an epoch). ``optimizer``: ``adam`` (003) or ``rmsprop`` (004). ``head_lr``: a learning
    rate per head overriding ``algorithm.lr`` (004: ``{job: 1.0e-4, policy: 1.0e-3}``).
    ``training_sequences``: None draws a fresh job sequence for every one used (003's
    streaming protocol, Fig. 5); N fixes a training set of N sequences, replayed epoch
    after epoch in a new random order (003's non-streaming protocol, §5.1.1: 200).
    """

    returns: str = "discounted"
    episodes_per_sequence: int = 20
    sequences_per_update: int = 1
    optimizer: str = "adam"
    head_lr: dict[str, float] = field(default_factory=dict)
    training_sequences: int | None = None

    def __post_init__(self) -> None:
        if self.returns not in RETURNS:
            raise ValueError(f"reinforce.returns={self.returns!r}; allowed: {', '.join(RETURNS)}")
        counts = ["episodes_per_sequence", "sequences_per_update"]
        if self.training_sequences is not None:  # None: a fresh sequence every time
            counts.append("training_sequences")
        for name in counts:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"reinforce.{name} must be an integer >= 1, got {value!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"reinforce.optimizer={self.optimizer!r}; allowed: {', '.join(OPTIMIZERS)}"
            )
        if not isinstance(self.head_lr, Mapping):
            raise ValueError(f"reinforce.head_lr must be a mapping, got {self.head_lr!r}")
        for head, lr in self.head_lr.items():
            if head not in self.heads:
                raise ValueError(
                    f"reinforce.head_lr.{head}: returns={self.returns!r} has the heads "
                    f"{', '.join(self.heads)}"
                )
            if isinstance(lr, bool) or not isinstance(lr, int | float) or not 0 < lr < 1:
                raise ValueError(f"reinforce.head_lr.{head} must be in (0, 1), got {lr!r}")

    @property
    def heads(self) -> dict[str, bool]:
        """The heads this protocol trains, each with whether it takes the baseline."""
        return RETURNS[self.returns]

    @classmethod
    def from_learner_config(cls, learner_config: Mapping[str, Any] | None) -> ReinforceSettings:
        """From ``learner_config_dict``; ValueError naming an unknown or bad key."""
        data = (learner_config or {}).get(REINFORCE_KEY)
        if not isinstance(data, Mapping):
            raise ValueError(
                f"learner_config_dict.{REINFORCE_KEY} must be a mapping of "
                f"{', '.join(f.name for f in fields(cls))}; got {data!r}"
            )
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ValueError(
                f"unknown key(s) reinforce.{', reinforce.'.join(unknown)}; allowed: "
                f"{', '.join(allowed)}"
            )
        return cls(**data)


# -- the arithmetic (numpy) ---------------------------------------------------------------


def timestep_baseline(returns: Sequence[np.ndarray]) -> np.ndarray:
    """``b_t = (1/E) sum_i G_t^i`` over the E episodes of one job sequence, for t up to the
    longest; an episode shorter than t counts 0 there (its return after its end)."""
    if not returns:
        raise ValueError("a baseline needs at least one episode")
    longest = max(len(episode) for episode in returns)
    total = np.zeros(longest)
    for episode in returns:
        total[: len(episode)] += episode
    return total / len(returns)


def group_advantages(returns: Sequence[np.ndarray], groups: Sequence[Any]) -> list[np.ndarray]:
    """``G_t^i - b_t`` for every episode, ``b`` the :func:`timestep_baseline` of the
    episodes that played the same job sequence (``groups[i]``: episode i's sequence id)."""
    if len(returns) != len(groups):
        raise ValueError(f"{len(returns)} episodes' returns but {len(groups)} group ids")
    members: dict[Any, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    advantages: list[np.ndarray] = [np.empty(0)] * len(returns)
    for indices in members.values():
        baseline = timestep_baseline([returns[i] for i in indices])
        for i in indices:
            advantages[i] = returns[i] - baseline[: len(returns[i])]
    return advantages


def episode_head_returns(
    settings: ReinforceSettings,
    rewards: Sequence[float],
    step_infos: Sequence[Mapping[str, Any]],
    gamma: float,
) -> dict[str, np.ndarray]:
    """The returns of one whole episode, per head of ``settings.returns``."""
    if settings.returns == "cush":
        return head_returns(step_infos, gamma)
    return {"joint": discounted_returns(rewards, gamma)}


def advantage_columns(
    settings: ReinforceSettings,
    episodes: Sequence[tuple[Any, Sequence[float], Sequence[Mapping[str, Any]]]],
    gamma: float,
) -> dict[str, np.ndarray]:
    """The train batch's columns from whole episodes ``(sequence id, rewards, step infos)``
    in batch order: each head's advantages (returns minus the group's per-step mean where
    the head has a baseline, the returns themselves where not) and every row's weight
    1 / (number of episodes), all float32 of the total number of steps."""
    per_episode = [episode_head_returns(settings, r, i, gamma) for _, r, i in episodes]
    groups = [group for group, _, _ in episodes]
    columns: dict[str, np.ndarray] = {}
    for head, baselined in settings.heads.items():
        returns = [values[head] for values in per_episode]
        parts = group_advantages(returns, groups) if baselined else returns
        columns[advantage_column(head)] = np.concatenate(parts).astype(np.float32)
    steps = sum(len(rewards) for _, rewards, _ in episodes)
    columns[WEIGHT_COLUMN] = np.full(steps, 1.0 / len(episodes), dtype=np.float32)
    return columns


def cush_policy_shares(job_types: torch.Tensor, actions: torch.Tensor) -> dict[str, float]:
    """004 Fig. 6 over a train batch: the share of the placed dgemm jobs the sampled policy
    placed depth-first and of the daxpy jobs placed breadth-first (NaN without such jobs).

    ``job_types``: the observations' one-hot types per slot ``[B, Q, 2]`` (dgemm, daxpy);
    ``actions``: ``[B, 2]`` (job choice 0 = none or slot 1..Q, policy 0 = DF, 1 = BF).
    """
    placed = actions[:, 0] > 0
    slot = (actions[:, 0] - 1).clamp(min=0).long()
    kind = job_types[torch.arange(len(actions)), slot].argmax(-1)
    policy = actions[:, 1]
    shares = {}
    for name, wanted_kind, wanted_policy in (
        ("dgemm_depth_first", 0, 0),
        ("daxpy_breadth_first", 1, 1),
    ):
        rows = placed & (kind == wanted_kind)
        count = int(rows.sum())
        chosen = int((policy[rows] == wanted_policy).sum())
        shares[name] = chosen / count if count else float("nan")
    return shares


# -- RLlib: sampling, the learner connector, the learner -----------------------------------


def _settings(config: Any) -> ReinforceSettings:
    return ReinforceSettings.from_learner_config(config.learner_config_dict)


class SequenceGroupEnvRunner(SingleAgentEnvRunner):
    """Samples whole groups: B job sequences, each played E times (see the module doc).

    A ``sample()`` without a count (PPO's loop with ``batch_mode="complete_episodes"``)
    draws each sequence with the runner's own generator (seeded from the experiment's
    seed and the runner's index), holds it in every sub-environment, samples E episodes
    and tags them with the sequence's id in ``episode.custom_data``. A ``sample()`` asked
    for timesteps or episodes samples as RLlib's runner does.
    """

    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[Any]:
        """B groups of E whole episodes (see the class doc)."""
        if num_timesteps is not None or num_episodes is not None:
            return super().sample(
                num_timesteps=num_timesteps,
                num_episodes=num_episodes,
                explore=explore,
                random_actions=random_actions,
                force_reset=force_reset,
            )
        settings = _settings(self.config)
        episodes: list[Any] = []
        for _ in range(settings.sequences_per_update):
            sequence = self._hold_next_sequence()
            played = super().sample(
                num_episodes=settings.episodes_per_sequence,
                explore=explore,
                random_actions=random_actions,
            )
            for episode in played:
                episode.custom_data[SEQUENCE_KEY] = sequence
            episodes.extend(played)
        return episodes

    def _hold_next_sequence(self) -> int:
        """Draw the next job sequence (or, with ``training_sequences``, take the next of
        the fixed set), hold it in every sub-environment; its id."""
        if getattr(self, "_sequence_rng", None) is None:
            seed = self.config.seed
            self._sequence_rng = np.random.default_rng(
                None if seed is None else [int(seed), int(self.worker_index)]
            )
            self._sequences_drawn = 0
            self._epoch_order: list[int] = []
        vector = self.env.unwrapped
        if not hasattr(vector, "envs"):
            raise ValueError(
                "REINFORCE with per-sequence baselines needs the synchronous vector env "
                "(gym_env_vectorize_mode SYNC), whose sub-environments it can reach"
            )
        environments = [env.unwrapped for env in vector.envs]
        if not all(hasattr(env, "hold_jobs") for env in environments):
            raise ValueError(
                f"{type(environments[0]).__name__} cannot replay a job sequence; REINFORCE "
                "with per-sequence baselines needs a podsched single-agent formulation"
            )
        fixed = _settings(self.config).training_sequences
        if fixed is None:
            jobs = environments[0].draw_jobs(self._sequence_rng)
            self._sequences_drawn += 1
            # Unique across runners: runner index in the high bits.
            sequence = int(self.worker_index) * 2**32 + self._sequences_drawn
        else:
            if not self._epoch_order:  # an epoch begins: every sequence once, shuffled
                self._epoch_order = self._sequence_rng.permutation(fixed).tolist()
            number = self._epoch_order.pop(0)
            # Sequence k is the same jobs on every runner and in every epoch.
            seed = self.config.seed
            jobs = environments[0].draw_jobs(
                np.random.default_rng([0 if seed is None else int(seed), 2**31, number])
            )
            sequence = number + 1
        for env in environments:
            env.hold_jobs(jobs)
        return sequence


class MonteCarloAdvantages(ConnectorV2):
    """Learner connector: each head's advantages and every row's weight (module doc)."""

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        settings: ReinforceSettings,
        gamma: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.settings = settings
        self.gamma = gamma

    def __call__(
        self, *, rl_module: Any, episodes: list[Any], batch: dict[str, Any], **kwargs: Any
    ) -> Any:
        """Add the advantage and weight columns to ``batch`` (rows in episode order)."""
        played = []
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False):
            if episode.module_id not in (None, DEFAULT_MODULE_ID):
                raise ValueError("REINFORCE with per-sequence baselines is single-agent only")
            if not episode.is_done or episode.t_started != 0:
                raise ValueError(
                    "REINFORCE needs whole episodes (batch_mode complete_episodes, sampled by "
                    "SequenceGroupEnvRunner)"
                )
            if SEQUENCE_KEY not in episode.custom_data:
                raise ValueError(
                    "an episode carries no job-sequence id: sample with SequenceGroupEnvRunner"
                )
            infos = list(episode.get_infos())[1:]  # the reset's info is not a step's
            played.append((episode.custom_data[SEQUENCE_KEY], list(episode.get_rewards()), infos))
        columns = advantage_columns(self.settings, played, self.gamma)
        module_batch = batch[DEFAULT_MODULE_ID]
        rows = len(module_batch[Columns.REWARDS])
        if rows != len(columns[WEIGHT_COLUMN]):
            raise AssertionError(f"batch has {rows} rows, episodes {len(columns[WEIGHT_COLUMN])}")
        device = module_batch[Columns.REWARDS].device
        for name, values in columns.items():
            module_batch[name] = torch.as_tensor(values, device=device)
        return batch


class ReinforceTorchLearner(LeanPPOTorchLearner):
    """REINFORCE with per-sequence baselines inside PPO's loop (see the module doc)."""

    def build(self) -> None:
        """PPO's learner with its extra bootstrap step and GAE replaced by
        :class:`MonteCarloAdvantages`."""
        super().build()
        settings = _settings(self.config)
        pipeline = self._learner_connector
        pipeline.remove("AddOneTsToEpisodesAndTruncate")
        pipeline.remove("GeneralAdvantageEstimation")
        pipeline.append(MonteCarloAdvantages(settings=settings, gamma=self.config.gamma))

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """One optimizer per head over the parameters the module gives it, at the head's
        learning rate (``reinforce.head_lr``, else ``algorithm.lr``)."""
        settings = _settings(self.config)
        module = self._module[module_id]
        heads = module.policy_head_parameters()
        missing = sorted(set(settings.heads) - set(heads))
        if missing:
            raise ValueError(
                f"reinforce.returns={settings.returns!r} trains the heads "
                f"{', '.join(settings.heads)}; {type(module).__name__} has {', '.join(heads)}"
            )
        for head in settings.heads:
            params = heads[head]
            if settings.optimizer == "rmsprop":
                optimizer = torch.optim.RMSprop(params)
            else:
                optimizer = torch.optim.Adam(params, fused=True)
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=head,
                optimizer=optimizer,
                params=params,
                lr_or_lr_schedule=settings.head_lr.get(head, config.lr),
            )

    def update(self, *args: Any, **kwargs: Any) -> Any:
        """One gradient step on the whole batch: REINFORCE reuses no sample."""
        kwargs.update(num_epochs=1, minibatch_size=None, shuffle_batch_per_epoch=False)
        return super().update(*args, **kwargs)

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """``-sum_rows weight x sum_heads A_head x log pi_head(a)``."""
        settings = _settings(self.config)
        module = self.module[module_id].unwrapped()
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        logps = dist.head_logps(batch[Columns.ACTIONS])
        weight = batch[WEIGHT_COLUMN]
        loss = torch.zeros((), device=weight.device)
        stats: dict[str, float] = {}
        for head in settings.heads:
            advantages = batch[advantage_column(head)]
            loss = loss - (weight * advantages * logps[head]).sum()
            stats[f"mean_advantage_{head}"] = float(advantages.mean())  # a batch column: no graph
        # Named as PPO's, so that the tracked training metrics pick them up.
        stats["policy_loss"] = float(loss.detach())
        stats["entropy"] = float(dist.entropy().detach().mean())
        stats["episodes"] = float(round(1.0 / float(weight[0]))) if len(weight) else 0.0
        if settings.returns == "cush":
            stats.update(
                cush_policy_shares(batch[Columns.OBS]["job_types"], batch[Columns.ACTIONS])
            )
        self.metrics.log_dict(stats, key=module_id, window=1)
        return loss


def use_reinforce(config: Any) -> Any:
    """``config`` (a PPOConfig whose ``learner_config_dict`` has ``reinforce``) set up for
    REINFORCE with per-sequence baselines; ValueError on bad settings."""
    _settings(config)
    if not isinstance(config, PPOConfig):
        raise ValueError(
            f"learner_config_dict.{REINFORCE_KEY} runs inside PPO's loop: set algorithm.name: PPO"
        )
    if config.num_envs_per_env_runner != 1:
        # With several sub-environments, sample(num_episodes=E) keeps the first E episodes
        # to end: the short ones. A group of them is not E plays of the sequence, and its
        # baseline and gradient would lean towards short episodes.
        raise ValueError(
            f"learner_config_dict.{REINFORCE_KEY} plays each sequence E times one episode "
            f"at a time: set resources.num_envs_per_env_runner to 1 (got "
            f"{config.num_envs_per_env_runner}); add env runners for more samples"
        )
    config = config.learners(learner_class=ReinforceTorchLearner)
    config = config.env_runners(
        env_runner_cls=SequenceGroupEnvRunner, batch_mode="complete_episodes"
    )
    # PPO's KL penalty would look for the KL its loss logs; this loss has none.
    return config.training(use_kl_loss=False)
