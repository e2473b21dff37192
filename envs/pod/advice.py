"""A heuristic's advice in ``pod_scheduling_v0``'s observation (``advice="ordering+placement"``).

At the start of every round the heuristic plans the round exactly as the heuristic driver
(:class:`envs.pod.heuristic.HeuristicPodPolicy`) does, and every agent sees, as a one-hot
``advice`` vector over its actions, the action that plan gives for the task it is placing:
place it on the planned GPU group (or server), forward the job towards the planned
partition, or send it back to wait when the plan leaves the job out. Agents that follow
the advice at every step reproduce the heuristic's schedule job for job; a learned policy
reads it as one more feature and may deviate.

The plan is made once per round: the heuristics keep per-job state across decisions
(002's DSIF counts how often a job was held back), which a re-plan after every deviation
would advance more than once a round. After a deviation the plan may no longer fit: an
advised action the mask forbids is not advised (the vector is all zeros), and so is any
action between rounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.pod.heuristic import HeuristicPodPolicy

if TYPE_CHECKING:
    from envs.pod.env import PodSchedulingEnv


class Advisor:
    """The advice vectors of one episode; build a new one at every reset."""

    def __init__(self, env: PodSchedulingEnv, heuristic: str, seed: int) -> None:
        self.env = env
        self.policy = HeuristicPodPolicy(env, heuristic, seed=seed)

    def advice(self, masks: list[np.ndarray]) -> list[np.ndarray]:
        """Per agent (in ``possible_agents`` order): int8 one-hot of the advised action
        when it is legal under the agent's ``masks`` entry, else all zeros."""
        vectors = [np.zeros_like(mask) for mask in masks]
        if self.env.round is None:
            return vectors
        actions = self.policy.actions(legal_only=False)  # the plan's, legal or not
        for index, agent in enumerate(self.env.possible_agents):
            action = actions.get(agent)
            if action is not None and masks[index][action]:
                vectors[index][action] = 1
        return vectors
