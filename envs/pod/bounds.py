"""The lower bound of :mod:`envs.sim.bounds` for one workload of the pod environment, and
the hindsight search of :mod:`envs.schedulers.priority_search` for the schedule above it.

The pod environment decides in rounds, at multiples of ``interval_s``, so a job's earliest
start is the first round at or after its arrival; it holds its tasks' GPUs while it runs
and runs no faster than its contention-free time (``Simulator.ideal_duration``; the
``contention`` model only slows it). Those are the relaxation's inputs; the bound holds
for every policy of the environment, learned or heuristic, under either performance model,
that finishes every job (an episode cut short at ``horizon_intervals`` reports the jobs'
time in the system so far, which it may not bound).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envs.schedulers.orderings import total_gpus
from envs.schedulers.priority_search import PrioritySearchResult, search_priorities
from envs.sim.bounds import JCTLowerBound, mean_jct_lower_bound

#: Slots per decision interval in the bound's time grid (30-minute rounds: 5 minutes).
SLOTS_PER_INTERVAL = 6


def pod_priority_search(
    env_config: Mapping[str, Any],
    seed: int,
    placement: str,
    evaluations: int,
    search_seed: int = 0,
    start: str = "dsif-patient",
    also_placements: tuple[str, ...] = (),
) -> PrioritySearchResult:
    """The best static-priority schedule of the workload ``pod_scheduling_v0`` draws for
    ``seed`` found with hindsight (:mod:`envs.schedulers.priority_search`; with
    ``also_placements``, each job's placement chosen too): a schedule the
    environment's heuristic driver would play job for job, so an upper reference on the
    best possible avg JCT, as the lower bound is the lower one."""
    from envs.registry import make_env

    env = make_env("pod_scheduling_v0", **dict(env_config))
    env.reset(seed=seed, options={"masks_only": True})
    return search_priorities(
        env.cluster,
        env.workload,
        env.sim.config,
        placement,
        evaluations,
        search_seed,
        start=start,
        also_placements=also_placements,
    )


def pod_jct_lower_bound(
    env_config: Mapping[str, Any], seed: int, slots_per_interval: int = SLOTS_PER_INTERVAL
) -> JCTLowerBound:
    """The mean-JCT lower bound of the workload ``pod_scheduling_v0`` draws for ``seed``
    with ``env_config``, on its cluster (a finer grid, more ``slots_per_interval``, gives
    a tighter bound and a larger program)."""
    from envs.registry import make_env

    slots = slots_per_interval
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise ValueError(f"slots_per_interval must be a positive integer; got {slots!r}")
    env = make_env("pod_scheduling_v0", **dict(env_config))
    env.reset(seed=seed, options={"masks_only": True})
    sim = env.sim
    interval = float(sim.config.interval_s)
    arrival = sim.workload.arrival_time.astype(np.float64)
    try:
        return mean_jct_lower_bound(
            arrival,
            np.ceil(arrival / interval) * interval,
            total_gpus(sim, np.arange(sim.num_jobs)),
            sim.ideal_duration,
            int(sim.cluster.num_gpus),
            slot_s=interval / slots,
        )
    except ValueError as error:  # name the workload whose job broke the rule
        raise ValueError(f"no lower bound for the workload of seed {seed}: {error}") from None
