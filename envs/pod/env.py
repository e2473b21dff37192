"""``pod_scheduling_v0``: one scheduler agent per cluster partition (paper 001).

A PettingZoo ``ParallelEnv``. The cluster is any topology of :mod:`envs.topology`
(fat-tree pods, VL2 aggregation groups, BCube sub-cube pairs, racks) and every partition
is managed by an agent ``scheduler_<p>``. Jobs arrive at a home scheduler (uniformly at
random, or at the workload's partition) and are placed at the start of each scheduling
interval (001: 30 minutes), task by task.

Agents and actions
------------------
At every step each agent with work places the next task (a worker, or a parameter
server) of the job at the head of its queue. ``Discrete(A)``, ``A = M + (P - 1) + 1``:

- ``0 .. M-1``: place the task on the agent's target ``i`` -- GPU group ``i`` of its
  partition at device level, server ``i`` at server level (a random GPU group of it with
  room, as 001's server-level variant); ``M`` is the largest partition's target count,
  smaller partitions mask the rest;
- ``M .. M+P-2``: forward the job to the ``j``-th other scheduler (in index order, see
  ``forward_targets``), which continues placing it; at most ``forward_limit`` forwards per
  task, and only to schedulers with room for the task as the step begins (see below);
- ``A-1``: wait -- send the job back to wait for the next interval (releasing the tasks
  claimed so far); for agents with nothing to place it is the only valid action.

A job starts when all its tasks are placed and then runs to completion (001: no
preemption). ``action_mask`` (int8) marks exactly the actions that can be carried out. A
masked-out action does nothing and costs ``illegal_action_penalty`` (RLlib's env check
sends unmasked random actions; nothing crashes). Agents act simultaneously; their actions
are resolved in agent order. When no agent has anything left to place, the simulator runs
to the next interval with waiting jobs, and the rewards of that stretch are paid.

Every action is judged against the mask its agent saw: the state as the step began. A
placement takes room in the agent's own partition only, and nothing another agent does in
the step takes room there (a job starting moves its claims into the simulator, a job sent
back frees them), so a placement its mask allowed always fits. A forward is carried out
after every agent acted: the job goes to the front of the receiver's queue, ahead of the
receiver's own job (whose claims stay held), with its claims kept. The room the sender's
mask saw at the receiver may by then be gone, taken by the receiver's own placement in the
same step. The receiver then meets the job at its head with a mask of the state after the
step, as for any job: it places the task where room is left, forwards the job on (within
``forward_limit``, to a scheduler with room), or sends it back to wait for the next
interval, releasing all its claims -- its only legal action once the task may be forwarded
no more. So no GPU or core is ever given twice, no job is lost or keeps a claim into the
next round, and a task moves at most ``forward_limit`` times. No reward or penalty marks
such a forward (it was legal); the rewards count what follows, the job's later start. The
heuristic drivers never meet it (a plan forwards a job only onto room it keeps for it); a
policy that forwards at random does, in about 5% of its forwards on the demo setting and
30% on the contended one.

Observation
-----------
A ``Dict`` per agent, fixed shapes: its inner graph (node features ``(c, d)`` of 001,
node types, ``edge_index``, edge bandwidth/load/tier, masks), the concurrent jobs' models
``x`` and demands ``r``, the task ``p``, the inter-scheduler graph with a summary per
scheduler, and ``action_mask``; see :mod:`envs.pod.observations` for the table. With
``others="full"`` each agent also sees every partition's node features (001's exchange
of observations; its size grows with P^2 over all agents).

Reward
------
``progress`` (default, 001 §IV-C), ``jct`` or ``contention`` (000), see
:mod:`envs.pod.rewards`; paid at the step that ends a round, 0 otherwise, minus
penalties for masked-out actions. With ``credit="job"`` (``jct`` only) the last step's
infos also carry ``credited_rewards``: every step's reward with each job's cost moved onto
the steps that decided it (:mod:`envs.pod.credit`).

Episode end
-----------
Terminated when every job finished; truncated after ``horizon_intervals`` intervals. The
last observation of a truncated episode (what RLlib bootstraps from) shows the jobs still
waiting in their home schedulers' queues, with wait-only masks and all-zero advice.

Arguments
---------
:class:`envs.pod.config.PodSchedulingConfig` (``PodSchedulingEnv(config)`` or
``envs.make_env("pod_scheduling_v0", **fields)``); defaults: fat-tree k=4, power8 servers,
a Poisson workload of 40 jobs (15 per interval per scheduler), N=8, forward limit 2, the
``contention`` performance model (``perf="ideal"``: no interference, no communication).
``advice="ordering+placement"`` adds that heuristic's advised action to every observation
(:mod:`envs.pod.advice`).
``reset(seed=...)`` draws the workload (as ``simulate.py run`` does with the same seed) and
the home schedulers; ``reset(options={"workload": Workload})`` runs a given workload.
``reset(options={"masks_only": True})`` plays an episode whose observations hold only
``action_mask`` (no features, no advice): for drivers that read the simulator instead, as
the heuristic driver does when evaluation plays a heuristic; the dynamics and rewards are
those of a full episode.

Version: ``pod_scheduling_v0``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from envs.base import EPISODE_OVER
from envs.pod.advice import Advisor
from envs.pod.config import CONTENTION_WEIGHT_BRANCHES, GRAPH_LEVELS, PodSchedulingConfig
from envs.pod.credit import CREDITED_REWARDS, JobCredit
from envs.pod.decisions import DecisionRound
from envs.pod.layout import ClusterLayout
from envs.pod.observations import ObservationBuilder
from envs.pod.rewards import contention_rewards, jct_rewards, progress_rewards, time_in_system
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import build_cluster
from envs.workload import (
    DEFAULT_CATALOG,
    Workload,
    get_catalog,
    make_workload,
    read_trace,
    workload_options,
)
from envs.workload.trace_pipeline import TraceOptions

ENV_NAME = "pod_scheduling_v0"


class PodSchedulingEnv(ParallelEnv):
    """Per-partition scheduler agents on a simulated cluster; see the module docstring."""

    metadata = {"name": ENV_NAME, "render_modes": []}  # noqa: RUF012 -- PettingZoo's contract

    def __init__(self, config: PodSchedulingConfig | None = None, **fields: Any) -> None:
        if config is not None and fields:
            raise ValueError("give a PodSchedulingConfig or keyword fields, not both")
        self.config = config if config is not None else _config_from(fields)
        cfg = self.config
        self.cluster = build_cluster(cfg.topology, server=cfg.server, **cfg.topology_params)
        self.layout = ClusterLayout.build(self.cluster, cfg.level, cfg.fuse_top_switches)
        self._catalog_name = self._workload_catalog()
        self.builder = ObservationBuilder(self.layout, cfg, len(get_catalog(self._catalog_name)))
        num = self.cluster.num_partitions
        self.possible_agents = [f"scheduler_{p}" for p in range(num)]
        self.agents: list[str] = []
        self._observation_spaces = {agent: self.builder.space for agent in self.possible_agents}
        self._action_spaces = {
            agent: spaces.Discrete(self.builder.num_actions) for agent in self.possible_agents
        }
        self._partition_gpus = [
            np.arange(
                self.cluster.group_gpu_offsets[part.groups[0]],
                self.cluster.group_gpu_offsets[part.groups[-1] + 1],
            )
            for part in self.layout.partitions
        ]
        self.sim: Simulator | None = None
        self.round: DecisionRound | None = None
        self.rounds = 0
        self.advisor: Advisor | None = None
        self._masks_only = False
        # Where the seeds of episodes reset without one come from (see reset).
        self._episode_seeds: np.random.Generator | None = None

    # ------------------------------------------------------------------ spaces
    @classmethod
    def sweep_choices(cls, config: Mapping[str, Any]) -> dict[str, list[Any]]:
        """The config fields a hyperparameter sweep varies, each with its choices, for an
        experiment whose config (keyword fields) is ``config``: 001's device- vs
        server-level graphs, and with the ``contention`` reward 000's weight branches."""
        choices: dict[str, list[Any]] = {"level": list(GRAPH_LEVELS)}
        if config.get("reward") == "contention":
            choices["contention_weight"] = list(CONTENTION_WEIGHT_BRANCHES)
        return choices

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (the same object every call)."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent`` (the same object every call)."""
        return self._action_spaces[agent]

    @property
    def observation_nbytes(self) -> int:
        """Bytes of one agent's observation."""
        return self.builder.nbytes()

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict], dict[str, dict]]:
        """Draw (or take) a workload and home schedulers; run to the first decision.

        Without ``seed`` the episode's seed is drawn from a stream seeded by the last
        ``seed`` given (from entropy if none ever was), as Gymnasium's seeding contract has
        it: after a seeded first reset, the episodes an RL sampler starts by itself repeat
        from run to run. A given ``seed`` gives the same episode as always.
        """
        given = seed is not None
        if not given:
            if self._episode_seeds is None:
                self._episode_seeds = np.random.default_rng()
            seed = int(self._episode_seeds.integers(2**63))
        # The seed's children: np_random (homes), advice's tie-breaks, the seed stream.
        homes_seed, advice_seed, stream_seed = np.random.SeedSequence(seed).spawn(3)
        if given:
            self._episode_seeds = np.random.default_rng(stream_seed)
        self.np_random = np.random.default_rng(homes_seed)
        workload = (options or {}).get("workload") or self._make_workload(seed)
        if workload.catalog_name != self._catalog_name:
            raise ValueError(
                f"the workload uses model catalog {workload.catalog_name!r} but this "
                f"environment's spaces were built for {self._catalog_name!r}"
            )
        self.workload = workload
        cfg = self.config
        num = self.cluster.num_partitions
        if cfg.home == "partition" and (workload.partition >= 0).all():
            self.homes = workload.partition % num
        else:
            self.homes = self.np_random.integers(0, num, size=len(workload))
        self.sim = Simulator(
            self.cluster,
            workload,
            SimulatorConfig(
                interval_s=cfg.interval_s,
                horizon_s=cfg.horizon_intervals * cfg.interval_s,
                coefficients=cfg.coefficients,
                **cfg.speed_switches._asdict(),
            ),
        )
        self.shares = np.zeros((len(workload), num))
        self.running_in: list[set[int]] = [set() for _ in range(num)]
        self.placements: dict[int, tuple[np.ndarray, int]] = {}
        # Rounds each job was sent back to wait (the job_times observation shows it).
        self.deferrals = np.zeros(len(workload), dtype=np.int64)
        self.builder.bind(self.sim)
        self.agents = list(self.possible_agents)
        self.rounds = 0
        self.round = None
        self._stretch_start = 0.0  # time the next rewards count from
        self._round_time = 0.0  # time the round in progress began
        self.credit = JobCredit(num) if cfg.credit == "job" else None
        self._masks_only = bool((options or {}).get("masks_only", False))
        # Seeded apart from np_random (a second child), so advice leaves the homes as they were.
        self.advisor = (
            Advisor(self, cfg.advice, int(advice_seed.generate_state(1)[0]))
            if cfg.advice is not None and not self._masks_only
            else None
        )
        if self.sim.run_until_decision():
            self._start_round()
        infos = {agent: {} for agent in self.agents}
        return self._observations(), infos

    def step(
        self, actions: dict[str, int]
    ) -> tuple[dict, dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict]]:
        """Resolve every agent's action (in agent order); run the simulator between rounds.
        RuntimeError before :meth:`reset` or once the episode is over (no agent left):
        stepping on would run the simulation's end again and pay its rewards twice."""
        if self.sim is None or not self.agents:
            raise RuntimeError(EPISODE_OVER)
        num = self.cluster.num_partitions
        rewards = np.zeros(num)
        illegal = np.zeros(num, dtype=bool)
        if self.round is not None:
            # Judge every action against the mask its agent saw, then carry them out in
            # agent order; forwarded jobs reach their receivers after everyone acted.
            masks = self._masks
            forwarded = []
            for agent_index, agent in enumerate(self.possible_agents):
                if agent not in actions:
                    continue
                if self.round.head(agent_index) is None:
                    # Nothing to place: only waiting is legal, and it does nothing.
                    mask = masks[agent_index]
                    action = int(actions[agent])
                    illegal[agent_index] = not (0 <= action < len(mask) and mask[action])
                    continue
                outcome = self._apply(agent_index, int(actions[agent]), masks[agent_index])
                if outcome is None:
                    illegal[agent_index] = True
                elif outcome >= 0:
                    forwarded.append((agent_index, outcome))
            self.round.forward(forwarded)
        rewards -= self.config.illegal_action_penalty * illegal
        terminated = truncated = False
        if self.round is None or self.round.finished:
            rewards += self._run_simulation()
            if self.round is None:
                terminated = bool((self.sim.status == JobStatus.FINISHED).all())
                truncated = not terminated
        observations = self._observations(horizon=truncated)
        reward_dict = {agent: float(rewards[i]) for i, agent in enumerate(self.possible_agents)}
        terminations = dict.fromkeys(self.possible_agents, terminated)
        truncations = dict.fromkeys(self.possible_agents, truncated)
        infos = {
            agent: {"illegal_action": bool(illegal[i]), "time": self.sim.now}
            for i, agent in enumerate(self.possible_agents)
        }
        if self.credit is not None:
            self.credit.close_step(rewards)
            if terminated or truncated:
                credited = self.credit.credited_rewards()
                for i, agent in enumerate(self.possible_agents):
                    infos[agent][CREDITED_REWARDS] = credited[:, i]
        if terminated or truncated:
            self.agents = []
        return observations, reward_dict, terminations, truncations, infos

    def current_masks(self) -> list[np.ndarray]:
        """Per agent (in ``possible_agents`` order), the action mask the next step judges
        its action by: the one in its last observation."""
        return list(self._masks)

    def observe_masks_only(self) -> None:
        """From now on return only each agent's action mask, as ``reset``'s ``masks_only``
        option does, and give no advice.

        For simulating ahead on a copy (the rollouts of :mod:`envs.pod.rollouts`): what
        happens depends on the actions alone, and the masks judge them, so the dynamics
        are those of the full environment; building the full observations was most of a
        step's time and nobody reads them there.
        """
        self._masks_only = True
        self.advisor = None

    # ------------------------------------------------------------------ internals
    def _workload_catalog(self) -> str:
        """The model catalog of this environment's jobs (it sizes the observation)."""
        cfg = self.config
        if cfg.trace is not None:
            return str(cfg.trace_params.get("catalog", DEFAULT_CATALOG))
        params = dict(cfg.workload_params)
        params.pop("num_schedulers", None)
        probe = make_workload(cfg.workload, num_jobs=1, rng=np.random.default_rng(0), **params)
        return probe.catalog_name

    def _make_workload(self, seed: int | None) -> Workload:
        cfg = self.config
        # The same stream simulate.py run uses for its --seed, so both see the same jobs.
        rng = np.random.default_rng(seed)
        if cfg.trace is not None:
            options = TraceOptions(max_jobs=cfg.num_jobs, **cfg.trace_params)
            workload, _ = read_trace(cfg.trace, cfg.trace_format, options, rng=rng)
            return workload
        params = dict(cfg.workload_params)
        options = workload_options(cfg.workload)
        if "num_schedulers" in options:
            params.setdefault("num_schedulers", self.cluster.num_partitions)
        if "interval_s" in options:
            # A generator's rate is per its interval (001's 30 minutes by default): per
            # this environment's own, unless the config says otherwise.
            params.setdefault("interval_s", cfg.interval_s)
        return make_workload(cfg.workload, num_jobs=cfg.num_jobs, rng=rng, **params)

    def _apply(self, agent: int, action: int, mask: np.ndarray) -> int | None:
        """Carry out one agent's action. Returns None if it is masked out (nothing done),
        the receiving scheduler for a forward, else -1."""
        assert self.round is not None
        if not 0 <= action < len(mask) or not mask[action]:
            return None
        max_targets = self.layout.max_targets
        if self.credit is not None:
            self.credit.record(agent, self.round.head(agent).job)
        if action == len(mask) - 1:
            self.deferrals[self.round.defer(agent)] += 1
        elif action >= max_targets:
            return int(self.builder.forward_targets[agent][action - max_targets])
        else:
            head = self.round.head(agent)
            assert head is not None
            group = self._target_group(self.layout.partitions[agent], action)
            started = self.round.place_task(agent, group)
            if started is not None:
                self._register_start(started, head.groups, head.placed_by)
                if self.credit is not None:
                    self.credit.started(started)
        return -1

    def _target_group(self, layout: Any, action: int) -> int:
        if self.layout.level == "device":
            return int(layout.targets[action])
        assert self.round is not None
        head = self.round.head(layout.partition)
        assert head is not None
        candidates = layout.groups[layout.group_target == action]
        fitting = candidates[self.round.fitting_groups(head, candidates)]
        return int(self.np_random.choice(fitting))

    def _register_start(self, job: int, groups: list[int], placed_by: list[int]) -> None:
        counts = np.bincount(placed_by, minlength=self.cluster.num_partitions)
        self.shares[job] = counts / len(placed_by)
        partitions = self.cluster.server_partition[self.cluster.group_server[np.asarray(groups)]]
        for partition in np.unique(partitions).tolist():
            self.running_in[partition].add(job)
        self.placements[job] = (
            np.asarray(groups, dtype=np.int64),
            len(groups) - int(self.sim.num_ps[job]),
        )

    def _run_simulation(self) -> np.ndarray:
        """Run to the next round; rewards of the stretch per agent."""
        assert self.sim is not None
        sim, cfg = self.sim, self.config
        start, work_before = self._stretch_start, sim.work_done.copy()
        contention = None
        if cfg.reward == "contention":
            contention = contention_rewards(
                sim, self.shares, self._partition_gpus, cfg.contention_weight, 1.0
            )
        more = sim.run_until_decision()
        self._stretch_start = sim.now
        if cfg.reward == "progress":
            rewards = progress_rewards(sim, work_before, self.shares)
        elif cfg.reward == "jct":
            present = time_in_system(sim, start)
            rewards = jct_rewards(present, self.homes, self.cluster.num_partitions, cfg.interval_s)
            if self.credit is not None:
                # Time before the round that decided (the first stretch starts at 0, its
                # round later) stays home: nothing had been decided about it.
                undecided = time_in_system(sim, start, until=self._round_time)
                self.credit.settle_stretch(present - undecided, self.homes, cfg.interval_s)
        else:
            assert contention is not None
            # The state is the one the round's placements left: it held from the round
            # on, not from the stretch's start (0 for the first stretch, before any round).
            rewards = contention * (sim.now - self._round_time) / cfg.interval_s
        finished = np.flatnonzero(sim.status == JobStatus.FINISHED)
        done = finished.tolist()
        for jobs in self.running_in:
            jobs.difference_update(done)
        for job in done:
            self.placements.pop(job, None)
        self.round = None
        if more:
            self._start_round()
        return rewards

    def _start_round(self) -> None:
        assert self.sim is not None
        self.round = DecisionRound(
            self.sim, self.homes, self.cluster.num_partitions, self.config.queue_order
        )
        self.rounds += 1
        self._round_time = self.sim.now

    def _observations(self, horizon: bool = False) -> dict[str, dict[str, np.ndarray]]:
        """Every agent's observation now. ``horizon``: the last one of an episode cut at the
        horizon, which shows the jobs still waiting in their home schedulers' queues as the
        next round would hold them, with wait-only masks (and no advice: no round is in
        progress). RLlib bootstraps a truncated episode's returns with the critic's value
        of it, and what the waiting jobs will cost is most of that value: without a round
        the queue columns and job slots read as if nothing waited."""
        assert self.sim is not None
        if self._masks_only:
            self._masks = self.builder.action_masks(self.round, self.config.forward_limit)
            return {
                agent: {"action_mask": mask}
                for agent, mask in zip(self.possible_agents, self._masks, strict=True)
            }
        shown = self.round
        if horizon:
            shown = DecisionRound(
                self.sim, self.homes, self.cluster.num_partitions, self.config.queue_order
            )
        observations = self.builder.observe_all(
            self.sim,
            shown,
            self.running_in,
            self.placements,
            self.config.forward_limit,
            self.deferrals,
        )
        if horizon:  # the episode is over: only waiting is legal
            wait_only = self.builder.action_masks(None, self.config.forward_limit)
            for observation, mask in zip(observations, wait_only, strict=True):
                observation["action_mask"] = mask
        # Actions are judged against exactly the masks their agents saw.
        self._masks = [observation["action_mask"] for observation in observations]
        if self.advisor is not None:
            for observation, advice in zip(
                observations, self.advisor.advice(self._masks), strict=True
            ):
                observation["advice"] = advice
        return dict(zip(self.possible_agents, observations, strict=True))


def _config_from(fields: dict[str, Any]) -> PodSchedulingConfig:
    allowed = [field.name for field in dataclasses.fields(PodSchedulingConfig)]
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown {ENV_NAME} option(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    return PodSchedulingConfig(**fields)


def parallel_env(**fields: Any) -> PodSchedulingEnv:
    """PettingZoo-style constructor: ``envs.pod.env.parallel_env(topology="vl2", ...)``."""
    return PodSchedulingEnv(**fields)
