"""000 §VI's baselines for the contention-aware formulation: LAS, SRTF (and FIFO).

Every round (``round_s``, the environment's cadence) a baseline ranks jobs -- ``las``:
least attained GPU-seconds (Tiresias, :class:`envs.schedulers.LeastAttainedService`);
``srtf``: least remaining isolated time (:class:`IsolatedRemainingTime`: the time the job
has left alone on its most concentrated placement, the time 000 sizes jobs by); ``fifo``:
arrival -- and walks the queue in that order, placing every job the placement rule fits
(backfilling), with the rule of :mod:`envs.contention.placement`: ``spread`` by default,
as 000's reference scheduler places LAS and SRTF jobs (as many nodes as the job's shapes
allow), or ``pack``.
Both rules ignore contention, as LAS and SRTF do.

**Preemption.** LAS and SRTF are preemptive (000's code preempts and re-ranks every
round): each round the jobs running and waiting are ranked together, admitted in rank
order while their GPUs fit in the cluster's total, and the running jobs not admitted are
preempted (they keep their progress; a resumed job stalls ``restart_cost_s``). Admitted
jobs keep their GPUs -- no migration -- and the freed GPUs go to the queue in rank
order. FIFO is not preemptive. ``preemptive=`` overrides either default.

**On 000's job sets** (every job one hour alone, all submitted at once) SRTF's keys tie
at the start and a started job then has less left than any waiting one, so SRTF plays
FIFO's schedule exactly. LAS is continuous (000 names it only by Tiresias' metric and
the foreground-background queue of its [10], with no queues or thresholds): jobs of
equal attained service take turns a round at a time, so same-size jobs share the GPUs
until nearly all of them end together -- processor sharing, the worst order for the
average JCT of equal-length jobs -- and LAS's average JCT is well above FIFO's. That is
LAS on equal-length jobs, not a defect: its advantage needs job lengths that vary and are
unknown, with jobs that arrive over time.

How to run::

    from envs.contention.baselines import run_contention_baseline
    run_contention_baseline("las", seed=0, mix="normal")             # one 256-job set
    run_contention_baseline("srtf", seed=0, mix="heavy", num_sets=10)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.contention.config import PLACEMENT_RULES, ContentionConfig
from envs.contention.core import contention_cluster, cs_distribution, simulator_config
from envs.contention.jobs import concentrated_step_s, generate_job_set, parse_jobs
from envs.contention.placement import PlacementOptions, node_free_gpus, task_groups
from envs.schedulers import ClusterView, FirstInFirstOut, LeastAttainedService, Ordering
from envs.schedulers.base import by_key
from envs.sim import SimulationResult, Simulator
from envs.workload import Workload

#: The baselines, 000's two first.
CONTENTION_BASELINES: tuple[str, ...] = ("las", "srtf", "fifo")

#: Per-set metrics of :func:`run_contention_baseline`, averaged over sets at the top level.
SET_METRICS: tuple[str, ...] = (
    "avg_jct",
    "p90_jct",
    "makespan",
    "gpu_utilization",
    "avg_contention",
    "p90_contention",
    "contended_share",
    "preemptions",
)


#: Decimals (milliseconds) to which SRTF's remaining isolated time is rounded.
_SRTF_DECIMALS = 3


class IsolatedRemainingTime(Ordering):
    """SRTF by the least remaining time alone, on the job's most concentrated placement.

    000 names SRTF (its [11]) without saying how remaining time is estimated, and sizes
    every job by its "expected training time in an isolated cluster" (§VI);
    :mod:`envs.contention.jobs` sizes it with the price of one step alone
    (:func:`~envs.contention.jobs.concentrated_step_s`: compute plus the collective at full
    link bandwidth), so a job's remaining time is its remaining steps at that price. The
    simulator's :meth:`~envs.sim.Simulator.expected_duration` (what
    :class:`envs.schedulers.ShortestRemainingTimeFirst` ranks by) counts compute only,
    which here is a fraction of the step that shrinks as a job communicates more (an hour
    of MoE on 2 GPUs is 3 minutes of compute), so it ranked jobs by how much they
    communicate and served the 1-GPU jobs, which communicate nothing, last.

    Keys are rounded to milliseconds: sizing leaves a last-bit difference between jobs of
    equal isolated time that would otherwise order them by model and GPU demand instead of
    by arrival (:func:`~envs.schedulers.base.by_key`'s tie-break).
    """

    name = "srtf"

    def __init__(self) -> None:
        self._step_s: tuple[Simulator, np.ndarray] | None = None

    def step_seconds(self, sim: Simulator) -> np.ndarray:
        """Per job of ``sim``: seconds of one step alone, concentrated (cached per sim)."""
        if self._step_s is None or self._step_s[0] is not sim:
            workload = sim.workload
            # A step's price depends on (model, GPUs) only: price each pair once.
            pairs, inverse = np.unique(
                np.column_stack([workload.model, workload.num_workers]),
                axis=0,
                return_inverse=True,
            )
            prices = np.array(
                [concentrated_step_s(sim.cluster, int(m), int(g)) for m, g in pairs.tolist()]
            )
            self._step_s = (sim, prices[inverse.reshape(-1)])
        return self._step_s[1]

    def priority_keys(self, sim: Simulator, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
        """Remaining isolated seconds of ``jobs``, running or waiting."""
        jobs = np.asarray(jobs, dtype=np.int64)
        steps_left = (sim.work_total[jobs] - sim.work_done[jobs]) / sim.num_workers[jobs]
        return (np.round(steps_left * self.step_seconds(sim)[jobs], _SRTF_DECIMALS),)

    def order(self, sim: Simulator, jobs: np.ndarray, view: ClusterView) -> np.ndarray:
        return by_key(sim, jobs, *self.priority_keys(sim, jobs))


def baseline_ordering(name: str) -> Ordering:
    """The :class:`~envs.schedulers.Ordering` of baseline ``name``."""
    orderings: dict[str, Ordering] = {
        "las": LeastAttainedService(),
        "srtf": IsolatedRemainingTime(),
        "fifo": FirstInFirstOut(),
    }
    key = str(name).strip().lower()
    if key not in orderings:
        raise ValueError(
            f"unknown contention baseline {name!r}; known: {', '.join(CONTENTION_BASELINES)}"
        )
    return orderings[key]


class RoundScheduler:
    """A baseline as a policy for :meth:`envs.sim.Simulator.run` (see the module doc)."""

    def __init__(
        self,
        name: str,
        options: PlacementOptions,
        placement: str = "spread",
        preemptive: bool | None = None,
    ) -> None:
        self.ordering = baseline_ordering(name)
        if placement not in PLACEMENT_RULES:
            raise ValueError(
                f"placement must be one of {', '.join(PLACEMENT_RULES)}, got {placement!r}"
            )
        self.options = options
        self.placement = placement
        self.preemptive = self.ordering.name != "fifo" if preemptive is None else preemptive

    def schedule(self, sim: Simulator) -> None:
        """Re-rank (and preempt, if preemptive), then place in rank order what fits."""
        view = ClusterView(sim)
        if self.preemptive:
            self._preempt_outranked(sim, view)
        waiting = sim.waiting_jobs()
        if not len(waiting):
            return
        demand_class = np.searchsorted(self.options.demands, sim.num_workers)
        # Free GPUs only shrink during the walk, so a demand class that did not fit once
        # will not fit later in it: each class fails at most once.
        failed: set[int] = set()
        free = node_free_gpus(sim.cluster, sim.free_gpus)
        for job in self.ordering.order(sim, waiting, view).tolist():
            job_class = int(demand_class[job])
            if job_class in failed:
                continue
            subset = self.options.choose(self.placement, job_class, free)
            if subset is None:
                failed.add(job_class)
                if len(failed) == len(self.options.demands):
                    return
                continue
            nodes = self.options.subsets[subset]
            per_node = int(self.options.per_node[job_class, subset])
            sim.place(job, task_groups(sim.cluster, sim.free_gpus, nodes, per_node))
            free = node_free_gpus(sim.cluster, sim.free_gpus)

    def _preempt_outranked(self, sim: Simulator, view: ClusterView) -> None:
        running = sim.running_jobs()
        if not len(running):
            return
        active = np.concatenate([running, sim.waiting_jobs()])
        budget = sim.cluster.num_gpus
        admitted: set[int] = set()
        for job in self.ordering.order(sim, active, view).tolist():
            gpus = int(sim.num_workers[job])
            if gpus <= budget:
                admitted.add(job)
                budget -= gpus
        for job in running.tolist():
            if job not in admitted:
                sim.preempt(job)


def run_set(
    config: ContentionConfig,
    workload: Workload,
    policy: str,
    placement: str,
    preemptive: bool | None,
) -> dict[str, Any]:
    """One job set under baseline ``policy``: the metrics of :data:`SET_METRICS` and the
    CS distribution (:func:`envs.contention.core.cs_distribution`)."""
    cluster = contention_cluster(config.nodes, config.gpus_per_node, config.link_gbps)
    sim = Simulator(cluster, workload, simulator_config(config))
    sim.run(RoundScheduler(policy, PlacementOptions.of(config), placement, preemptive))
    metrics = SimulationResult.from_simulator(sim, policy).metrics()
    return {
        **metrics,
        **cs_distribution(sim),
        "truncated": not sim.done or metrics["jobs_finished"] < len(workload),
    }


def run_contention_baseline(
    policy: str,
    *,
    seed: int = 0,
    mix: str | tuple[float, ...] = "normal",
    num_jobs: int = 256,
    num_sets: int = 1,
    nodes: int = 4,
    gpus_per_node: int = 8,
    placement: str = "spread",
    preemptive: bool | None = None,
    jobs: object = None,
    **params: Any,
) -> dict[str, Any]:
    """Run baseline ``policy`` (``las``, ``srtf``, ``fifo``) over ``num_sets`` job sets.

    Set i is the one ``ContentionEnv(...).reset(seed=seed + i)`` draws, so baselines and
    an agent evaluated the same way see the same jobs. ``jobs`` (a deepshare Workload or a
    list of ``{"arrival", "model", "gpus", "duration"}``) replaces the generated sets and
    runs once. ``params`` are other :class:`~envs.contention.config.ContentionConfig`
    fields (``link_gbps``, ``round_s``, ``gpu_choices``, ``job_hours``, ``interference``,
    ``restart_cost_s``, ``horizon_s``, ...).

    Returns ``policy``, ``mix``, ``seed``, ``num_sets``, ``placement``, ``preemptive``, the
    means over sets of :data:`SET_METRICS` (JCT in seconds; ``avg_contention`` /
    ``p90_contention``: mean and 90th percentile over jobs of each job's time-averaged CS;
    ``contended_share``: jobs with CS > 1.01), ``cs_histogram`` (job counts per CS bin,
    summed over sets), ``cs_by_model`` (mean CS per model over sets) and ``sets``.
    """
    baseline_ordering(policy)
    for name, value, low in (("seed", seed, 0), ("num_sets", num_sets, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    config = ContentionConfig.from_dict(
        {"mix": mix, "num_jobs": num_jobs, "nodes": nodes, "gpus_per_node": gpus_per_node, **params}
    )
    cluster = contention_cluster(config.nodes, config.gpus_per_node, config.link_gbps)
    explicit = None if jobs is None else parse_jobs(jobs, config, cluster)
    sets = []
    for index in range(1 if explicit is not None else num_sets):
        workload = explicit
        if workload is None:
            workload = generate_job_set(config, cluster, np.random.default_rng(seed + index))
        sets.append(
            {"seed": seed + index, **run_set(config, workload, policy, placement, preemptive)}
        )
    scheduler = RoundScheduler(policy, PlacementOptions.of(config), placement, preemptive)
    result: dict[str, Any] = {
        "policy": scheduler.ordering.name,
        "mix": mix if explicit is None else "explicit",
        "seed": seed,
        "num_sets": len(sets),
        "placement": placement,
        "preemptive": scheduler.preemptive,
    }
    for key in SET_METRICS:
        values = [s[key] for s in sets if s[key] is not None and np.isfinite(s[key])]
        result[key] = float(np.mean(values)) if values else None
    labels = list(sets[0]["cs_histogram"])
    result["cs_histogram"] = {
        label: int(sum(s["cs_histogram"][label] for s in sets)) for label in labels
    }
    models = sorted({model for s in sets for model in s["cs_by_model"]})
    result["cs_by_model"] = {
        model: float(np.mean([s["cs_by_model"][model] for s in sets if model in s["cs_by_model"]]))
        for model in models
    }
    result["truncated_sets"] = sum(bool(s["truncated"]) for s in sets)
    result["sets"] = sets
    return result
