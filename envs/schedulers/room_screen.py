"""The preemption pass's screen: which candidates may find compact room at all, at once.

Under consolidation a preemption plan for a waiting job first asks whether even all its
victims released leave ``n`` servers holding the job (``n`` the servers it spans alone;
per server its GPUs, cores and capacity for its tasks): that is how most plans end. A
candidate failing that test can do nothing in the pass -- its free room is a subset of
the room with its victims released, and the test only passes with more free resources --
so the pass may skip it without its memory of failed plans, a placement or a plan.

The screen answers that question for many candidates in one vectorized call, for the
usual ones: jobs of alike tasks (no parameter servers) with GPUs and cores, on sockets of
one GPU group each. Candidates come in rank order and a job's victims are the
preemptible jobs ranked after it, so each candidate's released state is a suffix sum of
the victims' tasks bucketed by how many candidates rank before them. The test is the
plans' own (:func:`envs.schedulers.preemption._compact_rooms`) row by row, each row with
its own demand: for a job on one server alone, some server holds its tasks and cores; on
``n`` servers, the ``n`` servers with the most room for each resource (tasks, GPUs,
cores) hold the job's total of it. It takes more core slack than the plan's (the rows
add in another order), so it never rules out a candidate the plan would let through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.schedulers.tasks import CORE_TOLERANCE
from envs.topology import Cluster

SCREEN_SLACK = 1e-5
"""Cores of slack, more than the plans' own probe slack: the screen's sums run in another
order, and it must pass wherever the plan's test passes."""


@dataclass(frozen=True)
class Demands:
    """Per candidate (jobs of alike tasks): GPUs and cores per task, tasks, total cores."""

    task_gpus: np.ndarray
    task_cpus: np.ndarray
    count: np.ndarray
    total_cpus: np.ndarray
    #: The servers each job spans alone (None: one each).
    servers: np.ndarray | None = None


def released_rows(
    cluster: Cluster,
    free_gpus: np.ndarray,
    free_cores: np.ndarray,
    victim_rank: np.ndarray,
    task_victim: np.ndarray,
    task_group: np.ndarray,
    task_gpus: np.ndarray,
    task_cpus: np.ndarray,
    candidate_rank: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(gpus[R, G], cores[R, S])``: the free resources with every victim ranked after
    each candidate released (row r for ``candidate_rank[r]``, ascending).

    ``task_victim[t]``: the position in ``victim_rank`` of the victim holding task row
    ``t`` (GPUs ``task_gpus[t]`` on group ``task_group[t]``, cores ``task_cpus[t]`` on
    its socket).
    """
    rows = len(candidate_rank)
    groups, sockets = cluster.num_gpu_groups, cluster.num_sockets
    # A victim ranked after exactly the first j candidates is released for those j: sum
    # the tasks per j (bincount, not ufunc.at) and add from the last j down.
    after = candidate_rank.searchsorted(victim_rank)[task_victim]
    gpus = np.bincount(
        after * groups + task_group, weights=task_gpus, minlength=(rows + 1) * groups
    ).reshape(rows + 1, groups)
    cores = np.bincount(
        after * sockets + cluster.group_socket[task_group],
        weights=task_cpus,
        minlength=(rows + 1) * sockets,
    ).reshape(rows + 1, sockets)
    released_gpus = gpus[:0:-1].cumsum(axis=0)[::-1]
    released_cores = cores[:0:-1].cumsum(axis=0)[::-1]
    return free_gpus + released_gpus.astype(np.int64), free_cores + released_cores


def may_have_compact_room(
    cluster: Cluster, gpus: np.ndarray, cores: np.ndarray, demands: Demands
) -> np.ndarray:
    """Boolean per row of ``gpus[R, G]`` and ``cores[R, S]`` (sockets of one group
    each): row r's job may find compact room. On one server: some server holds its tasks
    (and so their GPUs: each task counted takes its GPUs from its socket's) and its
    cores. On ``n``: the ``n`` servers with the most room hold its tasks, its GPUs and
    its cores, each resource on its own."""
    socket_offsets = cluster.server_socket_offsets[:-1]
    tolerance = CORE_TOLERANCE + SCREEN_SLACK
    by_cores = np.floor((cores + tolerance) / demands.task_cpus[:, None])
    per_socket = np.minimum(gpus // demands.task_gpus[:, None], by_cores)
    tasks = np.add.reduceat(per_socket, socket_offsets, axis=1)
    server_cores = np.add.reduceat(cores, socket_offsets, axis=1) + tolerance
    servers = np.ones(len(gpus), dtype=np.int64) if demands.servers is None else demands.servers
    answer = np.empty(len(gpus), dtype=bool)
    one = servers == 1
    if one.any():
        holds = tasks[one] >= demands.count[one, None]
        holds &= server_cores[one] >= demands.total_cpus[one, None]
        answer[one] = holds.any(axis=1)
    many = ~one
    if many.any():
        wide = servers[many]
        server_gpus = np.add.reduceat(gpus[many], cluster.server_group_offsets[:-1], axis=1)
        needs = [
            (tasks[many], demands.count[many]),
            (server_cores[many], demands.total_cpus[many]),
            (server_gpus, demands.count[many] * demands.task_gpus[many]),
        ]
        answer[many] = True
        for have, need in needs:
            answer[many] &= _top_sums(have, wide) >= need
    return answer


def _top_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row of ``values[R, N]``, the sum of its ``counts[r]`` largest entries."""
    largest_first = -np.sort(-values, axis=1)
    return largest_first.cumsum(axis=1)[np.arange(len(values)), counts - 1]
