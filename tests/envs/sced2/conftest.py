"""Shared fixtures of the SCED2 tests."""

from __future__ import annotations

import pytest

from envs.sced2 import ENV_ID, Sced2Env


@pytest.fixture
def registered() -> str:
    """``podsched/SCED2-v0``, which ``import envs`` registers; returns the id."""
    return ENV_ID


@pytest.fixture
def small_env() -> Sced2Env:
    """3 servers x 8 GPUs, 40-job traces of 1..8-GPU jobs, busy enough to queue."""
    return Sced2Env(
        servers=3,
        num_jobs=40,
        interval_scale=0.2,
        workload_options={"multi_gpu_sizes": (2, 4, 8), "multi_gpu_weights": (0.4, 0.4, 0.2)},
    )
