"""The scheduler's shortcuts change nothing: runs equal those of a plain reference walk.

:class:`~envs.schedulers.Scheduler` filters the queue with a vectorized test per demand
shape, ranks only the jobs that pass, ranks static orderings once per simulation, and
memoizes placements per job key. :class:`ReferenceScheduler` does what the scheduler's
module docstring promises, plainly: rank every waiting job with ``Ordering.order``, ask
the placement for each in turn, skip alike jobs after a failure, hold DSIF's jobs, re-rank
DRF's queue after each placement, and skip the jobs that did not fit while nothing was
freed. Both must give bit-identical simulations.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import (
    ClusterView,
    PreemptionSettings,
    Scheduler,
    make_scheduler,
    scheduler_names,
)
from envs.schedulers.domains import locality_levels
from envs.schedulers.locality import best_level
from envs.schedulers.scheduler import placement_key_columns
from envs.schedulers.tasks import CORE_TOLERANCE
from envs.sim import JobStatus, SimulationResult, Simulator, SimulatorConfig
from envs.topology import build_cluster
from envs.workload import make_workload

CLUSTER = build_cluster("fat-tree", k=4)  # 16 Power8 servers, 64 GPUs
NO_PREEMPTION = PreemptionSettings(enabled=False)


class ReferenceScheduler:
    """The walk of :class:`Scheduler` without any shortcut (see the module docstring)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.ordering, self.placement = scheduler.ordering, scheduler.placement
        self.backfill = scheduler.backfill
        self.delays: dict[int, int] = {}
        self.settled: set[int] = set()
        self.last_free: tuple[np.ndarray, np.ndarray] | None = None

    def schedule(self, sim: Simulator) -> None:
        view = ClusterView(sim)  # no job keys: every placement is asked
        waiting = sim.waiting_jobs().tolist()
        if not self.backfill:
            for job in self.ordering.order(sim, np.array(waiting, dtype=np.int64), view).tolist():
                groups = self.placement.place(sim, job, view)
                if groups is None or (len(sim.running_jobs()) and self.hold(sim, job, groups)):
                    return
                self.start(sim, view, job, groups)
            return
        if self.last_free is not None and self.only_shrank(sim):
            waiting = [job for job in waiting if job not in self.settled]
        else:
            self.settled = set()
        if waiting:
            queue = self.ordering.order(sim, np.array(waiting, dtype=np.int64), view).tolist()
            held = self.walk(sim, view, queue, allow_delays=self.ordering.max_delays > 0)
            if held and not len(sim.running_jobs()):
                self.walk(sim, view, held, allow_delays=False)
            self.settled |= {job for job in waiting if sim.status[job] == JobStatus.WAITING}
            self.settled -= set(self.delays)
        self.last_free = (sim.free_gpus.copy(), sim.free_cores.copy())

    def only_shrank(self, sim: Simulator) -> bool:
        assert self.last_free is not None
        gpus, cores = self.last_free
        return bool(
            (sim.free_gpus <= gpus).all() and (sim.free_cores <= cores + CORE_TOLERANCE).all()
        )

    def walk(self, sim: Simulator, view: ClusterView, queue: list, allow_delays: bool) -> list:
        held, failed = [], set()
        position = 0
        while position < len(queue):
            job = queue[position]
            position += 1
            if self.key(sim, job) in failed:
                continue
            groups = self.placement.place(sim, job, view)
            if groups is None:
                if self.placement.memoizable:
                    failed.add(self.key(sim, job))
                continue
            if allow_delays and self.hold(sim, job, groups):
                held.append(job)
                continue
            self.start(sim, view, job, groups)
            if self.ordering.is_dynamic(sim):
                rest = np.array(queue[position:], dtype=np.int64)
                queue = queue[:position] + self.ordering.order(sim, rest, view).tolist()
        return held

    def hold(self, sim: Simulator, job: int, groups: np.ndarray) -> bool:
        limit = self.ordering.max_delays
        if limit <= 0 or self.delays.get(job, 0) >= limit:
            return False
        span = locality_levels(sim.cluster).span_level(sim.cluster.group_server[groups])
        if span <= best_level(sim, job):
            return False
        self.delays[job] = self.delays.get(job, 0) + 1
        return True

    def start(self, sim: Simulator, view: ClusterView, job: int, groups: np.ndarray) -> None:
        sim.place(job, groups)
        view.claim(job, groups)
        self.delays.pop(job, None)

    def key(self, sim: Simulator, job: int) -> tuple:
        columns = placement_key_columns(sim, self.placement)
        return tuple(float(column[job]) for column in columns)


def workloads() -> dict:
    """Parameter-server jobs with users, spread over time; a burst of AllReduce jobs up to
    32 GPUs; and a long queue of mostly one-GPU jobs arriving faster than they finish."""
    rng = np.random.default_rng(21)
    spread = make_workload("uniform", num_jobs=24, rng=rng)
    spread = spread.replace(user=rng.integers(0, 3, len(spread)), user_names=("a", "b", "c"))
    burst = make_workload("deepshare", num_jobs=24, rng=rng, gpu_choices=(1, 2, 4, 8, 16, 32))
    queue = make_workload(
        "poisson", num_jobs=80, rng=rng, rate=60.0, interval_s=900.0, catalog="deepshare"
    )
    return {"spread": spread, "burst": burst, "queue": queue}


WORKLOADS = workloads()
# Every ordering the registry knows (test_registry pins the list).
ORDERINGS = scheduler_names().orderings


def assert_same_runs(name: str, workload, config=None, backfill: bool = True) -> None:
    results = []
    for reference in (False, True):
        scheduler = make_scheduler(name, rng=3, backfill=backfill, preemption=NO_PREEMPTION)
        policy = ReferenceScheduler(scheduler) if reference else scheduler
        sim = Simulator(CLUSTER, workload, config)
        sim.run(policy)
        results.append(SimulationResult.from_simulator(sim, name))
    fast, plain = results
    for field, values in plain.jobs.items():
        np.testing.assert_array_equal(fast.jobs[field], values, err_msg=field)
    for field, values in plain.timeline.items():
        np.testing.assert_array_equal(fast.timeline[field], values, err_msg=field)


@pytest.mark.parametrize("workload_name", list(WORKLOADS))
@pytest.mark.parametrize("ordering", ORDERINGS)
def test_every_ordering_walks_as_the_reference(ordering, workload_name):
    for placement in ("packing", "tetris", "random"):
        assert_same_runs(f"{ordering}+{placement}", WORKLOADS[workload_name])


@pytest.mark.parametrize(
    "placement", ["load-balancing", "lif", "depth-first", "breadth-first", "locality"]
)
def test_every_placement_walks_as_the_reference(placement):
    for ordering in ("fifo", "sjf", "dsif", "drf"):
        for workload in WORKLOADS.values():
            assert_same_runs(f"{ordering}+{placement}", workload)


@pytest.mark.parametrize("name", ["fifo+packing", "sjf+tetris", "dsif+locality", "drf+lif"])
def test_strict_order_and_intervals_walk_as_the_reference(name):
    for workload in WORKLOADS.values():
        assert_same_runs(name, workload, backfill=False)
        assert_same_runs(name, workload, SimulatorConfig(interval_s=900.0))
