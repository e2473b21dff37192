"""Per-job tables of running tasks and communicating pairs, the speed model's inputs.

Each running job keeps its own rows, built once at placement. A task table says where the
job's tasks are and what they load (the simulator adds it to the shared totals at a
start and takes it off at a stop); each task carries its own job's load at its socket,
server and GPU group (fixed by the placement), so the interference model
(:class:`envs.sim.speed.InterferenceRows`, built from these rows) subtracts it from the
totals without regrouping. The simulator concatenates the pair tables of just the jobs an
event affects, job after job, so per-job reductions are ``reduceat`` over segment starts
instead of slow unbuffered ``ufunc.at``.

A task table keeps its columns packed in one integer and one float block (rows of the
blocks are the columns).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np


def _segment_starts(job: np.ndarray) -> np.ndarray:
    """Start index of each job's run of rows."""
    if not len(job):
        return np.zeros(0, np.int64)
    return np.concatenate([[True], job[1:] != job[:-1]]).nonzero()[0]


def _column(block: str, row: int, doc: str) -> property:
    """Row ``row`` of the packed array ``block``: one column of the table, read-only."""
    return property(lambda table: getattr(table, block)[row], doc=doc)


@dataclass(frozen=True)
class TaskRows:
    """One row per running task: where it is and what it loads (001 §V inputs).

    ``places`` stacks the columns ``job, group, socket, server`` (int64), ``loads`` the
    columns ``cpu, pcie, own_socket_cpu, own_server_cpu, own_group_pcie`` (float64);
    read them through the properties of those names.
    """

    places: np.ndarray
    is_worker: np.ndarray
    loads: np.ndarray

    job = _column("places", 0, "The task's job.")
    group = _column("places", 1, "The task's GPU group.")
    socket = _column("places", 2, "The task's CPU socket.")
    server = _column("places", 3, "The task's server.")
    cpu = _column("loads", 0, "Cores the task keeps busy.")
    pcie = _column("loads", 1, "PCIe traffic of the task, GB/s.")
    own_socket_cpu = _column("loads", 2, "The task's own job's cores on its socket.")
    own_server_cpu = _column("loads", 3, "The task's own job's cores on its server.")
    own_group_pcie = _column("loads", 4, "The task's own job's PCIe traffic on its group.")

    @staticmethod
    def empty() -> TaskRows:
        return TaskRows(np.zeros((4, 0), np.int64), np.zeros(0, bool), np.zeros((5, 0)))

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
        places = np.stack([np.full(len(group), job, dtype=np.int64), group, socket, server])
        loads = np.stack(
            [
                cpu,
                pcie,
                _same_place_sum(socket, cpu),
                _same_place_sum(server, cpu),
                _same_place_sum(group, pcie),
            ]
        )
        return TaskRows(places.astype(np.int64), is_worker, loads.astype(np.float64))


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
        # Jobs of one worker have no pairs; most events then join one table or none.
        tables = [table for table in tables if len(table.job)]
        if len(tables) <= 1:
            return tables[0] if tables else NO_PAIRS
        return PairRows(
            *(np.concatenate([getattr(table, name) for table in tables]) for name in _PAIR_COLUMNS)
        )

    def starts(self) -> np.ndarray:
        return _segment_starts(self.job)


_PAIR_COLUMNS = tuple(column.name for column in fields(PairRows))


_Table = TypeVar("_Table", TaskRows, PairRows)


def _read_only(table: _Table) -> _Table:
    """``table`` with every array made read-only (for tables shared between jobs)."""
    for column in fields(table):
        getattr(table, column.name).flags.writeable = False
    return table


#: The tables of a job not yet placed, and the pairs of jobs that exchange nothing (most
#: refreshes): shared, read-only.
NO_TASKS = _read_only(TaskRows.empty())
NO_PAIRS = _read_only(PairRows.empty())
