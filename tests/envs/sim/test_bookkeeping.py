"""The simulator's incremental bookkeeping equals a recount from scratch.

The simulator keeps its job lists, free resources and timeline samples up to date
piece by piece (one-task fast paths, lists that follow each change, cached server
layouts). Under a random policy that also preempts, every decision is checked against
quantities recounted from the job statuses and placements, and the whole timeline
against a :class:`PlainSampling` simulator that samples the plain way.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.sim.running import TaskRows
from envs.sim.speed import InterferenceRows
from envs.topology import Cluster, build_cluster
from envs.workload import make_workload


def plain_fragmentation(cluster: Cluster, gpu_remaining: np.ndarray) -> float:
    """002's eq. 1 averaged over servers, everything recomputed (the timeline's metric)."""
    if not gpu_remaining.any():
        return 0.0
    first_gpu = cluster.group_gpu_offsets[cluster.server_group_offsets[:-1]]
    total = np.add.reduceat(gpu_remaining, first_gpu)
    squares = np.add.reduceat(gpu_remaining**2, first_gpu)
    counts = np.diff(np.append(first_gpu, cluster.num_gpus))
    busy = squares > 0
    frag = np.zeros(len(total))
    frag[busy] = 1.0 - total[busy] ** 2 / (counts[busy] * squares[busy])
    return float(frag.mean())


class PlainSampling(Simulator):
    """Timeline samples from a full recount: every job's status, every GPU; every job's
    task and interference rows built the general way (no one-worker shortcut)."""

    def _task_rows(self, job: int, record) -> TaskRows:
        return self._stacked_task_rows(job, record)

    def _interference_rows(self, job: int, record) -> InterferenceRows:
        return self._general_interference_rows(job, record)

    def _record(self) -> None:
        self._refresh()
        running = np.flatnonzero(self.status == JobStatus.RUNNING)
        busy = self.gpu_job >= 0
        gpu_remaining = np.zeros(self.cluster.num_gpus)
        if busy.any():
            gpu_remaining[busy] = np.minimum(self.remaining_time(self.gpu_job[busy]), 1e12)
        self.timeline.record(
            self.now,
            (
                int(self.running_gpus.sum()),
                int((self.status == JobStatus.WAITING).sum()),
                len(running),
                plain_fragmentation(self.cluster, gpu_remaining),
                float(self.contention[running].mean()) if len(running) else 1.0,
            ),
        )


class RandomPolicy:
    """Each waiting job, in random order, onto random groups with room; now and then a
    running job is preempted first. Checks the bookkeeping at every decision."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.preempted: list[int] = []  # at the last decision
        self.releases_seen = 0
        self.finished: np.ndarray | None = None

    def schedule(self, sim: Simulator) -> None:
        self.check_releases(sim)
        check_bookkeeping(sim)
        running = sim.running_jobs()
        self.preempted = []
        if len(running) and self.rng.random() < 0.3:
            victim = int(self.rng.choice(running))
            sim.preempt(victim)
            self.preempted.append(victim)
        for job in self.rng.permutation(sim.waiting_jobs()).tolist():
            groups = self.random_groups(sim, job)
            if groups is not None:
                sim.place(job, groups)
        check_bookkeeping(sim)

    def check_releases(self, sim: Simulator) -> None:
        """The simulator's stops since the last decision: the preemption made there, then
        the jobs that finished since (their order among themselves is by time)."""
        finished = sim.status == JobStatus.FINISHED
        before = np.zeros_like(finished) if self.finished is None else self.finished
        released = sim.released_since(self.releases_seen)
        count = len(self.preempted)
        assert released[:count].tolist() == self.preempted
        np.testing.assert_array_equal(np.sort(released[count:]), np.flatnonzero(finished & ~before))
        assert sim.releases == self.releases_seen + len(released)
        self.finished, self.releases_seen = finished, sim.releases

    def random_groups(self, sim: Simulator, job: int) -> list[int] | None:
        gpus, cpus = sim.task_demands(job)
        free_gpus, free_cores = sim.free_gpus.copy(), sim.free_cores.copy()
        socket = sim.cluster.group_socket
        groups = []
        for need_gpus, need_cpus in zip(gpus, cpus, strict=True):
            room = np.flatnonzero((free_gpus >= need_gpus) & (free_cores[socket] >= need_cpus))
            if not len(room):
                return None
            group = int(self.rng.choice(room))
            groups.append(group)
            free_gpus[group] -= need_gpus
            free_cores[socket[group]] -= need_cpus
        return groups


def check_bookkeeping(sim: Simulator) -> None:
    """Job lists, free GPUs and cores, and GPU owners against a recount."""
    cluster = sim.cluster
    running = np.flatnonzero(sim.status == JobStatus.RUNNING)
    np.testing.assert_array_equal(sim.running_jobs(), running)
    np.testing.assert_array_equal(
        sim.waiting_jobs(), np.flatnonzero(sim.status == JobStatus.WAITING)
    )
    used_gpus = np.zeros(cluster.num_gpu_groups, dtype=np.int64)
    used_cores = np.zeros(cluster.num_sockets)
    owner = np.full(cluster.num_gpus, -1)
    for job in running.tolist():
        groups, gpus = sim.job_placement(job)
        task_gpus, task_cpus = sim.task_demands(job, int(sim.running_workers[job]))
        np.add.at(used_gpus, groups, task_gpus)
        np.add.at(used_cores, cluster.group_socket[groups], task_cpus)
        owner[gpus] = job
        assert sim.running_gpus[job] == task_gpus.sum()
    np.testing.assert_array_equal(sim.free_gpus, cluster.group_gpus - used_gpus)
    np.testing.assert_allclose(sim.free_cores, cluster.socket_cores - used_cores, atol=1e-9)
    np.testing.assert_array_equal(sim.gpu_job, owner)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    topology=st.sampled_from(
        [
            ("fat-tree", {"k": 4}),
            ("flat", {"servers": 4, "server": "dgx1"}),
            ("bcube", {"n": 3, "k": 1}),
        ]
    ),
)
def test_incremental_state_equals_a_recount(seed, topology):
    name, params = topology
    cluster = build_cluster(name, **params)
    workload = make_workload(
        "poisson", num_jobs=30, rng=np.random.default_rng(seed), rate=8.0, interval_s=900.0
    )
    config = SimulatorConfig(restart_cost_s=30.0)
    simulators = [Simulator(cluster, workload, config), PlainSampling(cluster, workload, config)]
    for sim in simulators:
        sim.run(RandomPolicy(seed))
        assert (sim.status == JobStatus.FINISHED).all()
        assert np.array_equal(sim.work_done, sim.work_total)
        check_bookkeeping(sim)
    fast, plain = (sim.timeline.arrays() for sim in simulators)
    assert fast.keys() == plain.keys()
    for field in plain:
        if np.issubdtype(plain[field].dtype, np.floating):
            # Times and means reached by different sums (the one-worker shortcut, the
            # recount's own fragmentation): equal up to float rounding, not to the bit.
            np.testing.assert_allclose(fast[field], plain[field], rtol=1e-12, err_msg=field)
        else:
            np.testing.assert_array_equal(fast[field], plain[field], err_msg=field)
    np.testing.assert_allclose(simulators[0].finish_time, simulators[1].finish_time, rtol=1e-12)
