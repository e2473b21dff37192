"""Heuristic schedulers: a job ordering times a placement, behind one small interface.

Typical use::

    from envs.schedulers import make_scheduler
    from envs.sim import Simulator

    sim = Simulator(cluster, workload)
    sim.run(make_scheduler("las+lif"))

``make_scheduler("ordering+placement", rng=...)`` builds any combination of the
orderings ``fifo, sjf, srtf, las, drf, sif, dsif, dsif-patient, saf, lrf, spf, random,
gittins`` (and the patient ``fifo-, drf-, saf-, lrf-, spf-patient``) and the
placements ``packing, tetris, load-balancing, lif, depth-first, breadth-first, locality,
random, quiet-packing`` (:func:`scheduler_names`). Modules: ``base`` (the :class:`Ordering` and
:class:`Placement` interfaces), ``scheduler`` (:class:`Scheduler`: the walk over the
queue, backfilling, DSIF's delays), ``orderings``, ``preemption`` (preemptive LAS,
SRTF and Gittins: who preempts whom, the guard against thrashing), ``packing`` (002),
``tetris`` (001's: servers filled one at a time, the best aligned first), ``per_task``
(load balancing, least interference, random), ``gittins`` (Tiresias' Gittins
index), ``nodes`` (004's depth- and breadth-first), ``locality`` (lowest common
switch), ``view`` (the tentative
:class:`ClusterView`), ``tentative``/``capacity``/``tasks`` (placement helpers),
``domains`` (locality levels of a topology), ``loads`` and ``estimate`` (001's
interference inputs, SAF's oracle).
"""

from envs.schedulers.base import Ordering, Placement
from envs.schedulers.domains import LocalityLevels, locality_levels
from envs.schedulers.gittins import GittinsIndex
from envs.schedulers.las import LeastAttainedService
from envs.schedulers.locality import LocalityFirst, best_level
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
from envs.schedulers.registry import (
    SchedulerNames,
    make_scheduler,
    scheduler_names,
    split_scheduler_name,
)
from envs.schedulers.scheduler import Scheduler
from envs.schedulers.tetris import Tetris
from envs.schedulers.view import ClusterView

__all__ = [
    "BreadthFirst",
    "ClusterView",
    "DelayedShortestIdealTime",
    "DepthFirst",
    "DominantResourceFairness",
    "FirstInFirstOut",
    "GittinsIndex",
    "LeastAttainedService",
    "LeastInterference",
    "LeastResourceFirst",
    "LoadBalancing",
    "LocalityFirst",
    "LocalityLevels",
    "Ordering",
    "Packing",
    "PatientDelayedShortestIdealTime",
    "PatientDominantResourceFairness",
    "PatientFirstInFirstOut",
    "PatientLeastResourceFirst",
    "PatientShortestActualTime",
    "PatientSmallestProductFirst",
    "Placement",
    "PreemptionSettings",
    "QuietPacking",
    "RandomOrder",
    "RandomPlacement",
    "Scheduler",
    "SchedulerNames",
    "ShortestActualTime",
    "ShortestIdealTime",
    "ShortestJobFirst",
    "ShortestRemainingTimeFirst",
    "SmallestProductFirst",
    "Tetris",
    "best_level",
    "locality_levels",
    "make_scheduler",
    "scheduler_names",
    "split_scheduler_name",
]
