"""Drive ``pod_scheduling_v0`` with a heuristic scheduler of :mod:`envs.schedulers`.

At the start of every round the heuristic plans the whole decision exactly as
``simulate.py run`` would (it runs on a stand-in of the simulator that records
placements instead of starting jobs). The driver then turns the plan into the agents'
actions, task by task: place the task if its planned GPU group is in the agent's
partition, else forward the job to the scheduler of that partition; unplanned jobs wait.
The jobs start on exactly the planned groups, so the episode's metrics equal those of
``simulate.py run --no-preemption`` with the same workload, seed and interval (device
level; the driver plans without preemption, so ``las``, ``srtf`` and ``gittins`` differ
from ``simulate.py run``'s preemptive default; a random ordering or placement needs the
driver's ``seed`` equal to ``--seed``).

Where the planned action is masked out, the driver takes the first legal action among the
targets planned for the job's other tasks; else, for a forward it may not make, the first
target of its own partition the task fits; else it waits (else takes the first legal
action). So an episode always moves on. That happens only where the environment cannot
follow the plan: at server level, where the environment picks the GPU group inside the
chosen server itself (a task may land on another group than planned, and fill the one a
later task was planned on), and where a task may be forwarded no more
(``forward_limit``; with 0 a job is placed where it arrived, or waits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import JobStatus, Simulator

if TYPE_CHECKING:  # the environment builds its advice from this module (envs.pod.advice)
    from envs.pod.env import PodSchedulingEnv


class _PlanningSimulator:
    """Reads through to a simulator, but ``place`` only records the plan.

    Free resources, job status and the running set reflect the planned placements, as
    the real simulator would after starting them, so a scheduler that remembers what it
    saw between decisions sees the same as under ``simulate.py run``.
    """

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self.plan: dict[int, np.ndarray] = {}

    def begin(self) -> None:
        """Start planning a new decision from the simulator's current state."""
        self.plan = {}
        self.free_gpus = self._sim.free_gpus.copy()
        self.free_cores = self._sim.free_cores.copy()
        self.status = self._sim.status.copy()

    def place(
        self, job: int, task_groups: Any, gpus: Any = None, speed_factor: float = 1.0
    ) -> None:
        """Record the placement and claim its resources in the planning view."""
        groups = np.asarray(task_groups, dtype=np.int64)
        task_gpus, task_cpus = self._sim.task_demands(job, len(groups) - int(self._sim.num_ps[job]))
        np.subtract.at(self.free_gpus, groups, task_gpus)
        np.subtract.at(self.free_cores, self._sim.cluster.group_socket[groups], task_cpus)
        self.status[job] = JobStatus.RUNNING
        self.plan[int(job)] = groups

    def running_jobs(self) -> np.ndarray:
        """Running jobs, planned ones included."""
        return np.flatnonzero(self.status == JobStatus.RUNNING)

    def waiting_jobs(self) -> np.ndarray:
        """Waiting jobs not planned yet, in arrival order."""
        waiting = self._sim.waiting_jobs()
        return waiting[self.status[waiting] == JobStatus.WAITING]

    def __getattr__(self, name: str) -> Any:
        if name == "_sim":  # not set yet (copy and pickle build the object bare)
            raise AttributeError(name)
        return getattr(self._sim, name)


class HeuristicPodPolicy:
    """Actions for every agent of a :class:`PodSchedulingEnv` from ``ordering+placement``."""

    def __init__(self, env: PodSchedulingEnv, name: str, seed: int = 0) -> None:
        self.env = env
        # The agents place and forward tasks; they cannot preempt, so neither does the plan.
        self.scheduler = make_scheduler(
            name, rng=np.random.default_rng(seed), preemption=PreemptionSettings(enabled=False)
        )
        self._planned_round: tuple[int, int] | None = None
        self._proxy: _PlanningSimulator | None = None
        self.plan: dict[int, np.ndarray] = {}

    def actions(self, legal_only: bool = True) -> dict[str, int]:
        """The action of every live agent for the environment's current state: the plan's,
        or where the mask forbids it a legal one (see the module doc); with
        ``legal_only=False`` the plan's even then (the advice shows none there)."""
        env = self.env
        round_ = env.round
        if round_ is None:
            return {agent: env.builder.num_actions - 1 for agent in env.agents}
        key = (id(env.sim), env.rounds)
        if key != self._planned_round:
            self._plan(env.sim)
            self._planned_round = key
        wait = env.builder.num_actions - 1
        masks = env.current_masks() if legal_only else []
        actions = {}
        for index, agent in enumerate(env.possible_agents):
            if agent not in env.agents:
                continue
            head = round_.head(index)
            if head is None or head.job not in self.plan:
                actions[agent] = wait
                continue
            planned = self.plan[head.job]
            action = self._action_for(index, int(planned[head.task]))
            if legal_only and not masks[index][action]:
                action = self._fallback(index, action, planned[head.task + 1 :], masks[index])
            actions[agent] = action
        return actions

    def _fallback(
        self, agent: int, planned_action: int, later_groups: np.ndarray, mask: np.ndarray
    ) -> int:
        """A legal action where ``planned_action`` is masked out (see the module doc)."""
        for group in later_groups.tolist():
            action = self._action_for(agent, int(group))
            if mask[action]:
                return action
        targets = self.env.layout.max_targets
        if planned_action >= targets:  # a forward it may not make: here, if anywhere
            here = np.flatnonzero(mask[:targets])
            if len(here):
                return int(here[0])
        wait = len(mask) - 1
        return wait if mask[wait] else int(np.flatnonzero(mask)[0])

    def keep_plan_of(self, original: HeuristicPodPolicy) -> None:
        """On a deep copy of ``original`` and its environment: keep the plan of the round in
        progress, as ``original`` would, instead of planning the round again (a second plan
        would advance per-job scheduler state such as DSIF's delay counts twice)."""
        if original._planned_round == (id(original.env.sim), original.env.rounds):
            self._planned_round = (id(self.env.sim), self.env.rounds)

    def _plan(self, sim: Simulator | None) -> None:
        assert sim is not None
        if self._proxy is None or self._proxy._sim is not sim:
            # One stand-in per simulator, so per-simulation scheduler state carries over.
            self._proxy = _PlanningSimulator(sim)
        self._proxy.begin()
        self.scheduler.schedule(self._proxy)  # type: ignore[arg-type]
        self.plan = self._proxy.plan

    def _action_for(self, agent: int, group: int) -> int:
        env = self.env
        cluster = env.cluster
        partition = int(cluster.server_partition[cluster.group_server[group]])
        if partition != agent:
            forward = int(np.flatnonzero(env.builder.forward_targets[agent] == partition)[0])
            return env.layout.max_targets + forward
        layout = env.layout.partitions[agent]
        local = int(np.flatnonzero(layout.groups == group)[0])
        return int(layout.group_target[local])
