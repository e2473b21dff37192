"""Who loads which socket and PCIe switch: the inputs of 001's interference model (§V).

The least-interference placement and the shortest-actual-time ordering predict slowdowns
with the same model the simulator charges (:mod:`envs.sim.interference`): a worker of job J
on GPU group g (socket c, server s) is slowed by the *other* jobs' tasks, through

    U_c = (their cores on c) + (their cores on the other sockets of s - those sockets' cores)_+
    U_p = their PCIe traffic on g

A worker keeps ``cpu_use`` cores busy and moves ``pcie_use`` GB/s; a parameter server
keeps its reserved cores busy and moves nothing over PCIe (it computes no step of its own
and so never straggles). :class:`InterferenceLoads` rebuilds these loads from the
simulator's public state (each running job's placement) and follows the claims a
scheduler makes during one decision.
"""

from __future__ import annotations

import numpy as np

from envs.sim import Simulator
from envs.sim.interference import InterferenceCoefficients


class InterferenceLoads:
    """Per-task table of placed tasks plus their loads per socket, server and GPU group.

    ``task_*`` arrays have one entry per placed task (running jobs, then claims);
    ``socket_cpu[C]``, ``server_cpu[S]``, ``group_pcie[G]`` are their sums. ``own_*``
    give, for each task, its own job's load at the task's socket, server and group: the
    part the model must not count as interference.
    """

    def __init__(
        self, sim: Simulator, coefficients: InterferenceCoefficients, enabled: bool
    ) -> None:
        cluster = sim.cluster
        self.cluster = cluster
        self.coefficients = coefficients
        self.enabled = enabled
        self._sim = sim
        # Cores of a socket's sibling sockets: what a neighbour fills before spilling over.
        self.sibling_cores = cluster.socket_sibling_cores
        self.socket_cpu = np.zeros(cluster.num_sockets)
        self.server_cpu = np.zeros(cluster.num_servers)
        self.group_pcie = np.zeros(cluster.num_gpu_groups)
        self._pieces: list[tuple[np.ndarray, ...]] = []
        self._table: tuple[np.ndarray, ...] | None = None

    @classmethod
    def from_running(cls, sim: Simulator, skip: set[int] | None = None) -> InterferenceLoads:
        """Loads of every job running in ``sim`` (except those in ``skip``)."""
        loads = cls(sim, sim.config.coefficients, sim.config.interference)
        jobs = [job for job in sim.running_jobs().tolist() if not skip or job not in skip]
        if jobs:
            loads.add_many(np.array(jobs), [sim.job_placement(job)[0] for job in jobs])
        return loads

    # ------------------------------------------------------------------ updates
    def add(self, job: int, groups: np.ndarray) -> None:
        """Count the tasks of ``job`` placed on ``groups`` (workers first)."""
        self.add_many(np.array([job]), [np.asarray(groups, dtype=np.int64)])

    def add_many(self, jobs: np.ndarray, placements: list[np.ndarray]) -> None:
        """Count the tasks of several jobs at once: ``placements[i]`` holds ``jobs[i]``'s
        task groups, workers first."""
        sim, cluster = self._sim, self.cluster
        counts = np.array([len(groups) for groups in placements], dtype=np.int64)
        job = np.repeat(jobs, counts)
        groups = np.concatenate(placements).astype(np.int64)
        # Position of each task within its job: workers come before parameter servers.
        position = np.arange(len(groups)) - np.repeat(np.cumsum(counts) - counts, counts)
        is_worker = position < np.repeat(counts - sim.num_ps[jobs], counts)
        cpu = np.where(is_worker, sim.cpu_use[job], sim.ps_cpus[job])
        pcie = np.where(is_worker, sim.pcie_use[job], 0.0)
        sockets = cluster.group_socket[groups]
        servers = cluster.group_server[groups]
        self.socket_cpu += np.bincount(sockets, weights=cpu, minlength=cluster.num_sockets)
        self.server_cpu += np.bincount(servers, weights=cpu, minlength=cluster.num_servers)
        self.group_pcie += np.bincount(groups, weights=pcie, minlength=cluster.num_gpu_groups)
        self._pieces.append((job, groups, sockets, servers, is_worker, cpu, pcie))
        self._table = None

    def task_loads(self, job: int, num_tasks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(is_worker, cpu, pcie)`` per task of ``job`` placed with ``num_tasks`` tasks."""
        sim = self._sim
        is_worker = np.arange(num_tasks) < num_tasks - int(sim.num_ps[job])
        cpu = np.where(is_worker, sim.cpu_use[job], sim.ps_cpus[job])
        pcie = np.where(is_worker, sim.pcie_use[job], 0.0)
        return is_worker, cpu, pcie

    # ------------------------------------------------------------------ table
    def table(self) -> tuple[np.ndarray, ...]:
        """``(job, group, socket, server, is_worker, cpu, pcie, own_socket_cpu,
        own_server_cpu, own_group_pcie)`` per placed task."""
        if self._table is None:
            if self._pieces:
                columns = [np.concatenate(column) for column in zip(*self._pieces, strict=True)]
            else:
                empty_int, empty = np.zeros(0, np.int64), np.zeros(0)
                columns = [empty_int] * 4 + [np.zeros(0, bool), empty, empty]
            job, group, socket, server, _, cpu, pcie = columns
            own = [
                _sum_by_pair(job, socket, cpu),
                _sum_by_pair(job, server, cpu),
                _sum_by_pair(job, group, pcie),
            ]
            self._table = (*columns, *own)
        return self._table

    # ------------------------------------------------------------------ model
    def slowdown(
        self,
        shared_cpu: np.ndarray,
        own_cpu: np.ndarray,
        shared_pcie: np.ndarray,
        own_pcie: np.ndarray,
    ) -> np.ndarray:
        """Excess slowdown of the model, or zeros when the simulation has it switched off."""
        if not self.enabled:
            return np.zeros(np.broadcast(shared_cpu, own_cpu, shared_pcie, own_pcie).shape)
        return self.coefficients.slowdown(shared_cpu, own_cpu, shared_pcie, own_pcie)

    def shared_cpu(
        self, same_socket: np.ndarray, other_sockets: np.ndarray, socket: np.ndarray
    ) -> np.ndarray:
        """U_c from other jobs' cores on the same socket and on the server's other sockets."""
        return same_socket + np.maximum(other_sockets - self.sibling_cores[socket], 0.0)

    def worker_slowdowns(self, job: int, groups: np.ndarray) -> np.ndarray:
        """Slowdown a worker of the (not yet placed) ``job`` would see on each of ``groups``."""
        cluster = self.cluster
        sockets = cluster.group_socket[groups]
        same = self.socket_cpu[sockets]
        other = self.server_cpu[cluster.group_server[groups]] - same
        sim = self._sim
        return self.slowdown(
            self.shared_cpu(same, other, sockets),
            np.full(len(groups), sim.cpu_use[job]),
            self.group_pcie[groups],
            np.full(len(groups), sim.pcie_use[job]),
        )


def _sum_by_pair(job: np.ndarray, where: np.ndarray, value: np.ndarray) -> np.ndarray:
    """For each row, the sum of ``value`` over rows with the same (job, where)."""
    if not len(job):
        return np.zeros(0)
    _, inverse = np.unique(job * (int(where.max()) + 1) + where, return_inverse=True)
    return np.bincount(inverse, weights=value)[inverse]
