"""SCED2's dynamics (002 §III) over podsched's simulator: window, packing, state, reward.

:class:`Sced2Core` keeps one episode: a :class:`~envs.sced2.speed.ProfiledSimulator` of
the 15 x 8 flat cluster running one trace in event mode (a decision after every arrival
or completion that leaves jobs waiting). The agent picks one of the first J waiting jobs
(arrival order), which is placed at once by 002's packing (:class:`envs.schedulers.
Packing`) with time frozen, or holds (phi), which runs the simulator to the next event at
which jobs wait. :class:`envs.sced2.Sced2Env` is its Gymnasium face;
:mod:`envs.sced2.baselines` runs 002's heuristics on the same simulator.

**Reward.** A placed job's speed never changes afterwards (profile-driven, no preemption,
no contention), so its actual execution time is known the moment it is placed:
``T_actual = step time of its placement x mini-batches / workers`` (the simulator's
remaining time right after the placement), and the whole of 002 eq. 2,
``E_j = T_ideal / (T_wait + T_actual)`` (T_ideal: the job's profiled time on its best
placement, :mod:`envs.sced2.speed`), is paid on the step that places it. The
undiscounted return of an episode is therefore the sum of E_j over the jobs, and the
return / number of jobs is 002's average execution effectiveness (the same number as
:meth:`envs.sim.SimulationResult.metrics`'s ``execution_effectiveness``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from envs.base import begin_step
from envs.sced2.config import NUM_STATISTICS, Sced2Config
from envs.sced2.speed import ProfiledSimulator
from envs.schedulers import ClusterView, Packing
from envs.sim import JobStatus, SimulationResult, SimulatorConfig, server_fragmentation
from envs.topology import Cluster, build_cluster
from envs.workload import Workload

_FUTURE = int(JobStatus.FUTURE)


@functools.lru_cache(maxsize=8)
def sced2_cluster(servers: int, gpus_per_server: int) -> Cluster:
    """The flat cluster of ``servers`` x ``gpus_per_server`` GPUs (cached: immutable)."""
    return build_cluster("flat", servers=servers, gpus_per_server=gpus_per_server)


def observation_layout(config: Sced2Config) -> dict[str, tuple[slice, tuple[int, ...]]]:
    """Where each part of 002 Table I's state lies in the flat observation, and its shape.

    ``gpu``: N x M remaining times, server-major (row i = server i's GPUs, the input of
    002 eq. 3's shared sub-network); ``jobs``: J x (k + 2), one row per visible job
    (k profiled execution times, GPU demand, waiting time); ``statistics``: 4 values.
    """
    gpu = config.total_gpus
    jobs = config.window * config.job_features
    return {
        "gpu": (slice(0, gpu), (config.servers, config.gpus_per_server)),
        "jobs": (slice(gpu, gpu + jobs), (config.window, config.job_features)),
        "statistics": (slice(gpu + jobs, gpu + jobs + NUM_STATISTICS), (NUM_STATISTICS,)),
    }


def split_observation(observation: np.ndarray, config: Sced2Config) -> dict[str, np.ndarray]:
    """The ``gpu``, ``jobs`` and ``statistics`` blocks of a flat observation (views)."""
    values = np.asarray(observation)
    return {
        name: values[..., where].reshape(*values.shape[:-1], *shape)
        for name, (where, shape) in observation_layout(config).items()
    }


class Sced2Core:
    """One SCED2 episode at a time; see the module docstring. Public read-only state:
    ``sim`` (the simulator), ``workload``, ``steps``, ``rewards``, ``over``."""

    def __init__(self, config: Sced2Config) -> None:
        self.config = config
        self.cluster = sced2_cluster(config.servers, config.gpus_per_server)
        assert self.cluster.num_gpus == config.total_gpus
        self.placement = Packing()
        self._window = config.window
        self._shapes = config.profiles
        self._unit = config.time_unit_s
        self._observation = np.zeros(config.observation_size, dtype=np.float32)
        self._layout = observation_layout(config)
        self.over = True

    # -- episode ------------------------------------------------------------------------------

    def reset(self, workload: Workload) -> None:
        """Start ``workload`` and run to its first decision."""
        self.workload = workload
        self.sim = ProfiledSimulator(self.cluster, workload, SimulatorConfig())
        count = len(workload)
        self.profile_steps = np.full((count, self._shapes), np.nan)
        self.effectiveness = np.full(count, np.nan)
        self.servers_used = np.zeros(count, dtype=np.int64)
        self.rewards: list[float] = []
        self.steps = 0
        self.holds = 0
        self.over = False
        self._advance()

    def _advance(self) -> None:
        """Hold: run to the next decision; with ``skip_forced_holds`` on past decisions
        where no visible job fits (holding is the only choice there)."""
        while True:
            if not self.sim.run_until_decision():
                self.over = True
                return
            if not self.config.skip_forced_holds or self.feasible().any():
                return

    # -- actions ------------------------------------------------------------------------------

    def window(self) -> np.ndarray:
        """The visible jobs: the first J waiting jobs in arrival order."""
        return self.sim.waiting_jobs()[: self._window]

    def feasible(self) -> np.ndarray:
        """Per window slot (J): a job is there and its GPUs are free now. Packing places
        any such job (1-GPU workers, GPU-only), whatever the spread of the free GPUs."""
        jobs = self.window()
        mask = np.zeros(self._window, dtype=bool)
        if len(jobs):
            mask[: len(jobs)] = self.sim.num_workers[jobs] <= int(self.sim.free_gpus.sum())
        return mask

    def hold_allowed(self) -> bool:
        """Holding needs something to happen later: a running job or a future arrival.
        Otherwise (jobs wait on an idle cluster, nothing else to come) it would stall."""
        sim = self.sim
        return bool(len(sim.running_jobs()) or (sim.status == _FUTURE).any())

    def action_mask(self) -> np.ndarray:
        """int8 over the J + 1 actions: the feasible slots, then hold."""
        mask = np.zeros(self._window + 1, dtype=np.int8)
        if self.over:
            mask[self._window] = 1
            return mask
        mask[: self._window] = self.feasible()
        mask[self._window] = self.hold_allowed() or not mask.any()
        return mask

    def step(self, action: int) -> tuple[float, bool, bool, dict[str, Any]]:
        """Apply action ``action`` (slot 0..J-1, or J = hold). A choice the mask forbids is
        taken as hold when holding is allowed, else changes nothing; both set
        ``invalid_action``. Returns (reward, terminated, truncated, details)."""
        mask, details = begin_step(self, action)
        reward = 0.0
        if action < self._window and mask[action]:
            details["placed"] = self._schedule(action)
            reward = details["placed"]["effectiveness"]
            if self.config.skip_forced_holds and not self.feasible().any():
                self._advance()
        elif self.hold_allowed():
            self.holds += 1
            self._advance()
        self.rewards.append(reward)
        terminated = self.over
        truncated = not terminated and self.steps >= self.config.step_limit
        return reward, terminated, truncated, details

    def _schedule(self, slot: int) -> dict[str, Any]:
        """Place slot ``slot``'s job by packing now; its record, E_j included."""
        sim = self.sim
        job = int(self.window()[slot])
        groups = self.placement.place(sim, job, ClusterView(sim))
        assert groups is not None, "feasible() promised room"
        wait = sim.now - float(self.workload.arrival_time[job])
        sim.place(job, groups)
        actual = float(sim.remaining_time(np.array([job]))[0])
        ideal = float(sim.ideal_duration[job])
        effectiveness = ideal / (wait + actual)
        servers = np.unique(self.cluster.group_server[groups])
        self.effectiveness[job] = effectiveness
        self.servers_used[job] = len(servers)
        return {
            "job": job,
            "slot": slot,
            "gpus": int(sim.num_workers[job]),
            "servers": servers.tolist(),
            "step_time": sim.step_time(job, groups),
            "ideal": ideal,
            "wait": wait,
            "actual": actual,
            "effectiveness": effectiveness,
        }

    # -- state --------------------------------------------------------------------------------

    def gpu_remaining(self) -> np.ndarray:
        """Seconds until each GPU is released (0 when free), GPU ids in order."""
        sim = self.sim
        remaining = np.zeros(self.cluster.num_gpus)
        busy = sim.gpu_job >= 0
        if busy.any():
            remaining[busy] = sim.remaining_time()[sim.gpu_job[busy]]
        return remaining

    def fragmentation(self) -> float:
        """002 eq. 1 averaged over servers, now."""
        return server_fragmentation(self.cluster, self.gpu_remaining())

    def profiles(self, jobs: np.ndarray) -> np.ndarray:
        """Step times (s) of ``jobs`` under the k profiling placements, ``(len(jobs), k)``."""
        todo = [job for job in jobs.tolist() if np.isnan(self.profile_steps[job, 0])]
        for job in todo:
            self.profile_steps[job] = self.sim.profile(job, self._shapes)
        return self.profile_steps[jobs]

    def observe(self) -> np.ndarray:
        """002 Table I's state as float32 ``(NM + (k + 2) J + 4,)`` (a fresh array); see
        :mod:`envs.sced2` for the scaling."""
        sim = self.sim
        unit = self._unit
        values = self._observation
        values[:] = 0.0
        gpu_where, _ = self._layout["gpu"]
        values[gpu_where] = self.gpu_remaining() / unit
        waiting = sim.waiting_jobs()
        visible, others = waiting[: self._window], waiting[self._window :]
        per_server = self.config.gpus_per_server
        if len(visible):
            steps_left = (sim.work_total[visible] - sim.work_done[visible]) / sim.num_workers[
                visible
            ]
            rows = np.column_stack(
                [
                    self.profiles(visible) * steps_left[:, None] / unit,
                    sim.num_workers[visible] / per_server,
                    (sim.now - self.workload.arrival_time[visible]) / unit,
                ]
            )
            jobs_where, _ = self._layout["jobs"]
            start = jobs_where.start
            values[start : start + rows.size] = rows.ravel()
        if len(others):
            stats_where, _ = self._layout["statistics"]
            values[stats_where] = (
                len(others) / self._window,
                sim.num_workers[others].mean() / per_server,
                sim.ideal_duration[others].mean() / unit,
                (sim.now - self.workload.arrival_time[others]).mean() / unit,
            )
        return values.copy()

    # -- results ------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The episode so far: the simulator's metrics (002's execution effectiveness,
        JCT, makespan, fragmentation, ...), the return and counts.

        ``relaxed_locality``: share of the placed jobs of at most M GPUs that were spread
        over more than one server (002 Table III's "not assigned the best locality").
        """
        metrics = SimulationResult.from_simulator(self.sim, "sced2").metrics()
        placed = np.isfinite(self.effectiveness)
        could_pack = placed & (self.sim.num_workers <= self.config.gpus_per_server)
        relaxed = float((self.servers_used[could_pack] > 1).mean()) if could_pack.any() else None
        finished = np.isfinite(self.sim.finish_time)
        return {
            **metrics,
            "avg_run_time": float(self.sim.run_time[finished].mean()) if finished.any() else None,
            "return": float(np.sum(self.rewards)),
            "steps": self.steps,
            "holds": self.holds,
            "jobs_placed": int(placed.sum()),
            "relaxed_locality": relaxed,
            "final_time": float(self.sim.now),
        }
