"""CuSH (paper 004): ``podsched/CuSH-v0``; :mod:`envs.cush.env` documents it.

``env`` (the Gymnasium environment), ``config`` (:class:`CuSHConfig`), ``jobs`` (job sets),
``core`` (the dynamics over the simulator), ``alloc`` (allocation policies and penalties)
and ``baselines`` (004 §4.1's heuristics).
"""

from envs.cush.config import CuSHConfig
from envs.cush.env import ENV_ID, CuSHEnv

__all__ = ["ENV_ID", "CuSHConfig", "CuSHEnv"]
