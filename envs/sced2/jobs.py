"""SCED2 traces (002 §IV-A): generated or explicit, as GPU-only simulator workloads.

Generated traces come from :func:`envs.workload.make_workload` (``"sced2"``, ``"sced2-60"``,
``"sced2-75"``: 68% / 60% / 75% 1-GPU jobs, CV 10% / NLP 60% / Speech 30% played by
002 Table II's models, mean gap 172 s) with the gaps scaled by ``interval_scale``
(002 Fig. 8). Explicit traces replay either a :class:`~envs.workload.Workload` or a list
of jobs ``[{"arrival": 0, "model": "VGG16", "gpus": 4, "duration": 3600}, ...]``, where
``duration`` is the job's work in seconds of computation on its ``gpus`` GPUs
(communication excluded, as the generated traces draw it) and ``model`` a name of the
``sced2`` catalog. 002's T_ideal adds the communication of the job's best placement:
``duration x`` its best profiled step time / its compute time
(:mod:`envs.sced2.speed`); a 1-GPU job's T_ideal is its ``duration``.

002 schedules GPUs only ("every job occupies GPUs exclusively"), so every workload is made
GPU-only: the CPU cores a worker asks for are set to 0 and never block a placement (the
models' CPU profiles stay in the catalog; the speed model of :mod:`envs.sced2.speed` does
not use them).
"""

from __future__ import annotations

import numpy as np

from envs.sced2.config import Sced2Config
from envs.workload import Workload, get_catalog, make_workload
from envs.workload.job_lists import gpu_only, job_rows


def check_fits(workload: Workload, total_gpus: int) -> Workload:
    """``workload`` unchanged, or ValueError when a job asks for more than ``total_gpus``."""
    demand = workload.num_workers * np.ceil(workload.worker_demand[:, 0])
    too_big = np.flatnonzero(demand > total_gpus)
    if too_big.size:
        job = int(too_big[0])
        raise ValueError(
            f"job {job} asks for {int(demand[job])} GPUs but the cluster has {total_gpus}; "
            "use more servers or smaller jobs (workload_options={'multi_gpu_sizes': ...})"
        )
    if (workload.num_ps > 0).any() or (workload.worker_demand[:, 0] != 1).any():
        raise ValueError(
            "SCED2 jobs are data-parallel with one GPU per worker and no parameter servers"
        )
    return workload


def generate_workload(config: Sced2Config, rng: np.random.Generator) -> Workload:
    """One trace of ``config.num_jobs`` jobs drawn with ``rng`` (see the module docstring)."""
    workload = make_workload(
        config.workload, num_jobs=config.num_jobs, rng=rng, **dict(config.workload_options)
    )
    if config.interval_scale != 1.0:
        workload = workload.scale_arrivals(config.interval_scale)
    return check_fits(gpu_only(workload), config.total_gpus)


def parse_jobs(jobs: object, config: Sced2Config) -> Workload:
    """An explicit trace: a :class:`Workload` or a list of job mappings (module docstring)."""
    if isinstance(jobs, Workload):
        return check_fits(gpu_only(jobs), config.total_gpus)
    catalog = get_catalog("sced2")
    arrival, model, gpus, duration = job_rows(jobs, catalog.name)
    iterations = catalog.column("iterations_per_epoch")[model].astype(np.int64)
    epochs = duration * gpus / (iterations * catalog.column("compute_time_s")[model])
    workload = Workload(
        arrival_time=arrival,
        model=model,
        num_workers=gpus,
        worker_demand=np.column_stack([np.ones(len(model)), np.zeros(len(model))]),
        epochs=epochs,
        iterations_per_epoch=iterations,
        catalog_name=catalog.name,
    )
    return check_fits(workload, config.total_gpus)
