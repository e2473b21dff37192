"""RL-TAPS (paper 003): ``podsched/RLTAPS-v0``; :mod:`envs.rltaps.env` documents it.

``config`` (:class:`RLTapsConfig`), ``cnns`` (the 35-CNN table), ``jobs`` (job sequences),
``speed`` (the topology-aware speed model), ``core`` (the dynamics) and ``baselines``
(003 §5.3's Random, SJF and Tetris).
"""

from envs.rltaps.config import RLTapsConfig
from envs.rltaps.env import ENV_ID, RLTapsEnv

__all__ = ["ENV_ID", "RLTapsConfig", "RLTapsEnv"]
