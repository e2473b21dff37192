"""The returns 004 trains each CuSH network on (§3.2-3.4, Alg. 1 lines 10-11).

CuSH's two networks learn from different rewards of the same episode:

* the **job selector (JSM)** from 004 eq. 1, ``v_t = (sum_{i>=t} gamma^(i-t) r_i) x r_g``:
  the discounted sum of the local rewards ``r_i = -sum_j wt_j / l_j`` (every waiting job's
  waiting time over its length, after every action) times the episode's global reward
  ``r_g``, its average normalised turnaround time (NTAT). Both factors are known only at
  the episode's end, so no per-step reward of the environment can carry eq. 1;
* the **policy selector (PSM)** from its own action alone (§3.3: "the return is the
  locality penalty", ``v_t = r_t = p_j``), here ``-p_j`` in steps, so that a larger
  penalty is a worse return; 0 on the steps that place no job (the PSM did not act).

:func:`head_returns` computes both from the per-step ``info`` dicts of
``podsched/CuSH-v0``, keyed by the heads of :class:`models.cush_module.JobThenPolicy`
(``"job"``, ``"policy"``). A trainer subtracts its baseline from the JSM's returns only
(Alg. 1 line 15 against line 16).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from envs.cush.core import eq1_returns

__all__ = ["JSM_HEAD", "PSM_HEAD", "global_reward", "head_returns", "psm_returns"]

#: The action-distribution heads of the two networks (models.cush_module.JobThenPolicy).
JSM_HEAD = "job"
PSM_HEAD = "policy"


def global_reward(last_info: Mapping[str, Any]) -> float:
    """004's ``r_g`` of an episode from its last step's info: the average NTAT.

    A terminated episode carries it as ``global_reward``; a truncated one (time ran out at
    ``max_time``) is judged by the NTAT of the jobs that finished (``episode["avg_ntat"]``),
    and by 1 -- the NTAT of a job that never waits, so eq. 1 keeps the local return as
    it is -- when none did.
    """
    if last_info.get("global_reward") is not None:
        return float(last_info["global_reward"])
    summary = last_info.get("episode") or {}
    ntat = summary.get("avg_ntat")
    return 1.0 if ntat is None else float(ntat)


def psm_returns(step_infos: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The PSM's return per step: ``-p_j`` (steps) where the step placed job j, else 0."""
    return np.array([float(info.get("psm_reward", 0.0)) for info in step_infos])


def head_returns(step_infos: Sequence[Mapping[str, Any]], gamma: float) -> dict[str, np.ndarray]:
    """Each network's return at every step of one whole episode.

    ``step_infos``: the info of every step, in order (not the reset's); ``gamma``: eq. 1's
    discount (0.9 in 004 §3.2). Returns ``{"job": eq. 1's v_t, "policy": -p_j or 0}``,
    each of ``len(step_infos)`` float64 values. ValueError on an empty episode.
    """
    if not step_infos:
        raise ValueError("an episode needs at least one step to have returns")
    local = np.array([float(info["local_reward"]) for info in step_infos])
    return {
        JSM_HEAD: eq1_returns(local, global_reward(step_infos[-1]), gamma),
        PSM_HEAD: psm_returns(step_infos),
    }
