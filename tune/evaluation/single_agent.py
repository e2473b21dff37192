"""Evaluate a learned single-agent policy and its environment's baselines, like for like.

For the Gymnasium formulations (``podsched/DeepRM-v0``, ``podsched/CuSH-v0``,
``podsched/SCED2-v0``, ``podsched/Contention-v0``) every policy plays the same episodes: one
per evaluation seed, the workload drawn by ``env.reset(seed=seed)``, so the learned policy
and each baseline face identical job sequences (and Random baselines draw from that
episode's generator, as ``simulate.py`` does). The baselines are the formulation's own: its
environment class names them and plays them (``baselines``, ``run_baselines``, looked up
with :func:`envs.registry.formulation`), step by step through ``baseline_action`` or, for
those in its ``simulated_baselines`` (the contention-aware LAS, SRTF, FIFO, which preempt;
RL-TAPS's Random, SJF, Tetris, which never reassign GPUs), as whole simulations of the
same job set; the contention baselines have no RL return (NaN). Each episode
yields its return and the environment's own summary
(``env.unwrapped.summary()``: DeepRM's ``mean_slowdown``, ``max_slowdown``, ``dropped``,
...; CuSH's ``avg_ntat`` -- 004's headline metric --, ``avg_wait``, ``avg_tat``,
``eq1_return``, ``avg_penalty``, ...). A policy's figure is the mean over seeds, with one
exception: the environment's summary metrics are averaged over the episodes that ended
(terminated) only. A truncated episode's summary covers only the jobs that got booked or
finished -- a policy that never runs the hard jobs would look good on them -- so it counts
in ``truncated`` (the fraction of episodes cut off by the step cap) and in
``episode_return`` (its waiting penalties are real), and its summary stays in its
per-episode record (unless the formulation is ``fair_when_truncated``, as RL-TAPS is). A
policy whose every episode was truncated has NaN summary metrics. Such a policy's mean
covers fewer seeds than a policy that finished every episode -- and the seeds it was cut
off on are the hard ones -- so the comparison (:func:`tune.evaluation.comparison.summary`)
ranks only the heuristics that finished every seed and gives a row cut off on any seed no
difference to the best heuristic (:func:`counted`).

How to use::

    from tune.evaluation import module_paths
    from tune.evaluation.single_agent import evaluate_single_agent

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

from envs.base import scalar_metrics
from tune.evaluation.common import DEFAULT_GREEDY, LEARNED, finite_mean

#: Metrics averaged over every episode; the others only over episodes that terminated.
ALL_EPISODES: tuple[str, ...] = ("episode_return", "truncated")


def counted(metric: str, episode: Mapping[str, Any], fair: bool) -> bool:
    """Whether a policy's mean of ``metric`` counts ``episode`` (one seed's metrics): always
    for :data:`ALL_EPISODES` and for a ``fair`` formulation (``fair_when_truncated``), else
    only when the step cap did not cut the episode off. The means, their intervals and the
    paired differences of :mod:`tune.evaluation.comparison` all count by this rule."""
    return metric in ALL_EPISODES or fair or not episode.get("truncated")


def baseline_names(env_name: str) -> tuple[str, ...]:
    """The heuristics the environment ``env_name`` ships for comparison (its formulation's
    ``baselines``); ValueError for an environment that is not a single-agent formulation."""
    from envs.registry import formulation

    return tuple(formulation(env_name).baselines)


def fair_when_truncated(env_name: str) -> bool:
    """Whether ``env_name``'s summary of a truncated episode counts like a complete one's."""
    from envs.registry import SINGLE_AGENT_ENVIRONMENTS, formulation

    return env_name in SINGLE_AGENT_ENVIRONMENTS and formulation(env_name).fair_when_truncated


def _batch_of_one(observation: Any) -> Any:
    """An observation (array or mapping of arrays) as torch tensors with a batch axis."""
    import torch

    if isinstance(observation, Mapping):
        return {key: _batch_of_one(value) for key, value in observation.items()}
    return torch.as_tensor(np.asarray(observation)).unsqueeze(0)


def greedy_action(module: Any, observation: Any) -> Any:
    """The module's deterministic action for one observation (an int or an int array)."""
    return learned_action(module, observation, greedy=True)


def learned_action(module: Any, observation: Any, greedy: bool = DEFAULT_GREEDY) -> Any:
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
    greedy: bool = DEFAULT_GREEDY,
) -> dict[str, Any]:
    """One episode of ``policy`` (:data:`LEARNED` with ``module``, else a baseline name).

    Returns ``{"policy", "seed", "metrics"}``: ``episode_return``, ``truncated`` (1.0 when
    the step cap ended it) and every number of the environment's summary.
    """
    if policy != LEARNED:
        from envs.registry import formulation

        (metrics,) = formulation(env_name).run_baselines([seed], [policy], env_config)[policy]
        return {"policy": policy, "seed": seed, "metrics": metrics}
    if module is None:
        raise ValueError("the learned policy needs a module")
    import torch

    from envs import make_env

    env = make_env(env_name, **env_config)
    try:
        observation, _ = env.reset(seed=seed)
        torch.manual_seed(seed)
        episode_return, done, truncated = 0.0, False, False
        while not done:
            action = learned_action(module, observation, greedy)
            observation, reward, terminated, truncated, _ = env.step(action)
            episode_return += float(reward)
            done = terminated or truncated
        summary = env.unwrapped.summary()
    finally:
        env.close()
    metrics: dict[str, Any] = {"episode_return": episode_return, "truncated": float(truncated)}
    metrics.update(scalar_metrics(summary))
    return {"policy": policy, "seed": seed, "metrics": metrics}


def evaluate_single_agent(
    env_name: str,
    env_config: dict[str, Any],
    seeds: list[int],
    modules_path: str | None = None,
    baselines: list[str] | None = None,
    greedy: bool = DEFAULT_GREEDY,
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
    from envs.registry import formulation

    if not seeds:
        raise ValueError("seeds must name at least one evaluation episode")
    environment = formulation(env_name)
    names = environment.check_baselines(baselines)
    module = None
    if modules_path is not None:
        from ray.rllib.core.rl_module.rl_module import RLModule

        module = RLModule.from_checkpoint(str(modules_path))
    played: dict[str, list[dict[str, Any]]] = {}
    if module is not None:
        played[LEARNED] = [
            run_episode(env_name, env_config, seed, LEARNED, module, greedy)["metrics"]
            for seed in seeds
        ]
    played.update(environment.run_baselines(seeds, names, env_config))
    fair = environment.fair_when_truncated
    table: dict[str, dict[str, Any]] = {}
    for policy, episodes in played.items():
        metrics = {}
        for key in dict.fromkeys([*ALL_EPISODES, *(key for e in episodes for key in e)]):
            metrics[key] = finite_mean(
                [episode.get(key) for episode in episodes if counted(key, episode, fair)]
            )
        table[policy] = {"metrics": metrics, "episodes": episodes}
    return table
