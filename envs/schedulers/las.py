"""Tiresias' least-attained-service ordering (LAS), discretized, with starvation promotion.

Tiresias (Gu et al., NSDI'19) ranks jobs by the GPU service they attained (GPUs x seconds
run: its "2D" LAS). The discretized form keeps K queues split by attained GPU-seconds: every
job starts in queue 0, is demoted as it crosses a threshold, and jobs rank by queue, then
first-come first-served inside a queue. A long job therefore yields to every new arrival
and can wait behind them for ever; Tiresias bounds that wait by *promotion*: a waiting job
that has waited ``PROMOTEKNOB`` times as long as it ran goes back to queue 0.

Here, precisely: a job's *service* is the GPU-seconds it attained since it entered the
system or was last promoted, and its queue follows from that service. A waiting job in a
queue below 0 that has run for ``r > 0`` seconds since it entered (or was last promoted)
is promoted once it has waited ``knob x r`` seconds since it was last preempted: its
service restarts from 0 and it joins the back of queue 0 (inside a queue, jobs rank by the
time they entered it: arrival, or their last promotion). Counting the wait from the last
preemption, not from arrival, keeps a job that queued long before its first start from
bouncing back to queue 0 the moment it is demoted and preempted. The simulator's
``attained_gpu_seconds`` is never reset -- metrics read it -- so the ordering keeps, per
job, the service, run time and time at its last promotion as offsets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from envs.schedulers.base import Ordering, by_key, check_min_run
from envs.schedulers.view import ClusterView
from envs.sim import Simulator

_ATTAINED_TOLERANCE = 1e-6
"""GPU-seconds within which an attained service counts as reaching a threshold."""

_TIME_TOLERANCE = 1e-9
"""Relative tolerance on times: a promotion due now must be seen by the decision now."""


class LeastAttainedService(Ordering):
    """Tiresias' LAS: the fewest GPU-seconds received so far.

    With ``thresholds_gpu_s`` (increasing attained GPU-seconds), Tiresias' discretized
    LAS: a job is in queue k when its service reached k of the thresholds (all start in
    queue 0, a running job is demoted as it crosses one), and jobs rank by queue, then
    FIFO inside a queue. Without thresholds, by attained service itself (promotion needs
    queues). ``promote_knob``: Tiresias' PROMOTEKNOB (see the module doc); None never
    promotes. ``preemptive``: a waiting job preempts running jobs ranked strictly after it
    (a lower queue, or the same queue and entered later), each after ``min_run_s`` of
    running (:mod:`.preemption`); the scheduler asks for a decision when a running job
    will be demoted or a waiting one promoted. Continuous LAS would preempt a job as soon
    as a waiting one fell behind it; the queues keep preemptions to demotions, promotions
    and arrivals. ``consolidate``: a job starts, fresh or resumed, only as compactly as
    the placement would place it alone (:mod:`.preemption`).
    """

    name = "las"

    def __init__(
        self,
        thresholds_gpu_s: Sequence[float] | None = None,
        *,
        preemptive: bool = False,
        min_run_s: float = 0.0,
        promote_knob: float | None = None,
        consolidate: bool = True,
    ) -> None:
        self.thresholds = None if thresholds_gpu_s is None else check_thresholds(thresholds_gpu_s)
        self.preemptive = bool(preemptive)
        self.min_run_s = check_min_run(min_run_s)
        self.promote_knob = check_promote_knob(promote_knob)
        self.consolidate = bool(consolidate)
        if self.promote_knob is not None and self.thresholds is None:
            raise ValueError("LAS promotion needs queues: give thresholds with promote_knob")
        self._promotions: _Promotions | None = None

    def service(self, sim: Simulator, jobs: np.ndarray) -> np.ndarray:
        """GPU-seconds each of ``jobs`` attained since it arrived or was last promoted."""
        jobs = np.asarray(jobs, dtype=np.int64)
        attained = sim.attained_gpu_seconds[jobs]
        promotions = self._promoted(sim)
        return attained if promotions is None else attained - promotions.service_at[jobs]

    def queue(self, sim: Simulator, jobs: np.ndarray) -> np.ndarray:
        """Discretized LAS: each job's queue, 0 for the highest priority."""
        assert self.thresholds is not None
        # Within rounding of a threshold counts as crossed: the decision requested for a
        # demotion must see it.
        service = self.service(sim, jobs) + _ATTAINED_TOLERANCE
        return self.thresholds.searchsorted(service, side="right")

    def priority_keys(self, sim: Simulator, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
        jobs = np.asarray(jobs, dtype=np.int64)
        if self.thresholds is None:
            return (self.service(sim, jobs),)
        promotions = self._promoted(sim)
        if promotions is None:
            return (self.queue(sim, jobs),)
        return (self.queue(sim, jobs), promotions.entered_at[jobs])

    def order(self, sim: Simulator, jobs: np.ndarray, view: ClusterView) -> np.ndarray:
        return by_key(sim, jobs, *self.priority_keys(sim, jobs))

    def next_priority_change(self, sim: Simulator, running: np.ndarray) -> float:
        """When the first running job crosses its queue's threshold, or the first waiting
        job is due for promotion (inf without queues: continuous LAS changes all the
        time; a request per decision would not help)."""
        if self.thresholds is None:
            return float("inf")
        times = [float("inf")]
        if len(running):
            queue = self.queue(sim, running)
            gpus = sim.running_gpus[running]
            rising = (queue < len(self.thresholds)) & (gpus > 0)
            if rising.any():
                limit = self.thresholds[queue[rising]]
                service = self.service(sim, running[rising])
                times.append(float(sim.now + ((limit - service) / gpus[rising]).min()))
        promotions = self._promoted(sim)
        if promotions is not None:
            times.append(promotions.next_due(sim, self))
        return min(times)

    def _promoted(self, sim: Simulator) -> _Promotions | None:
        """The promotion state for ``sim``, brought up to ``sim.now`` (None: no promotion)."""
        if self.promote_knob is None:
            return None
        if self._promotions is None or self._promotions.sim is not sim:
            self._promotions = _Promotions(sim, self.promote_knob)
        self._promotions.apply(sim, self)
        return self._promotions

    def __repr__(self) -> str:
        thresholds = None if self.thresholds is None else tuple(self.thresholds.tolist())
        return (
            f"LeastAttainedService({thresholds}, preemptive={self.preemptive}, "
            f"min_run_s={self.min_run_s}, promote_knob={self.promote_knob}, "
            f"consolidate={self.consolidate})"
        )


class _Promotions:
    """Per-job offsets at the last promotion, for one simulation (see the module doc)."""

    def __init__(self, sim: Simulator, knob: float) -> None:
        self.sim = sim
        self.knob = knob
        self.service_at = np.zeros(sim.num_jobs)
        self.run_at = np.zeros(sim.num_jobs)
        self.entered_at = np.asarray(sim.workload.arrival_time, dtype=np.float64).copy()
        self._applied_at = -math.inf

    def _candidates(
        self, sim: Simulator, ordering: LeastAttainedService
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(jobs, ran)``: waiting jobs below queue 0 that ran since they entered it, and
        their run time since then."""
        waiting = sim.waiting_jobs()
        if not len(waiting):
            return waiting, np.zeros(0)
        ran = sim.run_time[waiting] - self.run_at[waiting]
        assert ordering.thresholds is not None
        service = sim.attained_gpu_seconds[waiting] - self.service_at[waiting]
        demoted = service + _ATTAINED_TOLERANCE >= ordering.thresholds[0]
        keep = demoted & (ran > 0)
        return waiting[keep], ran[keep]

    def apply(self, sim: Simulator, ordering: LeastAttainedService) -> None:
        """Promote the waiting jobs due now (once per simulated time)."""
        if sim.now == self._applied_at:
            return
        self._applied_at = sim.now
        jobs, ran = self._candidates(sim, ordering)
        if not len(jobs):
            return
        tolerance = _TIME_TOLERANCE * max(1.0, abs(sim.now))
        due = jobs[self._due_at(sim, jobs, ran) <= sim.now + tolerance]
        self.service_at[due] = sim.attained_gpu_seconds[due]
        self.run_at[due] = sim.run_time[due]
        self.entered_at[due] = sim.now

    def next_due(self, sim: Simulator, ordering: LeastAttainedService) -> float:
        """When the first waiting job not yet due will be promoted (inf if none)."""
        jobs, ran = self._candidates(sim, ordering)
        if not len(jobs):
            return float("inf")
        due = self._due_at(sim, jobs, ran)
        later = due[due > sim.now]
        return float(later.min()) if len(later) else float("inf")

    def _due_at(self, sim: Simulator, jobs: np.ndarray, ran: np.ndarray) -> np.ndarray:
        """When each candidate is due: ``knob x ran`` after its last preemption (a
        candidate ran since it entered its queue, so it was preempted since then)."""
        return sim.last_preempted_at[jobs] + self.knob * ran


def check_thresholds(thresholds: Sequence[float]) -> np.ndarray:
    """Discretized LAS thresholds as an array, or ValueError saying what is allowed."""
    values = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if not len(values) or not np.isfinite(values).all() or (values <= 0).any():
        raise ValueError(
            f"LAS thresholds must be finite GPU-seconds > 0, at least one, got {thresholds!r}"
        )
    if (np.diff(values) <= 0).any():
        raise ValueError(f"LAS thresholds must increase, got {thresholds!r}")
    return values


def check_promote_knob(knob: float | None) -> float | None:
    """Tiresias' PROMOTEKNOB as a float (or None: no promotion), or ValueError."""
    if knob is None:
        return None
    value = float(knob)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"LAS promote_knob must be a finite number > 0 (a waiting job is promoted once "
            f"it waited knob x its run time), or None for no promotion; got {knob!r}"
        )
    return value
