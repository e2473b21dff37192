"""Simulated GPU clusters: topologies, workloads, simulator, schedulers, RL environments.

``make_env(name, **config)`` builds any environment by name (see :mod:`envs.registry`).
"""

from envs.registry import environment_names, make_env

__all__ = ["environment_names", "make_env"]
