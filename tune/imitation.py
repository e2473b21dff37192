"""Imitation warm start: behaviour cloning of a heuristic before RL (issue 12).

A PPO policy that starts from random weights spreads jobs over the fabric for a long
time; the heuristics of :mod:`envs.schedulers` do not. :class:`envs.pod.heuristic.
HeuristicPodPolicy` turns any of them into every agent's actions in ``pod_scheduling_v0``,
so the experiment's RLModule can first be trained supervised on what the heuristic does:

1. :func:`record_trajectories` plays the heuristic on *training* seeds (the config's
   ``warm_start`` seed range, never ``evaluation.seeds``) and keeps every agent's
   observation and action at every step, with each agent's discounted return of the
   environment's reward (the algorithm's ``gamma``; with ``credit: job`` the re-attributed
   rewards PPO learns from) for the critic, and whether that return is *censored*: an
   episode the environment truncated (``horizon_intervals``) rather than terminated is
   cut off, not over, and its recorded return stops at the horizon where PPO's (GAE's)
   would go on with the critic's value of the last observation.
2. :func:`pretrain` fits the module: masked cross-entropy of the actor's logits against
   the heuristic's actions, over the steps where the agent had a choice (a step with one
   legal action -- an idle agent that can only wait -- says nothing about the policy), plus
   ``value_weight`` times the critic's mean squared error on every step whose return is
   complete, measured in units of those returns' standard deviation so the weight means
   the same whatever the reward's scale (the critic still predicts raw returns, as PPO's
   value targets are raw; its output bias starts at their mean, :func:`centre_critic`).
   The steps of truncated episodes teach the actor but are left out of everything the
   critic is fitted and measured on (the report counts them); when every step is
   censored the critic is not fitted at all, and the log says so.
3. :func:`warm_start` does both for an :class:`~tune.experiment.ExperimentConfig`, reports
   the imitation accuracy on held-out recorded episodes and saves the module with
   ``save_to_path``; :func:`tune.rllib_config.algorithm_config` hands that folder to RLlib
   as the module spec's ``load_state_path``, so learner and env runners start from it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from envs.discounting import discounted_sums as discounted_returns  # per agent, axis 0
from tune.episode_tasks import play_episodes
from tune.experiment import LOCAL_EPISODES, ConfigError, ExperimentConfig


@dataclasses.dataclass
class Trajectories:
    """Recorded agent steps, flattened over episodes, steps and agents (``N`` rows).

    ``observations``: key -> array ``[N, ...]`` (the environment's dtypes); ``actions``:
    the heuristic's action ``[N]``; ``returns``: the agent's discounted return from that
    step ``[N]``; ``episodes``: the seed of the episode each row comes from ``[N]``;
    ``decided``: whether rollouts decided the row's action (an improved teacher's hold
    candidates, held or not; all False for a plain heuristic) ``[N]``; ``censored``:
    whether the row's episode was truncated (at ``horizon_intervals``) instead of
    terminated, so that ``returns`` stops at the horizon instead of at the episode's end
    ``[N]`` (the critic is fitted on the other rows only: :attr:`complete`).
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray
    returns: np.ndarray
    episodes: np.ndarray
    decided: np.ndarray
    censored: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def complete(self) -> np.ndarray:
        """Rows whose return runs to the episode's end: the critic's targets."""
        return ~self.censored

    def select(self, rows: np.ndarray) -> Trajectories:
        """The rows ``rows`` (indices or a boolean mask) of every field."""
        return Trajectories(
            **{
                field.name: (
                    {key: value[rows] for key, value in self.observations.items()}
                    if field.name == "observations"
                    else getattr(self, field.name)[rows]
                )
                for field in dataclasses.fields(self)
            }
        )

    @property
    def legal_actions(self) -> np.ndarray:
        """How many actions were legal at each row."""
        return self.observations["action_mask"].astype(np.int64).sum(axis=-1)

    @property
    def informative(self) -> np.ndarray:
        """Rows where the agent had a choice (more than one legal action)."""
        return self.legal_actions > 1


@dataclasses.dataclass(frozen=True)
class ImitationReport:
    """What pretraining reached. Accuracies are over held-out rows with a choice."""

    heuristic: str
    train_steps: int
    train_informative: int
    heldout_steps: int
    heldout_informative: int
    epochs: int
    actor_loss: float
    critic_loss: float
    heldout_actor_loss: float
    heldout_critic_loss: float
    accuracy: float
    train_accuracy: float
    random_accuracy: float
    return_scale: float
    departures: int = 0
    departure_accuracy: float | None = None  # None without departures
    decided: int = 0
    decided_accuracy: float | None = None  # None without rows rollouts decided
    # Rows left out of the critic's fit (and of its losses above): their episode was
    # truncated, so their return is censored. With every training row censored the critic
    # is not fitted and its losses and the return scale are NaN.
    censored: int = 0
    heldout_censored: int = 0

    @property
    def critic_measured(self) -> bool:
        """Whether any training row had a complete return (to fit the critic on)."""
        return self.censored < self.train_steps

    def summary(self) -> str:
        """One line for logs."""
        return (
            f"warm start ({self.heuristic}): imitation accuracy {self.accuracy:.3f} on "
            f"{self.heldout_informative} held-out choices (train {self.train_accuracy:.3f}, "
            f"random legal action {self.random_accuracy:.3f}); cross-entropy "
            f"{self.heldout_actor_loss:.4f}, "
            + (
                "critic not fitted"
                if not self.critic_measured
                else "critic fitted, not measured: every held-out episode was truncated"
                if self.heldout_censored >= self.heldout_steps
                else f"critic MSE {self.heldout_critic_loss:.4f} "
                f"(in units of the return std {self.return_scale:.2f})"
            )
            + (
                f"; {self.censored} of {self.train_steps} training rows "
                f"({self.heldout_censored} of {self.heldout_steps} held out) left out of the "
                "critic's fit: their episode was truncated, their return censored"
                if self.censored or self.heldout_censored
                else ""
            )
            + (
                f"; {self.decided_accuracy:.3f} on the {self.decided} held-out choices "
                "rollouts decided"
                if self.decided
                else ""
            )
            + (
                f"; {self.departure_accuracy:.3f} on the {self.departures} held-out choices "
                "where the teacher departs from the advice"
                if self.departures
                else ""
            )
        )


def record_trajectories(
    env_name: str,
    env_config: dict[str, Any],
    heuristic: str,
    seeds: list[int],
    gamma: float,
    improve: str | None = None,
    local_episodes: int = LOCAL_EPISODES,
) -> Trajectories:
    """Play ``heuristic`` on one episode per seed (as :func:`tune.evaluation.multi_agent.
    run_episode` does) and record every live agent's observation and action per step.

    ``improve`` ("hold" or "hold-first", :data:`envs.pod.rollouts.IMPROVEMENTS`) plays
    the heuristic improved by rollouts at its hold candidates
    (:class:`envs.pod.rollouts.HoldImprovedPolicy`) instead. Episodes run as Ray tasks
    (one CPU each) when Ray is up and there are more than ``local_episodes``, in this
    process otherwise (:func:`tune.episode_tasks.play_episodes`).
    """
    calls = [(env_name, env_config, heuristic, seed, gamma, improve) for seed in seeds]
    episodes = play_episodes(record_episode, calls, local_episodes)
    episodes = [episode for episode in episodes if len(episode.actions)]
    if not episodes:
        raise ValueError(f"no agent steps recorded for seeds {seeds}")
    keys = episodes[0].observations.keys()
    return Trajectories(
        observations={
            key: np.concatenate([episode.observations[key] for episode in episodes]) for key in keys
        },
        actions=np.concatenate([episode.actions for episode in episodes]),
        returns=np.concatenate([episode.returns for episode in episodes]),
        episodes=np.concatenate([episode.episodes for episode in episodes]),
        decided=np.concatenate([episode.decided for episode in episodes]),
        censored=np.concatenate([episode.censored for episode in episodes]),
    )


def record_episode(
    env_name: str,
    env_config: dict[str, Any],
    heuristic: str,
    seed: int,
    gamma: float,
    improve: str | None = None,
    local_episodes: int = LOCAL_EPISODES,
) -> Trajectories:
    """One episode of :func:`record_trajectories` (possibly empty)."""
    from envs import make_env
    from envs.pod.credit import CREDITED_REWARDS
    from envs.pod.heuristic import HeuristicPodPolicy
    from envs.pod.rollouts import IMPROVEMENTS, HoldImprovedPolicy

    env = make_env(env_name, **env_config)
    observations, _ = env.reset(seed=seed)
    driver = (
        HoldImprovedPolicy(env, heuristic, seed=seed, rule=IMPROVEMENTS[improve])
        if improve is not None
        else HeuristicPodPolicy(env, heuristic, seed=seed)
    )
    # Per step: (agent, observation, action) of every agent that acted, and the rewards.
    steps: list[list[tuple[str, dict[str, np.ndarray], int]]] = []
    rewards: list[list[float]] = []
    infos: dict[str, dict[str, Any]] = {}
    decided: list[bool] = []
    terminations: dict[str, bool] = {}
    truncations: dict[str, bool] = {}
    while env.agents:
        chosen = driver.actions()
        steps.append([(agent, observations[agent], chosen[agent]) for agent in chosen])
        by_rollouts = driver.decided if isinstance(driver, HoldImprovedPolicy) else ()
        decided.extend(agent in by_rollouts for agent in chosen)
        observations, reward, terminations, truncations, infos = env.step(chosen)
        rewards.append([float(reward[agent]) for agent in env.possible_agents])
    # An episode cut at the horizon (truncated, not terminated; the environment flags
    # every agent alike) has returns that stop there: PPO would bootstrap them with the
    # critic, so they are no targets for it.
    cut = any(truncations.values()) and not any(terminations.values())
    # With per-job credit PPO learns from the re-attributed rewards; so does the critic.
    if CREDITED_REWARDS in infos.get(env.possible_agents[0], {}):
        rewards = np.stack([infos[agent][CREDITED_REWARDS] for agent in env.possible_agents], 1)
    episode_returns = discounted_returns(np.asarray(rewards), gamma)
    index = {agent: i for i, agent in enumerate(env.possible_agents)}
    rows = [observation for acted in steps for _, observation, _ in acted]
    space = env.observation_space(env.possible_agents[0])
    return Trajectories(
        observations={
            key: np.stack([row[key] for row in rows])
            if rows
            else np.zeros((0, *space[key].shape), space[key].dtype)
            for key in space
        },
        actions=np.asarray([action for acted in steps for _, _, action in acted], np.int64),
        returns=np.asarray(
            [
                episode_returns[step, index[agent]]
                for step, acted in enumerate(steps)
                for agent, _, _ in acted
            ],
            np.float64,
        ),
        episodes=np.full(len(rows), seed, dtype=np.int64),
        decided=np.asarray(decided, dtype=bool),
        censored=np.full(len(rows), cut, dtype=bool),
    )


def build_module(experiment: ExperimentConfig) -> Any:
    """The RLModule exactly as RLlib builds it for ``experiment`` (one agent's spaces:
    every agent of the multi-agent environment has the same ones)."""
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from envs import make_env
    from models.registry import module_class

    env = make_env(experiment.environment.name, **experiment.environment.config)
    agent = env.possible_agents[0]
    spec = RLModuleSpec(
        module_class=module_class(experiment.model.name),
        observation_space=env.observation_space(agent),
        action_space=env.action_space(agent),
        model_config=dict(experiment.model.config),
    )
    return spec.build()


def masked_cross_entropy(
    logits: Any,
    actions: Any,
    action_mask: Any,
    confidence: float = 1.0,
    explore: str = "legal",
    weights: Any = None,
) -> tuple[Any, Any]:
    """Mean cross-entropy of ``logits`` [B, A] (already masked) against ``actions`` [B]
    over the rows with more than one legal action, and that row selection [B] (bool).

    A row with a single legal action gives the same (zero) loss whatever the network
    does, but it would still dilute the mean; with no such rows the loss is 0. With
    ``confidence`` c < 1 the target is c on the teacher's action and 1 - c on the
    alternatives ``explore`` names (the clone then keeps that much probability off the
    teacher's choice, for PPO to explore): "legal", shared evenly by the row's other legal
    actions; "wait", all on the wait action (the last one), on rows where it is legal and
    not the teacher's (the others keep the whole target on the teacher's action). Masked
    actions always get 0. ``weights`` [B] (default all 1) make the mean a weighted one.
    """
    import torch

    informative = action_mask.sum(dim=-1) > 1
    if not bool(informative.any()):
        return logits.sum() * 0.0, informative
    log_probabilities = torch.log_softmax(logits[informative], dim=-1)
    taught = actions[informative]
    chosen = log_probabilities.gather(-1, taught.unsqueeze(-1)).squeeze(-1)
    legal = (action_mask[informative] > 0).float()
    if confidence >= 1.0:
        target = chosen
    elif explore == "wait":
        wait = logits.shape[-1] - 1
        held = (legal[:, wait] > 0) & (taught != wait)
        # Where waiting is no alternative the teacher's action takes the whole target.
        alternative = torch.where(held, log_probabilities[:, wait], chosen)
        target = confidence * chosen + (1.0 - confidence) * alternative
    else:
        others = legal.scatter(-1, taught.unsqueeze(-1), 0.0)
        # Legal log-probabilities only: a masked action's is about the float minimum.
        spread = (others * log_probabilities).sum(-1) / others.sum(-1)
        target = confidence * chosen + (1.0 - confidence) * spread
    if weights is None:
        return -target.mean(), informative
    kept = weights[informative].to(target.dtype)
    return -(kept * target).sum() / kept.sum(), informative


def _batch(trajectories: Trajectories, rows: np.ndarray) -> dict[str, Any]:
    import torch

    return {key: torch.as_tensor(value[rows]) for key, value in trajectories.observations.items()}


def _losses(
    module: Any,
    trajectories: Trajectories,
    rows: np.ndarray,
    scale: float,
    confidence: float = 1.0,
    explore: str = "legal",
    decision_weight: float = 1.0,
) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """Actor and critic losses on ``rows`` (the rows rollouts decided weighing
    ``decision_weight`` in the actor's, the others 1; the critic's the mean over the rows
    whose return is complete, 0 without any), the argmax action of each row and which rows
    had a choice."""
    import torch
    from ray.rllib.core.columns import Columns

    obs = _batch(trajectories, rows)
    out = module.forward_train({Columns.OBS: obs})
    logits = out[Columns.ACTION_DIST_INPUTS]
    actions = torch.as_tensor(trajectories.actions[rows])
    weights = None
    if decision_weight != 1.0:
        weights = torch.as_tensor(
            np.where(trajectories.decided[rows], decision_weight, 1.0), dtype=logits.dtype
        )
    actor, informative = masked_cross_entropy(
        logits, actions, obs["action_mask"], confidence, explore, weights
    )
    values = module.compute_values({Columns.OBS: obs}, out.get(Columns.EMBEDDINGS))
    complete = torch.as_tensor(trajectories.complete[rows])
    if bool(complete.any()):
        targets = torch.as_tensor(trajectories.returns[rows], dtype=values.dtype)
        critic = torch.mean(((values[complete] - targets[complete]) / scale) ** 2)
    else:
        critic = values.sum() * 0.0
    return actor, critic, logits.argmax(-1).numpy(), informative.numpy()


def departures(trajectories: Trajectories) -> np.ndarray:
    """Rows with a choice where the teacher did not take the advised action (all False
    without an ``advice`` observation): where a clone must read more than the advice."""
    advice = trajectories.observations.get("advice")
    if advice is None:
        return np.zeros(len(trajectories), dtype=bool)
    advised = advice.sum(axis=-1) > 0
    return trajectories.informative & advised & (advice.argmax(axis=-1) != trajectories.actions)


def evaluate_imitation(
    module: Any,
    trajectories: Trajectories,
    scale: float,
    minibatch_size: int = 512,
) -> dict[str, Any]:
    """Cross-entropy and argmax accuracy on the choices, critic MSE (in return stds) on
    the rows whose return is complete (NaN without any), and the accuracy on the
    :func:`departures` from the advice (None without any)."""
    import torch

    actor_sum = critic_sum = 0.0
    predicted = np.zeros(len(trajectories), dtype=np.int64)
    with torch.no_grad():
        for start in range(0, len(trajectories), minibatch_size):
            rows = np.arange(start, min(start + minibatch_size, len(trajectories)))
            actor, critic, argmax, informative = _losses(module, trajectories, rows, scale)
            actor_sum += float(actor) * int(informative.sum())
            critic_sum += float(critic) * int(trajectories.complete[rows].sum())
            predicted[rows] = argmax
    hits = predicted == trajectories.actions
    choices, departed = trajectories.informative, departures(trajectories)
    complete = int(trajectories.complete.sum())
    decided = trajectories.decided & choices
    return {
        "actor_loss": actor_sum / max(int(choices.sum()), 1),
        "critic_loss": critic_sum / complete if complete else float("nan"),
        "accuracy": float(hits[choices].mean()) if choices.any() else float("nan"),
        "informative": float(choices.sum()),
        "departure_accuracy": float(hits[departed].mean()) if departed.any() else None,
        "departures": float(departed.sum()),
        "decided_accuracy": float(hits[decided].mean()) if decided.any() else None,
        "decided": float(decided.sum()),
    }


def random_legal_accuracy(trajectories: Trajectories) -> float:
    """Expected accuracy of a uniformly random legal action over the rows with a choice."""
    legal = trajectories.legal_actions[trajectories.informative]
    return float(np.mean(1.0 / legal)) if len(legal) else float("nan")


def centre_critic(module: Any, trajectories: Trajectories, rows: int = 256) -> bool:
    """Shift the critic's output bias so its mean on the rows of ``trajectories`` whose
    return is complete is their mean return (a ``ValueError`` without such rows).

    Returns run to tens of reward units while a fresh critic outputs about 0, and Adam
    moves a bias by about ``lr`` per step: without this the whole warm start goes into
    the offset. The bias is found without knowing the network: it is the one-element
    parameter whose gradient of the mean value is exactly 1 (a last linear layer's bias).
    Returns whether one was found (if not, training has to learn the offset).
    """
    import torch
    from ray.rllib.core.columns import Columns

    complete = np.flatnonzero(trajectories.complete)
    if not len(complete):
        raise ValueError("no row with a complete return to centre the critic on")
    sample = complete[np.linspace(0, len(complete) - 1, min(rows, len(complete))).astype(int)]
    obs = _batch(trajectories, sample)
    module.zero_grad()
    mean_value = module.compute_values({Columns.OBS: obs}).mean()
    mean_value.backward()
    for parameter in module.parameters():
        grad = parameter.grad
        if parameter.numel() == 1 and grad is not None and abs(float(grad) - 1.0) < 1e-6:
            with torch.no_grad():
                parameter += float(np.mean(trajectories.returns[complete])) - float(mean_value)
            module.zero_grad()
            return True
    module.zero_grad()
    return False


def pretrain(
    module: Any,
    train: Trajectories,
    heldout: Trajectories,
    *,
    heuristic: str,
    epochs: int,
    lr: float,
    minibatch_size: int,
    value_weight: float,
    seed: int,
    lr_schedule: str = "constant",
    confidence: float = 1.0,
    explore: str = "legal",
    decision_weight: float = 1.0,
    log: Callable[[str], None] | None = None,
) -> ImitationReport:
    """Fit ``module`` to ``train`` (Adam, shuffled minibatches, ``epochs`` passes, the
    step size ``lr`` throughout or along a half cosine to 0 with ``lr_schedule="cosine"``;
    the actor's target puts ``confidence`` on the teacher's action and the rest where
    ``explore`` says, see :func:`masked_cross_entropy`); deterministic for a given
    ``seed``. The critic is fitted (and measured) on the rows whose return is complete
    only; with none, not at all (logged). Returns the report on ``heldout``."""
    import torch

    torch.manual_seed(seed)
    order_rng = np.random.default_rng(seed)
    complete = train.returns[train.complete]
    censored = len(train) - len(complete)
    fit_critic = len(complete) > 0
    scale = float(max(np.std(complete), 1e-6)) if fit_critic else float("nan")
    if log is not None and censored:
        log(
            f"warm start: {censored} of {len(train)} training rows come from episodes "
            "truncated at the horizon (horizon_intervals): their returns are censored, "
            + (
                "so the critic is fitted without them"
                if fit_critic
                else "so the critic is not fitted (only the actor is cloned)"
            )
        )
    if value_weight > 0 and fit_critic and not centre_critic(module, train) and log is not None:
        log(
            "warm start: no critic output bias found to centre on the mean return "
            f"({float(np.mean(complete)):.2f}); the fit has to learn the offset"
        )
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    steps = epochs * math.ceil(len(train) / minibatch_size)
    schedule = (
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
        if lr_schedule == "cosine"
        else None
    )
    module.train()
    for epoch in range(epochs):
        order = order_rng.permutation(len(train))
        for start in range(0, len(order), minibatch_size):
            rows = np.sort(order[start : start + minibatch_size])
            actor, critic, _, _ = _losses(
                module, train, rows, scale, confidence, explore, decision_weight
            )
            loss = actor + value_weight * critic if fit_critic else actor
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if schedule is not None:
                schedule.step()
        if log is not None:
            critic_mse = f", critic MSE {critic.item():.4f}" if fit_critic else ""
            log(
                f"warm start epoch {epoch + 1}/{epochs}: cross-entropy {actor.item():.4f}"
                f"{critic_mse} (last minibatch), lr now {optimizer.param_groups[0]['lr']:.3g}"
            )
    module.eval()
    on_train = evaluate_imitation(module, train, scale)
    on_heldout = evaluate_imitation(module, heldout, scale)
    return ImitationReport(
        heuristic=heuristic,
        train_steps=len(train),
        train_informative=int(train.informative.sum()),
        heldout_steps=len(heldout),
        heldout_informative=int(heldout.informative.sum()),
        epochs=epochs,
        actor_loss=on_train["actor_loss"],
        critic_loss=on_train["critic_loss"],
        heldout_actor_loss=on_heldout["actor_loss"],
        heldout_critic_loss=on_heldout["critic_loss"],
        accuracy=on_heldout["accuracy"],
        train_accuracy=on_train["accuracy"],
        random_accuracy=random_legal_accuracy(heldout),
        return_scale=scale,
        departures=int(on_heldout["departures"]),
        departure_accuracy=on_heldout["departure_accuracy"],
        decided=int(on_heldout["decided"]),
        decided_accuracy=on_heldout["decided_accuracy"],
        censored=censored,
        heldout_censored=int(heldout.censored.sum()),
    )


def warm_start(
    experiment: ExperimentConfig,
    directory: str | Path,
    log: Callable[[str], None] | None = None,
) -> tuple[str, ImitationReport]:
    """Record, pretrain and save the warm-start module of ``experiment`` under
    ``directory`` (``warm_start.restarts`` must be 1: see :func:`warm_start_clones`);
    returns the module's folder (for ``load_state_path``) and the report."""
    settings = experiment.warm_start
    if settings is not None and settings.restarts != 1:
        raise ConfigError(
            f"warm_start.restarts={settings.restarts}: train the clones with "
            "warm_start_clones and choose among them (tune.selection.choose_clone)"
        )
    [(path, report)] = warm_start_clones(experiment, directory, log)
    return path, report


def warm_start_clones(
    experiment: ExperimentConfig,
    directory: str | Path,
    log: Callable[[str], None] | None = None,
) -> list[tuple[str, ImitationReport]]:
    """Record the heuristic once, then fit ``warm_start.restarts`` modules to it (seeds
    ``seed``, ``seed + 1``, ...), saved in ``directory`` (one clone) or in
    ``directory/clone-<k>``; returns each clone's folder and report."""
    settings = experiment.warm_start
    if settings is None:
        raise ConfigError("the experiment has no warm_start section")
    env_name, env_config = experiment.environment.name, dict(experiment.environment.config)
    gamma = experiment.algorithm.gamma
    local = experiment.resources.local_episodes
    train = record_trajectories(
        env_name,
        env_config,
        settings.heuristic,
        settings.training_seeds,
        gamma,
        settings.improve,
        local,
    )
    heldout = record_trajectories(
        env_name,
        env_config,
        settings.heuristic,
        settings.heldout_seeds,
        gamma,
        settings.improve,
        local,
    )
    if log is not None:
        log(
            f"warm start: recorded {settings.heuristic}"
            f"{' improved by rollouts at its holds' if settings.improve else ''} on "
            f"{settings.episodes} episodes "
            f"({len(train)} agent steps, {int(train.informative.sum())} with a choice), "
            f"{settings.heldout_episodes} held out ({len(heldout)} steps)"
        )
    import torch

    clones = []
    for restart in range(settings.restarts):
        seed = settings.seed + restart
        torch.manual_seed(seed)
        module = build_module(experiment)
        report = pretrain(
            module,
            train,
            heldout,
            heuristic=settings.heuristic,
            epochs=settings.epochs,
            lr=settings.lr,
            lr_schedule=settings.lr_schedule,
            confidence=settings.confidence,
            explore=settings.explore,
            decision_weight=settings.decision_weight,
            minibatch_size=settings.minibatch_size,
            value_weight=settings.value_weight,
            seed=seed,
            log=log,
        )
        path = Path(directory).resolve()
        if settings.restarts > 1:
            path = path / f"clone-{restart}"
        path.mkdir(parents=True, exist_ok=True)
        module.save_to_path(str(path))
        if log is not None:
            log(report.summary())
        clones.append((str(path), report))
    return clones
