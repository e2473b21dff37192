"""The contention-aware formulation's dynamics (000 §IV) over podsched's simulator.

:class:`ContentionCore` keeps one episode: a :class:`~envs.sim.Simulator` of the 4 x 8
flat cluster in interval mode (a decision every ``round_s`` seconds while jobs wait) with
its bandwidth-sharing model on -- every link's bandwidth is split equally among the jobs
whose traffic crosses it -- so a job's contention sensitivity ``CS = step time now /
step time alone`` (000 eq. 1, read from :attr:`envs.sim.Simulator.contention`) rises when
the agent co-locates jobs whose traffic shares node ports. :class:`envs.contention.
ContentionEnv` is its Gymnasium face; :mod:`envs.contention.baselines` runs LAS, SRTF and
FIFO on the same simulator.

**Actions** (000 §IV). One action slot per GPU demand class (``gpu_choices``, ascending),
each with one action per node subset: action ``c x S + s`` starts the candidate whose
demand is the c-th GPU choice -- the job the state's right half shows in that demand's
cells -- on node subset s; its slot is masked while no candidate has that demand. Slots
follow the demand, never the queue, so the same state and mask give every action the same
meaning (000: "job type 1 is encoded in slot_{2,2}", and the reference code lists its
candidates by demand whatever the queue order).

**A round** (000 Alg. 1). With time frozen the agent places candidate jobs one step at a
time; "do nothing" ends the decision: the simulator runs to the next round at which jobs
wait and that step's reward is 000 eq. 2 over the time just simulated,

    reward = -W1 x CS + W2 x Util
    CS     = mean over the jobs that ran of their time-averaged CS (1 if none ran), or
             with ``contention_term="degradation"`` the mean of 1 - 1/CS (0 if none ran)
    Util   = busy GPU-seconds / (GPUs x seconds simulated)

Placing steps get 0. In RL-Hybrid mode a "do nothing" first tries the greedy fallback
(the first candidate, in queue order, that the fallback rule can place); only when none
fits does the round end. With ``preempt_cs``, after every placement and at the start of
every decision the jobs whose CS exceeds the threshold are preempted back to the queue
(000 §V-C; they keep their progress).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from envs.base import begin_step
from envs.contention.config import ContentionConfig
from envs.contention.placement import (
    PlacementOptions,
    candidate_jobs,
    node_free_gpus,
    task_groups,
)
from envs.sim import JobStatus, SimulationResult, Simulator, SimulatorConfig
from envs.topology import Cluster, build_cluster
from envs.workload import Workload, get_catalog

_FINISHED = int(JobStatus.FINISHED)

#: Upper edges of the bins of the CS distribution in summaries (the last bin is open).
CS_BINS: tuple[float, ...] = (1.01, 1.1, 1.25, 1.5, 2.0, 3.0)


@functools.lru_cache(maxsize=8)
def contention_cluster(nodes: int, gpus_per_node: int, link_gbps: float) -> Cluster:
    """The flat cluster of ``nodes`` x ``gpus_per_node`` GPUs (cached: immutable)."""
    return build_cluster("flat", servers=nodes, gpus_per_server=gpus_per_node, host_gbps=link_gbps)


def simulator_config(config: ContentionConfig) -> SimulatorConfig:
    """Rounds of ``round_s``, bandwidth sharing on, interference as configured."""
    return SimulatorConfig(
        interval_s=config.round_s,
        restart_cost_s=config.restart_cost_s,
        horizon_s=config.horizon_s,
        interference=config.interference,
        communication=True,
        link_sharing=config.link_sharing,
    )


def cs_distribution(sim: Simulator) -> dict[str, Any]:
    """Per-job time-averaged CS of the jobs that ran: a histogram over :data:`CS_BINS`,
    the mean per model, and the share of jobs that ran contended (CS > 1.01)."""
    ran = sim.run_time > 0
    cs = sim.cs_seconds[ran] / sim.run_time[ran]
    edges = np.array([1.0, *CS_BINS, np.inf])
    counts, _ = np.histogram(cs, bins=edges)
    labels = [f"{low:g}-{high:g}" for low, high in itertools.pairwise(edges)]
    names = sim.workload.catalog.names
    models = sim.workload.model[ran]
    return {
        "cs_histogram": dict(zip(labels, counts.tolist(), strict=True)),
        "cs_by_model": {
            names[m]: float(cs[models == m].mean()) for m in np.unique(models).tolist()
        },
        "contended_share": float((cs > CS_BINS[0]).mean()) if len(cs) else None,
    }


class ContentionCore:
    """One episode at a time; see the module docstring. Public read-only state: ``sim``,
    ``workload``, ``steps``, ``rounds``, ``rewards``, ``over``."""

    def __init__(self, config: ContentionConfig) -> None:
        self.config = config
        self.cluster = contention_cluster(config.nodes, config.gpus_per_node, config.link_gbps)
        assert self.cluster.num_gpus == config.total_gpus
        self.options = PlacementOptions.of(config)
        self._sim_config = simulator_config(config)
        self._subsets = self.options.num_subsets
        bandwidth = get_catalog("deepshare").column("bandwidth_mb_s")
        self._bandwidth_code = bandwidth / bandwidth.max()
        self.over = True

    # -- episode ------------------------------------------------------------------------------

    def reset(self, workload: Workload) -> None:
        """Start ``workload`` and run to its first round."""
        config = self.config
        self.workload = workload
        self.sim = Simulator(self.cluster, workload, self._sim_config)
        demands = self.options.demands
        self.demand_class = np.searchsorted(demands, workload.num_workers)
        if config.profile == "type":
            classes = len(demands)
            code = (workload.model * classes + self.demand_class + 1) / (
                len(workload.catalog) * classes
            )
        else:
            code = self._bandwidth_code[workload.model]
        # Index -1 (a free GPU) reads the appended 0.
        self.code = np.append(code, 0.0).astype(np.float32)
        self.steps = self.rounds = self.fallbacks = self.cs_preemptions = 0
        self.rewards: list[float] = []
        self.over = False
        self.sim.run_until_decision()
        self._snapshot()
        self._preempt_contended()

    def _snapshot(self) -> None:
        sim = self.sim
        self._since = float(sim.now)
        self._cs_seconds = sim.cs_seconds.copy()
        self._run_time = sim.run_time.copy()
        self._gpu_seconds = float(sim.attained_gpu_seconds.sum())

    # -- actions ------------------------------------------------------------------------------

    def candidates(self) -> np.ndarray:
        """000's K candidate jobs: the first job of each distinct GPU demand from the head
        of the queue, in queue order (RL-Hybrid's fallback tries them in this order)."""
        return candidate_jobs(
            self.sim.waiting_jobs(), self.demand_class, self.config.num_candidates
        )

    def slot_jobs(self) -> np.ndarray:
        """int64 per action slot (demand class c, ``gpu_choices`` ascending): the candidate
        whose demand is class c, or -1 when no candidate has it (its actions are masked)."""
        slots = np.full(self.config.num_slots, -1, dtype=np.int64)
        if self.over:
            return slots
        candidates = self.candidates()
        # Candidates have distinct demands (candidate_jobs), so no two share a slot.
        slots[self.demand_class[candidates]] = candidates
        return slots

    def node_free(self) -> np.ndarray:
        """Free GPUs per node."""
        return node_free_gpus(self.cluster, self.sim.free_gpus)

    def action_mask(self) -> np.ndarray:
        """int8 over ``D x S + 1`` actions: at ``c x S + s`` the candidate of demand class c
        on node subset s, 1 when such a candidate waits and fits there now; then "do
        nothing" (always allowed)."""
        mask = np.zeros(self.config.num_actions, dtype=np.int8)
        mask[-1] = 1
        if self.over:
            return mask
        free = self.node_free()
        for slot in np.flatnonzero(self.slot_jobs() >= 0).tolist():
            start = slot * self._subsets
            mask[start : start + self._subsets] = self.options.feasible(slot, free)
        return mask

    def step(self, action: int) -> tuple[float, bool, bool, dict[str, Any]]:
        """Apply ``action``: ``c x S + s`` starts the candidate of demand class c on node
        subset s; a masked one is taken as "do nothing" (flagged). Returns (reward,
        terminated, truncated, details)."""
        mask, details = begin_step(self, action)
        reward = 0.0
        if action != self.config.nothing_action and mask[action]:
            slot, subset = divmod(action, self._subsets)
            details["placed"] = self._place(int(self.slot_jobs()[slot]), subset)
            details["preempted"] = self._preempt_contended()
        elif self.config.mode == "hybrid" and (fallback := self._greedy()) is not None:
            self.fallbacks += 1
            details["fallback"] = fallback
            details["preempted"] = self._preempt_contended()
        else:
            reward, details["round"] = self._end_round()
        self.rewards.append(reward)
        finished = bool((self.sim.status == _FINISHED).all())
        terminated = self.over and finished
        truncated = not terminated and (self.over or self.steps >= self.config.step_limit)
        return reward, terminated, truncated, details

    def _place(self, job: int, subset: int) -> dict[str, Any]:
        """Start ``job`` with its GPUs split evenly over node subset ``subset``."""
        sim = self.sim
        demand_class = int(self.demand_class[job])
        nodes = self.options.subsets[subset]
        per_node = int(self.options.per_node[demand_class, subset])
        sim.place(job, task_groups(self.cluster, sim.free_gpus, nodes, per_node))
        return {
            "job": job,
            "model": self.workload.model_name(job),
            "gpus": int(sim.num_workers[job]),
            "nodes": list(nodes),
            "gpus_per_node": per_node,
            "cs": float(sim.contention[job]),
        }

    def _greedy(self) -> dict[str, Any] | None:
        """RL-Hybrid's fallback: the first candidate the fallback rule can place, placed."""
        free = self.node_free()
        for job in self.candidates().tolist():
            subset = self.options.choose(
                self.config.fallback_placement, int(self.demand_class[job]), free
            )
            if subset is not None:
                return self._place(job, subset)
        return None

    def _preempt_contended(self) -> list[int]:
        """Preempt the running jobs whose CS exceeds ``preempt_cs`` (000 §V-C)."""
        threshold = self.config.preempt_cs
        if threshold is None or self.over:
            return []
        sim = self.sim
        running = sim.running_jobs()
        victims = running[sim.contention[running] > threshold].tolist()
        for job in victims:
            sim.preempt(job)
        self.cs_preemptions += len(victims)
        return victims

    def _end_round(self) -> tuple[float, dict[str, float]]:
        """Run to the next decision; 000 eq. 2 over the time simulated."""
        sim = self.sim
        alive = sim.run_until_decision()
        self.rounds += 1
        elapsed = sim.now - self._since
        ran_time = sim.run_time - self._run_time
        ran = ran_time > 0
        cs = (sim.cs_seconds - self._cs_seconds)[ran] / ran_time[ran]
        if self.config.contention_term == "cs":
            contention = float(cs.mean()) if len(cs) else 1.0
        else:
            contention = float((1.0 - 1.0 / cs).mean()) if len(cs) else 0.0
        busy = float(sim.attained_gpu_seconds.sum()) - self._gpu_seconds
        utilization = busy / (self.cluster.num_gpus * elapsed) if elapsed > 0 else 0.0
        reward = -self.config.w1 * contention + self.config.w2 * utilization
        self._snapshot()
        if alive:
            preempted = self._preempt_contended()
        else:
            self.over, preempted = True, []
        return reward, {
            "contention": contention,
            "utilization": utilization,
            "seconds": float(elapsed),
            "preempted": preempted,
        }

    # -- state --------------------------------------------------------------------------------

    def observe(self) -> np.ndarray:
        """000 Fig. 2's state, float32 ``(nodes, 2 x GPUs per node)`` (a fresh array)."""
        nodes, per_node = self.config.nodes, self.config.gpus_per_node
        state = np.zeros((nodes, 2 * per_node), dtype=np.float32)
        state[:, :per_node] = self.code[self.sim.gpu_job].reshape(nodes, per_node)
        if self.over:
            return state
        for job in self.candidates().tolist():
            for row, column in self.options.cells[int(self.demand_class[job])]:
                state[row, per_node + column] = self.code[job]
        return state

    # -- results ------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The episode so far: the simulator's metrics (avg and p90 JCT, utilization, mean
        and p90 of the jobs' time-averaged CS, ...), the CS distribution and counts."""
        metrics = SimulationResult.from_simulator(self.sim, f"rl-{self.config.mode}").metrics()
        return {
            **metrics,
            **cs_distribution(self.sim),
            "return": float(np.sum(self.rewards)),
            "steps": self.steps,
            "rounds": self.rounds,
            "fallbacks": self.fallbacks,
            "cs_preemptions": self.cs_preemptions,
            "final_time": float(self.sim.now),
        }
