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
    """Column-wise concatenation of same-typed tables (``empty`` when there are none).

    One table's own (never modified) columns are returned as they are: an event often
    touches a single job.
    """
    names = _column_names(type(empty))
    if len(tables) <= 1:
        source = tables[0] if tables else empty
        return [getattr(source, name) for name in names]
    return [np.concatenate([getattr(table, name) for table in tables]) for name in names]


_COLUMN_NAMES: dict[type, tuple[str, ...]] = {}


def _column_names(table_type: type) -> tuple[str, ...]:
    """The column names of a table dataclass, looked up once (``fields`` is slow)."""
    names = _COLUMN_NAMES.get(table_type)
    if names is None:
        names = _COLUMN_NAMES[table_type] = tuple(f.name for f in fields(table_type))
    return names


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
    """Per row, the sum of ``values`` over the rows at the same place (ids >= 0)."""
    if len(place) == 1:
        return values.astype(np.float64)
    return np.bincount(place, weights=values)[place]


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
