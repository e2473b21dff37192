"""Shared fixtures of the CuSH tests."""

from __future__ import annotations

import pytest

from envs.cush import ENV_ID, CuSHEnv


@pytest.fixture
def registered() -> str:
    """``podsched/CuSH-v0``, which ``import envs`` registers; returns the id."""
    return ENV_ID


@pytest.fixture
def tiny_env() -> CuSHEnv:
    """004 Fig. 3's size: 2 Sierra nodes (4 CPU + 8 GPU columns), T = 5, Q = 3."""
    return CuSHEnv(nodes=2, queue_size=3, num_jobs=5)
