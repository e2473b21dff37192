"""Patient orderings: an ordering with DSIF's delay rule, holding a job back up to
``PATIENT_DELAYS`` (30) decisions while its placement misses its best locality.

002 gives the delay rule to SIF alone, with 3 delays. Under contention, waiting for a
server of one's own pays under other orderings too: on the contended pod experiment's
held-out workloads (seeds 1000-1009), ``saf-patient+quiet-packing`` averaged 3.633 h against
``dsif-patient+quiet-packing``'s 3.676 h, and on paper001's ``saf-patient+locality`` 3.877 h
against 3.935 h. A table that left them out would credit a learned policy with what
patience alone buys under another order, so every non-preemptive ordering by a job's own
key has its patient variant in the registry (``sjf`` and ``sif`` rank by the same ideal
time, so ``dsif-patient`` is theirs). Preemptive orderings (``srtf``, ``las``,
``gittins``) and ``random`` have none: their rule for waiting is their own.
"""

from __future__ import annotations

from typing import ClassVar

from envs.schedulers.orderings import (
    PATIENT_DELAYS,
    DominantResourceFairness,
    FirstInFirstOut,
    LeastResourceFirst,
    ShortestActualTime,
    SmallestProductFirst,
)


class _Patient:
    """Mixin placed before an ordering: DSIF's delay rule at ``PATIENT_DELAYS`` decisions
    (the scheduler reads ``max_delays``; the ordering's rank is unchanged)."""

    max_delays: ClassVar[int] = PATIENT_DELAYS


class PatientFirstInFirstOut(_Patient, FirstInFirstOut):
    """FIFO holding a job back up to ``PATIENT_DELAYS`` decisions for its best locality."""

    name = "fifo-patient"


class PatientDominantResourceFairness(_Patient, DominantResourceFairness):
    """DRF holding a job back up to ``PATIENT_DELAYS`` decisions for its best locality."""

    name = "drf-patient"


class PatientShortestActualTime(_Patient, ShortestActualTime):
    """SAF holding a job back up to ``PATIENT_DELAYS`` decisions for its best locality."""

    name = "saf-patient"


class PatientLeastResourceFirst(_Patient, LeastResourceFirst):
    """LRF holding a job back up to ``PATIENT_DELAYS`` decisions for its best locality."""

    name = "lrf-patient"


class PatientSmallestProductFirst(_Patient, SmallestProductFirst):
    """SPF holding a job back up to ``PATIENT_DELAYS`` decisions for its best locality."""

    name = "spf-patient"
