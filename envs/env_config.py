"""What every single-agent environment does with its config and its discrete actions.

Each environment has a frozen config dataclass with a ``from_dict`` constructor; these
helpers turn "a config, a mapping of its fields, or nothing, plus keyword overrides"
into one validated config, and check a scalar discrete action, with the same messages
everywhere.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, TypeVar

import gymnasium
import numpy as np

Config = TypeVar("Config")


def override_fields(config: Config, label: str, **params: Any) -> Config:
    """``config`` with some fields replaced (ValueError naming unknown ones)."""
    known = {field.name for field in fields(config)}  # type: ignore[arg-type]
    unknown = sorted(set(map(str, params)) - known)
    if unknown:
        raise ValueError(
            f"unknown {label} parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return replace(config, **params)  # type: ignore[type-var]


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

    config_class: type
    label: str

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
