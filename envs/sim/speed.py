"""Vectorized speed model over the running tables: interference and communication times."""

from __future__ import annotations

import numpy as np

from envs.sim.interference import InterferenceCoefficients
from envs.sim.running import PairRows, TaskRows


def interference_slowdowns(
    tasks: TaskRows,
    socket_cpu: np.ndarray,
    server_cpu: np.ndarray,
    group_pcie: np.ndarray,
    sibling_cores: np.ndarray,
    coefficients: InterferenceCoefficients,
) -> tuple[np.ndarray, np.ndarray]:
    """``(jobs, slowdown)``: each running job's straggler slowdown S (001 §V).

    ``socket_cpu``/``server_cpu``/``group_pcie`` are the loads of all running tasks;
    ``sibling_cores[c]`` the cores of socket c's sibling sockets.
    """
    starts = tasks.starts()
    if not len(starts):
        return np.zeros(0, np.int64), np.zeros(0)
    same_socket = socket_cpu[tasks.socket] - tasks.own_socket_cpu
    other_sockets = server_cpu[tasks.server] - tasks.own_server_cpu - same_socket
    shared_cpu = same_socket + np.maximum(other_sockets - sibling_cores[tasks.socket], 0.0)
    shared_pcie = group_pcie[tasks.group] - tasks.own_group_pcie
    own_cpu = np.where(tasks.is_worker, tasks.cpu, 0.0)
    own_pcie = np.where(tasks.is_worker, tasks.pcie, 0.0)
    task_slowdown = coefficients.slowdown(shared_cpu, own_cpu, shared_pcie, own_pcie)
    # Parameter servers do no compute step of their own: only workers can straggle.
    task_slowdown = np.where(tasks.is_worker, task_slowdown, 0.0)
    return tasks.job[starts], np.maximum.reduceat(task_slowdown, starts)


def communication_times(
    pairs: PairRows, link_gbps: np.ndarray, link_load: np.ndarray, job_weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(jobs, seconds now, seconds alone)`` of each communicating job's slowest pair.

    ``link_load[l]`` sums the sharing weights of the jobs crossing link l, ``job_weight[j]``
    is job j's own. A job sees ``capacity / (1 + the others' weights)`` of a link: with
    weights of 1 that is 003's equal split by job count, with duty cycles the expected
    number of partners transferring at once. "Alone" uses the full bandwidth (the ideal of
    000's contention sensitivity).
    """
    starts = pairs.starts()
    if not len(starts):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    bottleneck = pairs.local_gbps.copy()
    bottleneck_alone = pairs.local_gbps.copy()
    routed = pairs.route_length > 0
    if routed.any():
        lengths = pairs.route_length[routed]
        link_starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=link_starts[1:])
        capacity = link_gbps[pairs.link]
        others = link_load[pairs.link] - job_weight[pairs.link_job]
        shared = capacity / np.maximum(1.0 + others, 1.0)
        bottleneck[routed] = np.minimum.reduceat(shared, link_starts)
        bottleneck_alone[routed] = np.minimum.reduceat(capacity, link_starts)
    now = np.maximum.reduceat(pairs.gigabits / bottleneck, starts)
    alone = np.maximum.reduceat(pairs.gigabits / bottleneck_alone, starts)
    return pairs.job[starts], now, alone
