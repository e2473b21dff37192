"""Tetris as 001 compares with it: multi-resource bin packing, one server filled at a time.

001 §VI-A: Tetris "uses multi-resource bin-packing to place workers/PSs, which follows the
locality principle and avoids resource fragment. Jobs are maximally packed onto servers
to avoid potential cross-machine communication"; §I: workloads "consolidated on the least
number of machines". Tetris (Grandl et al., SIGCOMM'14) fills a machine that has room
with the task whose demand vector best *aligns* with the machine's free resources (the
dot product, each resource normalized by the machine's capacity).

Here a job's tasks fill one server at a time, as Tetris fills a machine: among the
servers that can hold every remaining task whole (GPUs from one group per task, cores
from that group's socket), the one whose free (GPUs, cores) best align with the remaining
demand; when none can, the best-aligned server that takes some, filled as far as it goes,
and so on -- the fewest servers, as 001 says. Inside a server tasks go to a group already
holding the job, else the tightest-fitting group. Ties go to the lower server index.

It differs from 002's ``packing`` in which server takes the job: packing picks the server
with the *fewest* free GPUs that holds it (best fit), Tetris the best aligned, which
weighs cores as well as GPUs and prefers a server with more of both free. (An earlier
version scored each task's group by alignment alone, task by task; on one resource the
highest ``demand . free`` is the emptiest group, so it spread every multi-task job --
a worst fit, 4.3 servers per job on a fat-tree k=4 workload where packing used 1.35 --
the opposite of the consolidation 001 describes.)
"""

from __future__ import annotations

import numpy as np

from envs.schedulers.base import Placement
from envs.schedulers.tasks import JobTasks
from envs.schedulers.tentative import ServerRoom, Tentative, fill_server_by_server
from envs.schedulers.view import ClusterView
from envs.sim import Simulator


def alignment(
    attempt: Tentative, room: ServerRoom, gpu_capacity: np.ndarray, core_capacity: np.ndarray
) -> np.ndarray:
    """Per server: Tetris' alignment of the unplaced tasks' total demand with the server's
    free resources, each resource normalized by the server's capacity."""
    todo = attempt.unplaced
    gpus = float(attempt.tasks.gpus[todo].sum())
    cores = float(attempt.tasks.cpus[todo].sum())
    return (gpus / gpu_capacity) * (room.free_gpus / gpu_capacity) + (cores / core_capacity) * (
        room.free_cores / core_capacity
    )


class Tetris(Placement):
    """001's Tetris: servers filled one at a time, the best aligned first (module doc)."""

    name = "tetris"

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        room = ServerRoom.for_job(view, tasks)
        if room is None:
            return None
        attempt = room.attempt
        cluster = attempt.cluster
        gpu_capacity, core_capacity = cluster.server_gpus, cluster.server_cores

        def best_aligned() -> np.ndarray:
            return -alignment(attempt, room, gpu_capacity, core_capacity)

        return fill_server_by_server(room, best_aligned, best_aligned)
