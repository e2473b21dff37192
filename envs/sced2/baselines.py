"""002 §IV-A's baselines for SCED2 -- SIF, DSIF, SAF, LRF, SPF, FIFO, all with packing.

Each baseline is the matching heuristic of :mod:`envs.schedulers` (ordering + 002's
packing placement) run on the same profile-driven simulator as the environment
(:class:`~envs.sced2.speed.ProfiledSimulator`), at every arrival or completion that leaves
jobs waiting. Like 002's baselines they pick from the whole waiting queue, not the
agent's J-job window. "Ideal execution time" is 002's T_ideal, the job's profiled time on
its best placement (:mod:`envs.sced2.speed`).

**Backfilling.** 002 §IV-A says FIFO "schedules jobs in order": FIFO is strict -- when
the first arrived job does not fit, it waits and so does every job behind it. The others
("schedules the job with the shortest ideal execution time from waiting queue", ...) name
a ranking, not a queue discipline, and backfill: a job that does not fit is passed over
and the next one in the ranking may start. This is the default, ``backfill=None``, of
:func:`run_sced2_baseline` and the functions below; ``backfill=True`` or ``False`` imposes
one discipline on every baseline (``"fifo"`` with ``backfill=True`` is FIFO with
backfilling, first fit in arrival order: podsched's FIFO until 2026-11-30).

========  ========================================================================
name      first comes the waiting job with the smallest ...
========  ========================================================================
sif       ideal execution time
dsif      ideal execution time; a job whose packing spans more servers than it
          needs is held back, at most 3 decisions (:mod:`envs.schedulers.scheduler`)
saf       actual execution time where packing would put it now, from the profiled
          speed model (002's oracle); jobs that cannot be placed now come last
lrf       GPU demand
spf       GPU demand x ideal execution time
fifo      arrival time (strict: nothing overtakes a job that does not fit)
========  ========================================================================

Ties go to the earlier arrival, then the lower job index.

How to run::

    from envs.sced2.baselines import run_sced2_baseline
    run_sced2_baseline("sif", seed=0, num_jobs=1000)              # 002's realistic trace
    run_sced2_baseline("saf", seed=0, workload="sced2-60", num_traces=30)
    run_sced2_baseline("fifo", seed=0, interval_scale=0.8)        # 002 Fig. 8's load
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envs.sced2.config import Sced2Config
from envs.sced2.core import Sced2Core, sced2_cluster
from envs.sced2.jobs import generate_workload, parse_jobs
from envs.sced2.speed import ProfiledSimulator
from envs.schedulers import (
    ClusterView,
    DelayedShortestIdealTime,
    FirstInFirstOut,
    LeastResourceFirst,
    Ordering,
    Packing,
    Placement,
    Scheduler,
    ShortestActualTime,
    ShortestIdealTime,
    SmallestProductFirst,
)
from envs.schedulers.base import by_key
from envs.sim import JobStatus, SimulationResult, Simulator, SimulatorConfig
from envs.workload import Workload

#: 002 §IV-A's baselines, in its order.
SCED2_BASELINES: tuple[str, ...] = ("sif", "dsif", "saf", "lrf", "spf", "fifo")

#: The baselines that 002 describes as a queue served in order: they do not backfill.
STRICT_BASELINES: tuple[str, ...] = ("fifo",)

#: Per-trace metrics of :func:`run_sced2_baseline`, averaged over traces at the top level.
TRACE_METRICS: tuple[str, ...] = (
    "execution_effectiveness",
    "avg_jct",
    "p90_jct",
    "makespan",
    "avg_wait",
    "avg_run_time",
    "fragmentation",
    "gpu_utilization",
    "relaxed_locality",
)


class ProfiledActualTime(ShortestActualTime):
    """002's SAF with the profiled oracle: the job's execution time where ``placement``
    would put it now, at the speed :class:`~envs.sced2.speed.ProfiledSimulator` gives."""

    def order(self, sim: Simulator, jobs: np.ndarray, view: ClusterView) -> np.ndarray:
        if not isinstance(sim, ProfiledSimulator):
            raise TypeError("ProfiledActualTime needs a ProfiledSimulator")
        jobs = np.asarray(jobs, dtype=np.int64)
        estimate = np.full(len(jobs), np.inf)
        for position, job in enumerate(jobs.tolist()):
            groups = view.place(self.placement, job)
            if groups is not None:
                estimate[position] = sim.placed_duration(job, groups)
        return by_key(sim, jobs, estimate)


def parse_baseline(name: str) -> str:
    """The baseline's short name (``"sif"``; ``"sif+packing"`` is accepted too)."""
    short = str(name).strip().lower().removesuffix("+packing")
    if short not in SCED2_BASELINES:
        raise ValueError(
            f"unknown SCED2 baseline {name!r}; known: {', '.join(SCED2_BASELINES)} "
            "(all with 002's packing placement)"
        )
    return short


def baseline_ordering(name: str, placement: Placement) -> Ordering:
    """The :class:`~envs.schedulers.Ordering` of baseline ``name``."""
    short = parse_baseline(name)
    orderings: dict[str, Ordering] = {
        "sif": ShortestIdealTime(),
        "dsif": DelayedShortestIdealTime(),
        "saf": ProfiledActualTime(placement),
        "lrf": LeastResourceFirst(),
        "spf": SmallestProductFirst(),
        "fifo": FirstInFirstOut(),
    }
    return orderings[short]


def backfills(name: str, backfill: bool | None = None) -> bool:
    """Whether baseline ``name`` passes over a job that does not fit: ``backfill`` when
    given, else 002's reading (FIFO strict, the others backfill; module docstring)."""
    short = parse_baseline(name)
    if backfill is None:
        return short not in STRICT_BASELINES
    if not isinstance(backfill, bool):
        raise ValueError(f"backfill must be true, false or null (002's reading), got {backfill!r}")
    return backfill


def baseline_scheduler(name: str, backfill: bool | None = None) -> Scheduler:
    """Baseline ``name`` as a scheduler for :meth:`envs.sim.Simulator.run` (``backfill``:
    see :func:`backfills`)."""
    placement = Packing()
    return Scheduler(
        baseline_ordering(name, placement), placement, backfill=backfills(name, backfill)
    )


def window_choice(core: Sced2Core, name: str, backfill: bool | None = None) -> int:
    """Baseline ``name`` restricted to the agent's view, as an action (slot) or hold.

    Backfilling (:func:`backfills`): among the feasible window jobs the one its ordering
    ranks first, or hold when none is feasible. Strict (FIFO by default): the window job
    its ordering ranks first if it fits, else hold. DSIF's delays need state across
    decisions and are not offered here.
    """
    if parse_baseline(name) == "dsif":
        raise ValueError("dsif holds jobs across decisions; run it with run_sced2_baseline")
    feasible = core.feasible()
    window = core.window()
    candidates = np.flatnonzero(feasible) if backfills(name, backfill) else np.arange(len(window))
    if not candidates.size:
        return core.config.hold_action
    jobs = window[candidates]
    first = int(
        baseline_ordering(name, core.placement).order(core.sim, jobs, ClusterView(core.sim))[0]
    )
    slot = int(candidates[np.flatnonzero(jobs == first)[0]])
    return slot if feasible[slot] else core.config.hold_action


def simulate_baseline(
    config: Sced2Config,
    workload: Workload,
    policy: str | Scheduler,
    backfill: bool | None = None,
) -> tuple[ProfiledSimulator, np.ndarray]:
    """Run baseline ``policy`` (or any scheduler of the product's) over ``workload`` on
    002's cluster; the finished simulator and the number of servers each job was placed
    on. ``backfill`` (a baseline name only): see :func:`backfills`."""
    sim = ProfiledSimulator(
        sced2_cluster(config.servers, config.gpus_per_server), workload, SimulatorConfig()
    )
    scheduler = baseline_scheduler(policy, backfill) if isinstance(policy, str) else policy
    servers_used = np.zeros(len(workload), dtype=np.int64)
    while sim.run_until_decision():
        waiting = sim.waiting_jobs()
        scheduler.schedule(sim)
        for job in waiting[sim.status[waiting] == JobStatus.RUNNING].tolist():
            _, gpus = sim.job_placement(job)
            servers_used[job] = len(np.unique(sim.cluster.gpu_server[gpus]))
    return sim, servers_used


def run_trace(
    config: Sced2Config, workload: Workload, policy: str, backfill: bool | None = None
) -> dict[str, Any]:
    """One trace under baseline ``policy``: the simulator's metrics, the mean run time and
    the relaxed-locality share (as :meth:`envs.sced2.core.Sced2Core.summary`).
    ``backfill``: see :func:`backfills`."""
    sim, servers_used = simulate_baseline(config, workload, policy, backfill)
    metrics = SimulationResult.from_simulator(sim, parse_baseline(policy)).metrics()
    finished = np.isfinite(sim.finish_time)
    could_pack = sim.num_workers <= config.gpus_per_server
    return {
        **metrics,
        "avg_run_time": float(sim.run_time[finished].mean()) if finished.any() else None,
        "relaxed_locality": float((servers_used[could_pack] > 1).mean())
        if could_pack.any()
        else None,
    }


def run_sced2_baseline(
    policy: str,
    *,
    seed: int = 0,
    num_jobs: int = 1000,
    num_traces: int = 1,
    workload: str = "sced2",
    interval_scale: float = 1.0,
    servers: int = 15,
    gpus_per_server: int = 8,
    workload_options: Mapping[str, Any] | None = None,
    jobs: object = None,
    backfill: bool | None = None,
) -> dict[str, Any]:
    """Run 002 baseline ``policy`` over ``num_traces`` traces; 002 Fig. 7-9's numbers.

    Trace i is the one ``Sced2Env(...).reset(seed=seed + i)`` draws, so the baselines and
    an agent evaluated the same way see the same jobs. ``jobs`` (a Workload or a list of
    ``{"arrival", "model", "gpus", "duration"}``, see :func:`envs.sced2.jobs.parse_jobs`)
    replaces the generated traces and is run once. ``backfill``: None (002's reading: FIFO
    strict, the others backfilling), or True / False for every baseline (module docstring).

    Returns ``policy``, ``workload``, ``seed``, ``num_traces``, the means over traces of
    :data:`TRACE_METRICS` (seconds; ``execution_effectiveness`` is 002 eq. 2 averaged
    over jobs, ``fragmentation`` 002 eq. 1 averaged over servers and time,
    ``relaxed_locality`` 002 Table III's share of jobs that could fit one server but were
    spread), and ``traces``: every trace's full metrics.
    """
    backfill = backfills(policy, backfill)
    for name, value in (("seed", seed), ("num_traces", num_traces)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (name == "num_traces"):
            raise ValueError(
                f"{name} must be an integer >= {int(name == 'num_traces')}, got {value!r}"
            )
    config = Sced2Config(
        servers=servers,
        gpus_per_server=gpus_per_server,
        workload=workload,
        num_jobs=num_jobs,
        interval_scale=interval_scale,
        workload_options=dict(workload_options or {}),
    )
    explicit = None if jobs is None else parse_jobs(jobs, config)
    traces = []
    for index in range(1 if explicit is not None else num_traces):
        rng = np.random.default_rng(seed + index)
        trace = explicit if explicit is not None else generate_workload(config, rng)
        traces.append({"seed": seed + index, **run_trace(config, trace, policy, backfill)})
    result: dict[str, Any] = {
        "policy": parse_baseline(policy),
        "workload": workload if explicit is None else "explicit",
        "seed": seed,
        "num_traces": len(traces),
        "backfill": backfill,
    }
    for key in TRACE_METRICS:
        values = [trace[key] for trace in traces if trace[key] is not None]
        result[key] = float(np.mean(values)) if values else None
    result["traces"] = traces
    return result
