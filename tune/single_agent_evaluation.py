"""Evaluate a learned single-agent policy and its environment's baselines, like for like.

For the Gymnasium formulations (``podsched/DeepRM-v0``, ``podsched/CuSH-v0``,
``podsched/SCED2-v0``, ``podsched/Contention-v0``) every policy plays the same episodes: one
per evaluation seed, the workload drawn by ``env.reset(seed=seed)``, so the learned policy
and each baseline face identical job sequences (and Random baselines draw from that
episode's generator, as ``simulate.py`` does). Most baselines play the environment step by
step through its ``baseline_action``; the contention-aware baselines (LAS, SRTF, FIFO)
preempt and decide outside the agent's action space, and RL-TAPS's (Random, SJF, Tetris)
never preempt where the agent must reassign every GPU, so both run as whole simulations
of the same job set (``run_contention_baseline``, ``run_rltaps_baseline``); the
contention baselines have no RL return (NaN), RL-TAPS's earn the agent's reward. Each episode
yields its return and the environment's own summary
(``env.unwrapped.summary()``: DeepRM's ``mean_slowdown``, ``max_slowdown``, ``dropped``,
...; CuSH's ``avg_ntat`` -- 004's headline metric --, ``avg_wait``, ``avg_tat``,
``eq1_return``, ``avg_penalty``, ...). A policy's figure is the mean over seeds, with one
exception: the environment's summary metrics are averaged over the episodes that ended
(terminated) only. A truncated episode's summary covers only the jobs that got booked or
finished -- a policy that never runs the hard jobs would look good on them -- so it counts
in ``truncated`` (the fraction of episodes cut off by the step cap) and in
``episode_return`` (its waiting penalties are real), and its summary stays in its
per-episode record. A policy whose every episode was truncated has NaN summary metrics.

How to use::

    from tune.policy_evaluation import module_paths
    from tune.single_agent_evaluation import evaluate_single_agent

    path = module_paths(checkpoint, ["default_policy"])["default_policy"]
    table = evaluate_single_agent("podsched/DeepRM-v0", {}, [1000, 1001, 1002], path)
    table["learned"]["metrics"]["mean_slowdown"], table["sjf"]["metrics"]["mean_slowdown"]

The learned policy acts greedily -- the argmax of its masked logits (for CuSH the most
likely job, then the most likely allocation policy for it) -- or, with ``greedy=False``,
samples its distribution from a torch generator seeded by the episode's seed, so an
evaluation is reproducible. Episodes run in this process, one after the other (a few
hundred steps each).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

LEARNED = "learned"
#: Metrics averaged over every episode; the others only over episodes that terminated.
ALL_EPISODES: tuple[str, ...] = ("episode_return", "truncated")


#: Environments whose baselines run as whole simulations, not through env actions.
SIMULATED_BASELINES = ("podsched/Contention-v0", "podsched/RLTAPS-v0")
#: Environments whose summary judges a truncated episode fairly, so it counts: RL-TAPS's
#: slowdown (003 eq. 17) takes T_max as the finish time of every job still unfinished.
FAIR_WHEN_TRUNCATED = ("podsched/RLTAPS-v0",)


def baseline_names(env_name: str) -> tuple[str, ...]:
    """The heuristics the environment ``env_name`` ships for comparison."""
    if env_name == "podsched/DeepRM-v0":
        from envs.deeprm.baselines import POLICIES

        return tuple(POLICIES)  # sjf, packer, random (the reference's other_agents.py)
    if env_name == "podsched/CuSH-v0":
        from envs.cush.baselines import CUSH_BASELINES

        return CUSH_BASELINES  # 004 Table 1's eight rows
    if env_name == "podsched/SCED2-v0":
        from envs.sced2.baselines import SCED2_BASELINES

        # DSIF delays jobs across decisions, which a per-step action cannot express.
        return tuple(name for name in SCED2_BASELINES if name != "dsif")
    if env_name == "podsched/Contention-v0":
        from envs.contention.baselines import CONTENTION_BASELINES

        return CONTENTION_BASELINES
    if env_name == "podsched/RLTAPS-v0":
        from envs.rltaps.baselines import RLTAPS_BASELINES

        return RLTAPS_BASELINES
    raise ValueError(
        f"no single-agent baselines for environment {env_name!r}; known: podsched/DeepRM-v0, "
        "podsched/CuSH-v0, podsched/SCED2-v0, podsched/Contention-v0, podsched/RLTAPS-v0"
    )


def _batch_of_one(observation: Any) -> Any:
    """An observation (array or mapping of arrays) as torch tensors with a batch axis."""
    import torch

    if isinstance(observation, Mapping):
        return {key: _batch_of_one(value) for key, value in observation.items()}
    return torch.as_tensor(np.asarray(observation)).unsqueeze(0)


def greedy_action(module: Any, observation: Any) -> Any:
    """The module's deterministic action for one observation (an int or an int array)."""
    return learned_action(module, observation, greedy=True)


def learned_action(module: Any, observation: Any, greedy: bool = True) -> Any:
    """The module's action for one observation: its mode, or a sample of its distribution
    (drawn from torch's global generator, which the caller seeds)."""
    import torch
    from ray.rllib.core.columns import Columns

    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: _batch_of_one(observation)})
        distribution = module.get_inference_action_dist_cls().from_logits(
            out[Columns.ACTION_DIST_INPUTS]
        )
        if greedy:
            distribution = distribution.to_deterministic()
        action = distribution.sample()[0].cpu().numpy()
    return int(action) if action.ndim == 0 else action.astype(np.int64)


def run_episode(
    env_name: str,
    env_config: dict[str, Any],
    seed: int,
    policy: str,
    module: Any = None,
    greedy: bool = True,
) -> dict[str, Any]:
    """One episode of ``policy`` (:data:`LEARNED` with ``module``, else a baseline name).

    Returns ``{"policy", "seed", "metrics"}``: ``episode_return``, ``truncated`` (1.0 when
    the step cap ended it) and every number of the environment's summary.
    """
    if policy != LEARNED and env_name in SIMULATED_BASELINES:
        return {
            "policy": policy,
            "seed": seed,
            "metrics": _simulated_episode(env_name, env_config, seed, policy),
        }
    from envs import make_env

    env = make_env(env_name, **env_config)
    try:
        observation, _ = env.reset(seed=seed)
        if policy == LEARNED:
            if module is None:
                raise ValueError("the learned policy needs a module")
            import torch

            torch.manual_seed(seed)

            def act(obs: Any) -> Any:
                return learned_action(module, obs, greedy)
        else:
            unwrapped = env.unwrapped

            def act(obs: Any) -> Any:
                return unwrapped.baseline_action(policy)

        episode_return, done, truncated = 0.0, False, False
        while not done:
            observation, reward, terminated, truncated, _ = env.step(act(observation))
            episode_return += float(reward)
            done = terminated or truncated
        summary = env.unwrapped.summary()
    finally:
        env.close()
    metrics: dict[str, Any] = {"episode_return": episode_return, "truncated": float(truncated)}
    metrics.update(_scalars(summary))
    return {"policy": policy, "seed": seed, "metrics": metrics}


def _simulated_episode(
    env_name: str, env_config: dict[str, Any], seed: int, policy: str
) -> dict[str, Any]:
    """A whole-simulation baseline over the job set ``reset(seed=seed)`` draws."""
    if env_name == "podsched/RLTAPS-v0":
        from envs.rltaps.baselines import run_rltaps_baseline
        from envs.rltaps.config import RLTapsConfig

        (played,) = run_rltaps_baseline(policy, seed=seed, **env_config)["sequences"]
        config = RLTapsConfig.from_dict(env_config)
        left = played["jobs_finished"] + played["dropped"]
        done = played["jobs_arrived"] == config.num_jobs and left == config.num_jobs
        metrics: dict[str, Any] = {
            "episode_return": played["return"],
            "truncated": float(not done and played["steps"] >= config.max_steps),
        }
    else:
        from envs.contention.baselines import run_contention_baseline

        (played,) = run_contention_baseline(policy, seed=seed, num_sets=1, **env_config)["sets"]
        metrics = {
            "episode_return": float("nan"),
            "truncated": float(bool(played["truncated"])),
        }
    metrics.update(_scalars(played))
    return metrics


def _scalars(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of a summary (per-job records stay out: the table compares scalars)."""
    return {
        key: value
        for key, value in summary.items()
        if key != "seed"
        and (value is None or (isinstance(value, int | float) and not isinstance(value, bool)))
    }


def evaluate_single_agent(
    env_name: str,
    env_config: dict[str, Any],
    seeds: list[int],
    modules_path: str | None = None,
    baselines: list[str] | None = None,
    greedy: bool = True,
) -> dict[str, dict[str, Any]]:
    """``{policy: {"metrics": mean over seeds, "episodes": per-seed metrics}}``.

    ``modules_path``: the learned RLModule's checkpoint folder (an Algorithm checkpoint's
    ``learner_group/learner/rl_module/default_policy``); left out, only baselines play.
    ``baselines``: names the environment's ``baseline_action`` accepts; ``None`` means all
    of :func:`baseline_names`. ``greedy``: the learned policy's mode, else samples (see the
    module docstring). ``episode_return`` and ``truncated`` are means over all
    episodes; the environment's summary metrics are means over the episodes that
    terminated (see the module docstring), skipping None values (e.g. DeepRM's slowdown
    when nothing was booked); NaN where nothing is left.
    """
    if not seeds:
        raise ValueError("seeds must name at least one evaluation episode")
    known = baseline_names(env_name)
    names = known if baselines is None else tuple(baselines)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(
            f"unknown baseline(s) {', '.join(unknown)} for {env_name}; known: {', '.join(known)}"
        )
    module = None
    if modules_path is not None:
        from ray.rllib.core.rl_module.rl_module import RLModule

        module = RLModule.from_checkpoint(str(modules_path))
    policies = ([LEARNED] if module is not None else []) + list(names)
    table: dict[str, dict[str, Any]] = {}
    for policy in policies:
        episodes = [
            run_episode(env_name, env_config, seed, policy, module, greedy)["metrics"]
            for seed in seeds
        ]
        fair = env_name in FAIR_WHEN_TRUNCATED
        complete = [episode for episode in episodes if fair or not episode["truncated"]]
        metrics = {key: _mean([episode[key] for episode in episodes]) for key in ALL_EPISODES}
        for key in dict.fromkeys(key for episode in episodes for key in episode):
            if key not in ALL_EPISODES:
                metrics[key] = _mean([episode.get(key) for episode in complete])
        table[policy] = {"metrics": metrics, "episodes": episodes}
    return table


def _mean(values: list[Any]) -> float:
    present = [float(value) for value in values if value is not None and np.isfinite(value)]
    return float(np.mean(present)) if present else float("nan")
