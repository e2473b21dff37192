"""Per-job tables of running tasks and communicating pairs, the speed model's inputs.

Each running job keeps its own rows, built once at placement; the simulator concatenates
the rows of just the jobs an event affects, job after job, so per-job reductions are
``reduceat`` over segment starts instead of slow unbuffered ``ufunc.at``. Each task
carries its own job's load at its socket, server and GPU group (fixed by the placement),
so the interference model subtracts it from the server totals without regrouping.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


def _concat(tables: list, empty: object) -> list[np.ndarray]:
    """Column-wise concatenation of same-typed tables (``empty`` when there are none)."""
    if not tables:
        return [getattr(empty, f.name) for f in fields(empty)]  # type: ignore[arg-type]
    return [np.concatenate([getattr(table, f.name) for table in tables]) for f in fields(tables[0])]


def _segment_starts(job: np.ndarray) -> np.ndarray:
    """Start index of each job's run of rows."""
    if not len(job):
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.concatenate([[True], job[1:] != job[:-1]]))


@dataclass(frozen=True)
class TaskRows:
    """One row per running task: where it is and what it loads (001 §V inputs)."""

    job: np.ndarray
    group: np.ndarray
    socket: np.ndarray
    server: np.ndarray
    is_worker: np.ndarray
    cpu: np.ndarray
    pcie: np.ndarray
    own_socket_cpu: np.ndarray
    own_server_cpu: np.ndarray
    own_group_pcie: np.ndarray

    @staticmethod
    def empty() -> TaskRows:
        ints, floats = np.zeros(0, np.int64), np.zeros(0)
        return TaskRows(
            ints, ints, ints, ints, np.zeros(0, bool), floats, floats, floats, floats, floats
        )

    @staticmethod
    def for_job(
        job: int,
        group: np.ndarray,
        socket: np.ndarray,
        server: np.ndarray,
        is_worker: np.ndarray,
        cpu: np.ndarray,
        pcie: np.ndarray,
    ) -> TaskRows:
        """Rows of one job's tasks, with the job's own load at each task's places."""
        return TaskRows(
            np.full(len(group), job, dtype=np.int64),
            group,
            socket,
            server,
            is_worker,
            cpu,
            pcie,
            _same_place_sum(socket, cpu),
            _same_place_sum(server, cpu),
            _same_place_sum(group, pcie),
        )

    @staticmethod
    def concat(tables: list[TaskRows]) -> TaskRows:
        """The rows of several jobs, job after job."""
        return TaskRows(*_concat(tables, TaskRows.empty()))

    def starts(self) -> np.ndarray:
        return _segment_starts(self.job)


def _same_place_sum(place: np.ndarray, values: np.ndarray) -> np.ndarray:
    _, inverse = np.unique(place, return_inverse=True)
    return np.bincount(inverse, weights=values)[inverse]


@dataclass(frozen=True)
class PairRows:
    """Communicating pairs of running jobs, with their route links concatenated.

    ``local_gbps`` is the PCIe bandwidth for a pair on one GPU group (empty route), NaN
    otherwise; ``route_length`` counts each pair's links in ``link`` (pair order).
    """

    job: np.ndarray
    gigabits: np.ndarray
    local_gbps: np.ndarray
    route_length: np.ndarray
    link: np.ndarray
    link_job: np.ndarray

    @staticmethod
    def empty() -> PairRows:
        ints, floats = np.zeros(0, np.int64), np.zeros(0)
        return PairRows(ints, floats, floats, ints, ints, ints)

    @staticmethod
    def concat(tables: list[PairRows]) -> PairRows:
        """The pairs of several jobs, job after job."""
        return PairRows(*_concat(tables, PairRows.empty()))

    def starts(self) -> np.ndarray:
        return _segment_starts(self.job)
