"""DeepRM (Mao et al., HotNets'16): ``podsched/DeepRM-v0``; :mod:`envs.deeprm.env` documents it.

``env`` (the Gymnasium environment), ``config`` (:class:`DeepRMConfig`), ``jobs`` (job
sequences: generator, replay lists), ``core`` (the slot-reservation dynamics) and
``baselines`` (SJF, Packer, Random, :func:`replay`).
"""

from envs.deeprm.config import DeepRMConfig
from envs.deeprm.env import ENV_ID, DeepRMEnv

__all__ = ["ENV_ID", "DeepRMConfig", "DeepRMEnv"]
