"""003 §5.3's baselines for RL-TAPS: Random, SJF and Tetris job pickers, no preemption.

The baselines only pick jobs, one at a time, among the N job slots, as DeepRM's
(``other_agents.py``, 003's ref. [8]) do; a picked job gets exactly the GPUs it asked for
from DeepRM's allocator, which numbers the GPUs left to right across the image's cluster
columns (machine after machine) and takes the first ``gpusreq`` free ones, all starting
now. Only a job whose request fits the free GPUs now can be picked. A started job leaves
its slot (the backlog refills it) and keeps its GPUs until it finishes: no preemption,
no resizing. Its speed is still 003's topology model (:mod:`envs.rltaps.speed`), and the
reward is the environment's (eq. 4 with the eq. 5 idle cost; eq. 6 never applies, every
job has what it asked for).

=========  =================================================================================
name       at each step, repeatedly until it moves on
=========  =================================================================================
random     draws one of the N + 1 actions uniformly (a slot or "move on"); a slot whose job
           fits starts it, anything else moves time on (DeepRM's random agent)
sjf        starts the fitting job with the smallest len (ties: the lowest slot)
tetris     starts the fitting job with the largest gpusreq x free GPUs now (Grandl et al.;
           ties: the lowest slot)
=========  =================================================================================

How to run::

    from envs.rltaps.baselines import run_rltaps_baseline
    run_rltaps_baseline("sjf", seed=0)                       # one 400-job sequence
    run_rltaps_baseline("tetris", seed=0, num_sequences=10)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from envs.rltaps.config import RLTapsConfig
from envs.rltaps.core import RLTapsCore
from envs.rltaps.jobs import JobSet, generate_jobs, parse_jobs

#: 003 §5.3's baselines.
RLTAPS_BASELINES: tuple[str, ...] = ("random", "sjf", "tetris")

#: Per-sequence counts of :func:`run_rltaps_baseline`, averaged over sequences.
SEQUENCE_METRICS: tuple[str, ...] = (
    "jobs_finished",
    "dropped",
    "mean_speed",
    "gpu_utilization",
    "final_time",
)


def parse_baselines(names: str | Sequence[str]) -> list[str]:
    """Baseline names from ``"sjf,tetris"`` or a list; ValueError naming an unknown one."""
    items = names.split(",") if isinstance(names, str) else list(names)
    chosen = [str(item).strip().lower() for item in items]
    for name in chosen:
        if name not in RLTAPS_BASELINES:
            raise ValueError(
                f"unknown RL-TAPS baseline {name!r}; known: {', '.join(RLTAPS_BASELINES)}"
            )
    if not chosen:
        raise ValueError(f"name at least one baseline of {', '.join(RLTAPS_BASELINES)}")
    return chosen


def fitting_slots(core: RLTapsCore) -> np.ndarray:
    """Per slot: it holds a job whose GPU request fits the free GPUs now."""
    jobs = core.slot_job
    free = int(np.count_nonzero(core.gpu_job < 0))
    return (jobs >= 0) & (core.jobs.gpus[np.maximum(jobs, 0)] <= free)


def left_to_right(core: RLTapsCore, count: int) -> np.ndarray:
    """DeepRM's allocator: the first ``count`` free GPUs in cluster-column order."""
    return core.free_gpus()[:count]


def pick(core: RLTapsCore, policy: str, rng: np.random.Generator) -> int | None:
    """The slot baseline ``policy`` starts now, or None to move time on."""
    fits = fitting_slots(core)
    if policy == "random":
        slot = int(rng.integers(core.config.num_slots + 1))
        return slot if slot < core.config.num_slots and fits[slot] else None
    if not fits.any():
        return None
    slots = np.flatnonzero(fits)
    jobs = core.slot_job[slots]
    if policy == "sjf":
        # argmin/argmax return the first best, i.e. the lowest slot on ties.
        return int(slots[np.argmin(core.jobs.length[jobs])])
    free = int(np.count_nonzero(core.gpu_job < 0))
    return int(slots[np.argmax(core.jobs.gpus[jobs] * free)])


def run_sequence(
    config: RLTapsConfig, jobs: JobSet, policy: str, rng: np.random.Generator
) -> dict[str, Any]:
    """One job sequence under baseline ``policy`` to the episode's end; the core's
    summary (return, mean slowdown, counts, ...) and ``slowdowns`` (every arrived job's)."""
    core = RLTapsCore(config, preemptive=False)
    core.reset(jobs)
    while not core.over:
        slot = pick(core, policy, rng)
        while slot is not None:
            core.start(slot, left_to_right(core, int(core.jobs.gpus[core.slot_job[slot]])))
            slot = pick(core, policy, rng)
        core.advance()
    return {**core.summary(), "slowdowns": core.slowdowns()}


def run_rltaps_baseline(
    policy: str,
    *,
    seed: int = 0,
    num_sequences: int = 1,
    jobs: object = None,
    **params: Any,
) -> dict[str, Any]:
    """Run 003 baseline ``policy`` over ``num_sequences`` job sequences.

    Sequence i is the one ``RLTapsEnv(**params).reset(seed=seed + i)`` draws, so the
    baselines and an agent evaluated the same way see the same jobs; the Random picker
    draws from the same generator afterwards. ``jobs`` (see
    :func:`envs.rltaps.jobs.parse_jobs`) replaces the generated sequences and is run once.
    ``params`` are :class:`~envs.rltaps.config.RLTapsConfig` fields.

    Returns ``policy``, ``seed``, ``num_sequences``, ``mean_reward`` (003 eq. 16: the
    mean return), ``mean_slowdown`` (eq. 17 over every job that arrived, all sequences
    together), the means over sequences of :data:`SEQUENCE_METRICS`, and ``sequences``:
    every sequence's summary.
    """
    (name,) = parse_baselines([policy])
    for label, value, minimum in (("seed", seed, 0), ("num_sequences", num_sequences, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{label} must be an integer >= {minimum}, got {value!r}")
    config = RLTapsConfig.from_dict(params)
    explicit = None if jobs is None else parse_jobs(jobs, config)
    sequences, slowdowns = [], []
    for index in range(1 if explicit is not None else num_sequences):
        rng = np.random.default_rng(seed + index)
        sequence = explicit if explicit is not None else generate_jobs(config, rng)
        summary = run_sequence(config, sequence, name, rng)
        slowdowns.append(summary.pop("slowdowns"))
        sequences.append({"seed": seed + index, **summary})
    pooled = np.concatenate(slowdowns)
    result: dict[str, Any] = {
        "policy": name,
        "seed": seed,
        "num_sequences": len(sequences),
        "mean_reward": float(np.mean([sequence["return"] for sequence in sequences])),
        "mean_slowdown": float(pooled.mean()) if len(pooled) else None,
    }
    for key in SEQUENCE_METRICS:
        result[key] = float(np.mean([sequence[key] for sequence in sequences]))
    result["sequences"] = sequences
    return result


#: (column title, result key, format) of :func:`format_baseline_table`.
TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("mean reward", "mean_reward", "{:.1f}"),
    ("mean slowdown", "mean_slowdown", "{:.2f}"),
    ("finished", "jobs_finished", "{:.1f}"),
    ("dropped", "dropped", "{:.1f}"),
    ("speed", "mean_speed", "{:.2f}"),
    ("GPU util", "gpu_utilization", "{:.3f}"),
    ("steps", "final_time", "{:.0f}"),
)


def format_baseline_table(results: dict[str, dict[str, Any]]) -> str:
    """Baselines side by side: one row per ``{policy: run_rltaps_baseline(...)}`` entry."""
    header = ("policy", *(title for title, _, _ in TABLE_COLUMNS))
    body = [
        (
            policy,
            *(
                "-" if result.get(key) is None else style.format(result[key])
                for _, key, style in TABLE_COLUMNS
            ),
        )
        for policy, result in results.items()
    ]
    widths = [max(map(len, column)) for column in zip(header, *body, strict=True)]
    lines = [
        " | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in (header, *body)
    ]
    return "\n".join([lines[0], "-+-".join("-" * width for width in widths), *lines[1:]])
