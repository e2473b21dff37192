"""The contention-aware formulation's parameters (paper 000): cluster, traces, reward, mode.

One frozen dataclass, :class:`ContentionConfig`, loaded from YAML with
``ContentionConfig(**data)`` or :meth:`ContentionConfig.from_dict` (unknown keys fail);
every bad value raises ``ValueError`` saying what is allowed. Derived sizes are
properties. :mod:`envs.contention` documents the environment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from envs.sim import LINK_SHARING
from envs.validation import MappingConfig, int_at_least, is_number, one_of, positive_number
from envs.workload import DEEPSHARE_MIXES

#: 000 §VI: the five branches of RL-base and RL-Hybrid, by the weight W1 of the contention
#: term (W2 = 1 - W1): A (0.3, 0.7) ... E (0.7, 0.3).
BRANCHES: dict[str, float] = {"A": 0.3, "B": 0.4, "C": 0.5, "D": 0.6, "E": 0.7}

#: RL-base follows the policy; RL-Hybrid falls back to greedy placement on "do nothing".
MODES: tuple[str, ...] = ("base", "hybrid")

#: How a job is placed by a rule (the Hybrid fallback, the baselines): ``spread`` over as
#: many nodes as its shapes allow, first-fit node indices (000's reference scheduler);
#: ``pack`` on as few nodes as possible, the fullest nodes that fit first.
PLACEMENT_RULES: tuple[str, ...] = ("spread", "pack")

#: The scalar each GPU (left half) and placement slot (right half) of the state holds:
#: ``type`` -- the job's (model, GPU demand) class, 1..models x demands, scaled to (0, 1]
#: (000's reference code numbers the classes the same way); ``bandwidth`` -- the model's
#: average bandwidth consumption (000 Table I) over the largest in the catalog.
PROFILE_ENCODINGS: tuple[str, ...] = ("type", "bandwidth")

#: The contention term of the reward: ``cs`` -- 000 eq. 2's mean contention sensitivity
#: (>= 1); ``degradation`` -- mean throughput loss 1 - 1/CS in [0, 1), as 000's code does.
CONTENTION_TERMS: tuple[str, ...] = ("cs", "degradation")

#: Limit on the node subsets the action space enumerates (it grows combinatorially).
MAX_NODE_SUBSETS: int = 4096


@dataclass(frozen=True)
class ContentionConfig(MappingConfig):
    """The contention-aware formulation's settings. Defaults: 000 §IV-§VI.

    **Cluster.** ``nodes`` (4) of ``gpus_per_node`` (8) GPUs, a flat pool behind one
    switch with ``link_gbps`` (40, 000's InfiniBand; 10 = its Ethernet) per node port.
    ``interference``: add 001's CPU/PCIe interference to the speed model (default off:
    000 is about network contention). ``link_sharing``: ``traffic`` (default) splits a
    port by the co-located jobs' duty cycles, so a busy partner (MoE) hurts more than a
    light one (IMG), as in 000 Fig. 1; ``equal`` splits it by job count (003).

    **Traces** (000 §VI). ``mix``: the model mix of footnote 4 (``normal``, ``heavy``,
    ``medium``, ``low``) or six weights for GNN, IMG, DLRM, LM, FSDP, MoE; ``num_jobs``
    per set (256); ``gpu_choices``: the GPU demands a job draws from, uniformly (1, 2, 4,
    8, 16, 32: "up to 32"); ``job_hours``: every job runs this long alone on its most
    concentrated placement (1.0); ``mean_interarrival_s``: 0 submits the set at once (000
    replays job sets), > 0 draws Poisson arrivals.

    **Decisions.** ``round_s``: scheduling round (300 s, 000's reference code); the agent
    places jobs with time frozen and "do nothing" runs one round. ``candidates`` K: the
    first jobs of the queue with distinct GPU demands (default: one per demand in
    ``gpu_choices``); the actions have one slot per demand whatever K, and the slots of
    demands without a candidate are masked. ``mode``: ``base`` (RL-base) or ``hybrid``
    (RL-Hybrid: on "do nothing" the first candidate in queue order that fits is placed by
    ``fallback_placement``).
    ``preempt_cs``: preempt every job whose CS exceeds this (000 §V-C; None = never; 000's
    code uses 1 / 0.6 = 1.67); ``restart_cost_s``: seconds a resumed job makes no progress.

    **Reward** (000 eq. 2). ``w1``: weight of the contention term, ``W2 = 1 - w1``
    (:data:`BRANCHES`: A 0.3 ... E 0.7; default B, 000's featured branch);
    ``contention_term``: ``cs`` or ``degradation``; ``profile``: the state's encoding
    (:data:`PROFILE_ENCODINGS`).

    **Episode.** ``horizon_s``: truncate at this simulated time (30 days); ``max_steps``:
    truncate after this many steps (default None: :attr:`step_limit`, 100 per job).
    """

    label = "contention"

    nodes: int = 4
    gpus_per_node: int = 8
    link_gbps: float = 40.0
    interference: bool = False
    link_sharing: str = "traffic"
    mix: str | tuple[float, ...] = "normal"
    num_jobs: int = 256
    gpu_choices: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    job_hours: float = 1.0
    mean_interarrival_s: float = 0.0
    round_s: float = 300.0
    candidates: int | None = None
    mode: str = "base"
    fallback_placement: str = "spread"
    preempt_cs: float | None = None
    restart_cost_s: float = 0.0
    w1: float = BRANCHES["B"]
    contention_term: str = "cs"
    profile: str = "type"
    horizon_s: float = 30 * 86_400.0
    max_steps: int | None = None

    def __post_init__(self) -> None:
        # Every number is stored as a plain int or float: numpy scalars (what sweeps hand
        # over) are accepted, but a config holding np.int64 would not serialise to JSON or
        # YAML (MLflow parameters, saved experiment configs).
        self._set("nodes", int_at_least("nodes", self.nodes, 1))
        self._set("gpus_per_node", int_at_least("gpus_per_node", self.gpus_per_node, 1))
        self._set("link_gbps", positive_number("link_gbps", self.link_gbps))
        if not isinstance(self.interference, bool | np.bool_):
            raise ValueError(f"interference must be true or false, got {self.interference!r}")
        self._set("interference", bool(self.interference))
        one_of("link_sharing", self.link_sharing, LINK_SHARING)
        if isinstance(self.mix, str):
            one_of("mix", self.mix, tuple(DEEPSHARE_MIXES))
        else:
            self._set("mix", _weights(self.mix))
        self._set("num_jobs", int_at_least("num_jobs", self.num_jobs, 1))
        self._set("gpu_choices", self._checked_choices())
        self._set("job_hours", positive_number("job_hours", self.job_hours))
        if not (
            is_number(self.mean_interarrival_s)
            and math.isfinite(self.mean_interarrival_s)  # type: ignore[arg-type]
            and self.mean_interarrival_s >= 0
        ):
            raise ValueError(
                "mean_interarrival_s must be a finite number >= 0, got "
                f"{self.mean_interarrival_s!r}"
            )
        self._set("mean_interarrival_s", float(self.mean_interarrival_s))
        self._set("round_s", positive_number("round_s", self.round_s))
        if self.candidates is not None:
            self._set("candidates", int_at_least("candidates", self.candidates, 1))
            if self.candidates > len(self.gpu_choices):
                raise ValueError(
                    f"candidates must be at most the number of distinct GPU demands "
                    f"({len(self.gpu_choices)}): candidates have different demands; got "
                    f"{self.candidates}"
                )
        one_of("mode", self.mode, MODES)
        one_of("fallback_placement", self.fallback_placement, PLACEMENT_RULES)
        if self.preempt_cs is not None:
            if not (is_number(self.preempt_cs) and self.preempt_cs > 1):  # type: ignore[operator]
                raise ValueError(
                    f"preempt_cs must be a number > 1 or None, got {self.preempt_cs!r}"
                )
            self._set("preempt_cs", float(self.preempt_cs))  # type: ignore[arg-type]
        if not (is_number(self.restart_cost_s) and self.restart_cost_s >= 0):
            raise ValueError(f"restart_cost_s must be a number >= 0, got {self.restart_cost_s!r}")
        self._set("restart_cost_s", float(self.restart_cost_s))
        if not (is_number(self.w1) and 0 <= self.w1 <= 1):
            raise ValueError(f"w1 must be a number in [0, 1] (W2 = 1 - w1), got {self.w1!r}")
        self._set("w1", float(self.w1))
        one_of("contention_term", self.contention_term, CONTENTION_TERMS)
        one_of("profile", self.profile, PROFILE_ENCODINGS)
        self._set("horizon_s", positive_number("horizon_s", self.horizon_s))
        if self.max_steps is not None:
            self._set("max_steps", int_at_least("max_steps", self.max_steps, 1))
        if self.num_node_subsets > MAX_NODE_SUBSETS:
            raise ValueError(
                f"{self.nodes} nodes give {self.num_node_subsets} placement options per job "
                f"(node subsets of 1, 2, 4, ... nodes); at most {MAX_NODE_SUBSETS} are "
                "supported -- use fewer nodes"
            )

    def _set(self, name: str, value: object) -> None:
        """Store the checked, plain-Python ``value`` of field ``name`` (the config is frozen)."""
        object.__setattr__(self, name, value)

    def _checked_choices(self) -> tuple[int, ...]:
        choices = self.gpu_choices
        if isinstance(choices, str) or not hasattr(choices, "__iter__"):
            raise ValueError(f"gpu_choices must be a list of GPU counts, got {choices!r}")
        values = tuple(choices)
        if not values or any(
            isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1 for v in values
        ):
            raise ValueError(f"gpu_choices must be integers >= 1, got {choices!r}")
        if len(set(values)) != len(values):
            raise ValueError(f"gpu_choices must not repeat a value, got {choices!r}")
        for gpus in values:
            if not any(
                gpus % (1 << i) == 0 and gpus >> i <= self.gpus_per_node
                for i in range(self.node_levels)
            ):
                raise ValueError(
                    f"a job of {gpus} GPUs has no placement on this cluster: it must be j GPUs "
                    f"on each of 2^i nodes with j <= {self.gpus_per_node} and 2^i <= "
                    f"{self.nodes}; change gpu_choices"
                )
        return tuple(sorted(int(v) for v in values))

    @property
    def w2(self) -> float:
        """Weight of the utilization term, 1 - w1."""
        return 1.0 - self.w1

    @property
    def total_gpus(self) -> int:
        """Nodes x GPUs per node."""
        return self.nodes * self.gpus_per_node

    @property
    def node_levels(self) -> int:
        """How many node counts 2^i fit the cluster (i = 0 .. levels - 1)."""
        return math.floor(math.log2(self.nodes)) + 1

    @property
    def num_node_subsets(self) -> int:
        """Placement options per job: subsets of 2^i of the nodes, every i."""
        return sum(math.comb(self.nodes, 1 << i) for i in range(self.node_levels))

    @property
    def num_candidates(self) -> int:
        """K: ``candidates``, or one per distinct GPU demand."""
        return self.candidates if self.candidates is not None else len(self.gpu_choices)

    @property
    def num_slots(self) -> int:
        """D: action slots, one per GPU demand class (``gpu_choices``, ascending). Slot c
        is the candidate of the c-th demand, so an action means what the state shows."""
        return len(self.gpu_choices)

    @property
    def num_actions(self) -> int:
        """D x (node subsets) + 1: the candidate of a demand class on a node subset, or
        do nothing."""
        return self.num_slots * self.num_node_subsets + 1

    @property
    def nothing_action(self) -> int:
        """The index of "do nothing": the last action."""
        return self.num_actions - 1

    @property
    def state_shape(self) -> tuple[int, int]:
        """000 Fig. 2: <Nodes, 2 x GPUs per node>."""
        return self.nodes, 2 * self.gpus_per_node

    @property
    def step_limit(self) -> int:
        """Steps before truncation: ``max_steps``, or 100 per job."""
        return self.max_steps if self.max_steps is not None else 100 * self.num_jobs


def _weights(values: object) -> tuple[float, ...]:
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise ValueError(
            f"mix must be one of {', '.join(DEEPSHARE_MIXES)} or six weights, got {values!r}"
        )
    given = tuple(values)  # type: ignore[call-overload]
    # float() alone would read True as 1 and "2" as 2: weights are numbers, numpy's included.
    weights = tuple(float(v) for v in given if is_number(v))
    if (
        len(given) != 6
        or len(weights) != 6
        or not all(map(math.isfinite, weights))
        or min(weights) < 0
        or not sum(weights) > 0
    ):
        raise ValueError(
            "mix weights must be six numbers >= 0 (GNN, IMG, DLRM, LM, FSDP, MoE) with a "
            f"positive sum, got {values!r}"
        )
    return weights
