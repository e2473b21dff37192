"""CuSH's parameters (paper 004): the cluster, the view, the job sets, the penalties, rewards.

One frozen dataclass, :class:`CuSHConfig`, loaded from YAML with ``CuSHConfig(**data)`` or
:meth:`CuSHConfig.from_dict` (unknown keys fail); every bad value raises ``ValueError``
saying what is allowed. Defaults are 004 §4's where the paper gives a number and the
choices documented on each field otherwise. :mod:`envs.cush` documents the environment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from envs.validation import MappingConfig, int_at_least, number_in, one_of
from envs.workload.generators import CUSH_JOB_TYPES

#: 004 §4's two cluster configurations -> the podsched server preset of one node.
#: Sierra: 2 CPUs + 4 GPUs per node (podsched's ``power8``: 2 sockets x 2 GPUs);
#: Summit: 2 CPUs + 6 GPUs (``summit``: 2 sockets x 3 GPUs).
CLUSTER_PRESETS: dict[str, str] = {"sierra": "power8", "summit": "summit"}

#: 004 §3.1's workload types, in the order of the one-hot ``job_types`` observation: the
#: numbering of the job sampler's ``kind`` (:func:`envs.workload.generators.cush_jobs`).
JOB_TYPES: tuple[str, ...] = CUSH_JOB_TYPES

#: 004 §3.1's allocation policies, in the order of the action's second component.
ALLOCATION_POLICIES: tuple[str, ...] = ("depth-first", "breadth-first")

#: How the environment's scalar reward is made (see :mod:`envs.cush`).
REWARD_MODES: tuple[str, ...] = ("local", "global_scaled")

#: The most cells the image observation may have: 2^28 float32 cells are 1 GiB, held by
#: the core, copied for every observation and twice more as the observation space's
#: bounds. 004's image has 768 x 5 x 6 = 23,040; the largest cluster allowed (2^20 Summit
#: nodes, 8,388,608 columns) still fits with T = 5, Q = 5. ``--queue-size 100000000`` asked
#: for 768 x 5 x 1e8 (1.4 TiB) and ended in a MemoryError, so a size that cannot fit is
#: refused up front, as DeepRM's (:data:`envs.deeprm.config.MAX_IMAGE_CELLS`).
MAX_IMAGE_CELLS = 2**28

#: The most image rows: the core precomputes (T + 1) x T float32 row patterns (400 MB
#: at this bound), which ``--time-horizon 100000000`` could not hold whatever the image's
#: other sides. 2,000 times 004's T = 5, and 500 times its longest job (20 steps).
MAX_TIME_HORIZON = 10_000


@dataclass(frozen=True)
class CuSHConfig(MappingConfig):
    """CuSH's settings. Defaults: 004 §4 (Sierra, N = 128, T = 5, Q = 5, 20-job sets).

    **Cluster.** ``cluster``: ``"sierra"`` (2 CPUs + 4 GPUs per node, the default) or
    ``"summit"`` (2 CPUs + 6 GPUs); ``nodes``: N (128). A CuSH "CPU" is one CPU socket.

    **View.** ``time_horizon``: T image rows (5); ``queue_size``: Q visible job slots (5).

    **Job sets** (004 §4). ``num_jobs`` per set (20); lengths in steps: a share
    ``short_fraction`` (0.75) of the jobs uniform in ``1..short_max_len`` (10), the rest in
    ``short_max_len+1..max_job_len`` (11..20); arrivals uniform in steps
    ``0..arrival_window-1`` (the first 10t). Chosen (004 gives no numbers): the job type is
    dgemm with probability ``dgemm_fraction`` (0.5) else daxpy; a job's GPU and CPU shares
    of the cluster are drawn independently, uniform in ``(0, max_job_share]`` (0.5), and
    rounded up to whole GPUs and sockets, so 004 Fig. 7's size classes (up to half the
    cluster here) all occur and the queue backs up as in Table 1.

    **Penalties** (004 §3.1, chosen to follow Fig. 2's trends; see :mod:`envs.cush.alloc`).
    A job's service time is ``length x (1 + f)``; for a job of g GPUs with spread s (0 on
    the fewest nodes it could use, 1 on the most): dgemm ``f = dgemm_remote_penalty x s x
    g / penalty_scale_gpus`` (0.5, 512), daxpy ``f = daxpy_shared_penalty x (1 - s) x g /
    penalty_scale_gpus`` (1.0).

    **Time and rewards.** ``step_seconds``: simulator seconds per CuSH time step (1.0).
    ``reward``: ``"local"`` or ``"global_scaled"`` (see :mod:`envs.cush`); ``gamma``: the
    discount of 004 eq. 1 used in episode summaries (0.9, 004 §3.2). ``max_time``: the
    episode is truncated when time reaches this many steps (1000).
    """

    label = "CuSH"

    cluster: str = "sierra"
    nodes: int = 128
    time_horizon: int = 5
    queue_size: int = 5
    num_jobs: int = 20
    max_job_len: int = 20
    short_max_len: int = 10
    short_fraction: float = 0.75
    arrival_window: int = 10
    dgemm_fraction: float = 0.5
    max_job_share: float = 0.5
    dgemm_remote_penalty: float = 0.5
    daxpy_shared_penalty: float = 1.0
    penalty_scale_gpus: int = 512
    step_seconds: float = 1.0
    reward: str = "local"
    gamma: float = 0.9
    max_time: int = 1000

    def __post_init__(self) -> None:
        one_of("cluster", self.cluster, tuple(CLUSTER_PRESETS))
        for name in ("nodes", "time_horizon", "queue_size", "num_jobs", "arrival_window"):
            int_at_least(name, getattr(self, name), 1)
        int_at_least("short_max_len", self.short_max_len, 1)
        int_at_least("max_job_len", self.max_job_len, self.short_max_len)
        for name in ("short_fraction", "dgemm_fraction"):
            number_in(name, getattr(self, name), 0.0, 1.0, open_low=False)
        if self.short_fraction < 1 and self.max_job_len == self.short_max_len:
            raise ValueError(
                f"max_job_len ({self.max_job_len}) must exceed short_max_len "
                f"({self.short_max_len}) when short_fraction < 1: long jobs need lengths"
            )
        number_in("max_job_share", self.max_job_share, 0.0, 1.0, open_low=True)
        for name in ("dgemm_remote_penalty", "daxpy_shared_penalty"):
            number_in(name, getattr(self, name), 0.0, math.inf, open_low=False)
        int_at_least("penalty_scale_gpus", self.penalty_scale_gpus, 1)
        number_in("step_seconds", self.step_seconds, 0.0, math.inf, open_low=True)
        one_of("reward", self.reward, REWARD_MODES)
        number_in("gamma", self.gamma, 0.0, 1.0, open_low=False)
        int_at_least("max_time", self.max_time, self.arrival_window)
        self._check_memory()

    def _check_memory(self) -> None:
        """Refuse a view too large to hold in memory, before the core allocates it."""
        if self.time_horizon > MAX_TIME_HORIZON:
            raise ValueError(
                f"time_horizon must be at most {MAX_TIME_HORIZON:,} (more image rows would "
                f"not fit in memory), got {self.time_horizon:,}"
            )
        width, rows, channels = self.image_shape
        if width * rows * channels > MAX_IMAGE_CELLS:
            raise ValueError(
                f"CuSH's image would have {width:,} x {rows:,} x {channels:,} cells (CPU and "
                "GPU columns of the nodes x time_horizon x queue_size + 1), more than fit in "
                f"memory (at most {MAX_IMAGE_CELLS:,}); lower queue_size, time_horizon or the "
                "number of nodes"
            )

    @property
    def server(self) -> str:
        """The podsched server preset of one node (``power8`` or ``summit``)."""
        return CLUSTER_PRESETS[self.cluster]

    @property
    def cpus_per_node(self) -> int:
        """S^CPU: CPU sockets per node (2 on both presets)."""
        return 2

    @property
    def gpus_per_node(self) -> int:
        """S^GPU: GPUs per node (4 on Sierra, 6 on Summit)."""
        return 4 if self.cluster == "sierra" else 6

    @property
    def total_cpus(self) -> int:
        """N x S^CPU."""
        return self.nodes * self.cpus_per_node

    @property
    def total_gpus(self) -> int:
        """N x S^GPU."""
        return self.nodes * self.gpus_per_node

    @property
    def image_width(self) -> int:
        """sum over R of N x S^r: the CPU columns, then the GPU columns."""
        return self.total_cpus + self.total_gpus

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(sum_R N S^r, T, Q + 1): 004 §3.2's state, channel 0 the cluster."""
        return self.image_width, self.time_horizon, self.queue_size + 1

    @property
    def num_short_jobs(self) -> int:
        """Jobs of a generated set with a length <= short_max_len (75% of 20 = 15)."""
        return round(self.short_fraction * self.num_jobs)
