"""Vectorized speed model over the running tables: interference and communication times."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from envs.sim.communication import communication_pairs, megabytes_to_gigabits
from envs.sim.interference import InterferenceCoefficients
from envs.sim.running import PairRows, TaskRows

if TYPE_CHECKING:
    from envs.topology import Cluster


@dataclass(frozen=True)
class InterferenceRows:
    """A running job's tasks as the interference model reads them at every speed refresh,
    prepared once per placement.

    ``places`` stacks the columns ``socket, server, group`` (int64); ``terms`` the columns
    ``own_socket_cpu, own_server_cpu, own_group_pcie`` (the job's own load at the task's
    places), ``sibling_cores`` (the cores of the socket's sibling sockets) and the four
    :meth:`InterferenceCoefficients.idle_terms` of the task's own use (float64).
    ``is_worker`` is None when every task is a worker (only workers can straggle).
    """

    places: np.ndarray
    terms: np.ndarray
    is_worker: np.ndarray | None

    @staticmethod
    def of(
        tasks: TaskRows, sibling_cores: np.ndarray, worker_idle: np.ndarray, ps_idle: np.ndarray
    ) -> InterferenceRows:
        """The rows of one job's ``tasks`` (any number): ``sibling_cores`` per socket, the
        idle terms of one of its workers (``worker_idle`` [4]) and of a parameter server,
        whose own use counts as none: it loads the others, not itself (``ps_idle`` [4])."""
        idle = np.where(tasks.is_worker, worker_idle[:, np.newaxis], ps_idle[:, np.newaxis])
        terms = np.concatenate([tasks.loads[2:5], sibling_cores[tasks.socket][np.newaxis], idle])
        workers_only = bool(tasks.is_worker.all())
        return InterferenceRows(
            tasks.places[SOCKET_SERVER_GROUP], terms, None if workers_only else tasks.is_worker
        )

    def __len__(self) -> int:
        return self.places.shape[1]


#: The rows of :attr:`TaskRows.places` that :class:`InterferenceRows` keeps, in its order.
SOCKET_SERVER_GROUP = [2, 3, 1]


def job_slowdowns(
    rows: Sequence[InterferenceRows],
    socket_cpu: np.ndarray,
    server_cpu: np.ndarray,
    group_pcie: np.ndarray,
    coefficients: InterferenceCoefficients,
) -> np.ndarray:
    """Each job's straggler slowdown S (001 §V), one per entry of ``rows``, in order.

    ``socket_cpu``/``server_cpu``/``group_pcie`` are the loads of all running tasks.
    """
    if len(rows) == 1:
        places, terms = rows[0].places, rows[0].terms
    else:
        places = np.concatenate([table.places for table in rows], axis=1)
        terms = np.concatenate([table.terms for table in rows], axis=1)
    socket, server, group = places
    same_socket = socket_cpu[socket] - terms[0]
    other_sockets = server_cpu[server] - terms[1] - same_socket
    shared_cpu = same_socket + np.maximum(other_sockets - terms[3], 0.0)
    shared_pcie = group_pcie[group] - terms[2]
    task_slowdown = coefficients.excess(shared_cpu, shared_pcie, terms[4:])
    if any(table.is_worker is not None for table in rows):
        is_worker = np.concatenate(
            [
                np.ones(len(table), bool) if table.is_worker is None else table.is_worker
                for table in rows
            ]
        )
        task_slowdown = np.where(is_worker, task_slowdown, 0.0)
    if len(task_slowdown) == len(rows):
        return task_slowdown  # one task per job (most trace jobs): nothing to reduce
    # The straggler: each job's slowest task.
    starts, rows_before = [], 0
    for table in rows:  # a few jobs: plain integers beat an array's cumulative sum
        starts.append(rows_before)
        rows_before += len(table)
    return np.maximum.reduceat(task_slowdown, starts)


def routed_pairs(
    cluster: Cluster,
    job: int,
    collective: str,
    num_workers: int,
    num_ps: int,
    gradient_mb: float,
    task_groups: np.ndarray,
) -> PairRows:
    """The pairs of ``job``'s tasks on ``task_groups`` (workers first) that exchange data
    each step (:func:`~envs.sim.communication.communication_pairs`), with their routes;
    a pair inside one GPU group crosses no link and moves at its group's PCIe bandwidth.
    """
    task_a, task_b, megabytes = communication_pairs(collective, num_workers, num_ps, gradient_mb)
    groups_a, groups_b = task_groups[task_a], task_groups[task_b]
    offsets, links = cluster.router.routes(groups_a, groups_b)
    lengths = np.diff(offsets)
    pcie_gbps = cluster.link_gbps[cluster.group_pcie_link[groups_a]]
    return PairRows(
        job=np.full(len(task_a), job, dtype=np.int64),
        gigabits=np.asarray(megabytes_to_gigabits(megabytes), dtype=np.float64),
        local_gbps=np.where(lengths == 0, pcie_gbps, np.nan),
        route_length=lengths,
        link=links,
        link_job=np.full(len(links), job, dtype=np.int64),
    )


def shared_communication_times(
    pairs: PairRows, link_gbps: np.ndarray, link_load: np.ndarray, job_weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(jobs, seconds now)`` of each communicating job's slowest pair.

    ``link_load[l]`` sums the sharing weights of the jobs crossing link l, ``job_weight[j]``
    is job j's own. A job sees ``capacity / (1 + the others' weights)`` of a link: with
    weights of 1 that is 003's equal split by job count, with duty cycles the expected
    number of partners transferring at once.
    """
    starts = pairs.starts()
    if not len(starts):
        return np.zeros(0, np.int64), np.zeros(0)
    others = link_load[pairs.link] - job_weight[pairs.link_job]
    shared = link_gbps[pairs.link] / np.maximum(1.0 + others, 1.0)
    return pairs.job[starts], _slowest_pair_seconds(pairs, starts, shared)


def alone_communication_seconds(pairs: PairRows, link_gbps: np.ndarray) -> float:
    """Seconds of one step's communication of the one job whose ``pairs`` these are, with
    the full bandwidth of every link (the ideal of 000's contention sensitivity); 0.0 for
    a job that exchanges nothing. Fixed by the placement: the simulator computes it once
    per start."""
    if not len(pairs.job):
        return 0.0
    starts = np.zeros(1, dtype=np.int64)
    return float(_slowest_pair_seconds(pairs, starts, link_gbps[pairs.link])[0])


def _slowest_pair_seconds(pairs: PairRows, starts: np.ndarray, link_gbps: np.ndarray) -> np.ndarray:
    """Per job (segments at ``starts``), the seconds of its slowest pair when each route
    link gives the pair ``link_gbps`` (one value per route link of ``pairs``)."""
    bottleneck = pairs.local_gbps.copy()  # a pair on one group: its PCIe
    routed = pairs.route_length > 0
    if routed.any():
        lengths = pairs.route_length[routed]
        link_starts = np.zeros(len(lengths), dtype=np.int64)
        lengths[:-1].cumsum(out=link_starts[1:])
        bottleneck[routed] = np.minimum.reduceat(link_gbps, link_starts)
    return np.maximum.reduceat(pairs.gigabits / bottleneck, starts)
