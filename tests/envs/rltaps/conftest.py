"""Shared numbers and helpers of the RL-TAPS tests: 003's constants, written out by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs.rltaps import RLTapsEnv

#: v_P100 (FLOPS) and the 0.9 of 003 eq. 10.
P100 = 10.6e12
EFFECTIVE = 0.9 * P100
#: Appendix A: vgg-vd-19 (20 GFLOPs) x 256 examples x 1000 iterations over 10 rows.
CELL_FLOPS = 20e9 * 256 * 1000 / 10
STEP_S = 20e9 * 256 * 1000 / P100 / 10
#: GPUs of the default racks [2, 2, 2, 2]: machine k holds GPUs 4k..4k+3 (sockets of two),
#: rack r holds machines 2r and 2r + 1, i.e. GPUs 8r..8r+7.
NONE = 10


def job(model: str, minibatch: int, length: int, gpus: int, arrival: int = 0) -> dict[str, Any]:
    """One explicit job."""
    return {"arrival": arrival, "model": model, "minibatch": minibatch, "len": length, "gpus": gpus}


def assignment(slots_of: dict[int, int], none: int = NONE) -> np.ndarray:
    """The action that sends GPU g to slot ``slots_of[g]`` and every other GPU to ``none``
    (N, the null slot)."""
    action = np.full(32, none, dtype=np.int64)
    for gpu, slot in slots_of.items():
        action[gpu] = slot
    return action


@pytest.fixture
def registered() -> str:
    """``podsched/RLTAPS-v0``, which ``import envs`` registers; returns the id."""
    return "podsched/RLTAPS-v0"


@pytest.fixture
def small_env() -> RLTapsEnv:
    """Two racks of one machine (8 GPUs), 4 slots, jobs of up to 6 GPUs, 30 arrivals."""
    return RLTapsEnv(
        racks=(1, 1),
        num_slots=4,
        backlog_size=8,
        max_gpus_request=6,
        small_gpus=(1, 3),
        large_gpus=(4, 6),
        num_jobs=30,
        max_steps=120,
    )
