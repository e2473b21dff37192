"""The event-driven cluster simulator every policy and environment runs on.

Time advances from event to event: job arrivals, job completions, and (optionally) the
ticks of fixed scheduling intervals (001's 30-minute rounds). ``run_until_decision()``
processes events until a decision is due -- in event mode whenever jobs wait after an
arrival or completion, or at a time a policy asked for with
:meth:`Simulator.request_decision` (a preemptive policy whose priorities change with
time), in interval mode at every tick with jobs waiting -- and a policy then calls
:meth:`Simulator.place`, :meth:`Simulator.preempt` or :meth:`Simulator.resize` before
running on. Equal times are processed in a fixed order (completions, then events in push
order), so a run is deterministic.

**Work.** A job's work is counted in mini-batches of one worker: ``epochs x
iterations_per_epoch`` for progress-based jobs, ``duration / compute_time x workers`` for
fixed-duration ones (so they last exactly ``duration`` when placed ideally). A running job
with ``w`` workers completes ``w`` mini-batches per synchronous step, so work is conserved
across preemption, resume and elastic resize. Its ideal duration is its work at ``w``
requested workers with no interference and no communication time (003's ideal rows).

**Speed.** One step takes ``(compute x (1 + S) + communication) x speed_factor`` seconds:
S is the straggler's interference slowdown (:mod:`.interference`), communication the
slowest exchanging pair's megabytes over its bottleneck bandwidth (:mod:`.communication`),
where a link's bandwidth is shared by the jobs whose routes cross it and a pair on one
GPU group talks at that group's PCIe bandwidth. Sharing is ``equal`` by default (003:
run-time BW = default BW / jobs on the link) or ``traffic``-aware: a job then sees
``BW / (1 + sum of the other jobs' duty cycles)``, a partner's duty cycle being the
fraction of its ideal step it spends communicating -- the expected number of partners
transferring while it does. A busy partner (MoE, FSDP) then costs more than a light one
(IMG, GNN), 000 Fig. 1's partner effect; with every duty cycle at 1 both rules agree.
``speed_factor`` is a per-placement penalty a formulation may set (004's allocation-policy
penalties, DeepRM's fixed lengths use 1). Contention sensitivity CS = step time now /
step time alone on the same placement (000 eq. 1 read as a slowdown, a ratio >= 1).

**State.** Free GPUs per GPU group, free cores per socket, the job on every GPU, jobs per
link, and a table of the running tasks and communicating pairs; all numpy arrays updated
incrementally. Rates are recomputed for all running jobs at once, vectorized, only after
the running set changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from envs.sim.events import ARRIVAL, TICK, WAKE, EventQueue
from envs.sim.fits import tasks_fit
from envs.sim.interference import InterferenceCoefficients
from envs.sim.running import NO_PAIRS, NO_TASKS, PairRows, TaskRows
from envs.sim.speed import (
    SOCKET_SERVER_GROUP,
    InterferenceRows,
    alone_communication_seconds,
    job_slowdowns,
    routed_pairs,
    shared_communication_times,
)
from envs.sim.timeline import Timeline, server_fragmentation
from envs.topology import Cluster
from envs.workload import InfeasibleJobError, Workload

_RELATIVE_TIME_TOLERANCE = 1e-9
#: How a link's bandwidth is split among the jobs crossing it (see the module docstring).
LINK_SHARING = ("equal", "traffic")


class JobStatus(IntEnum):
    """Where a job is in its life."""

    FUTURE = 0
    WAITING = 1
    RUNNING = 2
    FINISHED = 3


# Plain ints for the hot path: comparing numpy arrays with IntEnum members is slow.
_WAITING, _RUNNING, _FINISHED = (
    int(JobStatus.WAITING),
    int(JobStatus.RUNNING),
    int(JobStatus.FINISHED),
)


class PlacementError(ValueError):
    """A placement that the cluster cannot take (wrong job state, no room, bad groups)."""


class SimulationStalledError(RuntimeError):
    """Jobs wait, nothing runs and nothing will arrive: the policy placed nothing."""


DEFAULT_MAX_CONTENTION = 3.0
"""The default cap on a job's contention (step / step alone): 000 Fig. 1's largest CS."""


@dataclass(frozen=True)
class SimulatorConfig:
    """Settings of one simulation.

    ``interval_s``: decide only at multiples of this many seconds (001: 1800), or ``None``
    to decide after every arrival or completion. ``restart_cost_s``: seconds a resumed or
    resized job makes no progress. ``horizon_s``: stop (truncate) at this time.
    ``interference`` / ``communication``: switch either part of the speed model off.
    ``link_sharing``: ``equal`` (003) or ``traffic`` (duty-cycle weighted, 000 Fig. 1).
    ``max_contention``: the most a job's step may exceed its step alone on the same
    placement (the cap on contention sensitivity CS); ``math.inf`` switches the cap off.
    The default, 3.00, is the largest CS paper 000 measured (Fig. 1: MoE co-located with
    FSDP; §I: "up to ... 66.7% throughput degradation"); 001 reports averages well below it
    (Fig. 1(a): 30% under bin packing, Fig. 3(a): 37% spread by load balancing). The step
    alone, and so the placement's own communication, is not capped: 000 Table I measured
    steps of up to 14.8x the compute time alone (MoE, comm/comp 13.79).
    """

    interval_s: float | None = None
    restart_cost_s: float = 0.0
    horizon_s: float = math.inf
    coefficients: InterferenceCoefficients = field(default_factory=InterferenceCoefficients)
    interference: bool = True
    communication: bool = True
    link_sharing: str = "equal"
    max_contention: float = DEFAULT_MAX_CONTENTION

    def __post_init__(self) -> None:
        if self.link_sharing not in LINK_SHARING:
            raise ValueError(
                f"link_sharing must be one of {', '.join(LINK_SHARING)}, got {self.link_sharing!r}"
            )
        # Written so NaN fails too; an infinite interval never decides again, and an
        # infinite restart cost stalls every resumed job forever.
        if self.interval_s is not None and not 0 < self.interval_s < math.inf:
            raise ValueError(
                f"interval_s must be a finite number of seconds > 0, or None (decide at "
                f"events), got {self.interval_s}"
            )
        if not 0 <= self.restart_cost_s < math.inf:
            raise ValueError(
                f"restart_cost_s must be a finite number of seconds >= 0, got {self.restart_cost_s}"
            )
        if not self.horizon_s > 0:
            raise ValueError(f"horizon_s must be > 0 seconds, got {self.horizon_s}")
        # Written so NaN fails too; below 1 the cap would speed jobs up.
        if not self.max_contention >= 1.0:
            raise ValueError(
                f"max_contention must be a number >= 1 (the most a job's step may exceed "
                f"its step alone) or math.inf for no cap, got {self.max_contention!r}"
            )


class Simulator:
    """Simulates ``workload`` on ``cluster``; see the module docstring.

    Public read-only state (numpy arrays; do not modify): ``status[J]``, ``work_total[J]``,
    ``work_done[J]`` (mini-batches), ``rate[J]`` (mini-batches/s, running jobs),
    ``contention[J]`` (CS of running jobs), ``attained_gpu_seconds[J]``, ``first_start[J]``,
    ``finish_time[J]``, ``run_time[J]``, ``preemptions[J]``, ``last_preempted_at[J]`` (NaN
    if never), ``ideal_duration[J]``,
    ``servers_spanned[J]`` (the most servers any one placement of the job spanned; 0 if it
    never ran), ``releases`` (how many times a running job stopped: completions,
    preemptions, resizes; :meth:`released_since` says which),
    ``free_gpus[G]`` per GPU group, ``free_cores[C]`` per socket, ``gpu_job[U]`` (-1 free),
    ``link_jobs[L]``, ``link_load[L]`` (sum of the crossing jobs' sharing weights: their
    duty cycles under ``traffic`` sharing, 1 each under ``equal``); per job demands
    ``worker_gpus``, ``worker_cpus``, ``ps_gpus``, ``ps_cpus``, ``num_workers``,
    ``num_ps``; per running job ``running_workers`` and
    ``running_gpus``; the model profile per job: ``compute_time`` (s per mini-batch),
    ``gradient_mb``, ``collective``, and the interference inputs ``cpu_use`` (cores)
    and ``pcie_use`` (GB/s) of one worker.
    """

    # Where the last look for completions found none due: (time, running list).
    _completions_seen: tuple[float, np.ndarray] | None = None

    def __init__(
        self, cluster: Cluster, workload: Workload, config: SimulatorConfig | None = None
    ) -> None:
        self.cluster = cluster
        self.workload = workload
        self.config = config or SimulatorConfig()
        self.now = 0.0
        num_jobs = len(workload)
        catalog = workload.catalog
        model = workload.model
        self.compute_time = catalog.column("compute_time_s")[model].astype(np.float64)
        self.gradient_mb = catalog.column("gradient_mb")[model].astype(np.float64)
        self.cpu_use = catalog.column("cpu_cores")[model].astype(np.float64)
        self.pcie_use = catalog.column("pcie_gb_s")[model].astype(np.float64)
        self.collective = [catalog[int(m)].collective for m in model]
        self.num_workers = workload.num_workers.copy()
        self.num_ps = workload.num_ps.copy()
        # Whole GPUs: a fractional request (PAI's 50%) still occupies a GPU here.
        self.worker_gpus = np.ceil(workload.worker_demand[:, 0]).astype(np.int64)
        self.worker_cpus = workload.worker_demand[:, 1].astype(np.float64)
        self.ps_gpus = np.ceil(workload.ps_demand[:, 0]).astype(np.int64)
        self.ps_cpus = workload.ps_demand[:, 1].astype(np.float64)
        fixed = workload.is_fixed_duration
        with np.errstate(over="ignore"):  # an absurd duration overflows: refused just below
            self.work_total = np.where(
                fixed,
                np.nan_to_num(workload.duration) / self.compute_time * self.num_workers,
                workload.epochs * workload.iterations_per_epoch,
            ).astype(np.float64)
            self.ideal_duration = self.work_total * self.compute_time / self.num_workers
        self._check_feasible()

        self.status = np.full(num_jobs, JobStatus.FUTURE, dtype=np.int8)
        self.work_done = np.zeros(num_jobs)
        self._rate = np.zeros(num_jobs)
        self._contention = np.ones(num_jobs)
        self.speed_factor = np.ones(num_jobs)
        self.stall_until = np.zeros(num_jobs)
        # The latest stall_until ever set: once now passes it, no job stalls (the usual
        # case: restart cost 0), and the hot path skips the per-job stall arithmetic.
        self._stalls_end = 0.0
        self.attained_gpu_seconds = np.zeros(num_jobs)
        self.cs_seconds = np.zeros(num_jobs)
        self.run_time = np.zeros(num_jobs)
        self.first_start = np.full(num_jobs, np.nan)
        self.finish_time = np.full(num_jobs, np.nan)
        self.preemptions = np.zeros(num_jobs, dtype=np.int64)
        self.last_preempted_at = np.full(num_jobs, np.nan)
        self.servers_spanned = np.zeros(num_jobs, dtype=np.int64)
        self.running_workers = np.zeros(num_jobs, dtype=np.int64)
        self.running_gpus = np.zeros(num_jobs, dtype=np.int64)

        self.free_gpus = cluster.group_gpus.astype(np.int64).copy()
        self.free_cores = cluster.socket_cores.astype(np.float64).copy()
        self.gpu_job = np.full(cluster.num_gpus, -1, dtype=np.int64)
        self.link_jobs = np.zeros(cluster.num_links, dtype=np.int64)
        self.link_load = np.zeros(cluster.num_links)
        # A job's weight on the links it crosses; stays 1 under equal sharing.
        self._link_weight = np.ones(num_jobs)
        # Cores of a socket's sibling sockets: the load they absorb before spilling over.
        self._socket_other_cores = cluster.socket_sibling_cores
        # The interference model's own-use terms of each job's worker (a parameter
        # server's use counts as none): fixed per job, so computed once for all.
        coefficients = self.config.coefficients
        self._worker_idle = np.stack(coefficients.idle_terms(self.cpu_use, self.pcie_use))
        self._ps_idle = np.array(coefficients.idle_terms(0.0, 0.0))
        # A running job's step alone on its placement, and the most its step may take
        # (max_contention x that): fixed by the placement, set at each start.
        self._alone_step = np.ones(num_jobs)
        self._step_cap = np.full(num_jobs, np.inf)

        self._socket_cpu = np.zeros(cluster.num_sockets)
        self._server_cpu = np.zeros(cluster.num_servers)
        self._group_pcie = np.zeros(cluster.num_gpu_groups)
        # Who runs where: the jobs an event on a server or link can slow down or speed up.
        self._server_members: list[set[int]] = [set() for _ in range(cluster.num_servers)]
        self._link_members: list[set[int]] = [set() for _ in range(cluster.num_links)]
        self._stale: set[int] = set()
        self._running: np.ndarray | None = None
        # One slot per job, and one more that stays 0.0: a free GPU's job -1 reads it.
        self._remaining = np.full(num_jobs + 1, np.inf)
        self._remaining[-1] = 0.0
        self._remaining_ids = np.zeros(0, dtype=np.int64)
        self._remaining_running = np.zeros(0)  # the buffer's values at _remaining_ids
        self._remaining_fresh = False
        self._remaining_at = -1.0
        self._job_tasks: dict[int, _JobPlacement] = {}
        # Waiting jobs as a mask (jobs are in arrival order) and a count; the sorted
        # index array is built at the first query and then kept up to date per change.
        self._is_waiting = np.zeros(num_jobs, dtype=bool)
        self._num_waiting = 0
        self._waiting_cache: np.ndarray | None = None
        self._events = EventQueue()
        arrivals = np.asarray(workload.arrival_time, dtype=np.float64)
        self._events.push_many(arrivals.tolist(), ARRIVAL, list(range(num_jobs)))
        if self.config.interval_s is not None:
            self._events.push(0.0, TICK)
        self._finished_count = 0
        self.timeline = Timeline()
        self.decisions = 0
        self.events = 0  # arrivals, completions and ticks processed
        # Running jobs stopped so far (completed, preempted, resized), in order: a
        # scheduler that remembers "no room" reads who freed resources since.
        self._released_jobs: list[int] = []

    # ------------------------------------------------------------------ queries
    @property
    def rate(self) -> np.ndarray:
        """Mini-batches per second of every job (0 unless running), current."""
        self._refresh()
        return self._rate

    @property
    def contention(self) -> np.ndarray:
        """Contention sensitivity CS >= 1 of every running job (1 otherwise), current."""
        self._refresh()
        return self._contention

    @property
    def num_jobs(self) -> int:
        """Number of jobs in the workload."""
        return len(self.status)

    @property
    def done(self) -> bool:
        """True once every job finished or the horizon was reached."""
        return self._finished_count == self.num_jobs or self.now >= self.config.horizon_s

    @property
    def finished_count(self) -> int:
        """How many jobs finished so far."""
        return self._finished_count

    @property
    def releases(self) -> int:
        """How many times a running job stopped (completed, preempted, resized)."""
        return len(self._released_jobs)

    def released_since(self, releases: int) -> np.ndarray:
        """The jobs of the stops after the first ``releases`` ones, in order (a job
        stopped twice appears twice)."""
        return np.array(self._released_jobs[releases:], dtype=np.int64)

    def waiting_jobs(self) -> np.ndarray:
        """Jobs waiting to be placed, in arrival order."""
        if self._waiting_cache is None:
            self._waiting_cache = np.flatnonzero(self._is_waiting)
            self._waiting_cache.flags.writeable = False
        return self._waiting_cache

    def running_jobs(self) -> np.ndarray:
        """Jobs running now, by index (a cached read-only array)."""
        if self._running is None:
            self._running = np.flatnonzero(self.status == _RUNNING)
            self._running.flags.writeable = False
        return self._running

    def remaining_time(self, jobs: np.ndarray | None = None) -> np.ndarray:
        """Seconds left for jobs at their current speed (inf for jobs not running)."""
        self._update_remaining()
        if jobs is None:
            return self._remaining[:-1].copy()
        return self._remaining[np.asarray(jobs)]

    def _running_remaining(self) -> np.ndarray:
        """:meth:`remaining_time` of :meth:`running_jobs`, in their order, read-only: the
        values the last update computed for exactly these jobs, without a gather."""
        self._update_remaining()
        return self._remaining_running

    def _update_remaining(self) -> None:
        """Bring the remaining-time buffer up to now, to the jobs' current speeds and to
        the current running list (whose array is new after any start or stop)."""
        self._refresh()
        ids = self.running_jobs()
        if self._remaining_fresh and self._remaining_at == self.now and ids is self._remaining_ids:
            return
        # One persistent buffer: only the running entries change, so nothing of the
        # workload's size is allocated per event.
        buffer = self._remaining
        if ids is not self._remaining_ids:  # the same array holds the same jobs
            buffer[self._remaining_ids] = np.inf
        left = self.work_total[ids] - self.work_done[ids]
        if self._stalls_end > self.now:
            stall = np.maximum(self.stall_until[ids] - self.now, 0.0)
            values = stall + left / self._rate[ids]
        else:  # no stall: adding 0.0 changes no value (left is never -0.0)
            values = left / self._rate[ids]
        buffer[ids] = values
        values.flags.writeable = False
        self._remaining_running = values
        self._remaining_ids = ids
        self._remaining_at = self.now
        self._remaining_fresh = True

    def expected_duration(self, jobs: np.ndarray) -> np.ndarray:
        """Ideal seconds of remaining work at the requested worker count (SRTF, SJF)."""
        jobs = np.asarray(jobs)
        left = self.work_total[jobs] - self.work_done[jobs]
        return left * self.compute_time[jobs] / self.num_workers[jobs]

    def job_placement(self, job: int) -> tuple[np.ndarray, np.ndarray]:
        """``(task_groups, gpus)`` of a running job: one group per task, its GPU ids."""
        record = self._job_tasks.get(job)
        if record is None:
            raise ValueError(f"job {job} is not running")
        return record.task_group.copy(), record.gpus.copy()

    def placements_of(self, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
        """The tasks of running ``jobs``, concatenated: ``(owner, task_group, task_gpus,
        task_cpus)``, ``owner`` the position in ``jobs`` of each task's job.

        One call for many jobs: a scheduler planning preemptions reads every victim's
        room at once instead of a :meth:`job_placement` per victim.
        """
        records = [self._job_tasks[job] for job in np.asarray(jobs).tolist()]
        if not records:
            none = np.zeros(0, np.int64)
            return none, none, none, np.zeros(0)
        counts = [len(record.task_group) for record in records]
        owner = np.arange(len(records)).repeat(counts)
        return (
            owner,
            np.concatenate([record.task_group for record in records]),
            np.concatenate([record.task_gpus for record in records]),
            np.concatenate([record.task_cpus for record in records]),
        )

    def task_demands(
        self, job: int, num_workers: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(gpus, cpus)`` per task of ``job``: workers first, then parameter servers."""
        workers = int(self.num_workers[job] if num_workers is None else num_workers)
        counts = (workers, int(self.num_ps[job]))
        gpus = np.array([self.worker_gpus[job], self.ps_gpus[job]], np.int64).repeat(counts)
        cpus = np.array([self.worker_cpus[job], self.ps_cpus[job]], np.float64).repeat(counts)
        return gpus, cpus

    def fits(self, job: int, task_groups: np.ndarray) -> bool:
        """Whether ``job`` could be placed on ``task_groups`` right now."""
        try:
            self._claim(job, np.asarray(task_groups, dtype=np.int64), None, dry_run=True)
        except PlacementError:
            return False
        return True

    # ------------------------------------------------------------------ actions
    def place(
        self,
        job: int,
        task_groups: np.ndarray | list[int],
        gpus: np.ndarray | list[int] | None = None,
        speed_factor: float = 1.0,
    ) -> None:
        """Start (or resume) a waiting job with one GPU group per task.

        ``task_groups`` lists the workers' groups then the parameter servers'; a
        different number of workers than requested is an elastic placement (003). ``gpus``
        optionally names the GPU ids, task by task (default: the lowest free GPUs of each
        group). Raises :class:`PlacementError` when the job is not waiting or does not fit.
        """
        job = self._check_job(job)
        if self.status[job] != _WAITING:
            state = JobStatus(int(self.status[job])).name.lower()
            raise PlacementError(f"job {job} is {state}; only waiting jobs can be placed")
        if not speed_factor > 0:
            raise PlacementError(f"speed_factor must be > 0, got {speed_factor}")
        groups = np.asarray(task_groups, dtype=np.int64)
        chosen = None if gpus is None else np.asarray(gpus, dtype=np.int64)
        record = self._claim(job, groups, chosen, dry_run=False)
        self._set_waiting(job, False)
        self._start(job, record, speed_factor)

    def preempt(self, job: int) -> None:
        """Stop a running job and put it back in the queue; its work done is kept."""
        job = self._check_job(job)
        if self.status[job] != _RUNNING:
            raise PlacementError(f"job {job} is not running; only running jobs can be preempted")
        self._release(job)
        self.status[job] = _WAITING
        self.preemptions[job] += 1
        self.last_preempted_at[job] = self.now
        self._set_waiting(job, True)

    def resize(
        self, job: int, task_groups: np.ndarray | list[int], gpus: np.ndarray | None = None
    ) -> None:
        """Move a running job to new task groups (possibly another worker count), with
        the restart cost of a resume. Raises :class:`PlacementError`, the job running on
        where it was, when the new placement does not fit (the job's own room counts)."""
        job = self._check_job(job)
        if self.status[job] != _RUNNING:
            raise PlacementError(f"job {job} is not running; only running jobs can be resized")
        groups = np.asarray(task_groups, dtype=np.int64)
        chosen = None if gpus is None else np.asarray(gpus, dtype=np.int64)
        # Checked before anything moves: with the job's room and GPUs free, as they will be.
        record = self._job_tasks[job]
        self._take_room(record, +1)
        self.gpu_job[record.gpus] = -1
        try:
            self._claim(job, groups, chosen, dry_run=False)  # claims nothing: a check
        finally:
            self._take_room(record, -1)
            self.gpu_job[record.gpus] = job
        factor = float(self.speed_factor[job])
        last_preempted_at = float(self.last_preempted_at[job])
        self.preempt(job)
        # A resize is not a preemption: neither in the counts nor for LAS's promotion.
        self.preemptions[job] -= 1
        self.last_preempted_at[job] = last_preempted_at
        self.place(job, groups, chosen, speed_factor=factor)

    # ------------------------------------------------------------------ time
    def run_until_decision(self) -> bool:
        """Advance to the next decision point. Returns False once the simulation is over."""
        interval_mode = self.config.interval_s is not None
        while True:
            completed = self._complete_due()
            arrived, ticked = self._pop_due_events()
            if self.done:
                self._record()
                return False
            due = ticked if interval_mode else (arrived or completed)
            if due and self._num_waiting:
                self.decisions += 1
                return True
            step_to = self._next_time()
            if step_to == math.inf:
                waiting = self.waiting_jobs()
                if not len(waiting):  # running jobs that never finish: nothing left to decide
                    raise SimulationStalledError(
                        "no job waits, nothing will arrive, and the running jobs never finish"
                    )
                raise SimulationStalledError(
                    f"{self._num_waiting} job(s) wait (first: job {waiting[0]}), "
                    "nothing runs and nothing will arrive: the policy must place a job"
                )
            self._advance(min(step_to, self.config.horizon_s))

    def withdraw_future_jobs(self) -> np.ndarray:
        """Take every job that has not arrived yet out of the simulation: it never arrives
        and counts as finished at its arrival time (no time in the system). For rollouts
        on a copy that must not see the future (:mod:`envs.pod.rollouts`); returns the
        jobs withdrawn."""
        future = np.flatnonzero(self.status == JobStatus.FUTURE)
        if len(future):
            self._events.drop(ARRIVAL)
            self.status[future] = _FINISHED
            self.finish_time[future] = self.workload.arrival_time[future]
            self._finished_count += len(future)
        return future

    def request_decision(self, time: float) -> None:
        """Make ``time`` (later than now) a decision point in event mode, even if nothing
        arrives or completes then -- for policies whose priorities change with time (a
        job crossing a LAS threshold, a minimum run time ending). A decision still needs
        waiting jobs; in interval mode decisions stay on the ticks and this does nothing.
        """
        if not time > self.now:
            raise ValueError(f"a decision can be requested only after now ({self.now}), got {time}")
        if self.config.interval_s is None and math.isfinite(time):
            self._events.push(float(time), WAKE)

    def run(self, policy: object) -> None:
        """Run to the end, calling ``policy.schedule(self)`` at every decision point."""
        schedule = policy.schedule  # type: ignore[attr-defined]
        while self.run_until_decision():
            schedule(self)

    # ------------------------------------------------------------------ internals
    def _set_waiting(self, job: int, waiting: bool) -> None:
        self._is_waiting[job] = waiting
        self._num_waiting += 1 if waiting else -1
        self._waiting_cache = _sorted_with(self._waiting_cache, job, waiting)

    def _check_job(self, job: int) -> int:
        if not 0 <= int(job) < self.num_jobs:
            raise PlacementError(f"job {job} out of range [0, {self.num_jobs})")
        return int(job)

    def _check_feasible(self) -> None:
        too_long = ~(np.isfinite(self.work_total) & np.isfinite(self.ideal_duration))
        if too_long.any():
            job = int(np.flatnonzero(too_long)[0])
            raise ValueError(
                f"job {job} (job_id {int(self.workload.job_id[job])}) is too long to "
                f"simulate: its duration ({float(self.workload.duration[job]):g} s) divided by "
                f"its model's compute time per iteration ({float(self.compute_time[job]):g} s) "
                f"overflows; {int(too_long.sum())} job(s) need a finite, smaller duration"
            )
        cluster = self.cluster
        biggest_group = int(cluster.group_gpus.max())
        biggest_socket = float(cluster.socket_cores.max())
        total_gpus = self.num_workers * self.worker_gpus + self.num_ps * self.ps_gpus
        problems = [
            (
                total_gpus > cluster.num_gpus,
                f"needs more GPUs than the cluster's {cluster.num_gpus}",
            ),
            (
                np.maximum(self.worker_gpus, self.ps_gpus) > biggest_group,
                f"has a task needing more GPUs than the largest GPU group ({biggest_group})",
            ),
            (
                np.maximum(self.worker_cpus, self.ps_cpus) > biggest_socket,
                f"has a task needing more cores than the largest socket ({biggest_socket:g})",
            ),
        ]
        for mask, reason in problems:
            self._refuse_infeasible(mask, reason)
        # Within every limit above, a job may still fit nowhere as a whole (3 workers of 2
        # GPUs on groups of 3; 4 x 8 cores on a socket of 16): it would wait forever.
        placeable = tasks_fit(
            cluster,
            self.num_workers,
            self.worker_gpus,
            self.worker_cpus,
            self.num_ps,
            self.ps_gpus,
            self.ps_cpus,
        )
        self._refuse_infeasible(
            ~placeable,
            "has tasks that no placement fits even on the empty cluster (too many for the "
            "GPUs of its groups or the cores of its sockets)",
        )

    def _refuse_infeasible(self, mask: np.ndarray, reason: str) -> None:
        """Raise :class:`InfeasibleJobError` for the first job of ``mask``, if any."""
        if mask.any():
            job = int(np.flatnonzero(mask)[0])
            raise InfeasibleJobError(
                f"job {job} (job_id {int(self.workload.job_id[job])}) {reason}; "
                f"{int(mask.sum())} job(s) can never run on this cluster -- drop them "
                "(e.g. --drop-infeasible) or use a larger cluster",
                job,
                int(self.workload.job_id[job]),
            )

    def _claim(
        self, job: int, groups: np.ndarray, gpus: np.ndarray | None, dry_run: bool
    ) -> _JobPlacement:
        cluster = self.cluster
        workers = len(groups) - int(self.num_ps[job])
        if groups.ndim != 1 or workers < 1:
            raise PlacementError(
                f"job {job} needs one GPU group per task: at least 1 worker and its "
                f"{int(self.num_ps[job])} parameter server(s); got {len(groups)} groups"
            )
        if ((groups < 0) | (groups >= cluster.num_gpu_groups)).any():
            raise PlacementError(f"GPU groups must lie in [0, {cluster.num_gpu_groups})")
        if len(groups) == 1 and workers == 1:
            # One worker (most trace jobs): its demand as is, without task_demands' repeats.
            task_gpus = np.array([self.worker_gpus[job]], dtype=np.int64)
            task_cpus = np.array([self.worker_cpus[job]], dtype=np.float64)
        else:
            task_gpus, task_cpus = self.task_demands(job, workers)
        if len(groups) == 1:
            # One task (most trace jobs): the checks below, on scalars.
            self._check_room_for_one(job, int(groups[0]), int(task_gpus[0]), float(task_cpus[0]))
            if dry_run:
                return _JobPlacement.empty()
            chosen = self._choose_gpus(job, groups, task_gpus, gpus)
            return _JobPlacement(groups, chosen, task_gpus, task_cpus, workers)
        gpu_need = np.bincount(groups, weights=task_gpus, minlength=cluster.num_gpu_groups)
        short = gpu_need > self.free_gpus
        if short.any():
            group = int(np.flatnonzero(short)[0])
            raise PlacementError(
                f"job {job}: GPU group {group} has {self.free_gpus[group]} free GPU(s), "
                f"the placement needs {int(gpu_need[group])}"
            )
        sockets = cluster.group_socket[groups]
        cpu_need = np.bincount(sockets, weights=task_cpus, minlength=cluster.num_sockets)
        short = cpu_need > self.free_cores + 1e-9
        if short.any():
            socket = int(np.flatnonzero(short)[0])
            raise PlacementError(
                f"job {job}: socket {socket} has {self.free_cores[socket]:g} free core(s), "
                f"the placement needs {cpu_need[socket]:g}"
            )
        if dry_run:
            return _JobPlacement.empty()
        chosen = self._choose_gpus(job, groups, task_gpus, gpus)
        return _JobPlacement(groups, chosen, task_gpus, task_cpus, workers)

    def _check_room_for_one(self, job: int, group: int, gpus: int, cpus: float) -> None:
        """:meth:`_claim`'s room checks for a job of one task on ``group``."""
        if gpus > self.free_gpus[group]:
            raise PlacementError(
                f"job {job}: GPU group {group} has {self.free_gpus[group]} free GPU(s), "
                f"the placement needs {gpus}"
            )
        socket = int(self.cluster.group_socket[group])
        if cpus > self.free_cores[socket] + 1e-9:
            raise PlacementError(
                f"job {job}: socket {socket} has {self.free_cores[socket]:g} free core(s), "
                f"the placement needs {cpus:g}"
            )

    def _choose_gpus(
        self, job: int, groups: np.ndarray, task_gpus: np.ndarray, gpus: np.ndarray | None
    ) -> np.ndarray:
        cluster = self.cluster
        if gpus is not None:
            expected_group = np.repeat(groups, task_gpus)
            if len(gpus) != len(expected_group):
                raise PlacementError(
                    f"job {job}: {len(gpus)} GPU ids given, its tasks need {len(expected_group)}"
                )
            if ((gpus < 0) | (gpus >= cluster.num_gpus)).any() or len(set(gpus.tolist())) != len(
                gpus
            ):
                raise PlacementError(
                    f"job {job}: GPU ids must be distinct, in [0, {cluster.num_gpus})"
                )
            if (cluster.gpu_group[gpus] != expected_group).any() or (self.gpu_job[gpus] >= 0).any():
                raise PlacementError(
                    f"job {job}: every GPU id must be free and belong to its task's GPU group"
                )
            return gpus
        chosen = []
        taken: dict[int, int] = {}
        for group, count in zip(groups.tolist(), task_gpus.tolist(), strict=True):
            if count == 0:
                continue
            start, stop = cluster.group_gpu_offsets[group], cluster.group_gpu_offsets[group + 1]
            free = start + (self.gpu_job[start:stop] < 0).nonzero()[0]
            skip = taken.get(group, 0)
            chosen.append(free[skip : skip + count])
            taken[group] = skip + count
        return np.concatenate(chosen) if chosen else np.zeros(0, np.int64)

    def _start(self, job: int, record: _JobPlacement, speed_factor: float) -> None:
        self._take_room(record, -1)
        self.gpu_job[record.gpus] = job
        record.tasks = self._task_rows(job, record)
        if self.config.interference:
            record.interference = self._interference_rows(job, record)
        record.pairs = self._pair_rows(job, record)
        record.links = _distinct(record.pairs.link)
        record.servers = _distinct(record.tasks.server)
        # The widest placement: a resume spread over more servers than the first start shows.
        self.servers_spanned[job] = max(int(self.servers_spanned[job]), len(record.servers))
        communication_alone = alone_communication_seconds(record.pairs, self.cluster.link_gbps)
        if self.config.link_sharing == "traffic":
            self._link_weight[job] = self._duty_cycle(job, communication_alone)
        self._apply_load(job, record, +1)
        for server in record.servers.tolist():
            self._server_members[server].add(job)
        for link in record.links.tolist():
            self._link_members[link].add(job)
        self._mark_neighbours(job, record)
        self._job_tasks[job] = record
        self.status[job] = _RUNNING
        self._running = _sorted_with(self._running, job, True)
        self._remaining_fresh = False
        self.speed_factor[job] = speed_factor
        alone_step = (float(self.compute_time[job]) + communication_alone) * speed_factor
        self._alone_step[job] = alone_step
        self._step_cap[job] = self.config.max_contention * alone_step
        self.running_workers[job] = record.workers
        self.running_gpus[job] = int(record.task_gpus.sum())
        if np.isnan(self.first_start[job]):
            self.first_start[job] = self.now
        else:
            self.stall_until[job] = self.now + self.config.restart_cost_s
            self._stalls_end = max(self._stalls_end, float(self.stall_until[job]))

    def _release(self, job: int) -> None:
        record = self._job_tasks.pop(job)
        self._released_jobs.append(job)
        self._take_room(record, +1)
        self.gpu_job[record.gpus] = -1
        self._apply_load(job, record, -1)
        for server in record.servers.tolist():
            self._server_members[server].discard(job)
        for link in record.links.tolist():
            self._link_members[link].discard(job)
        self._mark_neighbours(job, record)
        self._stale.discard(job)
        self._running = _sorted_with(self._running, job, False)
        self._remaining_fresh = False
        self._rate[job] = 0.0
        self._contention[job] = 1.0  # a stopped job is not contended (the property's doc)
        self.running_workers[job] = 0
        self.running_gpus[job] = 0

    def _apply_load(self, job: int, record: _JobPlacement, sign: int) -> None:
        """Add (+1) or remove (-1) a job's tasks and traffic from the shared totals."""
        tasks = record.tasks
        if len(record.task_group) == 1:  # one task (most trace jobs): plain indexing
            group, socket, server = tasks.places[1:, 0].tolist()
            cpu, pcie = tasks.loads[:2, 0].tolist()
            self._socket_cpu[socket] += sign * cpu
            self._server_cpu[server] += sign * cpu
            self._group_pcie[group] += sign * pcie
        else:
            np.add.at(self._socket_cpu, tasks.socket, sign * tasks.cpu)
            np.add.at(self._server_cpu, tasks.server, sign * tasks.cpu)
            np.add.at(self._group_pcie, tasks.group, sign * tasks.pcie)
        if not len(record.links):
            return  # no communicating pair crosses a link
        self.link_jobs[record.links] += sign
        self.link_load[record.links] += sign * self._link_weight[job]
        if sign < 0 and self.config.link_sharing == "traffic":
            # Sums of fractions drift by rounding; a link nobody crosses carries nothing.
            self.link_load[record.links[self.link_jobs[record.links] == 0]] = 0.0

    def _duty_cycle(self, job: int, communication_alone: float) -> float:
        """Fraction of the job's ideal step (no interference, links to itself) spent
        communicating: its weight on the links it shares under ``traffic`` sharing."""
        return communication_alone / (float(self.compute_time[job]) + communication_alone)

    def _take_room(self, record: _JobPlacement, sign: int) -> None:
        """Give back (+1) or take (-1) a placement's GPUs per group and cores per socket."""
        sockets = self.cluster.group_socket[record.task_group]
        if len(sockets) == 1:  # most jobs: plain indexing beats ufunc.at
            group, socket = int(record.task_group[0]), int(sockets[0])
            self.free_gpus[group] += sign * record.task_gpus[0]
            self.free_cores[socket] += sign * record.task_cpus[0]
        elif sign > 0:
            np.add.at(self.free_gpus, record.task_group, record.task_gpus)
            np.add.at(self.free_cores, sockets, record.task_cpus)
        else:
            np.subtract.at(self.free_gpus, record.task_group, record.task_gpus)
            np.subtract.at(self.free_cores, sockets, record.task_cpus)

    def _mark_neighbours(self, job: int, record: _JobPlacement) -> None:
        """The job and those sharing a server or link with it need their speed recomputed."""
        stale = self._stale
        stale.add(job)
        for server in record.servers.tolist():
            stale.update(self._server_members[server])
        for link in record.links.tolist():
            stale.update(self._link_members[link])

    def _task_rows(self, job: int, record: _JobPlacement) -> TaskRows:
        cluster = self.cluster
        if len(record.task_group) == 1 and record.workers == 1:
            # One worker (most trace jobs): its rows directly, without the general
            # stacking (a job's own load at its places is then its task's).
            group = int(record.task_group[0])
            cpu, pcie = float(self.cpu_use[job]), float(self.pcie_use[job])
            return TaskRows(
                np.array(
                    [[job], [group], [cluster.group_socket[group]], [cluster.group_server[group]]],
                    dtype=np.int64,
                ),
                _ONE_WORKER,
                np.array([[cpu], [pcie], [cpu], [cpu], [pcie]]),
            )
        return self._stacked_task_rows(job, record)

    def _interference_rows(self, job: int, record: _JobPlacement) -> InterferenceRows:
        """The job's tasks prepared for the interference model (``record.tasks`` set)."""
        tasks = record.tasks
        if len(tasks.is_worker) != 1 or record.workers != 1:
            return self._general_interference_rows(job, record)
        # One worker (most trace jobs): its column directly, as the general way builds it
        # (3.8 against 6.2 us a start; about 1% of the whole Philly trace under LAS).
        return InterferenceRows(
            tasks.places[SOCKET_SERVER_GROUP],
            np.array(
                [
                    *tasks.loads[2:5, 0].tolist(),
                    self._socket_other_cores[int(tasks.socket[0])],
                    *self._worker_idle[:, job].tolist(),
                ]
            ).reshape(-1, 1),
            None,
        )

    def _general_interference_rows(self, job: int, record: _JobPlacement) -> InterferenceRows:
        """The job's interference rows built the general way, for any number of tasks."""
        return InterferenceRows.of(
            record.tasks, self._socket_other_cores, self._worker_idle[:, job], self._ps_idle
        )

    def _stacked_task_rows(self, job: int, record: _JobPlacement) -> TaskRows:
        """The job's task rows built the general way, for any number of tasks."""
        cluster = self.cluster
        is_worker = np.arange(len(record.task_group)) < record.workers
        return TaskRows.for_job(
            job,
            record.task_group,
            cluster.group_socket[record.task_group],
            cluster.group_server[record.task_group],
            is_worker,
            np.where(is_worker, self.cpu_use[job], record.task_cpus),
            np.where(is_worker, self.pcie_use[job], 0.0),
        )

    def _pair_rows(self, job: int, record: _JobPlacement) -> PairRows:
        """The job's communicating pairs with their routes (none if communication is off)."""
        if not self.config.communication or len(record.task_group) == 1:
            return NO_PAIRS  # one task (most trace jobs) talks to nobody
        return routed_pairs(
            self.cluster,
            job,
            self.collective[job],
            record.workers,
            int(self.num_ps[job]),
            float(self.gradient_mb[job]),
            record.task_group,
        )

    def _refresh(self) -> None:
        """Recompute rate and contention of the jobs an event touched (vectorized)."""
        if not self._stale:
            return
        jobs = sorted(self._stale)
        self._stale.clear()
        records = [self._job_tasks[job] for job in jobs]
        affected = np.array(jobs, dtype=np.int64)
        # Per affected job (sorted), not per job of the workload: Philly has 82k of them.
        step = self.compute_time[affected]
        if self.config.interference:
            slowdown = job_slowdowns(
                [record.interference for record in records],
                self._socket_cpu,
                self._server_cpu,
                self._group_pcie,
                self.config.coefficients,
            )
            step = step * (1.0 + slowdown)
        pairs = PairRows.concat([record.pairs for record in records])
        if len(pairs.job):  # jobs of one task (most trace jobs) exchange nothing
            ids, now = shared_communication_times(
                pairs, self.cluster.link_gbps, self.link_load, self._link_weight
            )
            comm = np.zeros(len(affected))
            comm[affected.searchsorted(ids)] = now
            step = step + comm
        self._remaining_fresh = False
        # Capped at max_contention x alone: beyond the CS the papers measured, the link and
        # interference models extrapolate (many jobs on one port), so they are not trusted.
        step = np.minimum(step * self.speed_factor[affected], self._step_cap[affected])
        self._rate[affected] = self.running_workers[affected] / step
        self._contention[affected] = step / self._alone_step[affected]

    def _next_time(self) -> float:
        """Time of the next completion or event."""
        self._refresh()
        next_completion = math.inf
        running = self.running_jobs()
        if len(running):
            next_completion = float(self._running_remaining().min()) + self.now
        return min(next_completion, self._events.peek_time())

    def _advance(self, time: float) -> None:
        """Move the clock to ``time``, accruing progress and integrals."""
        elapsed = time - self.now
        if elapsed <= 0:
            return
        self._record()  # the state at `now` holds until `time`
        running = self.running_jobs()
        if len(running):
            if self._stalls_end > self.now:
                start = np.maximum(self.stall_until[running], self.now)
                active = np.minimum(np.maximum(time - start, 0.0), elapsed)  # np.clip, cheaper
                self.work_done[running] += self._rate[running] * active
            else:  # no stall: every job was active all along (active == elapsed exactly)
                self.work_done[running] += self._rate[running] * elapsed
            self.run_time[running] += elapsed
            self.attained_gpu_seconds[running] += self.running_gpus[running] * elapsed
            self.cs_seconds[running] += self._contention[running] * elapsed
        self.now = time
        self._remaining_fresh = False

    def _complete_due(self) -> bool:
        running = self.running_jobs()
        if not len(running):
            return False
        # The same instant and the same running list (a new array after any start or
        # stop): everything due was completed at the last look.
        if self._completions_seen is not None:
            seen_at, seen_running = self._completions_seen
            if seen_at == self.now and seen_running is running:
                return False
        tolerance = _RELATIVE_TIME_TOLERANCE * max(1.0, self.now)
        due = running[self._running_remaining() <= tolerance]
        self._completions_seen = (self.now, running) if not len(due) else None
        self.events += len(due)
        for job in due.tolist():
            self.work_done[job] = self.work_total[job]
            self._release(job)
            self.status[job] = _FINISHED
            self.finish_time[job] = self.now
            self._finished_count += 1
        return bool(len(due))

    def _pop_due_events(self) -> tuple[bool, bool]:
        """Process the events due now: ``(an arrival or a requested decision, a tick)``."""
        arrived = ticked = False
        while self._events.peek_time() <= self.now:
            event = self._events.pop()
            if event.kind == WAKE:
                arrived = True  # decides like an arrival; not counted as an event
                continue
            self.events += 1
            if event.kind == ARRIVAL:
                self.status[event.payload] = _WAITING
                self._set_waiting(event.payload, True)
                arrived = True
            elif event.kind == TICK:
                ticked = True
                if self._finished_count < self.num_jobs:
                    assert self.config.interval_s is not None
                    self._events.push(self.now + self.config.interval_s, TICK)
        return arrived, ticked

    def _record(self) -> None:
        self._refresh()
        running = self.running_jobs()
        fragmentation = 0.0
        if len(running):
            # Every GPU reads its job's remaining time; a free one's -1 reads the
            # buffer's last slot, 0.0.
            gpu_remaining = np.minimum(self.remaining_time(self.gpu_job), 1e12)
            fragmentation = server_fragmentation(self.cluster, gpu_remaining)
        self.timeline.record(
            self.now,
            (
                # The GPUs held: what the groups miss of their own (no gather over jobs).
                self.cluster.num_gpus - int(np.add.reduce(self.free_gpus)),
                self._num_waiting,
                len(running),
                fragmentation,
                # The mean, without np.mean's overhead (the same sum and division).
                float(np.add.reduce(self._contention[running]) / len(running))
                if len(running)
                else 1.0,
            ),
        )


_ONE_WORKER = np.ones(1, dtype=bool)
_ONE_WORKER.flags.writeable = False
_NO_IDS = np.zeros(0, np.int64)
_NO_IDS.flags.writeable = False


def _sorted_with(ids: np.ndarray | None, job: int, member: bool) -> np.ndarray | None:
    """The sorted read-only ``ids`` with ``job`` added (``member``) or removed: cached job
    lists follow each change instead of rescanning every job. None (never built) stays."""
    if ids is None:
        return None
    at = int(ids.searchsorted(job))
    updated = np.concatenate((ids[:at], [job], ids[at:]) if member else (ids[:at], ids[at + 1 :]))
    updated.flags.writeable = False
    return updated


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, without its sorting machinery for zero or one value."""
    return values.copy() if len(values) <= 1 else np.unique(values)


@dataclass
class _JobPlacement:
    """Where one running job's tasks are."""

    task_group: np.ndarray
    gpus: np.ndarray
    task_gpus: np.ndarray
    task_cpus: np.ndarray
    workers: int
    # Set when the job starts; until then shared read-only empties (a claim that fails
    # or a dry run builds nothing).
    links: np.ndarray = field(default_factory=lambda: _NO_IDS)
    servers: np.ndarray = field(default_factory=lambda: _NO_IDS)
    tasks: TaskRows = field(default_factory=lambda: NO_TASKS)
    pairs: PairRows = field(default_factory=lambda: NO_PAIRS)
    interference: InterferenceRows | None = None  # with the interference model on

    @staticmethod
    def empty() -> _JobPlacement:
        none = np.zeros(0, np.int64)
        return _JobPlacement(none, none, none, np.zeros(0), 0)
