"""Per-job credit in RLlib: each agent step learns from its own job's cost (issue 12 lever).

``pod_scheduling_v0`` with ``credit: job`` pays its rewards as usual and hands over, at an
episode's last step, every agent step's reward with each job's time in the system moved
onto the steps that decided it (:mod:`envs.pod.credit`). :func:`credit_rewards_on_episode_end`
writes those rewards into the episode before the env runner returns it, so GAE and the
value targets use them; the sum over agents and steps, hence the episode return RLlib
reports, is unchanged. It needs whole episodes: :func:`tune.rllib_config.algorithm_config`
sets ``batch_mode="complete_episodes"`` for such an experiment.
"""

from __future__ import annotations

from typing import Any

from envs.pod.credit import CREDITED_REWARDS


def credit_rewards_on_episode_end(*, episode: Any, **kwargs: Any) -> None:
    """RLlib's ``on_episode_end``: replace each agent's rewards by its credited rewards."""
    for agent, agent_episode in episode.agent_episodes.items():
        info = agent_episode.get_infos(-1)
        if CREDITED_REWARDS not in info:
            continue
        credited = info[CREDITED_REWARDS]
        if agent_episode.t_started != 0 or len(credited) != len(agent_episode):
            raise RuntimeError(
                f"per-job credit needs whole episodes: agent {agent}'s episode holds steps "
                f"{agent_episode.t_started}..{agent_episode.t} but {len(credited)} credited "
                f"rewards came; sample with batch_mode='complete_episodes'"
            )
        agent_episode.set_rewards(
            new_data=[float(reward) for reward in credited], at_indices=slice(0, len(credited))
        )
