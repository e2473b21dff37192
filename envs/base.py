"""The single-agent base: what every Gymnasium formulation does the same way.

Each environment has a frozen config dataclass with a ``from_dict`` constructor;
:class:`ConfiguredEnv` turns "a config, a mapping of its fields, or nothing, plus keyword
overrides" into one validated config, checks the render mode, and picks each episode's
jobs (reset option, constructor list, or a fresh draw from ``self.np_random``) with the
same messages everywhere. :func:`parse_discrete_action` checks a scalar discrete action.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, TypeVar

import gymnasium
import numpy as np

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
    every episode replays. A subclass names its config class and label, builds its spaces
    and core in :meth:`_setup`, and parses job lists in :meth:`_parse_jobs`.
    """

    #: Gymnasium's metadata; a formulation that renders names its modes here.
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012
    config_class: type
    label: str
    #: The keys ``reset(options=...)`` accepts.
    reset_options: tuple[str, ...] = ("jobs",)

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

    def _setup(self) -> None:
        """Build the action and observation spaces and the formulation's core."""
        raise NotImplementedError

    def _parse_jobs(self, jobs: object) -> Any:
        """The formulation's job list from ``jobs`` (raises on a malformed one)."""
        raise NotImplementedError

    def _generate_jobs(self) -> Any:
        """A fresh job list drawn with ``self.np_random``."""
        raise NotImplementedError

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
