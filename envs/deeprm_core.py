"""DeepRM's exact dynamics (Mao et al., HotNets'16) as a small, fast numpy core.

DeepRM books a job into *future rows* of a per-resource image of free capacity (rows are
time steps, the top row is "now"); time advances only when the agent moves on. These
slot-reservation dynamics are not those of podsched's event-driven simulator
(:mod:`envs.sim`, where jobs run on placed servers and speeds depend on placement), so they
live here as their own core: a ``T x num_res`` free-capacity array, the reference's colour
canvas kept directly inside the observation image, the visible slots, the backlog FIFO and a
ring of departures. :class:`envs.deeprm.DeepRMEnv` is a thin Gymnasium view over it;
:func:`replay` drives it with a baseline for ``simulate.py``.

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

import json
import math
import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from envs.env_config import override_fields

END_MODES: tuple[str, ...] = ("all_done", "no_new_job")
OBSERVATIONS: tuple[str, ...] = ("image", "compact")
JOB_KEYS: tuple[str, ...] = ("arrival_time", "len", "res")
RESULT_KEYS: tuple[str, ...] = (
    "mean_slowdown",
    "max_slowdown",
    "total_reward",
    "steps",
    "final_time",
    "dropped",
    "jobs",
)

# --- configuration -------------------------------------------------------------------------


def _int_at_least(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _probability(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


@dataclass(frozen=True)
class DeepRMConfig:
    """DeepRM's parameters; defaults are the reference's ``parameters.py``.

    ``simu_len`` (50, the reference README's value) is the length of a generated job
    sequence: a job may arrive at each time step ``1..simu_len-1``. ``max_episode_steps``
    (200, the reference's ``episode_max_length``) truncates an episode after that many
    ``step`` calls; ``None`` never truncates.
    """

    num_res: int = 2
    res_slot: int = 10
    time_horizon: int = 20
    max_job_len: int = 15
    max_job_size: int = 10
    num_nw: int = 5
    backlog_size: int = 60
    new_job_rate: float = 0.7
    job_small_chance: float = 0.8
    simu_len: int = 50
    max_track_since_new: int = 10
    job_num_cap: int = 40
    end: str = "all_done"
    observation: str = "image"
    max_episode_steps: int | None = 200

    def __post_init__(self) -> None:
        for name in ("num_res", "res_slot", "num_nw", "simu_len", "max_track_since_new"):
            _int_at_least(name, getattr(self, name), 1)
        _int_at_least("time_horizon", self.time_horizon, 2)
        _int_at_least("backlog_size", self.backlog_size, 0)
        _int_at_least("job_num_cap", self.job_num_cap, 2)
        _int_at_least("max_job_len", self.max_job_len, 1)
        if self.max_job_len > self.time_horizon - 1:
            raise ValueError(
                f"max_job_len must be <= time_horizon - 1 = {self.time_horizon - 1} (the "
                f"reference never books the last image row), got {self.max_job_len}"
            )
        _int_at_least("max_job_size", self.max_job_size, 1)
        if self.max_job_size > self.res_slot:
            raise ValueError(
                f"max_job_size must be <= res_slot = {self.res_slot} (a larger job never "
                f"fits), got {self.max_job_size}"
            )
        _probability("new_job_rate", self.new_job_rate)
        _probability("job_small_chance", self.job_small_chance)
        if self.end not in END_MODES:
            raise ValueError(f"end must be one of {', '.join(END_MODES)}, got {self.end!r}")
        if self.observation not in OBSERVATIONS:
            raise ValueError(
                f"observation must be one of {', '.join(OBSERVATIONS)}, got {self.observation!r}"
            )
        if self.max_episode_steps is not None:
            _int_at_least("max_episode_steps", self.max_episode_steps, 1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeepRMConfig:
        """``DeepRMConfig(**data)`` with a ValueError naming unknown keys."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a DeepRM config must be a mapping, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"unknown DeepRM parameter(s) {', '.join(map(str, unknown))}; "
                f"known: {', '.join(sorted(known))}"
            )
        return cls(**data)

    @property
    def backlog_width(self) -> int:
        """Image columns of the backlog (the reference's ``ceil(backlog_size / T)``)."""
        return math.ceil(self.backlog_size / self.time_horizon)

    @property
    def resource_width(self) -> int:
        """Image columns per resource: its canvas, then ``num_nw`` slot blocks."""
        return self.res_slot + self.num_nw * self.max_job_size

    @property
    def image_shape(self) -> tuple[int, int]:
        """(rows, columns) of the image observation."""
        return self.time_horizon, self.num_res * self.resource_width + self.backlog_width + 1

    @property
    def compact_size(self) -> int:
        """Length of the compact observation (the reference's ``network_compact_dim``)."""
        return (self.num_res + 1) * (self.time_horizon + self.num_nw) + 1

    @property
    def penalty_denominator(self) -> int:
        """lcm(1..max_job_len): every 1/len is an integer multiple of 1/this."""
        return math.lcm(*range(1, self.max_job_len + 1))

    @property
    def short_len_range(self) -> tuple[int, int]:
        """Inclusive lengths of short jobs: 1..max_job_len // 5 (1..3 by default)."""
        return 1, self.max_job_len // 5

    @property
    def long_len_range(self) -> tuple[int, int]:
        """Inclusive lengths of long jobs: max_job_len * 2 // 3..max_job_len (10..15)."""
        return self.max_job_len * 2 // 3, self.max_job_len

    @property
    def dominant_size_range(self) -> tuple[int, int]:
        """Inclusive demand of the dominant resource: max_job_size // 2..max_job_size."""
        return self.max_job_size // 2, self.max_job_size

    @property
    def other_size_range(self) -> tuple[int, int]:
        """Inclusive demand of the other resources: 1..max_job_size // 5 (1..2)."""
        return 1, self.max_job_size // 5

    def image_columns(self) -> dict[str, Any]:
        """Where things are in the image: canvas / slot column starts per resource, etc."""
        bases = [r * self.resource_width for r in range(self.num_res)]
        return {
            "canvas": bases,
            "slots": [
                [base + self.res_slot + j * self.max_job_size for j in range(self.num_nw)]
                for base in bases
            ],
            "backlog": self.num_res * self.resource_width,
            "since_new": self.image_shape[1] - 1,
        }


# --- job sequences -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class JobSequence:
    """Jobs of one episode in arrival order: at most one per time step, arrivals >= 1.

    ``simu_len`` is the reference's sequence length: no job arrives at or after it, and the
    ``no_new_job`` end fires at the move-on that reaches it.
    """

    arrival_times: np.ndarray
    lengths: np.ndarray
    sizes: np.ndarray
    simu_len: int

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The replay-file form ``{"jobs": [{"arrival_time", "len", "res"}, ...]}``."""
        return {
            "jobs": [
                {"arrival_time": int(t), "len": int(n), "res": [int(x) for x in r]}
                for t, n, r in zip(self.arrival_times, self.lengths, self.sizes, strict=True)
            ]
        }


def generate_sequence(config: DeepRMConfig, rng: np.random.Generator) -> JobSequence:
    """A job sequence drawn as the reference's ``generate_sequence_work(simu_len)``.

    At each time step a job arrives with probability ``new_job_rate`` (Bernoulli); it is
    short (``short_len_range``) with probability ``job_small_chance`` else long; one
    uniformly drawn resource gets ``dominant_size_range``, the others ``other_size_range``.
    Index 0 is left empty because the reference never reads it (arrivals happen only when
    time advances).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    short_low, short_high = config.short_len_range
    long_low, long_high = config.long_len_range
    dom_low, dom_high = config.dominant_size_range
    other_low, other_high = config.other_size_range
    if short_high < short_low or other_high < other_low or dom_low < 1:
        raise ValueError(
            "the bimodal generator needs max_job_len >= 5 and max_job_size >= 5 (short jobs "
            "last 1..max_job_len//5 steps, small demands are 1..max_job_size//5); got "
            f"max_job_len={config.max_job_len}, max_job_size={config.max_job_size}: "
            "pass an explicit job list instead"
        )
    steps = config.simu_len
    arrives = rng.random(steps) < config.new_job_rate
    short = rng.random(steps) < config.job_small_chance
    lengths = np.where(
        short,
        rng.integers(short_low, short_high + 1, size=steps),
        rng.integers(long_low, long_high + 1, size=steps),
    )
    dominant = rng.integers(config.num_res, size=steps)
    sizes = rng.integers(other_low, other_high + 1, size=(steps, config.num_res))
    sizes[np.arange(steps), dominant] = rng.integers(dom_low, dom_high + 1, size=steps)
    arrives[0] = False
    times = np.flatnonzero(arrives)
    return JobSequence(
        arrival_times=times.astype(np.int64),
        lengths=lengths[times].astype(np.int64),
        sizes=sizes[times].astype(np.int64),
        simu_len=steps,
    )


def _job_int(index: int, key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"job {index}: {key} must be an integer, got {value!r}")
    return int(value)


def parse_jobs(data: object, config: DeepRMConfig) -> JobSequence:
    """Validate an explicit workload and return it as a :class:`JobSequence`.

    ``data`` is ``{"jobs": [...]}`` (the replay-file form), the list itself, or a
    :class:`JobSequence`. Each job is ``{"arrival_time": int >= 1, "len": 1..max_job_len,
    "res": [num_res ints in 0..max_job_size, not all 0]}``; arrival times strictly increase
    (at most one job per time step, listed in arrival order). ValueError says what is wrong.
    """
    if isinstance(data, JobSequence):
        checked = parse_jobs(data.to_dict(), config)
        if data.simu_len < checked.simu_len:
            raise ValueError(
                f"simu_len {data.simu_len} must exceed the last arrival time {checked.simu_len - 1}"
            )
        return replace(checked, simu_len=data.simu_len)
    if isinstance(data, Mapping):
        extra = sorted(set(data) - {"jobs"})
        if "jobs" not in data or extra:
            raise ValueError(
                'a DeepRM workload is {"jobs": [...]}, got keys '
                f"{sorted(map(str, data))}; remove {extra or 'nothing'} and give 'jobs'"
            )
        data = data["jobs"]
    if isinstance(data, str | bytes) or not isinstance(data, Sequence):
        raise ValueError(f"jobs must be a list of job objects, got {type(data).__name__}")
    count = len(data)
    times = np.zeros(count, dtype=np.int64)
    lengths = np.zeros(count, dtype=np.int64)
    sizes = np.zeros((count, config.num_res), dtype=np.int64)
    previous = 0
    for index, job in enumerate(data):
        if not isinstance(job, Mapping):
            raise ValueError(f"job {index} must be an object with keys {JOB_KEYS}, got {job!r}")
        missing = [key for key in JOB_KEYS if key not in job]
        extra = sorted(set(job) - set(JOB_KEYS))
        if missing or extra:
            raise ValueError(
                f"job {index}: keys must be exactly {', '.join(JOB_KEYS)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(map(str, extra))}" if extra else "")
            )
        arrival = _job_int(index, "arrival_time", job["arrival_time"])
        if arrival < 1:
            raise ValueError(
                f"job {index}: arrival_time must be >= 1 (jobs arrive only when time "
                f"advances from 0), got {arrival}"
            )
        if arrival <= previous:
            raise ValueError(
                f"job {index}: arrival_time {arrival} must be greater than the previous "
                f"job's {previous} (at most one job per time step, in arrival order)"
            )
        length = _job_int(index, "len", job["len"])
        if not 1 <= length <= config.max_job_len:
            raise ValueError(
                f"job {index}: len must be in 1..max_job_len={config.max_job_len}, got {length}"
            )
        res = job["res"]
        if isinstance(res, str | bytes) or not isinstance(res, Sequence):
            raise ValueError(f"job {index}: res must be a list of {config.num_res} integers")
        if len(res) != config.num_res:
            raise ValueError(
                f"job {index}: res must list num_res={config.num_res} demands, got {len(res)}"
            )
        demand = [_job_int(index, "res", value) for value in res]
        if any(not 0 <= value <= config.max_job_size for value in demand):
            raise ValueError(
                f"job {index}: each res must be in 0..max_job_size={config.max_job_size}, "
                f"got {demand}"
            )
        if not any(demand):
            raise ValueError(f"job {index}: res must demand at least one unit, got {demand}")
        times[index], lengths[index], sizes[index] = arrival, length, demand
        previous = arrival
    return JobSequence(times, lengths, sizes, simu_len=previous + 1)


def load_jobs_file(path: str | Path, config: DeepRMConfig) -> JobSequence:
    """Read and validate a replay file ``{"jobs": [...]}`` (see :func:`parse_jobs`)."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    try:
        return parse_jobs(data, config)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


# --- the dynamics ----------------------------------------------------------------------------


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
        # Views into the image: the canvas *is* part of the observation, so shifting it
        # shifts the observation and nothing is copied at observe time.
        self._canvas = [self.image[:, c : c + config.res_slot] for c in self._canvas_columns]
        self._compact = np.zeros(config.compact_size, dtype=np.float32)
        self._compact_slots = config.time_horizon * (config.num_res + 1)
        self._compact_slot_view = self._compact[self._compact_slots : -1].reshape(
            config.num_nw, config.num_res + 1
        )
        self.slot_len = np.zeros(config.num_nw, dtype=np.int64)
        self.slot_res = np.zeros((config.num_nw, config.num_res), dtype=np.int64)
        self.reset(JobSequence(*_empty_jobs(config.num_res), simu_len=1), None)

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
            raise RuntimeError("the episode is over; call reset() before step()")
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


# --- baselines (other_agents.py) -------------------------------------------------------------

Policy = Callable[[DeepRMCore, np.random.Generator], int]


def fits_now(core: DeepRMCore) -> list[bool]:
    """Per slot: a job is there and every resource has room for rows 0..len-1."""
    lowest = np.minimum.accumulate(core.avbl, axis=0)
    # An empty slot has len 0 and reads row -1; the slot_job test below discards it.
    room = (lowest[core.slot_len - 1] >= core.slot_res).all(axis=1).tolist()
    return [fits and job >= 0 for fits, job in zip(room, core.slot_job, strict=True)]


def sjf_action(core: DeepRMCore, rng: np.random.Generator | None = None) -> int:
    """Shortest job first: the fitting slot job with the largest 1/len.

    As the reference: scores start at 0, a slot must score strictly more than the best so
    far scanning from slot 0 (ties go to the lowest slot); nothing fits means void.
    """
    best, action = 0.0, core.config.num_nw
    for slot, fits in enumerate(fits_now(core)):
        if fits:
            score = 1 / core.lengths[core.slot_job[slot]]
            if score > best:
                best, action = score, slot
    return action


def packer_action(core: DeepRMCore, rng: np.random.Generator | None = None) -> int:
    """Packer (Tetris): the fitting slot job with the largest dot(free units now, demand).

    Same scan as :func:`sjf_action`: strictly greater from a best of 0, from slot 0.
    """
    scores = (core.slot_res @ core.avbl[0]).tolist()
    best, action = 0, core.config.num_nw
    for slot, fits in enumerate(fits_now(core)):
        if fits and scores[slot] > best:
            best, action = scores[slot], slot
    return action


def random_action(core: DeepRMCore, rng: np.random.Generator) -> int:
    """Uniform over the num_nw + 1 actions (empty slots and void included), as the reference."""
    return int(rng.integers(core.config.num_nw + 1))


POLICIES: dict[str, Policy] = {"sjf": sjf_action, "packer": packer_action, "random": random_action}


def get_policy(policy: str | Policy) -> Policy:
    """A baseline by name (sjf, packer, random) or the callable itself."""
    if callable(policy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    return POLICIES[policy]


# --- replay ----------------------------------------------------------------------------------


def replay(
    jobs: object,
    policy: str | Policy,
    num_nw: int = 5,
    *,
    seed: int | None = None,
    max_steps: int | None = 1_000_000,
    **params: Any,
) -> dict[str, Any]:
    """Run ``policy`` on an explicit workload until the episode ends; the JSON summary.

    ``jobs`` is ``{"jobs": [...]}``, the list, or a :class:`JobSequence` (see
    :func:`parse_jobs`); ``params`` are other :class:`DeepRMConfig` fields (default
    ``end="all_done"``). ``seed`` seeds the Random baseline and the canvas colours.
    ``max_steps`` is a safety cap for policies that never book anything. Returns the keys
    of :data:`RESULT_KEYS`.
    """
    config = DeepRMConfig.from_dict({**params, "num_nw": num_nw, "max_episode_steps": max_steps})
    sequence = parse_jobs(jobs, config)
    chooser = get_policy(policy)
    rng = np.random.default_rng(seed)
    core = DeepRMCore(config)
    core.reset(sequence, rng)
    while not core.done:
        core.step(chooser(core, rng))
    return core.result()


def with_overrides(config: DeepRMConfig, **params: Any) -> DeepRMConfig:
    """``config`` with some fields replaced (ValueError on unknown names)."""
    return override_fields(config, "DeepRM", **params)
