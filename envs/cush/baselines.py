"""004 §4.1's heuristic baselines for CuSH, and Table 1's experiment over many job sets.

A baseline is ``"<ordering>+<allocation>"``: ordering ``fcfs``, ``sjf``, ``drf`` or
``random``; allocation ``df`` (depth-first) or ``bf`` (breadth-first) -- Table 1's eight
rows (:data:`CUSH_BASELINES`). Like the agent, a baseline chooses among the jobs in the Q
visible slots that fit now (the unmasked choices), keeps scheduling while one fits and
does nothing when none does (so it backfills, as DeepRM's baselines do):

* FCFS: the first arrived; a tie goes to the shorter job (004: "In case of two jobs
  arrived at the same time, the shortest one is selected"), then the lower slot.
* SJF: the shortest requested length; a tie goes to the first arrived, then the lower slot.
* DRF: the smallest dominant share ``max(gpus / N S^GPU, cpus / N S^CPU)`` (the request
  over the cluster's capacity, 004 §4.1); ties as SJF's.
* Random: uniform over the jobs that fit, drawn from the environment's generator.

Since every job in the backlog arrived after every job in the slots, FCFS over the slots
is FCFS over the whole queue.

How to run Table 1's rows::

    from envs.cush.baselines import run_cush_baseline
    run_cush_baseline("sjf+bf", seed=0, num_sets=10)            # Sierra, 128 nodes
    run_cush_baseline("fcfs+df", seed=0, num_sets=10, cluster="summit")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.cush.config import CuSHConfig
from envs.cush.core import CuSHCore
from envs.cush.jobs import generate_job_set, parse_jobs

ORDERINGS: tuple[str, ...] = ("fcfs", "sjf", "drf", "random")
ALLOCATIONS: dict[str, int] = {"df": 0, "bf": 1}
#: Table 1's eight heuristic rows, in its order.
CUSH_BASELINES: tuple[str, ...] = tuple(
    f"{ordering}+{allocation}" for ordering in ORDERINGS for allocation in ALLOCATIONS
)
#: Per-set keys of :func:`run_cush_baseline`'s result, averaged over sets at the top level.
SET_METRICS: tuple[str, ...] = (
    "avg_ntat",
    "avg_wait",
    "avg_tat",
    "local_return",
    "eq1_return",
    "avg_penalty",
)


def parse_baseline(name: str) -> tuple[str, int]:
    """``(ordering, allocation policy 0/1)`` of a baseline name like ``"sjf+bf"``."""
    ordering, _, allocation = str(name).lower().partition("+")
    if ordering not in ORDERINGS or allocation not in ALLOCATIONS:
        raise ValueError(
            f"unknown CuSH baseline {name!r}; known: {', '.join(CUSH_BASELINES)} "
            "(ordering fcfs|sjf|drf|random, allocation df = depth-first | bf = breadth-first)"
        )
    return ordering, ALLOCATIONS[allocation]


def choose_job(core: CuSHCore, ordering: str, rng: np.random.Generator) -> int:
    """The job selector's choice of ``ordering``: 0 (do nothing) or a slot 1..Q."""
    slots = np.flatnonzero(core.feasible())
    if not slots.size:
        return 0
    if ordering == "random":
        return int(slots[rng.integers(slots.size)]) + 1
    jobs = core.jobs
    ids = np.array(core.slots)[slots]
    arrival, length = jobs.arrival[ids], jobs.length[ids]
    if ordering == "fcfs":
        keys: tuple[np.ndarray, ...] = (slots, length, arrival)
    elif ordering == "sjf":
        keys = (slots, arrival, length)
    elif ordering == "drf":
        config = core.config
        share = np.maximum(jobs.gpus[ids] / config.total_gpus, jobs.cpus[ids] / config.total_cpus)
        keys = (slots, arrival, share)
    else:
        raise ValueError(f"ordering must be one of {', '.join(ORDERINGS)}, got {ordering!r}")
    # np.lexsort sorts by the last key first.
    return int(slots[np.lexsort(keys)[0]]) + 1


def baseline_action(core: CuSHCore, name: str, rng: np.random.Generator) -> np.ndarray:
    """The ``[job choice, policy]`` action of baseline ``name`` in ``core``'s state."""
    ordering, policy = parse_baseline(name)
    return np.array([choose_job(core, ordering, rng), policy], dtype=np.int64)


def run_episode(core: CuSHCore, name: str, rng: np.random.Generator) -> dict[str, Any]:
    """Drive ``core`` (already reset) with baseline ``name`` to the end; its summary."""
    ordering, policy = parse_baseline(name)
    while not core.done:
        core.step(choose_job(core, ordering, rng), policy)
    return core.summary()


def _mean(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return float(np.mean(present)) if present else None


def run_cush_baseline(
    policy: str,
    *,
    seed: int = 0,
    num_sets: int = 10,
    cluster: str = "sierra",
    nodes: int = 128,
    jobs: object = None,
    include_jobs: bool = False,
    **params: Any,
) -> dict[str, Any]:
    """Run baseline ``policy`` over ``num_sets`` job sets; 004 Table 1's numbers.

    Set i is the one ``CuSHEnv(...).reset(seed=seed + i)`` draws, so every baseline (and
    an agent evaluated the same way) sees the same sets, and Random draws its choices from
    that set's generator after the jobs. ``jobs`` (an explicit set, see
    :func:`envs.cush.jobs.parse_jobs`) replaces the generated sets: it is run once, with
    ``seed`` seeding Random. ``params`` are other :class:`~envs.cush.config.CuSHConfig`
    fields (``time_horizon``, ``queue_size``, ``dgemm_fraction``, ``max_job_share``, ...).

    Returns ``policy``, ``cluster``, ``nodes``, ``seed``, ``num_sets``, the means over sets
    of :data:`SET_METRICS` (NTAT, wait and TAT in steps, ``local_return`` = Table 1's
    "Rewards", eq. 1's ``eq1_return``, mean penalty in steps), ``truncated_sets`` and
    ``sets``: one summary per set (each job's record too when ``include_jobs``).
    """
    parse_baseline(policy)
    if isinstance(num_sets, bool) or not isinstance(num_sets, int) or num_sets < 1:
        raise ValueError(f"num_sets must be an integer >= 1, got {num_sets!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    config = CuSHConfig.from_dict({"cluster": cluster, "nodes": nodes, **params})
    explicit = None if jobs is None else parse_jobs(jobs, config)
    core = CuSHCore(config)
    sets = []
    for index in range(1 if explicit is not None else num_sets):
        rng = np.random.default_rng(seed + index)
        core.reset(explicit if explicit is not None else generate_job_set(config, rng))
        summary = run_episode(core, policy, rng)
        if not include_jobs:
            summary.pop("jobs")
        sets.append({"seed": seed + index, "truncated": not core.finished, **summary})
    result: dict[str, Any] = {
        "policy": policy,
        "cluster": cluster,
        "nodes": nodes,
        "seed": seed,
        "num_sets": len(sets),
    }
    for key in SET_METRICS:
        result[key] = _mean([record[key] for record in sets])
    result["truncated_sets"] = sum(record["truncated"] for record in sets)
    result["sets"] = sets
    return result
