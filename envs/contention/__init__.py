"""The contention-aware scheduler (paper 000): ``podsched/Contention-v0``.

:mod:`envs.contention.env` documents it. ``config`` (:class:`ContentionConfig`), ``jobs``
(job sets), ``placement`` (the node-subset placement options), ``core`` (the dynamics over
the simulator) and ``baselines`` (the rule-based schedulers).
"""

from envs.contention.config import BRANCHES, ContentionConfig
from envs.contention.env import ENV_ID, ContentionEnv

__all__ = ["BRANCHES", "ENV_ID", "ContentionConfig", "ContentionEnv"]
