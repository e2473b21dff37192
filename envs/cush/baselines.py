"""004 §4.1's heuristic baselines for CuSH, and Table 1's experiment over many job sets.

A baseline is ``"<ordering>+<allocation>"``: ordering ``fcfs``, ``sjf``, ``drf`` or
``random``; allocation ``df`` (depth-first) or ``bf`` (breadth-first) -- Table 1's eight
rows (:data:`CUSH_BASELINES`). Like the agent, a baseline acts through the job selector's
action: a job in one of the Q visible slots, or do nothing, one decision at a time while
time is frozen (004 §3.2). 004 §4.1's words, and how each is read:

* FCFS, "which treats the waiting jobs as a FIFO queue, scheduling the first arrived
  one. In case of two jobs arrived at the same time, the shortest one is selected": the
  head of the queue -- the first arrived, a tie to the shorter job, then the lower slot --
  is scheduled when it fits; when it does not, FCFS does nothing and the jobs behind it
  wait too (a FIFO queue is served from its head only; 004 uses the words the same way
  for its backlog, "a backlog First Input First Out (FIFO) queue", from which jobs move
  "using the first come first serve policy"). This is the paper's reading and the
  default. ``backfill=True`` gives the other common heuristic, FCFS with backfilling
  (first fit in arrival order: the first arrived among the jobs that fit), podsched's
  "FCFS" until 2026-11-30.
* SJF, "which schedules the shortest job in the queue": the shortest requested length
  among the jobs that fit; a tie goes to the first arrived, then the lower slot.
* DRF, "which selects the job with the smaller request of the dominant resource. The
  dominant resource of a job is the one with the higher ratio between request and
  environment availability": the smallest dominant share ``max(gpus / N S^GPU, cpus / N
  S^CPU)`` among the jobs that fit; ties as SJF's. The denominators are the cluster's
  capacity, not what is free now: 004 calls the capacity S^r "the availability of
  resources in the cluster" (§2), and DRF (Ghodsi et al., 004's [5]) defines a share as a
  fraction of the system's total amount of the resource.
* Random, "which schedules a random job in the queue": uniform over the jobs that fit,
  drawn from the environment's generator.

SJF, DRF and Random choose among the jobs that fit (the job selector's unmasked choices),
as DeepRM's baselines, 004's starting point, do; 004 does not say otherwise. Every one
does nothing when no visible job fits. A backlog job never arrived before a slot job, so
the visible head is the queue's head (up to a job of the same arrival step that the full
slots pushed into the backlog).

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


def fcfs_head(core: CuSHCore) -> int:
    """The visible head of the FIFO queue: the slot (0..Q-1) of the first arrived job, a tie
    to the shorter one, then the lower slot; -1 when every slot is empty."""
    held = np.flatnonzero(np.array(core.slots) >= 0)
    if not held.size:
        return -1
    ids = np.array(core.slots)[held]
    # np.lexsort sorts by the last key first.
    return int(held[np.lexsort((held, core.jobs.length[ids], core.jobs.arrival[ids]))[0]])


def choose_job(
    core: CuSHCore, ordering: str, rng: np.random.Generator, *, backfill: bool = False
) -> int:
    """The job selector's choice of ``ordering``: 0 (do nothing) or a slot 1..Q.

    ``backfill`` matters to FCFS only: False (004's FIFO queue, the default) schedules
    the head or nothing; True the first arrived among the jobs that fit (module docstring).
    """
    if ordering == "fcfs" and not backfill:
        head = fcfs_head(core)
        return head + 1 if head >= 0 and core.feasible()[head] else 0
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


def baseline_action(
    core: CuSHCore, name: str, rng: np.random.Generator, *, backfill: bool = False
) -> np.ndarray:
    """The ``[job choice, policy]`` action of baseline ``name`` in ``core``'s state
    (``backfill``: see :func:`choose_job`)."""
    ordering, policy = parse_baseline(name)
    return np.array([choose_job(core, ordering, rng, backfill=backfill), policy], dtype=np.int64)


def run_episode(
    core: CuSHCore, name: str, rng: np.random.Generator, *, backfill: bool = False
) -> dict[str, Any]:
    """Drive ``core`` (already reset) with baseline ``name`` to the end; its summary
    (``backfill``: see :func:`choose_job`)."""
    ordering, policy = parse_baseline(name)
    while not core.done:
        core.step(choose_job(core, ordering, rng, backfill=backfill), policy)
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
    backfill: bool = False,
    **params: Any,
) -> dict[str, Any]:
    """Run baseline ``policy`` over ``num_sets`` job sets; 004 Table 1's numbers.

    Set i is the one ``CuSHEnv(...).reset(seed=seed + i)`` draws, so every baseline (and
    an agent evaluated the same way) sees the same sets, and Random draws its choices from
    that set's generator after the jobs. ``jobs`` (an explicit set, see
    :func:`envs.cush.jobs.parse_jobs`) replaces the generated sets: it is run once, with
    ``seed`` seeding Random. ``params`` are other :class:`~envs.cush.config.CuSHConfig`
    fields (``time_horizon``, ``queue_size``, ``dgemm_fraction``, ``max_job_share``, ...).
    ``backfill`` (FCFS only): False is 004's FIFO queue, True FCFS with backfilling (see
    the module docstring).

    Returns ``policy``, ``cluster``, ``nodes``, ``seed``, ``num_sets``, the means over sets
    of :data:`SET_METRICS` (NTAT, wait and TAT in steps, ``local_return`` = Table 1's
    "Rewards", eq. 1's ``eq1_return``, mean penalty in steps), ``truncated_sets`` and
    ``sets``: one summary per set (each job's record too when ``include_jobs``).
    """
    parse_baseline(policy)
    if not isinstance(backfill, bool):
        raise ValueError(f"backfill must be true or false, got {backfill!r}")
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
        summary = run_episode(core, policy, rng, backfill=backfill)
        if not include_jobs:
            summary.pop("jobs")
        sets.append({"seed": seed + index, "truncated": not core.finished, **summary})
    result: dict[str, Any] = {
        "policy": policy,
        "cluster": cluster,
        "nodes": nodes,
        "seed": seed,
        "num_sets": len(sets),
        "backfill": backfill,
    }
    for key in SET_METRICS:
        result[key] = _mean([record[key] for record in sets])
    result["truncated_sets"] = sum(record["truncated"] for record in sets)
    result["sets"] = sets
    return result
