"""The single-agent base: what every Gymnasium formulation does the same way.

Each environment has a frozen config dataclass with a ``from_dict`` constructor;
:class:`ConfiguredEnv` turns "a config, a mapping of its fields, or nothing, plus keyword
overrides" into one validated config, checks the render mode, and picks each episode's
jobs (reset option, constructor list, or a fresh draw from ``self.np_random``) with the
same messages everywhere. :func:`parse_discrete_action` checks a scalar discrete action.

Each formulation also declares what the rest of the product needs, as attributes of its
environment class: :attr:`ConfiguredEnv.baselines` (its paper's heuristics),
:attr:`ConfiguredEnv.simulated_baselines` (those that run as whole simulations instead of
through the agent's actions), :attr:`ConfiguredEnv.summary_metrics` (the headline numbers
of its summary), :attr:`ConfiguredEnv.fair_when_truncated` (whether a truncated episode's
summary still counts), :meth:`ConfiguredEnv.run_baselines`, one signature for all, and
:meth:`ConfiguredEnv.sweep_choices` (the config fields a sweep varies; the multi-agent
environment declares the same), so ``tune/`` and ``platform/`` look them up
(:func:`envs.registry.formulation`, :func:`envs.registry.environment_class`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import gymnasium
import numpy as np

from envs.command import BaselineCommand
from envs.validation import override_fields

Config = TypeVar("Config")


def resolve_config(
    cls: type[Config], config: Config | Mapping[str, Any] | None, label: str, **params: Any
) -> Config:
    """A ``cls`` from a ``cls``, a mapping of its fields or None (defaults), then overrides."""
    if config is None:
        config = cls()
    elif isinstance(config, Mapping):
        config = cls.from_dict(config)  # type: ignore[attr-defined]
    elif not isinstance(config, cls):
        raise ValueError(
            f"config must be a {cls.__name__} or a mapping of its fields, "
            f"got {type(config).__name__}"
        )
    return override_fields(config, label, **params) if params else config


def parse_discrete_action(action: object, num_actions: int, last_means: str) -> int:
    """The action as an int in ``[0, num_actions)``; ValueError otherwise."""
    try:
        value = np.asarray(action)
        if value.shape not in ((), (1,)):
            raise TypeError
        choice = operator.index(value.reshape(()).item())
    except TypeError:
        raise ValueError(
            f"action must be one integer in [0, {num_actions - 1}], got {action!r}"
        ) from None
    if not 0 <= choice < num_actions:
        raise ValueError(f"action must be in [0, {num_actions - 1}] ({last_means}), got {choice}")
    return choice


#: What a formulation's core says when it is stepped after its episode ended.
EPISODE_OVER = "the episode is over; call reset() before step()"


class MaskedCore(Protocol):
    """A formulation's dynamics with one discrete action and a mask of the legal ones."""

    over: bool
    steps: int

    def action_mask(self) -> np.ndarray:
        """int8, 1 where an action is legal now."""
        ...


def begin_step(core: MaskedCore, action: int) -> tuple[np.ndarray, dict[str, Any]]:
    """How a masked core's step starts: refuse an ended episode, count the step, and flag
    an action the mask forbids. Returns the mask and the step's details so far."""
    if core.over:
        raise RuntimeError(EPISODE_OVER)
    core.steps += 1
    mask = core.action_mask()
    return mask, {"invalid_action": not bool(mask[action])}


def scalar_metrics(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of a summary (per-job records and the seed stay out): what tables compare."""
    return {
        key: value
        for key, value in summary.items()
        if key != "seed"
        and (value is None or (isinstance(value, int | float) and not isinstance(value, bool)))
    }


def checked_render_mode(env_class: str, render_mode: str | None, allowed: list[str]) -> str | None:
    """``render_mode`` if ``None`` or one of ``allowed`` (the env's metadata), else raise."""
    if render_mode is None or render_mode in allowed:
        return render_mode
    if not allowed:
        raise ValueError(
            f"{env_class} has no render modes; render_mode must be None, got {render_mode!r}"
        )
    raise ValueError(f"render_mode must be None or one of {allowed}, got {render_mode!r}")


class ConfiguredEnv(gymnasium.Env):  # type: ignore[type-arg]
    """The construction every single-agent formulation shares.

    ``Env(config=None, *, jobs=None, render_mode=None, **params)``: the settings as a
    :attr:`config_class` instance, a mapping, or keywords (:func:`resolve_config`), a
    render mode from ``metadata["render_modes"]``, and optionally an explicit job list
    every episode replays. A subclass names its config class and label, its job-list
    parser and generator (:attr:`jobs_parser`, :attr:`jobs_generator`, or overrides of
    :meth:`_parse_jobs` and :meth:`_generate_jobs`), and builds its spaces and core in
    :meth:`_setup`.
    """

    #: Gymnasium's metadata; a formulation that renders names its modes here.
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012
    config_class: type
    label: str
    #: The keys ``reset(options=...)`` accepts.
    reset_options: tuple[str, ...] = ("jobs",)
    #: The paper's baselines that :meth:`run_baselines` plays, in the paper's order.
    baselines: tuple[str, ...] = ()
    #: The baselines that decide outside the agent's action space (preemption, reassigning
    #: GPUs...), so they run as whole simulations of the episode's job set.
    simulated_baselines: tuple[str, ...] = ()
    #: The headline numbers of :meth:`summary`, in the order a table shows them.
    summary_metrics: tuple[str, ...] = ()
    #: The :meth:`summary` metric, lower is better, that ranks the baselines and compares the
    #: learned policy with the best of them (the paper's headline: JCT, slowdown, NTAT).
    ranking_metric: str = "avg_jct"
    #: Whether :meth:`summary` judges a truncated episode fairly, so its numbers count next
    #: to those of complete episodes (else only ``episode_return`` and ``truncated`` do).
    fair_when_truncated: bool = False
    #: Its baselines on the command line (``platform/paper_baselines.py``), or None.
    command: BaselineCommand | None = None
    #: ``parser(jobs, config)``: the formulation's job list from an explicit one (a
    #: ``staticmethod`` of the subclass).
    jobs_parser: Callable[[object, Any], Any]
    #: ``generator(config, rng)``: a fresh job list drawn with ``rng`` (a ``staticmethod``).
    jobs_generator: Callable[[Any, np.random.Generator], Any]

    def __init__(
        self,
        config: Any = None,
        *,
        jobs: object = None,
        render_mode: str | None = None,
        **params: Any,
    ) -> None:
        self.config = resolve_config(self.config_class, config, self.label, **params)
        self.render_mode = checked_render_mode(
            type(self).__name__, render_mode, self.metadata["render_modes"]
        )
        self._setup()
        self._jobs = None if jobs is None else self._parse_jobs(jobs)

    @classmethod
    def sweep_choices(cls, config: Mapping[str, Any]) -> dict[str, list[Any]]:
        """The config fields a hyperparameter sweep varies, each with its choices, for an
        experiment whose config is ``config``: none unless a formulation says."""
        return {}

    def _setup(self) -> None:
        """Build the action and observation spaces and the formulation's core."""
        raise NotImplementedError

    def _parse_jobs(self, jobs: object) -> Any:
        """The formulation's job list from ``jobs`` (raises on a malformed one)."""
        return self.jobs_parser(jobs, self.config)

    def _generate_jobs(self) -> Any:
        """A fresh job list drawn with ``self.np_random``."""
        return self.jobs_generator(self.config, self.np_random)

    def draw_jobs(self, rng: np.random.Generator) -> Any:
        """A fresh job list of this formulation drawn with ``rng`` (not the environment's
        own generator, so that a trainer can draw sequences reproducibly before a reset)."""
        return self.jobs_generator(self.config, rng)

    def hold_jobs(self, jobs: Any) -> None:
        """Replay ``jobs`` (from :meth:`draw_jobs` or the job-list parser) in every later
        episode, as the constructor's ``jobs`` do; None draws a fresh list per episode again.
        Monte-Carlo baselines play one sequence several times (:mod:`tune.reinforce`)."""
        self._jobs = jobs

    def _episode_jobs(self, seed: int | None, options: dict[str, Any] | None) -> Any:
        """Seed (if given) and pick this episode's jobs.

        ``options={"jobs": ...}`` replays an explicit list for this episode only; else the
        constructor's ``jobs``; else a fresh list from ``self.np_random``. Unknown options
        raise ValueError.
        """
        gymnasium.Env.reset(self, seed=seed)
        options = options or {}
        unknown = sorted(map(str, set(options) - set(self.reset_options)))
        if unknown:
            raise ValueError(
                f"unknown reset option(s) {', '.join(unknown)}; "
                f"known: {', '.join(self.reset_options)}"
            )
        if options.get("jobs") is not None:
            return self._parse_jobs(options["jobs"])
        if self._jobs is not None:
            return self._jobs
        return self._generate_jobs()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Seed (if given), pick this episode's jobs, run to the first decision.

        ``options={"jobs": ...}`` replays an explicit list for this episode only; else the
        constructor's ``jobs``; else a fresh list from ``self.np_random``.
        """
        self._start(self._episode_jobs(seed, options))
        observation = self._observe()
        return observation, self._info(observation)

    def _start(self, jobs: Any) -> None:
        """Start the core on this episode's ``jobs``."""
        self.core.reset(jobs)  # type: ignore[attr-defined]

    def _observe(self) -> Any:
        """The observation of the current state."""
        raise NotImplementedError

    def _info(self, observation: Any) -> dict[str, Any]:
        """The info dict that goes with ``observation``."""
        return {}

    def _step_discrete(
        self, action: object, last_means: str
    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``step`` of a formulation whose core takes one discrete action of
        ``config.num_actions`` (a :class:`MaskedCore`): check it (``last_means``, what the
        last action does, goes into the message of a bad one), step the core, and return
        the transition."""
        choice = parse_discrete_action(action, self.config.num_actions, last_means)
        return self._transition(*self.core.step(choice))  # type: ignore[attr-defined]

    def _transition(
        self, reward: float, terminated: bool, truncated: bool, details: dict[str, Any]
    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """What ``step`` returns after the core moved: the observation, the reward, the ends
        and the info (:meth:`_info`, ``details``, and the episode summary at the end)."""
        observation = self._observe()
        info = self._info(observation)
        info.update(details)
        if terminated or truncated:
            info["episode"] = self.summary()
        return observation, float(reward), terminated, truncated, info

    def summary(self) -> dict[str, Any]:
        """The episode so far, as the formulation's core reports it."""
        return self.core.summary()  # type: ignore[attr-defined,no-any-return]

    def baseline_action(self, policy: str) -> Any:
        """Baseline ``policy``'s action in the current state (step-by-step baselines)."""
        raise NotImplementedError(f"{type(self).__name__} has no step-by-step baselines")

    @classmethod
    def check_baselines(cls, policies: Sequence[str] | None = None) -> tuple[str, ...]:
        """``policies`` (every one of :attr:`baselines` when None); ValueError naming any
        this formulation does not know."""
        names = cls.baselines if policies is None else tuple(policies)
        unknown = [name for name in names if name not in cls.baselines]
        if unknown:
            raise ValueError(
                f"unknown baseline(s) {', '.join(unknown)} for {cls.label}; "
                f"known: {', '.join(cls.baselines)}"
            )
        return names

    @classmethod
    def run_baselines(
        cls,
        seeds: Sequence[int],
        policies: Sequence[str] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """``{policy: [metrics of the episode of each seed]}`` for the baselines
        ``policies`` (all when None) on the environment ``config`` (a mapping of its fields).

        Every policy plays the job set ``reset(seed=seed)`` draws, so baselines and a learned
        policy face identical episodes. An episode's metrics: ``episode_return`` (NaN where a
        simulated baseline earns no RL reward), ``truncated`` (1.0 when the step cap ended
        it) and the numbers of the formulation's summary.
        """
        names = cls.check_baselines(policies)
        settings = dict(config or {})
        return {
            name: [
                cls._simulated_episode(name, seed, settings)
                if name in cls.simulated_baselines
                else cls._played_episode(name, seed, settings)
                for seed in seeds
            ]
            for name in names
        }

    @classmethod
    def _played_episode(cls, policy: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
        """One episode of ``policy`` through :meth:`baseline_action`, step by step."""
        env = cls(**config)
        try:
            env.reset(seed=seed)
            episode_return, done, truncated = 0.0, False, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.baseline_action(policy))
                episode_return += float(reward)
                done = terminated or truncated
            summary = env.summary()
        finally:
            env.close()
        metrics: dict[str, Any] = {"episode_return": episode_return, "truncated": float(truncated)}
        metrics.update(scalar_metrics(summary))
        return metrics

    @classmethod
    def _simulated_episode(cls, policy: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
        """One whole simulation of ``policy`` over the job set ``reset(seed=seed)`` draws."""
        raise NotImplementedError(f"{cls.__name__} runs no baseline as a whole simulation")
