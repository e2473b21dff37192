"""Registers podsched's Gymnasium environments so ``gymnasium.make`` finds them.

How to use::

    import envs.registration
    envs.registration.register_envs()
    env = gymnasium.make("podsched/DeepRM-v0", observation="compact")

Registration is idempotent: calling :func:`register_envs` again changes nothing. The
environments truncate episodes themselves (``max_episode_steps`` in their configs), so no
``TimeLimit`` wrapper is added here.
"""

from __future__ import annotations

import gymnasium

#: id -> "module:class" entry point of every environment podsched registers.
ENVIRONMENTS: dict[str, str] = {
    "podsched/DeepRM-v0": "envs.deeprm:DeepRMEnv",
    "podsched/CuSH-v0": "envs.cush:CuSHEnv",
    "podsched/SCED2-v0": "envs.sced2:Sced2Env",
    "podsched/Contention-v0": "envs.contention:ContentionEnv",
    "podsched/RLTAPS-v0": "envs.rltaps:RLTapsEnv",
}


def register_envs() -> list[str]:
    """Register every podsched environment not registered yet; return all their ids."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)
    return list(ENVIRONMENTS)
