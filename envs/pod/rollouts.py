"""A heuristic improved by rollouts at its hold decisions: the teacher a clone can beat it with.

:class:`~envs.pod.heuristic.HeuristicPodPolicy` plays a heuristic's plan. Under contention
the plan's weak point is *when* it starts a job: DSIF (002) holds a job back at most 3
rounds when its placement would miss the best locality, then spreads it over servers, and
a spread job runs slower and slows the jobs it shares links with. :class:`HoldImprovedPolicy`
plays the same plan, except at every **hold candidate** -- a step at which an agent would
place the first task of a job that the plan spreads over more than one server although
one server of the cluster, empty, could hold the whole job: its GPUs and its cores (the
job's best locality is the server, as DSIF judges it: :func:`envs.schedulers.best_level`).
A job too large for any server, by GPUs or by cores, is spread whatever happens, so
holding it could not buy it locality. There it simulates the rest of the
episode twice, on copies of the environment:

- **as planned**: the heuristic from here on;
- **hold**: the job is sent back to wait at this round and at every later round in which
  the plan still spreads it (at most ``max_hold_rounds``), the heuristic otherwise;

and plays this round's action of the continuation in which all jobs together spend less
time in the system (JCT summed over jobs, unfinished ones counted to the end of the
simulation). This is one step of policy iteration by rollouts (the heuristic is the base
policy; the comparison is exact, the simulator being deterministic given the episode), and
at the next round the same question is asked again. The improved policy is a teacher for
behaviour cloning (``warm_start.improve: hold``, :mod:`tune.imitation`): the network learns
from the observation alone when holding pays, with no simulation at decision time.

Cost: two simulated continuations per candidate (the "as planned" one shared by the
candidates of a step until one of them holds); a few dozen candidates per episode on the
contended fat-tree, about 10-20 s an episode on one core.

A patient base (``dsif-patient`` and the table's other ``*-patient`` orderings) holds a
job itself instead of spreading it, so it meets no such candidate. ``rule="first"``
(``warm_start.improve: hold-first``) asks the question at **every** placement of a job's
first task instead: the plan now, or the job sent back to wait this round only (the
heuristic from the next round on). Over ``dsif-patient+quiet-packing`` on the contended
validation workloads that teacher is about 3% better than the heuristic, at some 215
candidates an episode. The copies step on action masks alone
(:meth:`~envs.pod.env.PodSchedulingEnv.observe_masks_only`): nobody reads their
observations, whose building was half of a continuation's time. One contended episode
(seed 2000) takes 24 s of one core on the faster machine of 2026-11-29, against 53 s with
full observations, for the same 6 holds of 214 candidates.

**What the rollouts know.** A copy carries the episode's whole workload, so by default
the rollouts weigh a decision against jobs that have not arrived yet (``clairvoyant``); no
observation holds those. With ``clairvoyant=False`` each copy withdraws them
(``Simulator.withdraw_future_jobs``) and weighs the jobs arrived so far only. On the
contended validation workloads the ``hold-first`` teacher above is 3.0% better than its
base with hindsight and 1.0% without (README "What the teacher knew").

:class:`SwitchingPolicy` asks a coarser question at the start of every round: which of
several heuristics, played from here to the end, costs least; it plays that heuristic's
plan for the round. It measures how much choosing among the table's heuristics round by
round could win over the best of them (``benchmarks/bench_headroom.py``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from envs.pod.heuristic import HeuristicPodPolicy
from envs.schedulers import best_level

if TYPE_CHECKING:
    from envs.pod.env import PodSchedulingEnv

#: Which placements are hold candidates: "spread" (the plan spreads a job that fits one
#: server; held while the plan still spreads it) or "first" (every first task; held one
#: round).
CANDIDATE_RULES = ("spread", "first")

#: The rollout improvements ``warm_start.improve`` accepts, and the candidate rule of each.
IMPROVEMENTS = {"hold": "spread", "hold-first": "first"}


class HoldImprovedPolicy:
    """``ordering+placement``'s actions, each hold candidate decided by two rollouts.

    ``rule`` (one of :data:`CANDIDATE_RULES`) says which placements are candidates;
    ``max_hold_rounds`` bounds the later rounds a held job is sent back again while the
    plan still spreads it ("spread" only: under "first" a job is held for this round).
    ``clairvoyant`` (the default, as the teachers of "Rollout-improved teacher" were
    measured): the rollouts see the jobs still to arrive; False: only the jobs arrived so
    far (:func:`continuation_cost`), what a scheduler deciding now could know."""

    def __init__(
        self,
        env: PodSchedulingEnv,
        heuristic: str,
        seed: int = 0,
        max_hold_rounds: int = 100,
        rule: str = "spread",
        clairvoyant: bool = True,
    ) -> None:
        if rule not in CANDIDATE_RULES:
            raise ValueError(f"rule={rule!r}; allowed: {', '.join(CANDIDATE_RULES)}")
        self.env = env
        self.clairvoyant = clairvoyant
        self.base = HeuristicPodPolicy(env, heuristic, seed=seed)
        self.rule = rule
        self.max_hold_rounds = max_hold_rounds if rule == "spread" else 0
        self.candidates = 0  # hold candidates met so far
        self.holds = 0  # of which held
        self.decided: list[str] = []  # agents whose action of the last step rollouts chose

    def actions(self) -> dict[str, int]:
        """Every live agent's action: the plan's, or wait where holding pays."""
        env, base = self.env, self.base
        actions = base.actions()
        wait = env.builder.num_actions - 1
        planned_cost: float | None = None
        self.decided = []
        for agent, job in hold_candidates(env, base, actions, self.rule):
            self.candidates += 1
            self.decided.append(agent)
            if planned_cost is None:
                planned_cost = continuation_cost(env, base, actions, clairvoyant=self.clairvoyant)
            held = {**actions, agent: wait}
            held_cost = continuation_cost(
                env, base, held, job, self.max_hold_rounds, clairvoyant=self.clairvoyant
            )
            if held_cost < planned_cost:
                actions = held
                planned_cost = None  # this step's actions changed
                self.holds += 1
        return actions


def hold_candidates(
    env: PodSchedulingEnv, base: HeuristicPodPolicy, actions: dict[str, int], rule: str = "spread"
) -> list[tuple[str, int]]:
    """(agent, job) of every agent whose ``actions`` entry places the first task of a job:
    any such job under ``rule="first"``; under "spread" one that ``base``'s plan spreads
    over servers though one server of the empty cluster could hold the whole job, its GPUs
    and its cores (:func:`envs.schedulers.best_level` 0: DSIF's best locality)."""
    round_ = env.round
    if round_ is None:
        return []
    wait = env.builder.num_actions - 1
    cluster, sim = env.cluster, env.sim
    found = []
    for index, agent in enumerate(env.possible_agents):
        action = actions.get(agent)
        if action is None or action == wait:
            continue
        head = round_.head(index)
        if head is None or head.task != 0 or head.job not in base.plan:
            continue
        if rule == "first":
            found.append((agent, head.job))
            continue
        groups = base.plan[head.job]
        if len(np.unique(cluster.group_server[groups])) < 2:
            continue
        # Level 0 is the server. Judged by GPUs alone, a job whose cores no server has
        # (4 workers of 3 cores and 4 parameter servers of 2 on a server of 16) was a
        # candidate that holding can never consolidate.
        if best_level(sim, head.job) == 0:
            found.append((agent, head.job))
    return found


class SwitchingPolicy:
    """At the first step of every round, the heuristic of ``names`` whose continuation
    costs least; that heuristic's plan for the round.

    Each candidate's continuation is its own plan for this round and the same heuristic to
    the end (:func:`continuation_cost`, total time in the system), simulated on copies of
    the environment; ties go to the first named. By default (``clairvoyant``) a copy
    carries the episode's whole workload, so the rollouts see the jobs still to arrive: a
    reference for how much choosing among the table's heuristics round by round could win
    with hindsight (README "Headroom"); with ``clairvoyant=False`` they see the jobs
    arrived so far only. Every heuristic plans every round
    (its rollout needs the round's plan), so per-job state such as DSIF's hold counts
    advances in each as if it had played. ``picks[name]``: the rounds each heuristic was
    chosen for.
    """

    def __init__(
        self, env: PodSchedulingEnv, names: list[str], seed: int = 0, clairvoyant: bool = True
    ) -> None:
        if not names:
            raise ValueError("names must list at least one ordering+placement heuristic")
        self.env = env
        self.clairvoyant = clairvoyant
        self.drivers = {name: HeuristicPodPolicy(env, name, seed=seed) for name in names}
        self.picks = dict.fromkeys(self.drivers, 0)
        self.current = names[0]
        self._decided_round: int | None = None

    def actions(self) -> dict[str, int]:
        """Every live agent's action: the plan of the round's chosen heuristic."""
        env = self.env
        if env.round is not None and env.rounds != self._decided_round:
            self._decided_round = env.rounds
            costs = {
                name: continuation_cost(env, driver, driver.actions(), clairvoyant=self.clairvoyant)
                for name, driver in self.drivers.items()
            }
            self.current = min(costs, key=costs.__getitem__)
            self.picks[self.current] += 1
        return self.drivers[self.current].actions()


def continuation_cost(
    env: PodSchedulingEnv,
    base: HeuristicPodPolicy,
    actions: dict[str, int],
    held_job: int | None = None,
    max_hold_rounds: int = 0,
    clairvoyant: bool = True,
) -> float:
    """Total time in the system of all jobs (unfinished ones to the end of the simulation)
    when the episode continues, on a copy, with ``actions`` now and ``base`` afterwards,
    except that ``held_job`` is sent back to wait at each later round in which the plan
    still spreads it, for at most ``max_hold_rounds`` rounds.

    ``clairvoyant``: the copy's simulator keeps the jobs still to arrive, as the episode
    will bring them; False withdraws them (``Simulator.withdraw_future_jobs``), so the
    continuation weighs the jobs known now only.
    """
    # Nobody reads the copy's observations: its steps build the masks alone, and the
    # advisor (what advice observations need) is left out of the copy, not copied.
    env_copy, base_copy = copy.deepcopy((env, base), {id(env.advisor): None})
    base_copy.keep_plan_of(base)
    env_copy.observe_masks_only()
    if not clairvoyant:
        env_copy.sim.withdraw_future_jobs()
    wait = env.builder.num_actions - 1
    env_copy.step(actions)
    held_rounds = 0
    while env_copy.agents:
        chosen = base_copy.actions()
        if held_job is not None and held_rounds < max_hold_rounds:
            for agent, job in hold_candidates(env_copy, base_copy, chosen):
                if job == held_job:
                    chosen[agent] = wait
                    held_rounds += 1
        env_copy.step(chosen)
    sim = env_copy.sim
    finish = np.where(np.isfinite(sim.finish_time), sim.finish_time, sim.now)
    return float(np.sum(finish - env_copy.workload.arrival_time))
