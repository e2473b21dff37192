"""Locality-first placement, and a job's best attainable locality (for 002's DSIF).

**locality**: climb the cluster's locality levels (:mod:`.domains`: server, edge/ToR
switch, pod or partition, ..., the whole cluster) and place the job inside the first
level where some domain can hold all its tasks: its tasks then share the lowest possible
common switch. Among the domains of that level that can, the one with the fewest free
GPUs goes first (like packing, to keep large holes for large jobs), ties to the lower
domain id; inside the domain the tasks are placed by 002's packing rule, which uses as
few servers as it can.

**best level**: the lowest level at which one domain of the *empty* cluster could hold the
job -- the locality it would get with the cluster to itself. DSIF holds a job back while
its placement spans a higher level than that.
"""

from __future__ import annotations

import numpy as np

from envs.schedulers.base import Placement
from envs.schedulers.domains import LocalityLevels, locality_levels
from envs.schedulers.packing import pack
from envs.schedulers.tasks import CORE_TOLERANCE, JobTasks
from envs.schedulers.tentative import ServerRoom, Tentative
from envs.schedulers.view import ClusterView
from envs.sim import Simulator


def domains_that_hold(
    room: ServerRoom, levels: LocalityLevels, level: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(domains, free GPUs)`` at ``level`` that pass the necessary test for all tasks."""
    domain = levels.server_domain[level]
    size = int(domain.max()) + 1
    domain_gpus = np.bincount(domain, weights=room.free_gpus, minlength=size)
    domain_cores = np.bincount(domain, weights=room.free_cores, minlength=size)
    tasks = room.attempt.tasks
    holds = (domain_gpus >= tasks.total_gpus) & (domain_cores >= tasks.total_cpus - CORE_TOLERANCE)
    for kind, capacity in zip(room.kinds, room.capacity, strict=True):
        holds &= np.bincount(domain, weights=capacity, minlength=size) >= kind.count
    candidates = np.flatnonzero(holds)
    return candidates, domain_gpus[candidates]


def best_level(sim: Simulator, job: int) -> int:
    """The lowest locality level at which the empty cluster could hold ``job`` in one domain."""
    levels = locality_levels(sim.cluster)
    room = ServerRoom(Tentative.on_empty(sim.cluster, JobTasks.of(sim, job)))
    for level in range(levels.num_levels):
        if len(domains_that_hold(room, levels, level)[0]):
            return level
    return levels.num_levels - 1


class LocalityFirst(Placement):
    """Inside the lowest-level domain that holds the job (tightest first), by packing."""

    name = "locality"

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        levels = locality_levels(view.cluster)
        room = ServerRoom.for_job(view, tasks)
        if room is None:
            return None
        for level in range(levels.num_levels):
            domains, free_gpus = domains_that_hold(room, levels, level)
            for domain in domains[np.lexsort((domains, free_gpus))].tolist():
                groups = pack(Tentative.on(view, tasks), levels.server_domain[level] == domain)
                if groups is not None:
                    return groups
        return None
