"""Per-job credit of the ``jct`` reward (paper 001 §IV-C: a placement's sample carries its
own job's reward).

With ``credit="round"`` (the default) every stretch's reward is paid on the step that ends
a decision round, to each job's home scheduler: a round is tens of agent steps, so the
placements that decided a job's fate get its cost only through discounting and the critic.
With ``credit="job"`` the environment still pays those rewards (episode returns, metrics and
evaluations are unchanged), and in addition works out where each job's time in the system
belongs and hands the re-attributed rewards over at the episode's last step
(``infos[agent]["credited_rewards"]``, one float per step of that agent):

- a job's time while **running** is charged to the steps that placed it (every agent step
  that placed one of its tasks, or forwarded it, in the round it started), split evenly;
- its time while **waiting** after a round in which some scheduler worked on it is charged to
  that round's steps on it (the step that sent it back to wait, and any placements of its
  tasks released with it);
- the rest (a job arriving between rounds, waiting for the first round it can take part in)
  stays where the ``jct`` reward pays it: the round-end step of its home scheduler.

The re-attribution only moves reward between steps and agents: summed over all agents and
steps it equals the paid rewards (to float rounding). Illegal-action penalties stay on their
steps. RLlib applies it with :func:`tune.credit.credit_rewards_on_episode_end`, which needs
whole episodes (``batch_mode: complete_episodes``).

A job's whole running time lands on the step that placed it, however far in the future
that time is spent; so the credited rewards are meant for undiscounted returns. With a
discount (``gamma`` or GAE's ``lambda`` below 1) a placement deferred by k steps carries
its cost times (gamma lambda)^k, and waiting looks cheaper than it is: experiment configs
refuse the combination (``tune.experiment``).
"""

from __future__ import annotations

import numpy as np

#: How the ``jct`` reward's costs reach the agents' steps (see the module docstring).
CREDIT_RULES = ("round", "job")
#: The last step's ``infos[agent]`` key of an agent's credited rewards.
CREDITED_REWARDS = "credited_rewards"

Decisions = list[tuple[int, int]]  # (step, agent) pairs


class JobCredit:
    """Bookkeeping of one episode: which steps worked on which job, and each step's reward
    after moving every job's cost onto the steps that decided it."""

    def __init__(self, num_agents: int) -> None:
        self.num_agents = num_agents
        self.step = 0  # index of the step being played
        self._paid: list[np.ndarray] = []  # per closed step: [num_agents] rewards paid
        self._moves: list[tuple[int, int, float]] = []  # (step, agent, reward added)
        self._this_round: dict[int, Decisions] = {}  # job -> steps on it this round
        self._placed_by: dict[int, Decisions] = {}  # started job -> the steps that placed it

    def record(self, agent: int, job: int) -> None:
        """``agent`` works on ``job`` at the current step (places, forwards or defers it)."""
        self._this_round.setdefault(job, []).append((self.step, agent))

    def started(self, job: int) -> None:
        """``job`` started at the current step: its running time belongs to this round's
        steps on it."""
        self._placed_by[job] = self._this_round[job]

    def settle_stretch(self, cost: np.ndarray, homes: np.ndarray, interval_s: float) -> None:
        """Move the stretch's costs (``cost[j]``: seconds job ``j`` spent in the system, as
        the ``jct`` reward charged its home agent at the current step) onto the steps that
        decided them, and start a new round. A stretch follows a round, so a job started
        in it or before ran throughout its part of the stretch."""
        for job in np.flatnonzero(cost > 0).tolist():
            decisions = self._placed_by.get(job) or self._this_round.get(job)
            if not decisions:
                continue
            reward = -float(cost[job]) / interval_s
            self._moves.append((self.step, int(homes[job]), -reward))
            share = reward / len(decisions)
            self._moves.extend((step, agent, share) for step, agent in decisions)
        self._this_round = {}

    def close_step(self, paid: np.ndarray) -> None:
        """The current step paid ``paid`` (per agent); the next step begins."""
        self._paid.append(np.asarray(paid, dtype=np.float64).copy())
        self.step += 1

    def credited_rewards(self) -> np.ndarray:
        """[steps, num_agents]: every closed step's paid rewards with the costs moved."""
        rewards = np.array(self._paid, dtype=np.float64).reshape(-1, self.num_agents)
        if self._moves:
            steps, agents, moved = zip(*self._moves, strict=True)
            np.add.at(rewards, (list(steps), list(agents)), moved)
        return rewards
