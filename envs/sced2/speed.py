"""002's profile-driven speed model: a job runs at the speed profiled for its placement.

002 evaluates SCED2 on "a profile-driven simulator": a job's mini-batch time is measured
once under its assigned locality and fixed for the job's whole run (every job holds its
GPUs exclusively; §III-A). Here the "measurement" is podsched's own speed model applied to
the job alone on its placement (:mod:`envs.sim.speed`):

    step(placement) = compute_time + communication alone
    communication alone = the slowest exchanging pair's gigabits over its bottleneck link
                          at full capacity (no other job on it); a pair inside one GPU
                          group talks at that group's PCIe bandwidth

On the flat 15 x 8 cluster a pair inside a server moves at 128 Gbps (PCIe; the QPI hop is
faster) and a pair across servers at the 10 Gbps server port, so a job that spans servers
pays its ring's cross-server hop; the sced2 catalog's compute times are calibrated so that
the 4-GPU slowdowns of spreading over two servers are 002 §II-A's measured ones: VGG16
5.9x, Transformer 2.7x, DeepSpeech 1.6x, Inception3 1.4x
(tests/envs/sced2/test_sced2_sensitivity.py).

:class:`ProfiledSimulator` is the simulator with interference and shared-link contention
switched off and every placement priced this way through its ``speed_factor`` (step /
compute time), so the simulator's remaining times, GPU remaining-time matrix and JCTs are
exactly 002's. Any policy that calls ``place(job, groups)`` -- the heuristic schedulers of
:mod:`envs.schedulers` included -- gets the profiled speed.

**The k profiles** (002 §III-B: "we profile each job under k different placements (from
centrated to scattered)"): for a job of g GPUs, shape s = 0..k-1 puts
``c_s = max(ceil(g / N), min(g, M) // 2^s, 1)`` GPUs on each of ``ceil(g / c_s)`` servers
(the last server takes the remainder), filling each server's GPU groups in order: for
g = 8 on 8-GPU servers 8, 4, 2, 1 GPUs per server on 1, 2, 4, 8 servers -- the same
"j GPUs on each of 2^i nodes" ladder as 000's state. A job's profile is its step time
under each shape; it depends only on (model, g), so it is computed once per pair.

**T_ideal** (002 §III-D: "T_ideal is its ideal execution time (it has been measured by
profiling)"). What profiling measures is a run on a placement, communication included, so
a job's ideal execution time is its time on its best placement: shape 0 (as few servers
as possible, each filled; one GPU group when the job fits in one), the fastest of the
ladder. :class:`ProfiledSimulator` sets the simulator's ``ideal_duration`` to it (the
work in compute-only seconds -- a trace's ``duration`` -- times best step / compute
time), so 002's eq. 2 reward, its execution effectiveness, the SIF, DSIF and SPF keys,
the state's mean ideal execution time and the metrics' slowdown and GPU-time inflation
read it, and a job started at once on its best placement scores E_j = 1. A 1-GPU job
exchanges nothing: its T_ideal is its compute time. (The simulator's own
``ideal_duration``, compute only, is what no profile can measure for a multi-GPU job:
with it a 16-GPU VGG16, which cannot avoid the 10 Gbps hop between two servers, scored
E_j = 0.08 when started at once on its best placement, and a 4-GPU one in one server
0.58.)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from envs.sim import Simulator, SimulatorConfig
from envs.sim.profiling import alone_communication_s, shape_gpus_per_server, shape_groups
from envs.topology import Cluster
from envs.workload import Workload


class ProfiledSimulator(Simulator):
    """:class:`~envs.sim.Simulator` running every job at its profiled speed alone.

    Interference and link sharing are off (002: jobs hold their GPUs exclusively and run
    at their profiled mini-batch time); :meth:`place` sets ``speed_factor`` so that one
    step takes :meth:`step_time` of the placement. See the module docstring.
    """

    def __init__(
        self, cluster: Cluster, workload: Workload, config: SimulatorConfig | None = None
    ) -> None:
        config = replace(config or SimulatorConfig(), interference=False, communication=False)
        super().__init__(cluster, workload, config)
        self._profiles: dict[tuple[int, int, int], np.ndarray] = {}
        # 002's T_ideal: the work at the best placement's profiled step time (module
        # docstring), instead of the simulator's compute-only ideal.
        best = np.array([self.best_step_time(job) for job in range(self.num_jobs)])
        self.ideal_duration = self.work_total / self.num_workers * best

    def step_time(self, job: int, task_groups: np.ndarray) -> float:
        """Seconds of one synchronous step of ``job`` alone on ``task_groups``."""
        groups = np.asarray(task_groups, dtype=np.int64)
        num_ps = int(self.num_ps[job])
        communication = alone_communication_s(
            self.cluster,
            self.collective[job],
            len(groups) - num_ps,
            num_ps,
            float(self.gradient_mb[job]),
            groups,
        )
        return float(self.compute_time[job]) + communication

    def placed_duration(self, job: int, task_groups: np.ndarray) -> float:
        """Seconds ``job`` needs for its remaining work placed on ``task_groups`` (fixed)."""
        workers = len(task_groups) - int(self.num_ps[job])
        left = float(self.work_total[job] - self.work_done[job])
        return left / workers * self.step_time(job, task_groups)

    def place(
        self,
        job: int,
        task_groups: np.ndarray | list[int],
        gpus: np.ndarray | list[int] | None = None,
        speed_factor: float | None = None,
    ) -> None:
        """:meth:`Simulator.place` at the profiled speed of the placement (unless
        ``speed_factor`` is given, e.g. by a resize that keeps the job's speed)."""
        if speed_factor is None:
            groups = np.asarray(task_groups, dtype=np.int64)
            speed_factor = self.step_time(job, groups) / float(self.compute_time[job])
        super().place(job, task_groups, gpus, speed_factor=speed_factor)

    def best_step_time(self, job: int) -> float:
        """Seconds of one step of ``job`` on its best placement: the first profiling shape
        (the most concentrated), cached per (model, GPUs)."""
        return float(self.profile(job, 1)[0])

    def profile(self, job: int, shapes: int) -> np.ndarray:
        """Step times (s) of ``job`` under the ``shapes`` profiling placements (cached)."""
        model = int(self.workload.model[job])
        workers = int(self.num_workers[job])
        key = (model, workers, shapes)
        times = self._profiles.get(key)
        if times is None:
            if self.num_ps[job] or self.worker_gpus[job] != 1:
                raise ValueError(
                    f"job {job}: SCED2 profiles jobs of 1-GPU workers without parameter "
                    "servers (002's data-parallel jobs)"
                )
            cluster = self.cluster
            per_server = shape_gpus_per_server(
                workers, shapes, cluster.num_servers, int(cluster.server_gpus.min())
            )
            times = np.array(
                [self.step_time(job, shape_groups(cluster, workers, c)) for c in per_server]
            )
            self._profiles[key] = times
        return times
