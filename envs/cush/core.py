"""CuSH's dynamics (004 §3.2) over podsched's simulator: queue, backlog, image, rewards.

:class:`CuSHCore` keeps the Q visible slots and the FIFO backlog, turns a (job, policy)
choice into a placement on :class:`~envs.sim.Simulator`, advances time one CuSH step per
"do nothing", and draws the state image. :class:`envs.cush.CuSHEnv` is its Gymnasium face;
:mod:`envs.cush.baselines` drives it with 004's heuristics.

**Time.** One CuSH step is ``step_seconds`` simulator seconds. The simulator runs in
interval mode (``SimulatorConfig(interval_s=step_seconds)``) with interference and
communication off, so a job's speed is set by its placement penalty alone
(``speed_factor = 1 + f``): it runs exactly ``length x (1 + f)`` steps. "Do nothing" runs
the simulator to the next step at which jobs wait; steps with an empty queue are skipped
(no decision is possible there and their local reward is 0). Penalized jobs may end
between steps; their resources are free for the next decision.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import Any

import numpy as np

from envs.base import EPISODE_OVER
from envs.cush.alloc import NodeLayout, allocate, penalty
from envs.cush.config import ALLOCATION_POLICIES, JOB_TYPES, CuSHConfig
from envs.cush.jobs import JobSet, job_set_workload
from envs.discounting import discounted_sums
from envs.sim import JobStatus, SimulationResult, Simulator, SimulatorConfig
from envs.topology import Cluster, build_cluster

_FINISHED = int(JobStatus.FINISHED)


@functools.lru_cache(maxsize=8)
def cush_cluster(server: str, nodes: int) -> Cluster:
    """The flat cluster of ``nodes`` ``server`` nodes (cached: clusters are immutable)."""
    return build_cluster("flat", servers=nodes, server=server)


def eq1_returns(local_rewards: np.ndarray, global_reward: float, gamma: float) -> np.ndarray:
    """004 eq. 1 (Alg. 1 line 10): ``v_t = (sum_{i>=t} gamma^(i-t) r_i) x r_g`` for every t."""
    return discounted_sums(local_rewards, gamma) * global_reward


class CuSHCore:
    """One CuSH episode at a time; see the module docstring. Public read-only state:
    ``time`` (steps), ``slots`` (job per slot, -1 empty), ``backlog``, ``sim``, ``jobs``."""

    def __init__(self, config: CuSHConfig) -> None:
        self.config = config
        self.cluster = cush_cluster(config.server, config.nodes)
        self.layout = NodeLayout.of(self.cluster)
        assert self.cluster.num_sockets == config.total_cpus
        assert self.cluster.num_gpus == config.total_gpus
        self._cores_per_socket = float(self.cluster.socket_cores.max())
        self._sim_config = SimulatorConfig(
            interval_s=config.step_seconds,
            horizon_s=config.max_time * config.step_seconds,
            interference=False,
            communication=False,
        )
        self._queue = config.queue_size
        self._rows = np.arange(config.time_horizon)
        self._coefficients = (config.dgemm_remote_penalty, config.daxpy_shared_penalty)
        self.image = np.zeros(config.image_shape, dtype=np.float32)
        # Row k of pattern n is 1 when k < n: a unit busy for n more steps.
        self._row_patterns = (
            self._rows[None, :] < np.arange(config.time_horizon + 1)[:, None]
        ).astype(np.float32)
        self._drawn: list[tuple[int, int, int]] = [(0, 0, 0)] * self._queue
        self.done = True

    # -- episode ------------------------------------------------------------------------------

    def reset(self, jobs: JobSet) -> None:
        """Start ``jobs`` at time 0 and run to the first step with a job waiting."""
        self.jobs = jobs
        count = len(jobs)
        self.sim = Simulator(
            self.cluster,
            job_set_workload(jobs, self.config, self._cores_per_socket),
            self._sim_config,
        )
        self.slots: list[int] = [-1] * self._queue
        self.backlog: deque[int] = deque()
        self._next_arrival = 0
        self.time = 0
        self.steps = 0
        self.finish = np.full(count, np.inf)  # expected finish, in steps, once placed
        self.policy = np.full(count, -1, dtype=np.int64)
        self.penalty_steps = np.zeros(count)
        self.nodes_used = np.zeros(count, dtype=np.int64)
        self.socket_job = np.full(self.cluster.num_sockets, -1, dtype=np.int64)
        self.local_rewards: list[float] = []
        self.psm_rewards: list[float] = []
        self.done = False
        self._advance()

    def _advance(self) -> None:
        """Run the simulator to the next decision (or its end) and admit the arrivals."""
        self.sim.run_until_decision()
        self.time = round(self.sim.now / self.config.step_seconds)
        arrival = self.jobs.arrival
        while self._next_arrival < len(arrival) and arrival[self._next_arrival] <= self.time:
            job = self._next_arrival
            self._next_arrival += 1
            if -1 in self.slots:
                self.slots[self.slots.index(-1)] = job
            else:
                self.backlog.append(job)

    @property
    def finished(self) -> bool:
        """True once every job has finished."""
        return bool((self.sim.status == _FINISHED).all())

    # -- actions ------------------------------------------------------------------------------

    def feasible(self) -> np.ndarray:
        """Per slot: a job is there and the cluster has its GPUs and CPUs free now."""
        free_gpus = int(self.sim.free_gpus.sum())
        free_cpus = int(np.count_nonzero(self.layout.free_sockets(self.sim.free_cores)))
        jobs = np.array(self.slots)
        held = jobs >= 0
        safe = np.where(held, jobs, 0)
        return held & (self.jobs.gpus[safe] <= free_gpus) & (self.jobs.cpus[safe] <= free_cpus)

    def action_mask(self) -> np.ndarray:
        """int8 ``[do nothing, slot 1..Q | depth-first, breadth-first]`` (Q + 3 entries).

        Do nothing is always allowed; both policies are, since any job that fits can be
        placed either way (:mod:`envs.cush.alloc`).
        """
        mask = np.ones(self._queue + 3, dtype=np.int8)
        mask[1 : self._queue + 1] = self.feasible()
        return mask

    def step(self, choice: int, policy: int) -> tuple[float, bool, bool, dict[str, Any]]:
        """Apply 004's two-step action: ``choice`` 0 = do nothing, i = slot i's job, placed
        by ``policy`` (0 depth-first, 1 breadth-first). A choice the mask forbids (empty
        slot, job that does not fit) is taken as do nothing. Returns (local reward,
        terminated, truncated, details)."""
        if self.done:
            raise RuntimeError(EPISODE_OVER)
        self.steps += 1
        details: dict[str, Any] = {"invalid_action": False}
        if choice > 0 and self.feasible()[choice - 1]:
            details["placed"] = self._schedule(choice - 1, policy)
            self.psm_rewards.append(-details["placed"]["penalty"])
        else:
            details["invalid_action"] = choice > 0
            self._advance()
        reward = self.local_reward()
        self.local_rewards.append(reward)
        terminated = self.finished
        truncated = not terminated and self.sim.done
        self.done = terminated or truncated
        return reward, terminated, truncated, details

    def _schedule(self, slot: int, policy: int) -> dict[str, Any]:
        """Place slot ``slot``'s job by ``policy`` now; refill the slot from the backlog."""
        job = self.slots[slot]
        jobs = self.jobs
        kind = int(jobs.kind[job])
        sim = self.sim
        allocation = allocate(
            self.layout,
            sim.free_gpus,
            sim.free_cores,
            sim.gpu_job,
            int(jobs.gpus[job]),
            int(jobs.cpus[job]),
            policy,
        )
        assert allocation is not None, "feasible() promised room"
        fraction = penalty(
            allocation.node_gpus,
            kind,
            self.layout.gpus_per_node,
            self._coefficients[kind],
            self.config.penalty_scale_gpus,
        )
        sim.place(job, allocation.task_groups, allocation.gpu_ids, speed_factor=1.0 + fraction)
        length = int(jobs.length[job])
        self.socket_job[allocation.sockets] = job
        self.finish[job] = self.time + length * (1.0 + fraction)
        self.policy[job] = policy
        self.penalty_steps[job] = length * fraction
        self.nodes_used[job] = allocation.nodes_used
        self.slots[slot] = self.backlog.popleft() if self.backlog else -1
        return {
            "job": job,
            "slot": slot + 1,
            "type": JOB_TYPES[kind],
            "policy": ALLOCATION_POLICIES[policy],
            "gpus": int(jobs.gpus[job]),
            "cpus": int(jobs.cpus[job]),
            "nodes": allocation.nodes_used,
            "penalty": float(self.penalty_steps[job]),
            "service": length * (1.0 + fraction),
        }

    # -- rewards and views --------------------------------------------------------------------

    def waiting(self) -> list[int]:
        """Jobs in the slots (slot order), then the backlog (FIFO order)."""
        return [job for job in self.slots if job >= 0] + list(self.backlog)

    def local_reward(self) -> float:
        """004 §3.2: ``-sum wt_j / l_j`` over the jobs waiting in the slots and the backlog."""
        waiting = self.waiting()
        if not waiting:
            return 0.0
        jobs = np.array(waiting)
        return -float(((self.time - self.jobs.arrival[jobs]) / self.jobs.length[jobs]).sum())

    def observe_image(self) -> np.ndarray:
        """004 §3.2's state, float32 of shape ``(sum_R N S^r, T, Q + 1)`` (a fresh copy).

        Channel 0, the cluster: column = a CPU socket (node-major), then a GPU; row k is 1
        when the unit is held by a job still running during step ``time + k``. Channel
        j >= 1, slot j's job: its CPU request in the first ``cpus`` CPU columns and its GPU
        request in the first ``gpus`` GPU columns, for ``min(length, T)`` rows, each cell
        ``1 + waiting time`` (steps) -- 004 codes the waiting time instead of DeepRM's 1s;
        the 1 keeps a job that has just arrived visible. Empty slots are 0.
        """
        image = self.image
        config = self.config
        horizon = config.time_horizon
        rows_left = np.clip(np.ceil(self.finish - self.time - 1e-9), 0, horizon).astype(np.int64)
        # Index -1 (a free unit) reads the appended 0.
        rows_left = np.append(rows_left, 0)
        unit_rows = np.concatenate([rows_left[self.socket_job], rows_left[self.sim.gpu_job]])
        image[:, :, 0] = self._row_patterns[unit_rows]
        cpu_width = config.total_cpus
        jobs = self.jobs
        # Writing along the channel axis is strided, so only the blocks drawn last time are
        # cleared instead of all Q channels.
        for channel, (cpus, gpus, rows) in enumerate(self._drawn, start=1):
            image[:cpus, :rows, channel] = 0.0
            image[cpu_width : cpu_width + gpus, :rows, channel] = 0.0
        for channel, job in enumerate(self.slots, start=1):
            if job < 0:
                self._drawn[channel - 1] = (0, 0, 0)
                continue
            cpus, gpus = int(jobs.cpus[job]), int(jobs.gpus[job])
            rows = min(int(jobs.length[job]), horizon)
            value = 1.0 + (self.time - int(jobs.arrival[job]))
            image[:cpus, :rows, channel] = value
            image[cpu_width : cpu_width + gpus, :rows, channel] = value
            self._drawn[channel - 1] = (cpus, gpus, rows)
        return image.copy()

    def job_types(self) -> np.ndarray:
        """One-hot workload type per slot, float32 ``(Q, 2)`` (dgemm, daxpy); 0s if empty."""
        types = np.zeros((self._queue, len(JOB_TYPES)), dtype=np.float32)
        for slot, job in enumerate(self.slots):
            if job >= 0:
                types[slot, self.jobs.kind[job]] = 1.0
        return types

    # -- results ------------------------------------------------------------------------------

    def _policy_share(self, kind: int, policy: int) -> float | None:
        """The share of the placed jobs of type ``kind`` placed by ``policy`` (None if no
        such job was placed)."""
        placed = (self.policy >= 0) & (self.jobs.kind == kind)
        if not placed.any():
            return None
        return float(np.mean(self.policy[placed] == policy))

    def summary(self) -> dict[str, Any]:
        """The episode so far: 004 Table 1's metrics and each job's record.

        ``avg_ntat`` (the global reward r_g) is in steps over finished jobs; ``avg_wait``
        and ``avg_tat`` are in steps over the jobs that arrived, an unfinished one with its
        wait and time in the system so far (lower bounds); all three None before any job
        finishes, from :meth:`envs.sim.SimulationResult.metrics`; ``local_return`` is the
        undiscounted sum of local rewards (Table 1's "Rewards"), ``eq1_return`` 004 eq. 1's ``v_0``
        with ``gamma``; ``avg_penalty`` the mean penalty (steps) of the placed jobs;
        ``dgemm_depth_first`` and ``daxpy_breadth_first`` the shares of the placed dgemm
        jobs placed depth-first and of the daxpy jobs placed breadth-first (004 Fig. 6;
        None when no job of the type was placed).
        """
        step = self.config.step_seconds
        metrics = SimulationResult.from_simulator(self.sim, "cush").metrics()
        finished = int(metrics["jobs_finished"])
        ntat = float(metrics["avg_ntat"]) if finished else None
        local = np.array(self.local_rewards)
        placed = self.policy >= 0
        sim = self.sim
        records = []
        for job in range(len(self.jobs)):
            start, end = sim.first_start[job] / step, sim.finish_time[job] / step
            records.append(
                {
                    "arrival": int(self.jobs.arrival[job]),
                    "length": int(self.jobs.length[job]),
                    "gpus": int(self.jobs.gpus[job]),
                    "cpus": int(self.jobs.cpus[job]),
                    "type": JOB_TYPES[int(self.jobs.kind[job])],
                    "policy": ALLOCATION_POLICIES[self.policy[job]] if placed[job] else None,
                    "start": float(start) if np.isfinite(start) else None,
                    "finish": float(end) if np.isfinite(end) else None,
                    "penalty": float(self.penalty_steps[job]) if placed[job] else None,
                    "nodes": int(self.nodes_used[job]) if placed[job] else None,
                }
            )
        return {
            "avg_ntat": ntat,
            "avg_wait": float(metrics["avg_wait"]) / step if finished else None,
            "avg_tat": float(metrics["avg_jct"]) / step if finished else None,
            "local_return": float(local.sum()),
            "eq1_return": float(eq1_returns(local, ntat, self.config.gamma)[0])
            if ntat is not None and local.size
            else None,
            "avg_penalty": float(self.penalty_steps[placed].mean()) if placed.any() else None,
            # 004 Fig. 6: how the policy selector allocates each workload type.
            "dgemm_depth_first": self._policy_share(0, 0),
            "daxpy_breadth_first": self._policy_share(1, 1),
            "steps": self.steps,
            "final_time": float(self.sim.now / step),
            "jobs_finished": finished,
            "jobs": records,
        }
