"""SCED2's parameters (paper 002): the cluster, the job window, the profiles, the traces.

One frozen dataclass, :class:`Sced2Config`, loaded from YAML with ``Sced2Config(**data)``
or :meth:`Sced2Config.from_dict` (unknown keys fail); every bad value raises
``ValueError`` saying what is allowed. Derived sizes (the observation layout) are
properties. :mod:`envs.sced2` documents the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envs.validation import MappingConfig, int_at_least, one_of, positive_number

#: The workload kinds of :func:`envs.workload.make_workload` that draw 002's traces:
#: 68% 1-GPU jobs (the realistic trace), and the 60% / 75% variants of 002 Fig. 7.
SCED2_WORKLOADS: tuple[str, ...] = ("sced2", "sced2-60", "sced2-75")

#: Number of values of one waiting job in the observation besides its k profiles:
#: resource amount (GPUs) and waiting time (002 Table I).
JOB_EXTRA_FEATURES: int = 2

#: Number of statistics (002 Table I): remaining job num, avg. resource amount,
#: avg. execution time, avg. waiting time.
NUM_STATISTICS: int = 4


@dataclass(frozen=True)
class Sced2Config(MappingConfig):
    """SCED2's settings. Defaults: 002 §III-§IV (15 x 8 GPUs, J = 10, k = 4, 1000 jobs).

    **Cluster.** ``servers`` N (15) of ``gpus_per_server`` M (8) GPUs each, a flat pool
    (:func:`envs.topology.build_cluster` ``"flat"``: one switch, 10 Gbps server ports,
    two 4-GPU groups per server behind 128 Gbps PCIe).

    **View.** ``window`` J (10): the agent picks among the first J waiting jobs (arrival
    order); ``profiles`` k (4): placements from concentrated to scattered under which each
    job is profiled (:mod:`envs.sced2.speed`); ``time_unit_s`` (3600): every time in the
    observation (remaining times, profiled execution times, waiting times) is divided by
    it, so the numbers are hours by default.

    **Traces.** ``workload``: one of :data:`SCED2_WORKLOADS` (``"sced2"``: 68% 1-GPU jobs;
    ``"sced2-60"``, ``"sced2-75"``); ``num_jobs`` per episode (1000, 002 §IV-A);
    ``interval_scale`` multiplies every inter-arrival gap (002 Fig. 8: < 1 = heavier load);
    ``workload_options``: further options of the generator
    (:func:`envs.workload.sced2_workload`, e.g. ``{"median_duration_s": 1200}``).

    **Episode.** ``skip_forced_holds`` (True): when no visible job fits, holding is the
    only legal action, so the environment takes it itself and the agent is asked only
    when it has a choice. ``max_steps``: truncate after this many steps (default None:
    :attr:`step_limit`, 20 steps per job).
    """

    label = "SCED2"

    servers: int = 15
    gpus_per_server: int = 8
    window: int = 10
    profiles: int = 4
    time_unit_s: float = 3600.0
    workload: str = "sced2"
    num_jobs: int = 1000
    interval_scale: float = 1.0
    workload_options: Mapping[str, Any] = field(default_factory=dict)
    skip_forced_holds: bool = True
    max_steps: int | None = None

    def __post_init__(self) -> None:
        int_at_least("servers", self.servers, 1)
        int_at_least("gpus_per_server", self.gpus_per_server, 1)
        int_at_least("window", self.window, 1)
        int_at_least("profiles", self.profiles, 1)
        int_at_least("num_jobs", self.num_jobs, 1)
        positive_number("time_unit_s", self.time_unit_s)
        positive_number("interval_scale", self.interval_scale)
        one_of("workload", self.workload, SCED2_WORKLOADS)
        if not isinstance(self.workload_options, Mapping):
            raise ValueError(
                "workload_options must be a mapping of sced2_workload options, got "
                f"{type(self.workload_options).__name__}"
            )
        if not isinstance(self.skip_forced_holds, bool):
            raise ValueError(
                f"skip_forced_holds must be true or false, got {self.skip_forced_holds!r}"
            )
        if self.max_steps is not None:
            int_at_least("max_steps", self.max_steps, 1)

    @property
    def total_gpus(self) -> int:
        """N x M."""
        return self.servers * self.gpus_per_server

    @property
    def job_features(self) -> int:
        """Values per visible job: k profiles, GPU demand, waiting time (k + 2)."""
        return self.profiles + JOB_EXTRA_FEATURES

    @property
    def observation_size(self) -> int:
        """002 Table I: NM + (k + 2) J + 4."""
        return self.total_gpus + self.job_features * self.window + NUM_STATISTICS

    @property
    def num_actions(self) -> int:
        """J + 1: the J visible jobs, then hold."""
        return self.window + 1

    @property
    def hold_action(self) -> int:
        """The index of 002's phi ("do not schedule any job"): J, the last action."""
        return self.window

    @property
    def step_limit(self) -> int:
        """Steps before truncation: ``max_steps``, or 20 per job plus 100."""
        return self.max_steps if self.max_steps is not None else 20 * self.num_jobs + 100
