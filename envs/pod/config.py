"""The configuration of the per-pod multi-agent environment (``pod_scheduling_v0``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from envs.pod.credit import CREDIT_RULES
from envs.schedulers import split_scheduler_name
from envs.sim.interference import InterferenceCoefficients, interference_coefficients
from envs.sim.perf import DEFAULT_PERF, PerfSwitches, perf_switches

REWARD_KINDS = ("progress", "jct", "contention")
GRAPH_LEVELS = ("device", "server")
OTHER_PARTITION_VIEWS = ("summary", "full")
HOME_RULES = ("uniform", "partition")
QUEUE_ORDERS = ("arrival", "ideal-time")
#: 000's reward-weight branches A-E: W1 (``contention_weight``) = 0.3 ... 0.7, W2 = 1 - W1.
CONTENTION_WEIGHT_BRANCHES = (0.3, 0.4, 0.5, 0.6, 0.7)


def _finite_number(value: object) -> bool:
    """Whether ``value`` is a finite int or float (not a bool, NaN or infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class PodSchedulingConfig:
    """Everything that defines one ``pod_scheduling_v0`` environment.

    Cluster: ``topology`` and ``topology_params`` (e.g. ``{"k": 4}``) with ``server``.
    Jobs: ``workload`` generator with ``workload_params`` and ``num_jobs`` per episode (a
    generator's rate is per ``interval_s`` unless ``workload_params`` sets its own
    ``interval_s``; ``num_schedulers`` defaults to the partitions), or ``trace`` (a file;
    ``trace_format``, ``trace_params`` as for ``simulate.py run``, ``num_jobs`` keeping the
    first jobs). ``interval_s``: the scheduling interval (001:
    30 minutes). ``max_jobs``: N, the concurrent jobs each scheduler sees. ``forward_limit``:
    forwards per task. ``level``: action targets are GPU groups ("device") or servers.
    ``reward``: "progress" (001), "jct" (minus jobs in the system per interval) or
    "contention" (000: -W1 * CS + W2 * utilization, ``contention_weight`` = W1).
    ``credit``: where the ``jct`` reward's costs land -- "round" (paid at the step that
    ends a round) or "job" (also re-attributed to the steps that decided each job, handed
    over at the episode's end: :mod:`envs.pod.credit`; needs ``reward="jct"``).
    ``illegal_action_penalty``: reward lost for a masked-out action (which does nothing).
    ``horizon_intervals``: truncation. ``others``: what an agent sees of the other
    partitions ("summary" per partition, or "full" inner-graph features). ``home``: jobs
    arrive at a uniformly random scheduler or at the workload's partition.
    ``room_features``: add, for the job being placed, each target's server room and each
    forward target's best room (:mod:`envs.pod.room`) to 001's observation.
    ``release_features``: add each target's GPUs (and its server's) that running jobs are
    expected to release within one interval (:mod:`envs.pod.release`): whether room frees
    up by the next round, which the queue-first job slots do not show on a busy cluster.
    ``queue_order``: the order in which each scheduler takes the jobs of its queue at the
    start of a round -- "arrival" (001) or "ideal-time" (shortest ideal run time first,
    002's SIF rule; ties by arrival). ``job_times``: add how long each job runs (its
    remaining ideal time) to the job demands and the task, and how many rounds the job
    being placed was already sent back to wait -- what ordering and delaying by length
    (SJF, 002's DSIF) read. ``advice``: a heuristic ``ordering+placement`` whose plan for
    the round each agent also sees, as a one-hot of the action it advises
    (:mod:`envs.pod.advice`); None (default) for 001's observation.
    ``perf``: the performance model, "contention" or "ideal" (:mod:`envs.sim.perf`);
    ``interference`` / ``communication`` switch either part of the contention model off.
    Unset (None), they follow ``perf`` (default "contention": both on); set, they must
    agree with ``perf`` when it is given. :attr:`speed_switches` is what the simulator gets.
    ``interference_coefficients``: the interference model's coefficients -- "default"
    (chosen values, every README table), "paper001-fit" (scaled to 001's Fig. 1(a) 30%
    mean slowdown) or a mapping of a1, a2, a3, l1, b1, b2, l2 (:mod:`envs.sim.interference`);
    :attr:`coefficients` is what the simulator gets.
    """

    topology: str = "fat-tree"
    topology_params: dict[str, Any] = field(default_factory=lambda: {"k": 4})
    server: str = "power8"
    workload: str = "poisson"
    workload_params: dict[str, Any] = field(default_factory=dict)
    num_jobs: int = 40
    trace: str | None = None
    trace_format: str = "philly"
    trace_params: dict[str, Any] = field(default_factory=dict)
    interval_s: float = 1800.0
    max_jobs: int = 8
    forward_limit: int = 2
    level: str = "device"
    fuse_top_switches: bool = True
    reward: str = "progress"
    credit: str = "round"
    contention_weight: float = 0.5
    illegal_action_penalty: float = 0.05
    horizon_intervals: int = 400
    others: str = "summary"
    home: str = "uniform"
    perf: str | None = None
    interference: bool | None = None
    communication: bool | None = None
    room_features: bool = False
    release_features: bool = False
    queue_order: str = "arrival"
    job_times: bool = False
    advice: str | None = None
    interference_coefficients: str | dict[str, float] = "default"

    def __post_init__(self) -> None:
        choices = {
            "reward": (self.reward, REWARD_KINDS),
            "level": (self.level, GRAPH_LEVELS),
            "others": (self.others, OTHER_PARTITION_VIEWS),
            "home": (self.home, HOME_RULES),
            "queue_order": (self.queue_order, QUEUE_ORDERS),
            "credit": (self.credit, CREDIT_RULES),
        }
        for name, (value, allowed) in choices.items():
            if value not in allowed:
                raise ValueError(f"{name}={value!r}; allowed: {', '.join(allowed)}")
        positive_ints = {
            "num_jobs": self.num_jobs,
            "max_jobs": self.max_jobs,
            "horizon_intervals": self.horizon_intervals,
        }
        for name, value in positive_ints.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if isinstance(self.forward_limit, bool) or not isinstance(self.forward_limit, int):
            raise ValueError(f"forward_limit must be an integer >= 0, got {self.forward_limit!r}")
        if self.forward_limit < 0:
            raise ValueError(f"forward_limit must be an integer >= 0, got {self.forward_limit}")
        if not _finite_number(self.interval_s) or self.interval_s <= 0:
            raise ValueError(
                f"interval_s must be a positive number of seconds, got {self.interval_s!r}"
            )
        for name in ("room_features", "release_features", "job_times"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.advice is not None:
            check_advice(self.advice)
        if self.credit == "job" and self.reward != "jct":
            raise ValueError(
                f"credit='job' re-attributes the jct reward's time in the system; it needs "
                f"reward='jct', got reward={self.reward!r} (use credit='round' with it)"
            )
        self._check_perf()
        interference_coefficients(self.interference_coefficients)  # ValueError naming presets
        if not _finite_number(self.contention_weight) or not 0 <= self.contention_weight <= 1:
            raise ValueError(
                "contention_weight (W1) must be a number in [0, 1] (W2 = 1 - W1), "
                f"got {self.contention_weight!r}"
            )
        # Finite: an infinite penalty times the legal agents' 0 makes every reward NaN.
        penalty = self.illegal_action_penalty
        if not _finite_number(penalty) or penalty < 0:
            raise ValueError(
                f"illegal_action_penalty must be a finite number >= 0, got {penalty!r}"
            )

    def _check_perf(self) -> None:
        """``perf`` is a known model; the explicit switches are booleans agreeing with it."""
        if self.perf is not None:
            perf_switches(self.perf)  # ValueError naming the allowed models
        for name in ("interference", "communication"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{name} must be true, false or unset, got {value!r}")
            if self.perf is None or value is None:
                continue
            implied = getattr(perf_switches(self.perf), name)
            if value != implied:
                raise ValueError(
                    f"perf={self.perf!r} sets {name}={implied} but {name}={value} was given; "
                    f"drop one of the two"
                )

    @property
    def coefficients(self) -> InterferenceCoefficients:
        """The interference coefficients the simulator charges (and LIF predicts with)."""
        return interference_coefficients(self.interference_coefficients)

    @property
    def speed_switches(self) -> PerfSwitches:
        """The simulator's interference and communication switches this config selects."""
        implied = perf_switches(self.perf or DEFAULT_PERF)
        return PerfSwitches(
            interference=implied.interference if self.interference is None else self.interference,
            communication=implied.communication
            if self.communication is None
            else self.communication,
        )


def check_advice(name: Any) -> None:
    """Raise ValueError unless ``name`` is a heuristic the pod driver can run."""
    if not isinstance(name, str):
        raise ValueError(
            f"advice must be a heuristic name like 'dsif+locality' or unset, got {name!r}"
        )
    try:
        split_scheduler_name(name)
    except ValueError as error:
        raise ValueError(f"advice={name!r}: {error}") from None
