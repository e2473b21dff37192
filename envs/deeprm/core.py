"""DeepRM's exact dynamics (Mao et al., HotNets'16) as a small, fast numpy core.

DeepRM books a job into *future rows* of a per-resource image of free capacity (rows are
time steps, the top row is "now"); time advances only when the agent moves on. These
slot-reservation dynamics are not those of podsched's event-driven simulator
(:mod:`envs.sim`, where jobs run on placed servers and speeds depend on placement), so they
live here as their own core: a ``T x num_res`` free-capacity array, the reference's colour
canvas kept directly inside the observation image, the visible slots, the backlog FIFO and a
ring of departures. :class:`envs.deeprm.env.DeepRMEnv` is a thin Gymnasium view over it;
:func:`envs.deeprm.baselines.replay` drives it with a baseline for ``simulate.py``.

What is reproduced from the reference implementation (``hongzimao/deeprm``):

* parameters and the bimodal job distribution (``parameters.py``, ``job_distribution.py``);
* ``Env.step``: allocation at the earliest offset ``t in 0..T-len-1``, slot refill from the
  backlog head, the three kinds of "move on", time shift, departures, one arrival per step
  into the lowest empty slot / backlog / dropped, the ``all_done`` and ``no_new_job`` ends;
* the reward ``-sum 1/len`` over running, slotted and backlogged jobs;
* the image (colour canvas, slot blocks, backlog rows, time-since-last-arrival column) and
  the compact observation (``Env.observe``);
* SJF, Packer (Tetris) and Random (``other_agents.py``) and slowdown (``slow_down_cdf.py``).

Deliberate differences, each because the reference is wrong or cannot be matched:

* Python 2's ``list.remove`` while iterating in ``Machine.time_proceed`` can keep a finished
  job "running" one step too long; here every job with ``finish <= now`` leaves (the issue
  spells this out).
* The reward is the correctly rounded value of the exact rational sum (kept as an integer
  numerator over ``lcm(1..max_job_len)``), not a float sum in list order: identical up to
  the last bit or so, and independent of job order.
* Slowdown is ``(finish - enter) / len`` in true division (Python 2 floored it).
* Canvas colours are exactly ``k / job_num_cap`` (k = 1..cap-1), shuffled per episode; the
  reference's float ``arange`` yields a colour of 1.0 for some caps (3, 7, ...). When all
  colours are in use the reference crashes; here the colour whose job ends first is reused.
* The reference's "all_done" also stops once time exceeds ``episode_max_length``; here one
  step cap, ``max_episode_steps``, truncates episodes of either end mode (the reference's
  training loop caps steps the same way).
* ``backlog_size`` need not be a multiple of T (the reference asserts it, though its
  ``ceil`` layout never needed it).
* Randomness comes from a caller-supplied ``numpy.random.Generator`` (never the global
  state), drawn afresh at each reset, so sequences are not bit-identical to the reference's
  ``np.random.seed(42)`` and there is no fixed set of ``num_ex`` sequences to cycle through.
"""

from __future__ import annotations

import operator
from collections import deque
from typing import Any

import numpy as np

from envs.base import EPISODE_OVER
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.jobs import JobSequence

RESULT_KEYS: tuple[str, ...] = (
    "mean_slowdown",
    "max_slowdown",
    "total_reward",
    "steps",
    "final_time",
    "dropped",
    "jobs",
)


class DeepRMCore:
    """State and transitions of one DeepRM cluster (the reference's ``Env`` minus Theano).

    Public state, read by observations, baselines and tests (never written from outside):
    ``time``; ``avbl`` (T x num_res free units per future step, row 0 = now); ``slot_job``
    / ``slot_len`` / ``slot_res`` (visible slots: job index, -1 / 0 when empty); ``backlog``
    (FIFO of job indices); ``image`` (the image observation, kept up to date incrementally);
    ``colormap``; per job in arrival order ``lengths``, ``demands``, ``job_start``,
    ``job_finish`` (-1 until booked), ``job_dropped``; counters ``steps``, ``dropped``,
    ``running``, ``since_new``, ``total_reward``; ``done``.
    """

    def __init__(self, config: DeepRMConfig) -> None:
        if not isinstance(config, DeepRMConfig):
            raise TypeError(f"config must be a DeepRMConfig, got {type(config).__name__}")
        self.config = config
        horizon, width = config.image_shape
        self._horizon = horizon
        self._num_nw = config.num_nw
        self._res_slot = config.res_slot
        self._denominator = config.penalty_denominator
        # The reference's arange(1/cap, 1, 1/cap), written exactly: cap - 1 colours in (0, 1).
        self._colours = np.arange(1, config.job_num_cap) / config.job_num_cap
        columns = config.image_columns()
        self._canvas_columns: list[int] = columns["canvas"]
        self._slot_columns: list[list[int]] = columns["slots"]
        self._backlog_column: int = columns["backlog"]
        self.avbl = np.full((horizon, config.num_res), config.res_slot, dtype=np.int64)
        self.image = np.zeros((horizon, width), dtype=np.float32)
        self._compact = np.zeros(config.compact_size, dtype=np.float32)
        self._compact_slots = config.time_horizon * (config.num_res + 1)
        self._make_views()
        self.slot_len = np.zeros(config.num_nw, dtype=np.int64)
        self.slot_res = np.zeros((config.num_nw, config.num_res), dtype=np.int64)
        self.reset(JobSequence(*_empty_jobs(config.num_res), simu_len=1), None)

    def _make_views(self) -> None:
        # Views into the image: the canvas *is* part of the observation, so shifting it
        # shifts the observation and nothing is copied at observe time.
        config = self.config
        self._canvas = [self.image[:, c : c + config.res_slot] for c in self._canvas_columns]
        self._compact_slot_view = self._compact[self._compact_slots : -1].reshape(
            config.num_nw, config.num_res + 1
        )

    def __getstate__(self) -> dict[str, Any]:
        # Pickling copies views apart from their base; they are rebuilt on load.
        state = dict(self.__dict__)
        del state["_canvas"], state["_compact_slot_view"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._make_views()

    # -- episode start ----------------------------------------------------------------------

    def reset(self, jobs: JobSequence, rng: np.random.Generator | None) -> None:
        """Start an episode at time 0 with an empty cluster and ``jobs`` still to arrive.

        ``rng`` shuffles the canvas colours, as the reference does for each new ``Machine``
        (``None`` keeps them in order).
        """
        if jobs.sizes.shape[1:] != (self.config.num_res,):
            raise ValueError(
                f"jobs demand {jobs.sizes.shape[1:]} resources, the config has "
                f"num_res={self.config.num_res}"
            )
        self.jobs = jobs
        self.time = 0
        self.steps = 0
        self.dropped = 0
        self.running = 0
        self.total_reward = 0.0
        self.done = False
        self.since_new = 0
        self._arrivals: list[int] = jobs.arrival_times.tolist()
        self.lengths: list[int] = jobs.lengths.tolist()
        self._sizes = jobs.sizes
        self.demands: list[list[int]] = jobs.sizes.tolist()
        self._weights = [self._denominator // length for length in self.lengths]
        self._next_job = 0
        count = len(self.lengths)
        self.job_start: list[int] = [-1] * count
        self.job_finish: list[int] = [-1] * count
        self.job_dropped: list[bool] = [False] * count
        # penalty = (sum of 1/len over jobs in the system) * denominator, exact in integers.
        self._penalty = 0
        self._waiting = 0
        self._depart_weight = [0] * self._horizon
        self._depart_count = [0] * self._horizon
        self.colormap = self._colours if rng is None else rng.permutation(self._colours)
        self._colour_until = np.zeros(self.colormap.shape[0], dtype=np.int64)
        self.slot_job: list[int] = [-1] * self._num_nw
        self.slot_len[:] = 0
        self.slot_res[:] = 0
        self.backlog: deque[int] = deque()
        self.avbl[:] = self._res_slot
        self.image[:] = 0.0

    # -- transitions ------------------------------------------------------------------------

    def step(self, action: object) -> tuple[float, bool, bool]:
        """Apply one action; return (reward, terminated, truncated).

        ``action == num_nw``, an empty slot, or a job that cannot be booked move time on;
        otherwise the slot's job is booked and the reward is 0 with time frozen.
        """
        if self.done:
            raise RuntimeError(EPISODE_OVER)
        try:
            slot = operator.index(action)  # type: ignore[call-overload]
        except TypeError:
            raise ValueError(f"action must be an integer, got {action!r}") from None
        if not 0 <= slot <= self._num_nw:
            raise ValueError(f"action must be in 0..{self._num_nw}, got {slot}")
        self.steps += 1
        reward = 0.0
        terminated = False
        if slot == self._num_nw or self.slot_job[slot] < 0 or not self._allocate(slot):
            terminated = self._move_on()
            reward = -self._penalty / self._denominator
            self.total_reward += reward
        cap = self.config.max_episode_steps
        truncated = not terminated and cap is not None and self.steps >= cap
        self.done = terminated or truncated
        return reward, terminated, truncated

    def earliest_offset(self, job: int) -> int:
        """First t in 0..T-len-1 where every resource has room for rows t..t+len-1; -1 if none."""
        length = self.lengths[job]
        fits = (self.avbl >= self._sizes[job]).all(axis=1).tolist()
        run = 0
        # Rows up to T-2 only: the reference's range(0, T - len) never books the last row.
        for row in range(self._horizon - 1):
            if fits[row]:
                run += 1
                if run == length:
                    return row - length + 1
            else:
                run = 0
        return -1

    def _allocate(self, slot: int) -> bool:
        job = self.slot_job[slot]
        offset = self.earliest_offset(job)
        if offset < 0:
            return False
        length = self.lengths[job]
        self.avbl[offset : offset + length] -= self._sizes[job]
        start = self.time + offset
        finish = start + length
        self.job_start[job] = start
        self.job_finish[job] = finish
        ring = finish % self._horizon
        self._depart_weight[ring] += self._weights[job]
        self._depart_count[ring] += 1
        self.running += 1
        self._waiting -= 1
        self._paint(job, offset, length, finish)
        if self.backlog:
            refill = self.backlog.popleft()
            self._fill_slot(slot, refill)
            self._draw_backlog()
        else:
            self._fill_slot(slot, -1)
        return True

    def _paint(self, job: int, offset: int, length: int, finish: int) -> None:
        """Colour the job's cells: in each row, its demand's worth of the lowest free columns."""
        free = np.flatnonzero(self._colour_until <= self.time)
        # The reference crashes when every colour is taken; reuse the one freed soonest.
        index = int(free[0]) if free.size else int(np.argmin(self._colour_until))
        self._colour_until[index] = finish
        colour = self.colormap[index]
        for canvas, demand in zip(self._canvas, self.demands[job], strict=True):
            if demand:
                block = canvas[offset : offset + length]
                empty = block == 0
                block[empty & (empty.cumsum(axis=1) <= demand)] = colour

    def _fill_slot(self, slot: int, job: int) -> None:
        self.slot_job[slot] = job
        image = self.image
        width = self.config.max_job_size
        if job < 0:
            self.slot_len[slot] = 0
            self.slot_res[slot] = 0
            for columns in self._slot_columns:
                image[:, columns[slot] : columns[slot] + width] = 0.0
            return
        length = self.lengths[job]
        self.slot_len[slot] = length
        self.slot_res[slot] = self._sizes[job]
        for columns, demand in zip(self._slot_columns, self.demands[job], strict=True):
            start = columns[slot]
            image[:, start : start + width] = 0.0
            image[:length, start : start + demand] = 1.0

    def _draw_backlog(self) -> None:
        width = self.config.backlog_width
        if not width:
            return
        start = self._backlog_column
        size = len(self.backlog)
        full, rest = divmod(size, width)
        block = self.image[:, start : start + width]
        block[:] = 0.0
        block[:full] = 1.0
        if rest:
            block[full, :rest] = 1.0

    def _move_on(self) -> bool:
        """Advance time by one step; True when the episode ends here."""
        self.time = now = self.time + 1
        self.avbl[:-1] = self.avbl[1:]
        self.avbl[-1] = self._res_slot
        for canvas in self._canvas:
            canvas[:-1] = canvas[1:]
            canvas[-1] = 0.0
        ring = now % self._horizon
        if self._depart_count[ring]:
            self._penalty -= self._depart_weight[ring]
            self.running -= self._depart_count[ring]
            self._depart_weight[ring] = 0
            self._depart_count[ring] = 0
        if self.since_new < self.config.max_track_since_new:
            self.since_new += 1
        no_more_arrivals = now >= self.jobs.simu_len
        if self.config.end == "no_new_job":
            ended = no_more_arrivals
        else:
            ended = no_more_arrivals and not self.running and not self._waiting
        if not ended:
            self._arrive(now)
        self.image[:, -1] = self.since_new / self.config.max_track_since_new
        return ended

    def _arrive(self, now: int) -> None:
        job = self._next_job
        if job >= len(self._arrivals) or self._arrivals[job] != now:
            return
        self._next_job = job + 1
        # Even a dropped job resets the time since the last arrival, as in the reference.
        self.since_new = 0
        if -1 in self.slot_job:
            self._fill_slot(self.slot_job.index(-1), job)
        elif len(self.backlog) < self.config.backlog_size:
            self.backlog.append(job)
            self._draw_backlog()
        else:
            self.job_dropped[job] = True
            self.dropped += 1
            return
        self._penalty += self._weights[job]
        self._waiting += 1

    # -- views --------------------------------------------------------------------------------

    @property
    def penalty(self) -> float:
        """sum of 1/len over every job in the system (running, booked, slotted, backlogged)."""
        return self._penalty / self._denominator

    def observe_image(self) -> np.ndarray:
        """A copy of the image observation (float32, shape ``config.image_shape``)."""
        return self.image.copy()

    def observe_compact(self) -> np.ndarray:
        """The reference's compact observation (float32, length ``config.compact_size``).

        [jobs still running after k steps, k < T] + [free units per step, per resource] +
        [len, demands per slot (0s when empty)] + [backlog size].
        """
        horizon = self._horizon
        counts = self._depart_count
        ring = self.time % horizon
        # finish - now = d in 0..T-1 sits at ring index (now + d) % T (d = 0 is always 0).
        left = self.running - np.cumsum(counts[ring:] + counts[:ring])
        out = self._compact
        out[:horizon] = left
        out[horizon : self._compact_slots] = self.avbl.T.ravel()
        self._compact_slot_view[:, 0] = self.slot_len
        self._compact_slot_view[:, 1:] = self.slot_res
        out[-1] = len(self.backlog)
        return out.copy()

    def result(self) -> dict[str, Any]:
        """The replay summary: slowdowns, reward, steps, time, drops, per-job times.

        Slowdown counts every booked job (``finish >= 0``), as ``slow_down_cdf.py`` does;
        jobs not yet booked have ``start``/``finish`` null. Dropped and not-yet-arrived jobs
        are left out. ``mean_slowdown``/``max_slowdown`` are null when no job was booked.
        """
        jobs = []
        slowdowns = []
        for job in range(self._next_job):
            if self.job_dropped[job]:
                continue
            arrival, start, finish = self._arrivals[job], self.job_start[job], self.job_finish[job]
            booked = finish >= 0
            jobs.append(
                {
                    "arrival_time": arrival,
                    "start": start if booked else None,
                    "finish": finish if booked else None,
                }
            )
            if booked:
                slowdowns.append((finish - arrival) / self.lengths[job])
        return {
            "mean_slowdown": sum(slowdowns) / len(slowdowns) if slowdowns else None,
            "max_slowdown": max(slowdowns) if slowdowns else None,
            "total_reward": self.total_reward,
            "steps": self.steps,
            "final_time": self.time,
            "dropped": self.dropped,
            "jobs": jobs,
        }


def _empty_jobs(num_res: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty.copy(), np.zeros((0, num_res), dtype=np.int64)
