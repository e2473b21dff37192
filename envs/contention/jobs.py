"""Job sets of the contention-aware formulation (000 §VI), as GPU-only workloads.

A generated set is :func:`envs.workload.deepshare_workload`'s: ``num_jobs`` (256) jobs of
000 Table I's models in a footnote-4 mix, shuffled, each asking for a GPU count drawn
uniformly from ``gpu_choices`` (one AllReduce worker per GPU). 000 sizes every job "to set
its expected training time in an isolated cluster as one hour"; the generator estimates
that time from Table I's comm/comp ratio, so here each job's work is re-sized with the
simulator's own speed model: ``job_hours`` of steps alone on its most concentrated
placement (``min(g, M)`` GPUs per node, :func:`envs.sim.profiling.shape_groups`), one step
being compute time + the ring's (or all-to-all's) slowest pair at full link bandwidth.

Explicit sets replay a :class:`~envs.workload.Workload` of the ``deepshare`` catalog or a
list ``[{"arrival": 0, "model": "FSDP", "gpus": 8, "duration": 3600}, ...]``, where
``duration`` is the seconds the job runs alone on its most concentrated placement.

000 allocates GPUs, so every workload is made GPU-only (CPU demands 0; the models' CPU
profiles still feed the interference model when it is switched on).
"""

from __future__ import annotations

import numpy as np

from envs.contention.config import ContentionConfig
from envs.sim.profiling import alone_communication_s, shape_groups
from envs.topology import Cluster
from envs.workload import Workload, get_catalog, make_workload
from envs.workload.job_lists import gpu_only, job_rows

#: Keys of one explicit job.


def concentrated_step_s(cluster: Cluster, model: int, gpus: int) -> float:
    """Seconds of one step of a ``gpus``-GPU job of deepshare ``model`` alone, packed."""
    profile = get_catalog("deepshare")[model]
    node_gpus = int(cluster.group_gpus[cluster.group_server == 0].sum())
    groups = shape_groups(cluster, gpus, min(gpus, node_gpus))
    communication = alone_communication_s(
        cluster, profile.collective, gpus, 0, profile.gradient_mb, groups
    )
    return profile.compute_time_s + communication


def sized(workload: Workload, cluster: Cluster, seconds: np.ndarray) -> Workload:
    """``workload`` GPU-only, with each job's epochs set so that it runs ``seconds`` alone
    on its most concentrated placement of ``cluster``."""
    # A step depends on (model, GPUs) only: price each pair once.
    pairs, inverse = np.unique(
        np.column_stack([workload.model, workload.num_workers]), axis=0, return_inverse=True
    )
    prices = np.array([concentrated_step_s(cluster, int(m), int(g)) for m, g in pairs])
    steps = prices[inverse.reshape(-1)]
    epochs = seconds / steps / workload.iterations_per_epoch * workload.num_workers
    return gpu_only(workload.replace(epochs=epochs))


def check_demands(workload: Workload, config: ContentionConfig) -> Workload:
    """``workload`` unchanged, or ValueError when a job's GPU count is not a demand class
    of ``config`` (a job must have a placement shape and a state code)."""
    allowed = np.array(config.gpu_choices)
    bad = np.flatnonzero(~np.isin(workload.num_workers, allowed))
    if bad.size:
        job = int(bad[0])
        raise ValueError(
            f"job {job} asks for {int(workload.num_workers[job])} GPUs; GPU demands must be "
            f"among gpu_choices {list(config.gpu_choices)}"
        )
    if (workload.num_ps > 0).any() or (workload.worker_demand[:, 0] != 1).any():
        raise ValueError("jobs must be data-parallel: one GPU per worker, no parameter servers")
    if workload.catalog_name != "deepshare":
        raise ValueError(
            f"jobs must use the deepshare catalog (000 Table I), got {workload.catalog_name!r}"
        )
    return workload


def generate_job_set(
    config: ContentionConfig, cluster: Cluster, rng: np.random.Generator
) -> Workload:
    """One job set drawn with ``rng`` (see the module docstring)."""
    mix = config.mix if isinstance(config.mix, str) else list(config.mix)
    workload = make_workload(
        "deepshare",
        num_jobs=config.num_jobs,
        rng=rng,
        mix=mix,
        gpu_choices=config.gpu_choices,
        target_duration_s=config.job_hours * 3600.0,
        mean_interarrival_s=config.mean_interarrival_s,
    )
    seconds = np.full(len(workload), config.job_hours * 3600.0)
    return check_demands(sized(workload, cluster, seconds), config)


def parse_jobs(jobs: object, config: ContentionConfig, cluster: Cluster) -> Workload:
    """An explicit job set: a deepshare :class:`Workload` or a list of job mappings."""
    if isinstance(jobs, Workload):
        return check_demands(gpu_only(jobs), config)
    catalog = get_catalog("deepshare")
    arrival, model, gpus, duration = job_rows(jobs, catalog.name)
    count = len(model)
    workload = Workload(
        arrival_time=arrival,
        model=model,
        num_workers=gpus,
        worker_demand=np.column_stack([np.ones(count), np.zeros(count)]),
        epochs=np.ones(count),
        iterations_per_epoch=catalog.column("iterations_per_epoch")[model].astype(np.int64),
        catalog_name=catalog.name,
    )
    workload = check_demands(workload, config)
    return sized(workload, cluster, duration)
