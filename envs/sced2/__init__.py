"""SCED2 (paper 002): ``podsched/SCED2-v0``; :mod:`envs.sced2.env` documents it.

``env`` (the Gymnasium environment), ``config`` (:class:`Sced2Config`), ``jobs`` (traces),
``core`` (the dynamics over the simulator), ``speed`` (the profile-driven speed model) and
``baselines`` (002's heuristics).
"""

from envs.sced2.config import Sced2Config
from envs.sced2.env import ENV_ID, Sced2Env

__all__ = ["ENV_ID", "Sced2Config", "Sced2Env"]
