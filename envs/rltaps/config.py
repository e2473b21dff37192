"""RL-TAPS's parameters (paper 003): cluster, view, job sequences, speed model, reward.

One frozen dataclass, :class:`RLTapsConfig`, loaded from YAML with ``RLTapsConfig(**data)``
or :meth:`RLTapsConfig.from_dict` (unknown keys fail); every bad value raises
``ValueError`` saying what is allowed. Derived sizes and Appendix A's calibration are
properties. :mod:`envs.rltaps` documents the environment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from envs.rltaps.cnns import CNN_EXAMPLE_FLOPS, CNN_NAMES
from envs.topology import SERVER_PRESETS
from envs.validation import MappingConfig, int_at_least, positive_number, probability
from envs.workload import MAX_JOBS

#: 003 §4.6.1: every machine is an IBM Power8 Minsky box (S822LC): 4 GPUs, 2 CPUs, 2 IB cards.
SERVER: str = "minsky"

#: 003 §4.6.2: "a mini-batch size randomly chosen as one of {32, 64, 128, 256, 512}".
MINIBATCH_SIZES: tuple[int, ...] = (32, 64, 128, 256, 512)

#: 003 eq. 12-15's measured curves are for these two gradient sizes (MB).
FIT_SIZES_MB: tuple[float, float] = (100.0, 500.0)


def _int_range(name: str, value: object) -> tuple[int, int]:
    """``value`` as ``(low, high)`` integers with 1 <= low <= high; ValueError otherwise."""
    try:
        low, high = value  # type: ignore[misc]
        int_at_least(name, low, 1)
        int_at_least(name, high, int(low))
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be two integers [low, high] with 1 <= low <= high, got {value!r}"
        ) from None
    return int(low), int(high)


def _weight(name: str, value: object) -> float:
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if not ok or not (math.isfinite(float(value)) and float(value) >= 0):  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _sqrt_fit(name: str, value: object) -> tuple[float, float]:
    """A square-root fit ``(a, b)`` of t(g) = a sqrt(g) + b seconds, with t(2) >= 0."""
    try:
        a, b = (float(part) for part in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be two numbers [a, b] of t(g) = a sqrt(g) + b seconds, got {value!r}"
        ) from None
    if not (math.isfinite(a) and math.isfinite(b) and a >= 0 and a * math.sqrt(2) + b >= 0):
        raise ValueError(
            f"{name} = {value!r}: need finite a >= 0 and a reduction time >= 0 at 2 GPUs "
            "(a sqrt(2) + b >= 0)"
        )
    return a, b


@dataclass(frozen=True)
class RLTapsConfig(MappingConfig):
    """RL-TAPS's settings. Defaults: 003 §4-§5 and Appendix A.

    **Cluster.** ``racks``: Minsky machines per rack under one director switch
    (``(2, 2, 2, 2)``: 8 machines, M = 32 GPUs; :mod:`envs.topology.racks`).

    **View.** ``num_slots`` N (10) job slots, a ``backlog_size`` (60) backlog, a
    ``horizon`` of image rows (10; Appendix A's rows(c)), ``max_gpus_request`` columns
    per job slot (12: the largest gpusreq).

    **Job sequences** (003 §5.1). One arrival per step for the first ``num_jobs`` (400)
    steps; ``len`` in ``short_len`` (1..3) or, with probability ``long_len_share`` (0.5),
    ``long_len`` (6..10); gpusreq in ``small_gpus`` (1..7) or, with probability
    ``large_gpus_share`` (0.5), ``large_gpus`` (8..12); the CNN uniform over ``models``
    (the 35 of :data:`envs.rltaps.cnns.CNN_TABLE`), the mini-batch uniform over
    ``minibatch_sizes``.

    **Speed model** (003 eq. 3, 10, 12-15). ``gpu_tflops``: v_P100, the P100's FP32 peak
    (10.6 TFLOPS, the NVLink P100 of the S822LC); ``gpu_efficiency``: the share of it a job
    gets (0.9, eq. 10), so ``tt_m = d_m / (0.9 v_P100)``. ``reduction_fit_100mb`` and
    ``reduction_fit_500mb``: ``(a, b)`` of the single-rack ring-reduction fits
    ``t(g) = a sqrt(g) + b`` seconds at 100 and 500 MB. 003 plots its measured fits
    (Figure 3) but prints no numbers, so the defaults are derived, not measured: each curve
    vanishes at one GPU and, at 16 GPUs (003's largest measurement), equals the
    bandwidth-optimal ring all-reduce time over one 12.5 GB/s InfiniBand card (Table 1),
    ``2 (g - 1)/g x size / 12.5 GB/s``: 15 ms at 100 MB, 75 ms at 500 MB, hence
    ``(0.005, -0.005)`` and ``(0.025, -0.025)``. Put measured fits here when you have them.
    ``rack_factor_step``: 1/5 of eq. 12's ``1 + (r - 1)/5``.

    **Calibration** (Appendix A). ``calibration_model`` (vgg-vd-19, 20 GFLOPs),
    ``calibration_minibatch`` (256) and ``calibration_iterations`` (1000) on one GPU at
    v_P100 fill the ``horizon`` rows: :attr:`cell_flops` (d_cell) and :attr:`step_seconds`
    (t_row, one environment step).

    **Reward** (003 eq. 4-6). Speeds in FLOPS are divided by ``reward_unit_tflops``
    (default None: v_P100, so one GPU running alone without communication earns 0.9 per
    step); ``idle_penalty`` and ``shortfall_penalty`` weigh eq. 5 and eq. 6 (1 = 003).

    **Episode.** ``max_steps``: T_max (1000).
    """

    label = "RL-TAPS"
    article = "an"

    racks: tuple[int, ...] = (2, 2, 2, 2)
    num_slots: int = 10
    backlog_size: int = 60
    horizon: int = 10
    max_gpus_request: int = 12
    num_jobs: int = 400
    short_len: tuple[int, int] = (1, 3)
    long_len: tuple[int, int] = (6, 10)
    long_len_share: float = 0.5
    small_gpus: tuple[int, int] = (1, 7)
    large_gpus: tuple[int, int] = (8, 12)
    large_gpus_share: float = 0.5
    models: tuple[str, ...] = CNN_NAMES
    minibatch_sizes: tuple[int, ...] = MINIBATCH_SIZES
    gpu_tflops: float = 10.6
    gpu_efficiency: float = 0.9
    reduction_fit_100mb: tuple[float, float] = (0.005, -0.005)
    reduction_fit_500mb: tuple[float, float] = (0.025, -0.025)
    rack_factor_step: float = 0.2
    calibration_model: str = "vgg-vd-19"
    calibration_minibatch: int = 256
    calibration_iterations: int = 1000
    reward_unit_tflops: float | None = None
    idle_penalty: float = 1.0
    shortfall_penalty: float = 1.0
    max_steps: int = 1000

    def __post_init__(self) -> None:
        self._check_racks()
        for name, minimum in (
            ("num_slots", 1),
            ("backlog_size", 0),
            ("horizon", 1),
            ("max_gpus_request", 1),
            ("num_jobs", 1),
            ("calibration_minibatch", 1),
            ("calibration_iterations", 1),
            ("max_steps", 1),
        ):
            int_at_least(name, getattr(self, name), minimum)
        if self.num_jobs > MAX_JOBS:
            # A sequence is drawn whole, before the first step: too long a one ended in a
            # MemoryError (envs.workload.MAX_JOBS says why this bound).
            raise ValueError(
                f"num_jobs must be at most {MAX_JOBS:,} (more would not fit in memory), "
                f"got {self.num_jobs:,}"
            )
        for name in ("short_len", "long_len", "small_gpus", "large_gpus"):
            object.__setattr__(self, name, _int_range(name, getattr(self, name)))
        longest = max(self.short_len[1], self.long_len[1])
        if longest > self.horizon:
            # 003 §4.6.2: calibration makes the image hold a job's whole work (len x gpus
            # cells); a longer job would be drawn clipped, as short as one of horizon rows.
            raise ValueError(
                f"jobs may be {longest} rows long but the image has horizon={self.horizon} "
                "rows; lower short_len/long_len or raise horizon"
            )
        probability("long_len_share", self.long_len_share)
        probability("large_gpus_share", self.large_gpus_share)
        largest = max(self.small_gpus[1], self.large_gpus[1])
        if largest > min(self.max_gpus_request, self.total_gpus):
            raise ValueError(
                f"jobs may ask for {largest} GPUs but max_gpus_request is "
                f"{self.max_gpus_request} and the cluster has {self.total_gpus}; lower "
                "small_gpus/large_gpus or raise max_gpus_request (at most the cluster's GPUs)"
            )
        if self.max_gpus_request > self.total_gpus:
            raise ValueError(
                f"max_gpus_request must be at most the cluster's {self.total_gpus} GPUs, "
                f"got {self.max_gpus_request}"
            )
        self._check_models()
        positive_number("gpu_tflops", self.gpu_tflops)
        efficiency = positive_number("gpu_efficiency", self.gpu_efficiency)
        if efficiency > 1:
            raise ValueError(f"gpu_efficiency must be in (0, 1], got {self.gpu_efficiency!r}")
        for name in ("reduction_fit_100mb", "reduction_fit_500mb"):
            object.__setattr__(self, name, _sqrt_fit(name, getattr(self, name)))
        _weight("rack_factor_step", self.rack_factor_step)
        if self.reward_unit_tflops is not None:
            positive_number("reward_unit_tflops", self.reward_unit_tflops)
        _weight("idle_penalty", self.idle_penalty)
        _weight("shortfall_penalty", self.shortfall_penalty)

    def _check_racks(self) -> None:
        racks = self.racks
        if isinstance(racks, str | bytes) or not hasattr(racks, "__iter__"):
            raise ValueError(f"racks must be a list of machines per rack, got {racks!r}")
        racks = tuple(racks)
        if not racks or any(
            isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 1 for r in racks
        ):
            raise ValueError(
                f"racks must be a non-empty list of integers >= 1 (machines per rack), "
                f"got {self.racks!r}"
            )
        object.__setattr__(self, "racks", tuple(int(r) for r in racks))

    def _check_models(self) -> None:
        models = self.models
        if isinstance(models, str) or not hasattr(models, "__iter__") or not tuple(models):
            raise ValueError(f"models must be a non-empty list of CNN names, got {models!r}")
        unknown = [name for name in models if name not in CNN_NAMES]
        if unknown or self.calibration_model not in CNN_NAMES:
            bad = unknown or [self.calibration_model]
            raise ValueError(f"unknown CNN(s) {bad!r}; known: {', '.join(CNN_NAMES)}")
        object.__setattr__(self, "models", tuple(models))
        sizes = self.minibatch_sizes
        if isinstance(sizes, str) or not hasattr(sizes, "__iter__") or not tuple(sizes):
            raise ValueError(f"minibatch_sizes must be a non-empty list, got {sizes!r}")
        for size in sizes:
            int_at_least("every minibatch size", size, 1)
        object.__setattr__(self, "minibatch_sizes", tuple(int(size) for size in sizes))

    # -- sizes ---------------------------------------------------------------------------------

    @property
    def gpus_per_machine(self) -> int:
        """GPUs of one Minsky machine (4)."""
        return SERVER_PRESETS[SERVER].num_gpus

    @property
    def num_machines(self) -> int:
        """X, the machines of all racks."""
        return sum(self.racks)

    @property
    def total_gpus(self) -> int:
        """M, the GPUs of the cluster (32 by default)."""
        return self.num_machines * self.gpus_per_machine

    @property
    def none_action(self) -> int:
        """The index of the null job slot (no job for this GPU): N, the last choice."""
        return self.num_slots

    @property
    def choices_per_gpu(self) -> int:
        """N + 1 choices per GPU: the N slots, then none."""
        return self.num_slots + 1

    @property
    def backlog_width(self) -> int:
        """Columns of the backlog block: ceil(backlog_size / horizon) (at least 1)."""
        return max(1, -(-self.backlog_size // self.horizon))

    @property
    def image_width(self) -> int:
        """Columns of the image: M cluster + N x max_gpus_request slots + backlog."""
        return self.total_gpus + self.num_slots * self.max_gpus_request + self.backlog_width

    @property
    def image_shape(self) -> tuple[int, int]:
        """(rows, columns) of the state image."""
        return (self.horizon, self.image_width)

    @property
    def observation_size(self) -> int:
        """Length of the flat observation: rows x columns."""
        return self.horizon * self.image_width

    # -- Appendix A's calibration --------------------------------------------------------------

    @property
    def gpu_flops(self) -> float:
        """v_P100 in FLOPS."""
        return float(self.gpu_tflops) * 1e12

    @property
    def calibration_flops(self) -> float:
        """d_f(c) = it_f(c) x d_ex(c) x m(c) x g(c): the calibration job's total FLOPs."""
        example = float(CNN_EXAMPLE_FLOPS[CNN_NAMES.index(self.calibration_model)])
        return self.calibration_iterations * example * self.calibration_minibatch

    @property
    def cell_flops(self) -> float:
        """d_cell = d_f(c) / n(c), n(c) = rows(c) g(c) = horizon: FLOPs of one image cell."""
        return self.calibration_flops / self.horizon

    @property
    def step_seconds(self) -> float:
        """t_row(c) = t_f(c) / rows(c), t_f(c) = d_f(c) / v_P100: seconds of one step."""
        return self.calibration_flops / self.gpu_flops / self.horizon

    @property
    def reward_unit_flops(self) -> float:
        """FLOPS that make one unit of reward: ``reward_unit_tflops``, else v_P100."""
        unit = self.reward_unit_tflops
        return self.gpu_flops if unit is None else float(unit) * 1e12
