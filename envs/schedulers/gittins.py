"""Tiresias' Gittins-index ordering (``gittins``): discretized 2D-Gittins on GPU-time.

Tiresias (Gu et al., NSDI'19) offers, beside its discretized 2D-LAS (:mod:`.las`), a
variant ranked by the Gittins index of a job's attained service in GPU-seconds. The paper
is not among the project's papers; the definition here is the classic one for a job of
unknown size drawn from a known distribution (the M/G/1 scheduling literature the search
found: Aalto, Ayesta and Righter, "On the Gittins index in the M/G/1 queue", 2009; Scully
and Harchol-Balter, "The Gittins policy in the M/G/1 queue", 2021), on GPU-time as
Tiresias' "2D" service:

    G(a) = sup_D  P(S - a <= D | S > a) / E[min(S - a, D) | S > a]

the best ratio, over service quanta D, of the chance to finish within D more GPU-seconds
to the GPU-seconds expected to be spent trying. A higher index ranks first. ``S`` is the
empirical distribution of the GPU-seconds the jobs finished so far consumed; over ``m``
samples above ``a``, ``T_1 <= ... <= T_m`` their excess over ``a``, the supremum is taken
at a sample (between two, the chance stays and the cost grows), so

    G(a) = max_k  k / (T_1 + ... + T_k + (m - k) T_k),       G(a) = 0 when m = 0.

**Discretized.** The index is tabulated on at most :data:`GRID_POINTS` values of attained
service: 0 and the distinct samples (their quantiles when there are more), and a job's
service counts as the largest of them not above it (Tiresias' simulator also looks the
index up per sample). The table is rebuilt when the finished jobs grew by
:data:`REFRESH_GROWTH` (5%) since the last one, at least by one job; before any job
finished every index is 0.

**Ranks.** As in Tiresias' discretized schemes the queues come first: the LAS queues by
attained GPU-seconds (the same thresholds, demotion and optional promotion as
:class:`~.las.LeastAttainedService`), then the higher index, then first come first
served (arrival, or the last promotion); jobs of equal service share an index, so the
fresh jobs of a queue run in arrival order. Preemptive, with LAS's guard and
consolidation (:mod:`.preemption`). The scheduler asks for decisions at demotions and
promotions, as for LAS; an index that changes in between (a rebuilt table, a running job
passing a grid point) is read at the next decision.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from envs.schedulers.las import LeastAttainedService
from envs.sim import JobStatus, Simulator

GRID_POINTS = 64
"""Most attained-service values the index is tabulated at."""

REFRESH_GROWTH = 0.05
"""Relative growth of the finished jobs after which the index table is rebuilt."""

_FINISHED = int(JobStatus.FINISHED)


def gittins_index(samples: Sequence[float] | np.ndarray, attained: np.ndarray) -> np.ndarray:
    """The empirical Gittins index G(a) of each service ``a`` in ``attained`` over the
    service ``samples`` (see the module doc): 0 where no sample exceeds ``a``."""
    values = np.sort(np.asarray(samples, dtype=np.float64).reshape(-1))
    attained = np.asarray(attained, dtype=np.float64).reshape(-1)
    index = np.zeros(len(attained))
    for position, service in enumerate(attained.tolist()):
        excess = values[values > service] - service
        if not len(excess):
            continue
        taken = np.arange(1, len(excess) + 1)
        spent = np.cumsum(excess) + (len(excess) - taken) * excess
        index[position] = float((taken / spent).max())
    return index


def index_grid(samples: np.ndarray, points: int = GRID_POINTS) -> np.ndarray:
    """The sorted services the index is tabulated at: 0 and the distinct ``samples``,
    or 0 and ``points - 1`` of their quantiles (sample values) when there are more."""
    distinct = np.unique(np.asarray(samples, dtype=np.float64))
    distinct = distinct[distinct > 0]
    if len(distinct) > points - 1:
        levels = np.linspace(0.0, 1.0, points - 1)
        distinct = np.unique(
            np.quantile(np.asarray(samples, dtype=np.float64), levels, method="lower")
        )
        distinct = distinct[distinct > 0]
    return np.concatenate([[0.0], distinct])


class GittinsIndex(LeastAttainedService):
    """Tiresias' discretized 2D-Gittins index: LAS's queues, then the higher Gittins
    index of the attained GPU-seconds, then FIFO (see the module doc). Arguments as
    :class:`~.las.LeastAttainedService` (thresholds are required: the queues).
    """

    name = "gittins"

    def __init__(
        self,
        thresholds_gpu_s: Sequence[float],
        *,
        preemptive: bool = False,
        min_run_s: float = 0.0,
        promote_knob: float | None = None,
        consolidate: bool = True,
    ) -> None:
        if thresholds_gpu_s is None:
            # Without queues LAS's first key is the attained service itself, and the
            # index would only break exact ties: plain LAS under another name.
            raise ValueError(
                "the Gittins index needs LAS's queues: give thresholds_gpu_s (attained "
                "GPU-seconds, increasing)"
            )
        super().__init__(
            thresholds_gpu_s,
            preemptive=preemptive,
            min_run_s=min_run_s,
            promote_knob=promote_knob,
            consolidate=consolidate,
        )
        self._table_sim: Simulator | None = None
        self._table_finished = 0
        self._grid = np.zeros(1)
        self._table = np.zeros(1)

    def index(self, sim: Simulator, jobs: np.ndarray) -> np.ndarray:
        """The tabulated Gittins index of each of ``jobs``' service now."""
        self._refresh_table(sim)
        at = np.searchsorted(self._grid, self.service(sim, jobs), side="right") - 1
        return self._table[np.maximum(at, 0)]

    def priority_keys(self, sim: Simulator, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
        jobs = np.asarray(jobs, dtype=np.int64)
        queue_keys = super().priority_keys(sim, jobs)
        return (queue_keys[0], -self.index(sim, jobs), *queue_keys[1:])

    def _refresh_table(self, sim: Simulator) -> None:
        """Rebuild the index table from the finished jobs when they grew enough."""
        if sim is not self._table_sim:
            self._table_sim, self._table_finished = sim, 0
            self._grid, self._table = np.zeros(1), np.zeros(1)
        count = sim.finished_count
        if count <= self._table_finished or count < (1.0 + REFRESH_GROWTH) * self._table_finished:
            return
        samples = sim.attained_gpu_seconds[sim.status == _FINISHED]
        self._grid = index_grid(samples)
        self._table = gittins_index(samples, self._grid)
        self._table_finished = count

    def __repr__(self) -> str:
        return "GittinsIndex" + super().__repr__().removeprefix("LeastAttainedService")
