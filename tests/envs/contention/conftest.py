"""Shared fixtures of the contention-aware tests."""

from __future__ import annotations

import pytest

from envs.contention import ENV_ID, ContentionEnv


@pytest.fixture
def registered() -> str:
    """``podsched/Contention-v0``, which ``import envs`` registers; returns the id."""
    return ENV_ID


@pytest.fixture
def small_env() -> ContentionEnv:
    """000's 4 x 8 cluster with 24-job sets of 1..8 GPUs, 30-minute jobs."""
    return ContentionEnv(num_jobs=24, gpu_choices=(1, 2, 4, 8), job_hours=0.5)


def job(model: str, gpus: int, duration: float = 3600.0, arrival: float = 0.0) -> dict:
    """One explicit job."""
    return {"arrival": arrival, "model": model, "gpus": gpus, "duration": duration}
