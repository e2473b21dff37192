"""Every environment by name: the one table of ids, and ``make_env``.

``envs.make_env("pod_scheduling_v0", topology="vl2", ...)`` builds any of them. PettingZoo
environments are constructed from their keyword configuration; the Gymnasium
single-agent environments (ids in the ``podsched/`` namespace) go through
``gymnasium.make``, and ``import envs`` registers them (:func:`register_envs`, idempotent),
so ``gymnasium.make("podsched/DeepRM-v0")`` works right after the import. The environments
truncate episodes themselves (``max_episode_steps`` in their configs), so no ``TimeLimit``
wrapper is added. Entry points are imported on demand, so ``import envs`` stays light.

:func:`formulation` looks up a single-agent formulation's environment class, which declares
what the rest of the product needs (its baselines, summary metrics, ``run_baselines``; see
:class:`envs.base.ConfiguredEnv`); :func:`formulation_ids` names them by package;
:func:`environment_class` looks up any environment's class (``sweep_choices``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import gymnasium

if TYPE_CHECKING:
    from envs.base import ConfiguredEnv

#: The namespace of podsched's Gymnasium ids.
GYMNASIUM_NAMESPACE = "podsched/"

#: id -> "module:class" of every environment podsched provides.
ENVIRONMENTS: dict[str, str] = {
    "pod_scheduling_v0": "envs.pod.env:PodSchedulingEnv",
    "podsched/DeepRM-v0": "envs.deeprm.env:DeepRMEnv",
    "podsched/CuSH-v0": "envs.cush.env:CuSHEnv",
    "podsched/SCED2-v0": "envs.sced2.env:Sced2Env",
    "podsched/Contention-v0": "envs.contention.env:ContentionEnv",
    "podsched/RLTAPS-v0": "envs.rltaps.env:RLTapsEnv",
}

#: The PettingZoo (multi-agent) part of :data:`ENVIRONMENTS`.
MULTI_AGENT_ENVIRONMENTS: dict[str, str] = {
    name: target
    for name, target in ENVIRONMENTS.items()
    if not name.startswith(GYMNASIUM_NAMESPACE)
}

#: The Gymnasium (single-agent) part of :data:`ENVIRONMENTS`.
SINGLE_AGENT_ENVIRONMENTS: dict[str, str] = {
    name: target for name, target in ENVIRONMENTS.items() if name.startswith(GYMNASIUM_NAMESPACE)
}


def register_envs() -> list[str]:
    """Register every Gymnasium environment not registered yet; return all their ids."""
    for env_id, entry_point in SINGLE_AGENT_ENVIRONMENTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)
    return list(SINGLE_AGENT_ENVIRONMENTS)


def environment_names() -> list[str]:
    """Every name :func:`make_env` accepts."""
    register_envs()
    single = sorted(name for name in gymnasium.registry if name.startswith(GYMNASIUM_NAMESPACE))
    return [*sorted(MULTI_AGENT_ENVIRONMENTS), *single]


def formulation_ids() -> dict[str, str]:
    """Every single-agent formulation's short name (its package: ``deeprm``, ``cush``, ...)
    -> its Gymnasium id."""
    return {
        target.split(":")[0].split(".")[1]: env_id
        for env_id, target in SINGLE_AGENT_ENVIRONMENTS.items()
    }


def _imported(target: str) -> Any:
    """The class a ``"module:class"`` entry of :data:`ENVIRONMENTS` names."""
    module_name, constructor = target.split(":")
    return getattr(importlib.import_module(module_name), constructor)


def formulation(name: str) -> type[ConfiguredEnv]:
    """The environment class of the single-agent formulation ``name`` (its Gymnasium id or
    short name): a :class:`envs.base.ConfiguredEnv` with ``baselines``,
    ``simulated_baselines``, ``summary_metrics``, ``fair_when_truncated``,
    ``run_baselines`` and ``sweep_choices``."""
    target = SINGLE_AGENT_ENVIRONMENTS.get(formulation_ids().get(name, name))
    if target is None:
        known = ", ".join(SINGLE_AGENT_ENVIRONMENTS)
        raise ValueError(f"no single-agent baselines for environment {name!r}; known: {known}")
    environment: type[ConfiguredEnv] = _imported(target)
    return environment


def environment_class(name: str) -> Any:
    """The class of any environment of :data:`ENVIRONMENTS` (multi- or single-agent), for
    what every one declares: ``sweep_choices(config)``, the config fields a sweep varies."""
    target = ENVIRONMENTS.get(name)
    if target is None:
        raise ValueError(f"unknown environment {name!r}; known: {', '.join(ENVIRONMENTS)}")
    return _imported(target)


def make_env(name: str, **config: Any) -> Any:
    """A new environment ``name`` built from keyword ``config``."""
    target = MULTI_AGENT_ENVIRONMENTS.get(name)
    if target is not None:
        return _imported(target)(**config)
    if name.startswith(GYMNASIUM_NAMESPACE):
        register_envs()
        if name in gymnasium.registry:
            return gymnasium.make(name, **config)
    raise ValueError(f"unknown environment {name!r}; known: {', '.join(environment_names())}")
