"""Shared fixtures of the CuSH tests."""

from __future__ import annotations

import gymnasium
import pytest

from envs.cush import ENV_ID, CuSHEnv


@pytest.fixture
def registered() -> str:
    """``podsched/CuSH-v0`` registered (by ``envs.registration`` once it lists it, else here
    with the entry point it will use); returns the id."""
    import envs.registration

    envs.registration.register_envs()
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="envs.cush:CuSHEnv")
    return ENV_ID


@pytest.fixture
def tiny_env() -> CuSHEnv:
    """004 Fig. 3's size: 2 Sierra nodes (4 CPU + 8 GPU columns), T = 5, Q = 3."""
    return CuSHEnv(nodes=2, queue_size=3, num_jobs=5)
