"""Register podsched's environments with RLlib, under their own names.

``register_rllib_env("pod_scheduling_v0")`` lets an AlgorithmConfig say
``.environment("pod_scheduling_v0", env_config={...})``: the env_config dict is the
environment's keyword configuration. Multi-agent (PettingZoo) environments are wrapped in
RLlib's ``ParallelPettingZooEnv``. The process that restores a checkpoint must register
again before it builds the algorithm (RLlib looks environments up by name).
"""

from __future__ import annotations

from typing import Any

from envs import make_env
from envs.registry import MULTI_AGENT_ENVIRONMENTS


def rllib_env_creator(name: str) -> Any:
    """The creator RLlib calls with an ``env_config`` dict."""

    def create(env_config: dict[str, Any]) -> Any:
        environment = make_env(name, **dict(env_config))
        if name in MULTI_AGENT_ENVIRONMENTS:
            from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

            return ParallelPettingZooEnv(environment)
        return environment

    return create


def register_rllib_env(name: str) -> str:
    """Register ``name`` with Ray Tune's registry; returns the name."""
    from ray.tune.registry import register_env

    register_env(name, rllib_env_creator(name))
    return name
