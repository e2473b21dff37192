"""DeepRM's parameters (Mao et al., HotNets'16): the reference's ``parameters.py``.

One frozen dataclass, :class:`DeepRMConfig`, loaded from YAML with ``DeepRMConfig(**data)``
or :meth:`DeepRMConfig.from_dict` (unknown keys fail); every bad value raises
``ValueError`` saying what is allowed. :mod:`envs.deeprm.env` documents the environment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from envs.validation import MappingConfig, int_at_least, one_of, probability

END_MODES: tuple[str, ...] = ("all_done", "no_new_job")
OBSERVATIONS: tuple[str, ...] = ("image", "compact")

#: The most cells the image observation may have: 2^24 float32 cells are 64 MB per
#: observation. The reference's image has 20 x 124 = 2,480; ``--num-nw 100000000`` asked
#: for 20 x 2e9 and ended in a MemoryError, so a size that cannot fit is refused up front.
MAX_IMAGE_CELLS = 2**24


@dataclass(frozen=True)
class DeepRMConfig(MappingConfig):
    """DeepRM's parameters; defaults are the reference's ``parameters.py``.

    ``simu_len`` (50, the reference README's value) is the length of a generated job
    sequence: a job may arrive at each time step ``1..simu_len-1``. ``max_episode_steps``
    (200, the reference's ``episode_max_length``) truncates an episode after that many
    ``step`` calls; ``None`` never truncates.
    """

    label = "DeepRM"

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
            int_at_least(name, getattr(self, name), 1)
        int_at_least("time_horizon", self.time_horizon, 2)
        int_at_least("backlog_size", self.backlog_size, 0)
        int_at_least("job_num_cap", self.job_num_cap, 2)
        int_at_least("max_job_len", self.max_job_len, 1)
        if self.max_job_len > self.time_horizon - 1:
            raise ValueError(
                f"max_job_len must be <= time_horizon - 1 = {self.time_horizon - 1} (the "
                f"reference never books the last image row), got {self.max_job_len}"
            )
        int_at_least("max_job_size", self.max_job_size, 1)
        if self.max_job_size > self.res_slot:
            raise ValueError(
                f"max_job_size must be <= res_slot = {self.res_slot} (a larger job never "
                f"fits), got {self.max_job_size}"
            )
        probability("new_job_rate", self.new_job_rate)
        probability("job_small_chance", self.job_small_chance)
        one_of("end", self.end, END_MODES)
        one_of("observation", self.observation, OBSERVATIONS)
        if self.max_episode_steps is not None:
            int_at_least("max_episode_steps", self.max_episode_steps, 1)
        rows, columns = self.image_shape
        if rows * columns > MAX_IMAGE_CELLS:
            raise ValueError(
                f"DeepRM's image would have {rows:,} x {columns:,} cells (time_horizon x "
                "num_res * (res_slot + num_nw * max_job_size) + backlog columns + 1), more "
                f"than fit in memory (at most {MAX_IMAGE_CELLS:,}); lower num_nw, res_slot, "
                "max_job_size or time_horizon"
            )

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
