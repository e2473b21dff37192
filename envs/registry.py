"""Environments by name: ``envs.make_env("pod_scheduling_v0", topology="vl2", ...)``.

PettingZoo environments are constructed from their keyword configuration; Gymnasium
single-agent environments registered under ``podsched/...`` go through
``gymnasium.make``.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> "module:constructor"; imported on demand so `import envs` stays light.
MULTI_AGENT_ENVIRONMENTS: dict[str, str] = {
    "pod_scheduling_v0": "envs.pod_env:PodSchedulingEnv",
}


def environment_names() -> list[str]:
    """Every name :func:`make_env` accepts."""
    import gymnasium

    from envs.registration import register_envs

    register_envs()
    single = sorted(name for name in gymnasium.registry if name.startswith("podsched/"))
    return [*sorted(MULTI_AGENT_ENVIRONMENTS), *single]


def make_env(name: str, **config: Any) -> Any:
    """A new environment ``name`` built from keyword ``config``."""
    target = MULTI_AGENT_ENVIRONMENTS.get(name)
    if target is not None:
        module_name, constructor = target.split(":")
        return getattr(importlib.import_module(module_name), constructor)(**config)
    if name.startswith("podsched/"):
        import gymnasium

        from envs.registration import register_envs

        register_envs()
        if name in gymnasium.registry:
            return gymnasium.make(name, **config)
    raise ValueError(f"unknown environment {name!r}; known: {', '.join(environment_names())}")
