"""Shared fixtures of the contention-aware tests."""

from __future__ import annotations

import gymnasium
import pytest

from envs.contention import ENV_ID, ContentionEnv


@pytest.fixture
def registered() -> str:
    """``podsched/Contention-v0`` registered (by ``envs.registration`` once it lists it,
    else here with the entry point it will use); returns the id."""
    import envs.registration

    envs.registration.register_envs()
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="envs.contention:ContentionEnv")
    return ENV_ID


@pytest.fixture
def small_env() -> ContentionEnv:
    """000's 4 x 8 cluster with 24-job sets of 1..8 GPUs, 30-minute jobs."""
    return ContentionEnv(num_jobs=24, gpu_choices=(1, 2, 4, 8), job_hours=0.5)


def job(model: str, gpus: int, duration: float = 3600.0, arrival: float = 0.0) -> dict:
    """One explicit job."""
    return {"arrival": arrival, "model": model, "gpus": gpus, "duration": duration}
