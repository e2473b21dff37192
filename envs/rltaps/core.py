"""RL-TAPS's dynamics (003 §4.3-§4.6) as a time-stepped numpy core: slots, GPUs, speeds.

RL-TAPS re-decides every GPU at every step (full preemption: a job keeps its slot until
it finishes, pausing when it gets no GPU and resuming anywhere), and a job's speed over a
step depends on its GPUs' topology and on every other job's links (003 eq. 12-15). That
is a discrete-time model, not the event-driven one of :mod:`envs.sim` (whose jobs keep
their GPUs between events and whose communication model is 001's, not 003's measured
reduction curves), so it lives here as its own small core over podsched's topology
library: the racks of Minsky machines and their routes (:mod:`envs.rltaps.speed`).

**State.** ``slot_job[N]`` (job id or -1), the ``backlog`` (FIFO of job ids),
``gpu_job[M]`` (the job each GPU runs, or -1), per job the FLOPs ``remaining``, its
``finish`` step (-1 until it finishes) and whether it was ``dropped``.

**One step** (:meth:`RLTapsCore.advance`), at integer time t:

1. every running job j (at least one GPU) runs for ``step_seconds`` at its eq. 3 speed
   ``v(j)`` given all running jobs' links; it travels ``min(v(j) t_step, remaining)``
   FLOPs;
2. reward (eq. 4) = [sum of the jobs' average speeds over the step (travelled /
   t_step: v(j), or less for a job that finishes during the step) - ``idle_penalty`` x
   the eq. 5 cost of every job in a slot or the backlog without a GPU - ``shortfall_penalty``
   x the eq. 6 cost of every running job with fewer GPUs than it asked for] /
   ``reward_unit_flops``;
3. jobs with no FLOPs left finish at t + 1 and free their slots and GPUs;
4. t becomes t + 1; empty slots take the backlog's head jobs in order; jobs arriving at
   t + 1 go to the lowest empty slot, else the backlog's end, else are dropped.

**Preemptive** (the agent, :meth:`assign`): a job stays in its slot while it runs, and
each step's action re-assigns every GPU (a GPU sent to an empty slot stays idle and counts
as an invalid assignment). **Static** (the baselines, :meth:`start`): a started job
leaves its slot (the backlog refills it) and keeps its GPUs until it finishes.

The episode terminates when every job has arrived and left (finished or dropped), and is
truncated at ``max_steps`` (T_max).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from envs.base import EPISODE_OVER
from envs.rltaps.cnns import CNN_EXAMPLE_FLOPS, CNN_GRADIENT_MB
from envs.rltaps.config import RLTapsConfig
from envs.rltaps.jobs import JobSet
from envs.rltaps.speed import JobSpeeds, SpeedModel

# A job is done when what is left is below this share of its work (float round-off).
_DONE_TOLERANCE = 1e-9


def observation_layout(config: RLTapsConfig) -> dict[str, tuple[slice, tuple[int, ...]]]:
    """Column ranges of the image's blocks and the shape each is read as.

    ``cluster``: (rows, M), machine after machine, GPU ids in order; ``slots``:
    (rows, N, max_gpus_request), slot after slot; ``backlog``: (rows, backlog_width).
    """
    cluster = config.total_gpus
    slots = config.num_slots * config.max_gpus_request
    rows = config.horizon
    return {
        "cluster": (slice(0, cluster), (rows, cluster)),
        "slots": (
            slice(cluster, cluster + slots),
            (rows, config.num_slots, config.max_gpus_request),
        ),
        "backlog": (slice(cluster + slots, config.image_width), (rows, config.backlog_width)),
    }


def split_observation(observation: np.ndarray, config: RLTapsConfig) -> dict[str, np.ndarray]:
    """The ``cluster``, ``slots`` and ``backlog`` blocks of a flat observation."""
    image = np.asarray(observation).reshape(config.image_shape)
    return {
        name: image[:, columns].reshape(shape)
        for name, (columns, shape) in observation_layout(config).items()
    }


class RLTapsCore:
    """One RL-TAPS episode at a time; see the module docstring.

    Public read-only state: ``time``, ``jobs``, ``slot_job``, ``backlog``, ``gpu_job``,
    ``remaining``, ``finish``, ``dropped``, ``rewards``, ``last_jobs`` and ``last_speeds``
    (the running jobs of the last step and their :class:`~envs.rltaps.speed.JobSpeeds`).
    """

    def __init__(self, config: RLTapsConfig, *, preemptive: bool = True) -> None:
        self.config = config
        self.preemptive = preemptive
        self.speed = SpeedModel(config)
        self.num_gpus = config.total_gpus
        assert self.speed.num_gpus == self.num_gpus
        self._slots = config.num_slots
        self._step_s = config.step_seconds
        self._unit = config.reward_unit_flops
        self._rows = np.arange(config.horizon)
        self._columns = np.arange(config.max_gpus_request)
        self._backlog_cells = np.arange(config.horizon * config.backlog_width).reshape(
            config.horizon, config.backlog_width
        )
        self._layout = observation_layout(config)
        self._image = np.zeros(config.image_shape, dtype=np.float32)
        self._make_views()
        self._mask = np.ones((self.num_gpus, config.choices_per_gpu), dtype=np.int8)
        # No episode yet: assign(), start() and advance() refuse until reset() as they do
        # after an episode's end.
        self.over = True

    def _make_views(self) -> None:
        # Views of the image's blocks (basic slices: writing them writes the image).
        blocks = {name: self._image[:, columns] for name, (columns, _) in self._layout.items()}
        self._cluster_cells = blocks["cluster"]
        self._slot_cells = blocks["slots"].reshape(self._layout["slots"][1])
        self._backlog_image = blocks["backlog"]
        assert np.shares_memory(self._slot_cells, self._image)

    def __getstate__(self) -> dict[str, Any]:
        # Pickling copies views apart from their base; they are rebuilt on load.
        state = dict(self.__dict__)
        for name in ("_cluster_cells", "_slot_cells", "_backlog_image"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._make_views()

    # -- episode --------------------------------------------------------------------------

    def reset(self, jobs: JobSet) -> None:
        """Start ``jobs``: time 0, its arrivals at step 0 in place."""
        config = self.config
        self.jobs = jobs
        count = len(jobs)
        self.minibatch_flops = CNN_EXAMPLE_FLOPS[jobs.model] * jobs.minibatch
        self.train_s = self.minibatch_flops / (config.gpu_efficiency * config.gpu_flops)
        self.gradient_mb = CNN_GRADIENT_MB[jobs.model].astype(np.float64)
        self.total_flops = jobs.length * jobs.gpus * config.cell_flops
        # eq. 5's cost of a waiting job is fixed by the job alone: precompute it.
        single_rack = self.speed.single_rack_reduction_s(jobs.gpus, self.gradient_mb)
        self.idle_cost = self.minibatch_flops * jobs.gpus / (self.train_s + single_rack)
        self.remaining = self.total_flops.astype(np.float64).copy()
        self.finish = np.full(count, -1, dtype=np.int64)
        self.dropped = np.zeros(count, dtype=bool)
        self.job_slot = np.full(count, -1, dtype=np.int64)
        self.was_running = np.zeros(count, dtype=bool)
        self._is_running = np.zeros(count, dtype=bool)
        self._current: tuple[np.ndarray, JobSpeeds] | None = None
        self._row_of = np.zeros(count, dtype=np.int64)
        self.slot_job = np.full(self._slots, -1, dtype=np.int64)
        self._slot_lookup = np.full(self._slots + 1, -1, dtype=np.int64)
        self.backlog: deque[int] = deque()
        self.gpu_job = np.full(self.num_gpus, -1, dtype=np.int64)
        self.time = 0
        self._next_job = 0
        self.rewards: list[float] = []
        self.speed_sums: list[float] = []
        self.busy_gpus: list[int] = []
        self.preemptions = 0
        self.invalid_assignments = 0
        self.last_jobs = np.zeros(0, dtype=np.int64)
        self.last_speeds = self._no_speeds()
        self.terminated = self.truncated = False
        self.over = False
        self._arrive()

    def _no_speeds(self) -> JobSpeeds:
        empty = np.zeros(0)
        return JobSpeeds(empty, empty, empty, empty, empty, np.zeros(self.speed.num_links))

    # -- actions --------------------------------------------------------------------------

    def assign(self, action: np.ndarray) -> int:
        """Preemptive mode: GPU g runs the job of slot ``action[g]`` (N = none). Returns the
        number of GPUs sent to an empty slot (they stay idle). RuntimeError before
        :meth:`reset` or once the episode is over, with nothing changed."""
        # Refuse before touching gpu_job or the invalid count: advance() would refuse the
        # step anyway, and a refused step must leave the ended episode's record as it was.
        if self.over:
            raise RuntimeError(EPISODE_OVER)
        if not self.preemptive:
            raise RuntimeError("assign() is for the preemptive core; the static one uses start()")
        self._slot_lookup[: self._slots] = self.slot_job
        self.gpu_job = self._slot_lookup[action]
        self._current = None
        invalid = int(np.count_nonzero((action < self._slots) & (self.gpu_job < 0)))
        self.invalid_assignments += invalid
        return invalid

    def start(self, slot: int, gpus: np.ndarray) -> int:
        """Static mode: the job of ``slot`` takes the free ``gpus`` until it finishes and
        leaves its slot, which the backlog refills. Returns the job. RuntimeError before
        :meth:`reset` or once the episode is over, with nothing changed."""
        if self.over:
            raise RuntimeError(EPISODE_OVER)
        if self.preemptive:
            raise RuntimeError("start() is for the static core; the preemptive one uses assign()")
        job = int(self.slot_job[slot])
        gpus = np.asarray(gpus, dtype=np.int64)
        if job < 0:
            raise ValueError(f"slot {slot} holds no job to start")
        if (self.gpu_job[gpus] >= 0).any() or len(np.unique(gpus)) != len(gpus):
            raise ValueError(f"GPUs {gpus.tolist()} must be distinct and free to start slot {slot}")
        self.gpu_job[gpus] = job
        self._current = None
        self.slot_job[slot] = -1
        self.job_slot[job] = -1
        self._refill()
        return job

    def free_gpus(self) -> np.ndarray:
        """Ids of the GPUs that run nothing, ascending."""
        return np.flatnonzero(self.gpu_job < 0)

    # -- time -----------------------------------------------------------------------------

    def running(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(jobs, gpu ids, row of each GPU's job in jobs)`` of the running jobs, jobs
        ascending."""
        busy = np.flatnonzero(self.gpu_job >= 0)
        holders = self.gpu_job[busy]
        self._is_running[:] = False
        self._is_running[holders] = True
        jobs = np.flatnonzero(self._is_running)
        self._row_of[jobs] = np.arange(len(jobs))
        return jobs, busy, self._row_of[holders]

    def job_speeds(self) -> tuple[np.ndarray, JobSpeeds]:
        """The running jobs and their eq. 3 speeds under the current assignment."""
        if self._current is None:
            jobs, busy, rows = self.running()
            self._current = (jobs, self._speeds(jobs, busy, rows))
        return self._current

    def _speeds(self, jobs: np.ndarray, busy: np.ndarray, rows: np.ndarray) -> JobSpeeds:
        if not len(jobs):
            return self._no_speeds()
        assignment = np.zeros((len(jobs), self.num_gpus))
        assignment[rows, busy] = 1.0
        return self.speed.speeds(
            assignment, self.minibatch_flops[jobs], self.train_s[jobs], self.gradient_mb[jobs]
        )

    def waiting(self) -> np.ndarray:
        """Jobs in a slot or the backlog that run on no GPU (eq. 5's idle jobs)."""
        in_slots = self.slot_job[self.slot_job >= 0]
        idle_slots = in_slots[self.gpu_count[in_slots] == 0]
        return np.concatenate([idle_slots, np.fromiter(self.backlog, np.int64, len(self.backlog))])

    @property
    def gpu_count(self) -> np.ndarray:
        """GPUs each job holds now, by job id."""
        busy = self.gpu_job[self.gpu_job >= 0]
        return np.bincount(busy, minlength=len(self.jobs))

    def advance(self) -> tuple[float, dict[str, Any]]:
        """Run one step under the current assignment (see the module docstring); returns
        the reward and its parts (speed, idle and shortfall terms, in reward units)."""
        if self.over:
            raise RuntimeError(EPISODE_OVER)
        jobs, speeds = self.job_speeds()
        step_s = self._step_s
        travel = np.minimum(speeds.speed_flops * step_s, self.remaining[jobs])
        missing = self.jobs.gpus[jobs] - speeds.gpus
        shortfall = np.where(
            missing > 0,
            self.minibatch_flops[jobs] * missing / (self.train_s[jobs] + speeds.reduction_s),
            0.0,
        ).sum()
        idle = self.idle_cost[self.waiting()].sum()
        speed_sum = travel.sum() / step_s
        config = self.config
        penalties = config.idle_penalty * idle + config.shortfall_penalty * shortfall
        reward = float((speed_sum - penalties) / self._unit)

        running_now = np.zeros(len(self.jobs), dtype=bool)
        running_now[jobs] = True
        self.preemptions += int(np.count_nonzero(self.was_running & ~running_now))
        self.remaining[jobs] -= travel
        done = jobs[self.remaining[jobs] <= _DONE_TOLERANCE * self.total_flops[jobs]]
        if len(done):
            self.remaining[done] = 0.0
            self.finish[done] = self.time + 1
            running_now[done] = False
            # Jobs' GPUs and slots go free; the others' speeds change with the links.
            self.gpu_job[~running_now[self.gpu_job] & (self.gpu_job >= 0)] = -1
            self.slot_job[np.isin(self.slot_job, done)] = -1
            self.job_slot[done] = -1
            self._current = None
        self.was_running = running_now
        self.last_jobs, self.last_speeds = jobs, speeds
        self.rewards.append(reward)
        self.speed_sums.append(float(speed_sum / self._unit))
        self.busy_gpus.append(int(speeds.gpus.sum()))

        self.time += 1
        self._refill()
        self._arrive()
        self.terminated = self._next_job == len(self.jobs) and not self._in_system()
        self.truncated = not self.terminated and self.time >= config.max_steps
        self.over = self.terminated or self.truncated
        return reward, {
            "speed": float(speed_sum / self._unit),
            "idle_penalty": float(idle / self._unit),
            "shortfall_penalty": float(shortfall / self._unit),
            "finished": done.tolist(),
        }

    def _in_system(self) -> bool:
        return bool((self.slot_job >= 0).any() or self.backlog or (self.gpu_job >= 0).any())

    def _place(self, slot: int, job: int) -> None:
        self.slot_job[slot] = job
        self.job_slot[job] = slot

    def _refill(self) -> None:
        """Empty slots, lowest first, take the backlog's head jobs."""
        for slot in np.flatnonzero(self.slot_job < 0).tolist():
            if not self.backlog:
                return
            self._place(slot, self.backlog.popleft())

    def _arrive(self) -> None:
        """The jobs arriving now: lowest empty slot, else the backlog, else dropped."""
        arrival = self.jobs.arrival
        while self._next_job < len(arrival) and arrival[self._next_job] <= self.time:
            job = self._next_job
            self._next_job += 1
            empty = np.flatnonzero(self.slot_job < 0)
            if len(empty):
                self._place(int(empty[0]), job)
            elif len(self.backlog) < self.config.backlog_size:
                self.backlog.append(job)
            else:
                self.dropped[job] = True

    # -- views ----------------------------------------------------------------------------

    def action_mask(self) -> np.ndarray:
        """int8 ``(M x (N + 1),)``, GPU after GPU: 1 for the occupied slots and none."""
        mask = self._mask
        mask[:, : self._slots] = self.slot_job >= 0
        return mask.ravel().copy()

    def observe(self) -> np.ndarray:
        """003 §4.3's image, flat float32 (a fresh array); see :mod:`envs.rltaps`."""
        self._image[:] = 0.0
        rows = self._rows
        jobs, speeds = self.job_speeds()
        if len(jobs):
            busy = np.flatnonzero(self.gpu_job >= 0)
            job_rows = np.searchsorted(jobs, self.gpu_job[busy])
            steps_left = np.ceil(self.remaining[jobs] / (speeds.speed_flops * self._step_s))
            slot = self.job_slot[jobs]
            color = np.where(slot >= 0, (slot + 1) / self._slots, 1.0)
            painted = rows[:, None] < steps_left[job_rows][None, :]
            self._cluster_cells[:, busy] = painted * color[job_rows][None, :]
        occupied = np.flatnonzero(self.slot_job >= 0)
        if len(occupied):
            held = self.slot_job[occupied]
            gpus = self.jobs.gpus[held]
            ideal_rows = self.remaining[held] / (gpus * self.config.cell_flops)
            depth = np.clip(ideal_rows[None, :] - rows[:, None], 0.0, 1.0)
            width = self._columns[None, :] < gpus[:, None]
            self._slot_cells[:, occupied, :] = depth[:, :, None] * width[None, :, :]
        self._backlog_image[:] = self._backlog_cells < len(self.backlog)
        return self._image.ravel().copy()

    # -- results --------------------------------------------------------------------------

    def slowdowns(self) -> np.ndarray:
        """003 eq. 17 for every job that has arrived: (finish - arrival) / len, with
        ``max_steps`` (T_max) as the finish of jobs not finished (dropped ones included)."""
        arrived = np.arange(self._next_job)
        finish = np.where(self.finish[arrived] >= 0, self.finish[arrived], self.config.max_steps)
        return (finish - self.jobs.arrival[arrived]) / self.jobs.length[arrived]

    def summary(self) -> dict[str, Any]:
        """The episode so far: return (eq. 16's G_1 with gamma = 1), mean and max slowdown
        (eq. 17), job counts, mean speed (reward units), GPU utilization, preemptions."""
        slowdowns = self.slowdowns()
        steps = len(self.rewards)
        return {
            "return": float(np.sum(self.rewards)),
            "mean_slowdown": float(slowdowns.mean()) if len(slowdowns) else None,
            "max_slowdown": float(slowdowns.max()) if len(slowdowns) else None,
            "jobs_arrived": int(self._next_job),
            "jobs_finished": int(np.count_nonzero(self.finish >= 0)),
            "dropped": int(np.count_nonzero(self.dropped)),
            "mean_speed": float(np.mean(self.speed_sums)) if steps else 0.0,
            "gpu_utilization": float(np.sum(self.busy_gpus)) / (steps * self.num_gpus)
            if steps
            else 0.0,
            "preemptions": self.preemptions,
            "invalid_assignments": self.invalid_assignments,
            "steps": steps,
            "final_time": self.time,
        }
