"""How good a schedule of the heuristics' own form can be, found with hindsight.

The lower bound (:mod:`envs.sim.bounds`) says how far below the best heuristic no
schedule can go; it does not say whether any real schedule comes near it. This module
finds real ones: a scheduler of the table's form -- a static priority order over the
jobs, DSIF's hold for locality (002) switched on or off per job, and one of the
placements -- searched for one workload with the workload known in advance (hindsight),
each candidate played to the end by the simulator. The best found is a schedule that
exists, so the optimum lies between the bound and it; a goal above what the search
reaches is within reach of some schedule, one below it may not be.

**The search.** It starts from a heuristic of the table whose order is fixed in advance
-- by default DSIF's own choice (shortest ideal time first, every job patient: exactly
``dsif-patient+<placement>``), or e.g. ``spf-patient`` -- and makes ``evaluations`` moves, each
played to the end: move a job a few places up or down the order (60%), swap two jobs
anywhere in it (20%), or switch one job's patience (20%). A move that lowers the average
JCT is kept; one that raises it is kept with probability ``exp(-rise / T)`` (simulated
annealing), ``T`` falling linearly from ``temperature`` x the starting average to 0; a
walk that strays more than 1% above the best goes back to it every 300 moves. Seeded, so
a search repeats exactly. This is a reference, not a policy: every order it finds is fit
to one workload with its future known.

**Placement per job** (``also_placements``). Given more placements, every job also has one
of them (all start with ``placement``): a quarter of the moves then switch one job's
placement to another of them (:class:`PerJobPlacement`), the other moves as above. Without
it the search draws exactly as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from envs.schedulers.base import Ordering, Placement, by_key, static_rank
from envs.schedulers.orderings import PATIENT_DELAYS
from envs.schedulers.registry import ORDERINGS, PLACEMENTS, make_scheduler
from envs.schedulers.scheduler import Scheduler
from envs.schedulers.tasks import JobTasks
from envs.schedulers.view import ClusterView
from envs.sim import Simulator, SimulatorConfig
from envs.sim.runner import simulate
from envs.topology import Cluster
from envs.workload import Workload

#: Share of moves of each kind: a job a few places up or down, two jobs swapped, one
#: job's patience switched (the rest).
_NEARBY_MOVES, _SWAPS = 0.6, 0.2
#: How far a nearby move takes a job in the order, at most.
_NEARBY_PLACES = 8
#: Moves between returns to the best order found, when the walk strayed above it.
_RETURN_EVERY = 300
_STRAY = 1.01
#: Share of moves that switch one job's placement, when the search has several.
_PLACEMENT_MOVES = 0.25


class FixedPriorities(Ordering):
    """A given priority order (``rank[job]``, smaller first; ties by arrival) with DSIF's
    hold for locality, up to ``patience`` decisions, for the jobs marked ``patient`` (the
    search's candidates; with SIF's ranks and every job patient, ``dsif-patient``)."""

    name = "fixed-priorities"
    max_delays: ClassVar[int] = PATIENT_DELAYS

    def __init__(
        self, rank: np.ndarray, patient: np.ndarray, patience: int = PATIENT_DELAYS
    ) -> None:
        self.rank = np.asarray(rank, dtype=np.float64)
        self.patient = np.asarray(patient, dtype=bool)
        self.patience = patience
        if self.rank.shape != self.patient.shape or self.rank.ndim != 1:
            raise ValueError(
                f"rank and patient must be 1-D arrays of one length (a value per job); "
                f"got shapes {self.rank.shape} and {self.patient.shape}"
            )
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"patience must be a positive number of decisions; got {patience!r}")

    def order(self, sim: Simulator, jobs: np.ndarray, view: ClusterView) -> np.ndarray:
        return by_key(sim, jobs, self.rank[jobs])

    def static_keys(self, sim: Simulator) -> tuple[np.ndarray, ...]:
        return (self.rank,)

    def delay_limit(self, job: int) -> int:
        return self.patience if self.patient[job] else 0


class PerJobPlacement(Placement):
    """Each job placed by its own placement: ``placements[choice[job]]``."""

    name = "per-job"

    def __init__(self, placements: list[Placement], choice: np.ndarray) -> None:
        self.placements = placements
        self.choice = np.asarray(choice, dtype=np.int64)
        if (
            self.choice.ndim != 1
            or not ((self.choice >= 0) & (self.choice < len(placements))).all()
        ):
            raise ValueError(
                f"choice must give each job one of the {len(placements)} placements "
                f"(0 .. {len(placements) - 1}); got {self.choice!r}"
            )
        # Alike jobs share an answer only when they share a placement (key_columns).
        self.memoizable = all(placement.memoizable for placement in placements)

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        return self.placements[int(self.choice[tasks.job])].choose(sim, tasks, view)

    def key_columns(self, sim: Simulator) -> list[np.ndarray]:
        columns = [self.choice.astype(np.float64)]
        for placement in self.placements:
            columns.extend(placement.key_columns(sim))
        return columns


def starting_point(
    cluster: Cluster, workload: Workload, config: SimulatorConfig, ordering: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(rank, patient, patience)`` with which :class:`FixedPriorities` plays the
    registry's ``ordering`` exactly: the rank the scheduler gives its static keys
    (:func:`.base.static_rank`) and its hold rule for every job. ValueError for an ordering
    whose order changes as the simulation runs (``saf``, ``drf``, preemptive ones)."""
    if ordering not in ORDERINGS:
        raise ValueError(f"unknown ordering {ordering!r}; orderings: {', '.join(ORDERINGS)}")
    if ordering not in static_orderings():
        raise ValueError(
            f"the search cannot start from {ordering!r}: its order is not fixed in advance; "
            f"orderings it can start from: {', '.join(static_orderings())}"
        )
    sim = Simulator(cluster, workload, config)
    ranked = _ordering(ordering)
    rank, _ = static_rank(sim, ranked.static_keys(sim))
    delays = ranked.max_delays
    return rank, np.full(len(rank), delays > 0), delays if delays > 0 else PATIENT_DELAYS


def static_orderings() -> list[str]:
    """The orderings of the registry the search can start from: those the scheduler ranks
    once by static keys (:meth:`.base.Ordering.static_keys`), never preemptive."""
    built = {name: _ordering(name) for name in ORDERINGS}
    return [
        name
        for name, ordering in built.items()
        if type(ordering).static_keys is not Ordering.static_keys and not ordering.preemptive
    ]


def _ordering(name: str) -> Ordering:
    """The registry's ordering ``name``, as a scheduler of it holds it."""
    return make_scheduler(f"{name}+packing").ordering


@dataclass(frozen=True)
class PrioritySearchResult:
    """The search's best schedule: its average JCT (s), its ``rank`` (a permutation: the
    order of the jobs) and ``patient`` flags per job (held up to ``patience`` decisions);
    where it started (``start_avg_jct_s``: ``<start>+<placement>``'s); ``best_after[i]``:
    the best average JCT after ``i + 1`` evaluations."""

    avg_jct_s: float
    rank: np.ndarray
    patient: np.ndarray
    start_avg_jct_s: float
    best_after: np.ndarray
    start: str = "dsif-patient"
    patience: int = PATIENT_DELAYS
    #: The placements the search chose among, and each job's (an index into them).
    placements: tuple[str, ...] = ()
    placement_choice: np.ndarray | None = None

    @property
    def evaluations(self) -> int:
        """Schedules played, the start not counted."""
        return len(self.best_after)


def play(
    cluster: Cluster,
    workload: Workload,
    config: SimulatorConfig,
    placement: str,
    rank: np.ndarray,
    patient: np.ndarray,
    patience: int = PATIENT_DELAYS,
    placements: tuple[str, ...] = (),
    choice: np.ndarray | None = None,
) -> float:
    """Average JCT (s) of the workload played by :class:`FixedPriorities` with
    ``placement`` (backfilling, as every heuristic of the table); with ``placements`` and
    ``choice``, each job with its own of them (:class:`PerJobPlacement`)."""
    chosen: Placement
    if placements and choice is not None:
        built = [PLACEMENTS[name](np.random.default_rng(0)) for name in placements]
        chosen = PerJobPlacement(built, choice)
    else:
        chosen = PLACEMENTS[placement](np.random.default_rng(0))
    scheduler = Scheduler(FixedPriorities(rank, patient, patience), chosen)
    result = simulate(cluster, workload, scheduler, f"{FixedPriorities.name}+{chosen.name}", config)
    return float(result.metrics()["avg_jct"])


def search_priorities(
    cluster: Cluster,
    workload: Workload,
    config: SimulatorConfig,
    placement: str,
    evaluations: int,
    seed: int = 0,
    temperature: float = 1e-3,
    start: str = "dsif-patient",
    also_placements: tuple[str, ...] = (),
) -> PrioritySearchResult:
    """The best :class:`FixedPriorities` schedule of ``workload`` found in ``evaluations``
    moves from ``start``'s (an ordering of the registry whose order is fixed in advance:
    :func:`starting_point`; module doc), every job placed by ``placement`` or, with
    ``also_placements``, by the one of them the search chose for it. Raises ValueError for
    an unknown or repeated placement, an ordering it cannot start from, a negative number
    of evaluations or temperature."""
    names = (placement, *also_placements)
    for name in names:
        if name not in PLACEMENTS:
            raise ValueError(f"unknown placement {name!r}; placements: {', '.join(PLACEMENTS)}")
    if len(set(names)) < len(names):
        raise ValueError(f"placements repeat a name: {', '.join(names)}; give each once")
    if isinstance(evaluations, bool) or not isinstance(evaluations, int) or evaluations < 0:
        raise ValueError(f"evaluations must be an integer >= 0; got {evaluations!r}")
    if not (np.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0; got {temperature!r}")
    rank, patient, patience = starting_point(cluster, workload, config, start)
    several = len(names) > 1
    choice = np.zeros(len(rank), dtype=np.int64)
    per_job = names if several else ()  # one placement: play it without PerJobPlacement

    def cost(rank: np.ndarray, patient: np.ndarray, choice: np.ndarray) -> float:
        return play(cluster, workload, config, placement, rank, patient, patience, per_job, choice)

    current = start_cost = cost(rank, patient, choice)
    best, best_state = start_cost, (rank, patient, choice)
    rng = np.random.default_rng(seed)
    best_after = np.empty(evaluations)
    for step in range(evaluations):
        heat = temperature * start_cost * (1.0 - step / evaluations)
        # With one placement no draw decides the kind of move: the search repeats the
        # placement-free one exactly.
        if several and rng.random() < _PLACEMENT_MOVES:
            candidate = (rank, patient, _switch_placement(choice, len(names), rng))
        else:
            candidate = (*_move(rank, patient, rng), choice)
        value = cost(*candidate)
        rise = value - current
        if rise <= 0 or (heat > 0 and rng.random() < np.exp(-rise / heat)):
            (rank, patient, choice), current = candidate, value
            if value < best:
                best, best_state = value, candidate
        if (step + 1) % _RETURN_EVERY == 0 and current > best * _STRAY:
            (rank, patient, choice), current = best_state, best
        best_after[step] = best
    best_rank, best_patient, best_choice = best_state
    return PrioritySearchResult(
        best,
        best_rank,
        best_patient,
        start_cost,
        best_after,
        start,
        patience,
        names,
        best_choice if several else None,
    )


def _switch_placement(choice: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``choice`` with one job given another of the ``count`` placements, as a new array."""
    choice = choice.copy()
    job = int(rng.integers(len(choice)))
    choice[job] = (choice[job] + 1 + int(rng.integers(count - 1))) % count
    return choice


def _move(
    rank: np.ndarray, patient: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One random move (module doc), as new arrays."""
    jobs = len(rank)
    rank, patient = rank.copy(), patient.copy()
    kind = rng.random()
    if kind < _NEARBY_MOVES:
        order = list(np.argsort(rank, kind="stable"))
        position = int(rng.integers(jobs))
        shift = int(rng.integers(-_NEARBY_PLACES, _NEARBY_PLACES + 1))
        moved = order.pop(position)
        order.insert(min(max(position + shift, 0), jobs - 1), moved)
        rank[np.asarray(order)] = np.arange(jobs)
    elif kind < _NEARBY_MOVES + _SWAPS:
        first, second = rng.integers(jobs, size=2)
        rank[first], rank[second] = rank[second], rank[first]
    else:
        job = int(rng.integers(jobs))
        patient[job] = not patient[job]
    return rank, patient
