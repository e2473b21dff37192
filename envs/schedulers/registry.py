"""Schedulers by name: ``make_scheduler("fifo+packing")`` for every ordering x placement."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from envs.schedulers.base import Ordering, Placement
from envs.schedulers.gittins import GittinsIndex
from envs.schedulers.las import LeastAttainedService
from envs.schedulers.locality import LocalityFirst
from envs.schedulers.nodes import BreadthFirst, DepthFirst
from envs.schedulers.orderings import (
    DelayedShortestIdealTime,
    DominantResourceFairness,
    FirstInFirstOut,
    LeastResourceFirst,
    PatientDelayedShortestIdealTime,
    RandomOrder,
    ShortestActualTime,
    ShortestIdealTime,
    ShortestJobFirst,
    ShortestRemainingTimeFirst,
    SmallestProductFirst,
)
from envs.schedulers.packing import Packing, QuietPacking
from envs.schedulers.patient import (
    PatientDominantResourceFairness,
    PatientFirstInFirstOut,
    PatientLeastResourceFirst,
    PatientShortestActualTime,
    PatientSmallestProductFirst,
)
from envs.schedulers.per_task import LeastInterference, LoadBalancing, RandomPlacement
from envs.schedulers.preemption import PreemptionSettings
from envs.schedulers.scheduler import Scheduler
from envs.schedulers.tetris import Tetris


def _on_las_queues(ordering: type[LeastAttainedService], settings: PreemptionSettings) -> Ordering:
    """Tiresias' discretized LAS or its Gittins-index variant (a subclass): both order
    within the settings' attained-service queues and preempt as they say."""
    return ordering(
        settings.las_thresholds_gpu_s,
        preemptive=settings.enabled,
        min_run_s=settings.min_run_s,
        promote_knob=settings.las_promote_knob,
        consolidate=settings.consolidate,
    )


def _srtf(settings: PreemptionSettings) -> Ordering:
    return ShortestRemainingTimeFirst(
        preemptive=settings.enabled, min_run_s=settings.min_run_s, consolidate=settings.consolidate
    )


# Each factory gets the scheduler's generator, its placement (SAF's oracle needs it) and
# the preemption settings (for the preemptive orderings, las, srtf and gittins).
ORDERINGS: dict[str, Callable[[np.random.Generator, Placement, PreemptionSettings], Ordering]] = {
    "fifo": lambda rng, placement, preemption: FirstInFirstOut(),
    "sjf": lambda rng, placement, preemption: ShortestJobFirst(),
    "srtf": lambda rng, placement, preemption: _srtf(preemption),
    "las": lambda rng, placement, preemption: _on_las_queues(LeastAttainedService, preemption),
    "drf": lambda rng, placement, preemption: DominantResourceFairness(),
    "sif": lambda rng, placement, preemption: ShortestIdealTime(),
    "dsif": lambda rng, placement, preemption: DelayedShortestIdealTime(),
    "dsif-patient": lambda rng, placement, preemption: PatientDelayedShortestIdealTime(),
    "saf": lambda rng, placement, preemption: ShortestActualTime(placement),
    "lrf": lambda rng, placement, preemption: LeastResourceFirst(),
    "spf": lambda rng, placement, preemption: SmallestProductFirst(),
    "random": lambda rng, placement, preemption: RandomOrder(rng),
    # Last: appended after the orderings every earlier table and index was built on.
    "gittins": lambda rng, placement, preemption: _on_las_queues(GittinsIndex, preemption),
    # The patient variants (:mod:`.patient`), appended after gittins for the same reason.
    "fifo-patient": lambda rng, placement, preemption: PatientFirstInFirstOut(),
    "drf-patient": lambda rng, placement, preemption: PatientDominantResourceFairness(),
    "saf-patient": lambda rng, placement, preemption: PatientShortestActualTime(placement),
    "lrf-patient": lambda rng, placement, preemption: PatientLeastResourceFirst(),
    "spf-patient": lambda rng, placement, preemption: PatientSmallestProductFirst(),
}

PLACEMENTS: dict[str, Callable[[np.random.Generator], Placement]] = {
    "packing": lambda rng: Packing(),
    "tetris": lambda rng: Tetris(),
    "load-balancing": lambda rng: LoadBalancing(),
    "lif": lambda rng: LeastInterference(),
    "depth-first": lambda rng: DepthFirst(),
    "breadth-first": lambda rng: BreadthFirst(),
    "locality": lambda rng: LocalityFirst(),
    "random": lambda rng: RandomPlacement(rng),
    "quiet-packing": lambda rng: QuietPacking(),
}


class SchedulerNames(NamedTuple):
    """The names ``make_scheduler`` combines as ``ordering+placement``."""

    orderings: tuple[str, ...]
    placements: tuple[str, ...]

    def combinations(self) -> list[str]:
        """Every ``ordering+placement`` name."""
        return [f"{o}+{p}" for o in self.orderings for p in self.placements]


def scheduler_names() -> SchedulerNames:
    """The known orderings and placements, in the order of the issue."""
    return SchedulerNames(tuple(ORDERINGS), tuple(PLACEMENTS))


def split_scheduler_name(name: str) -> tuple[str, str]:
    """``(ordering, placement)`` of a known ``"ordering+placement"`` name, without building
    the scheduler (what configs call to check a name). Raises TypeError for a non-string
    and ValueError for an unknown name, listing the known orderings and placements."""
    if not isinstance(name, str):
        raise TypeError(f"scheduler name must be a string like 'fifo+packing', got {name!r}")
    ordering_name, plus, placement_name = name.strip().partition("+")
    problems = []
    if not plus:
        problems.append(f"{name!r} is not of the form ordering+placement")
    else:
        if ordering_name not in ORDERINGS:
            problems.append(f"unknown ordering {ordering_name!r}")
        if placement_name not in PLACEMENTS:
            problems.append(f"unknown placement {placement_name!r}")
    if problems:
        names = scheduler_names()
        raise ValueError(
            f"{'; '.join(problems)}; orderings: {', '.join(names.orderings)}; "
            f"placements: {', '.join(names.placements)} (e.g. 'fifo+packing')"
        )
    return ordering_name, placement_name


def make_scheduler(
    name: str,
    rng: np.random.Generator | int | None = None,
    *,
    backfill: bool = True,
    preemption: PreemptionSettings | None = None,
) -> Scheduler:
    """The scheduler ``ordering+placement``, e.g. ``"fifo+packing"``, ``"las+lif"``.

    ``rng`` drives the random ordering and placement: a Generator (used as is, so
    consecutive runs continue its stream), a seed, or None for seed 0. Build a new
    scheduler per run to repeat a run exactly. ``las`` (Tiresias' discretized LAS),
    ``gittins`` (its Gittins-index variant, on LAS's queues) and ``srtf`` preempt as
    ``preemption`` says (default :class:`PreemptionSettings`: on, 5-minute minimum run,
    four LAS queues); the other orderings never
    preempt. Raises ValueError for an unknown name, listing the known orderings and
    placements.
    """
    if preemption is None:
        preemption = PreemptionSettings()
    elif not isinstance(preemption, PreemptionSettings):
        raise TypeError(f"preemption must be a PreemptionSettings, got {type(preemption).__name__}")
    ordering_name, placement_name = split_scheduler_name(name)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng or 0)
    placement = PLACEMENTS[placement_name](generator)
    ordering = ORDERINGS[ordering_name](generator, placement, preemption)
    return Scheduler(ordering, placement, backfill=backfill)
