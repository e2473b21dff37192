"""Simulated GPU clusters: topologies, workloads, simulator, schedulers, RL environments.

``make_env(name, **config)`` builds any environment by name (see :mod:`envs.registry`);
importing the package registers the Gymnasium ids, so
``gymnasium.make("podsched/DeepRM-v0")`` works right after ``import envs``.
"""

from envs.registry import environment_names, make_env, register_envs

register_envs()

__all__ = ["environment_names", "make_env", "register_envs"]
