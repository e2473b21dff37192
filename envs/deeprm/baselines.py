"""DeepRM's baselines (the reference's ``other_agents.py``) and whole-episode replay.

SJF, Packer (Tetris) and Random pick a slot from a :class:`~envs.deeprm.core.DeepRMCore`;
:func:`replay` runs one of them over an explicit workload for ``simulate.py deeprm``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from envs.deeprm.config import DeepRMConfig
from envs.deeprm.core import DeepRMCore
from envs.deeprm.jobs import parse_jobs

Policy = Callable[[DeepRMCore, np.random.Generator], int]


def fits_now(core: DeepRMCore) -> list[bool]:
    """Per slot: a job is there and every resource has room for rows 0..len-1."""
    lowest = np.minimum.accumulate(core.avbl, axis=0)
    # An empty slot has len 0 and reads row -1; the slot_job test below discards it.
    room = (lowest[core.slot_len - 1] >= core.slot_res).all(axis=1).tolist()
    return [fits and job >= 0 for fits, job in zip(room, core.slot_job, strict=True)]


def sjf_action(core: DeepRMCore, rng: np.random.Generator | None = None) -> int:
    """Shortest job first: the fitting slot job with the largest 1/len.

    As the reference: scores start at 0, a slot must score strictly more than the best so
    far scanning from slot 0 (ties go to the lowest slot); nothing fits means void.
    """
    best, action = 0.0, core.config.num_nw
    for slot, fits in enumerate(fits_now(core)):
        if fits:
            score = 1 / core.lengths[core.slot_job[slot]]
            if score > best:
                best, action = score, slot
    return action


def packer_action(core: DeepRMCore, rng: np.random.Generator | None = None) -> int:
    """Packer (Tetris): the fitting slot job with the largest dot(free units now, demand).

    Same scan as :func:`sjf_action`: strictly greater from a best of 0, from slot 0.
    """
    scores = (core.slot_res @ core.avbl[0]).tolist()
    best, action = 0, core.config.num_nw
    for slot, fits in enumerate(fits_now(core)):
        if fits and scores[slot] > best:
            best, action = scores[slot], slot
    return action


def random_action(core: DeepRMCore, rng: np.random.Generator) -> int:
    """Uniform over the num_nw + 1 actions (empty slots and void included), as the reference."""
    return int(rng.integers(core.config.num_nw + 1))


POLICIES: dict[str, Policy] = {"sjf": sjf_action, "packer": packer_action, "random": random_action}


def get_policy(policy: str | Policy) -> Policy:
    """A baseline by name (sjf, packer, random) or the callable itself."""
    if callable(policy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    return POLICIES[policy]


def replay(
    jobs: object,
    policy: str | Policy,
    num_nw: int = 5,
    *,
    seed: int | None = None,
    max_steps: int | None = 1_000_000,
    **params: Any,
) -> dict[str, Any]:
    """Run ``policy`` on an explicit workload until the episode ends; the JSON summary.

    ``jobs`` is ``{"jobs": [...]}``, the list, or a :class:`JobSequence` (see
    :func:`parse_jobs`); ``params`` are other :class:`DeepRMConfig` fields (default
    ``end="all_done"``). ``seed`` seeds the Random baseline and the canvas colours.
    ``max_steps`` is a safety cap for policies that never book anything. Returns the keys
    of :data:`RESULT_KEYS`.
    """
    config = DeepRMConfig.from_dict({**params, "num_nw": num_nw, "max_episode_steps": max_steps})
    sequence = parse_jobs(jobs, config)
    chooser = get_policy(policy)
    rng = np.random.default_rng(seed)
    core = DeepRMCore(config)
    core.reset(sequence, rng)
    while not core.done:
        core.step(chooser(core, rng))
    return core.result()
