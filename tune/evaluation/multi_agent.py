"""Evaluate learned policies and heuristics on held-out episodes, with the same metrics.

Every policy plays the same episodes (one per evaluation seed: the environment draws the
workload from the seed exactly as ``simulate.py run --seed`` does), and each episode's
simulator yields the metrics of :class:`envs.sim.SimulationResult`; a policy's figure is
the mean over every seed (per-seed figures kept, for confidence intervals), so learned and
heuristic policies are compared like for like. No seed is left out of a mean: a metric
undefined on a seed (NaN: avg JCT with no job arrived, avg contention with no job run, avg
slowdown with no job finished) makes the row's mean NaN, and the row's ``undefined_seeds``
names those seeds (:func:`seed_means`). Per-job completion times keep an unfinished job at
its time so far, marked unfinished (:class:`envs.sim.metrics.JobTimes`), for a censored JCT
CDF. The learned policy plays twice: greedily (``learned-greedy``: the argmax of its masked
logits) and sampled (``learned-sampled``: actions drawn from its masked distribution with a
torch generator seeded by the episode's seed, so a run repeats exactly). Both matter: a PPO
policy is stochastic and its argmax can lock into sending the same job back to wait
forever, while sampling adds noise a deployed scheduler would not have. Episodes run as Ray
tasks when Ray is up and there are more than a few (``resources.local_episodes``), else in
this process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from envs.sim import SimulationResult
from envs.sim.metrics import concatenate_job_times
from tune.episode_tasks import play_episodes
from tune.evaluation.common import (
    DEFAULT_GREEDY,
    LEARNED,
    LEARNED_GREEDY,
    is_learned,
    learned_rows,
)
from tune.experiment import LOCAL_EPISODES


def policy_actions(
    modules: dict[str, Any],
    mapping: dict[str, str],
    observations: dict,
    generator: Any = None,
) -> dict[str, int]:
    """Each agent's action from its module: sampled with ``generator``, else argmax."""
    import torch
    from ray.rllib.core.columns import Columns

    actions = {}
    by_module: dict[str, list[str]] = {}
    for agent in observations:
        by_module.setdefault(mapping[agent], []).append(agent)
    for module_id, agents in by_module.items():
        keys = observations[agents[0]].keys()
        batch = {
            key: torch.as_tensor(np.stack([observations[a][key] for a in agents])) for key in keys
        }
        with torch.no_grad():
            out = modules[module_id].forward_inference({Columns.OBS: batch})
        logits = out[Columns.ACTION_DIST_INPUTS]
        if generator is None:
            chosen = logits.argmax(-1).tolist()
        else:
            probabilities = torch.softmax(logits, dim=-1)
            chosen = torch.multinomial(probabilities, 1, generator=generator).squeeze(-1).tolist()
        actions.update(zip(agents, chosen, strict=True))
    return actions


def fit_to_spaces(module: Any, observation_space: Any, action_space: Any) -> Any:
    """``module``, or -- when the evaluation environment's spaces differ from those it was
    trained on (another topology: other paddings, targets, schedulers) -- the same network
    rebuilt for those spaces with the trained weights (transfer without retraining).

    The pod GNN's parameters do not depend on the cluster's size (node embeddings are
    pooled, targets and forward targets are scored one by one), so its state loads as is;
    a network whose parameters do depend on the spaces fails to load with a clear error.
    """
    if module.observation_space == observation_space and module.action_space == action_space:
        return module
    rebuilt = type(module)(
        observation_space=observation_space,
        action_space=action_space,
        inference_only=True,
        model_config=module.model_config,
    )
    try:
        rebuilt.set_state(module.get_state(inference_only=True))
    except RuntimeError as error:
        raise ValueError(
            f"the learned {type(module).__name__} cannot play this environment: its weights "
            f"depend on the spaces it was trained on ({error})"
        ) from None
    return rebuilt


def run_episode(
    env_name: str,
    env_config: dict[str, Any],
    seed: int,
    policy: str,
    modules: dict[str, str] | None = None,
    greedy: bool = DEFAULT_GREEDY,
) -> dict[str, Any]:
    """One episode of ``policy``: a heuristic name, or the learned policy with ``modules``
    paths as ``learned-greedy``, ``learned-sampled``, or ``learned`` (greedy as ``greedy``).

    Returns the episode's simulator metrics, ``jct`` (the :class:`envs.sim.metrics.JobTimes`
    of the jobs that arrived: an unfinished job's time so far, marked unfinished, for JCT
    CDFs) and its return. A heuristic plays with observations of action masks only (the
    same episode).
    """
    from envs import make_env
    from envs.pod.heuristic import HeuristicPodPolicy

    env = make_env(env_name, **env_config)
    # The heuristic driver reads the simulator, never the observations: building them
    # (and the advice's own plan of every round) was most of a heuristic row's cost.
    options = None if is_learned(policy) else {"masks_only": True}
    observations, _ = env.reset(seed=seed, options=options)
    if is_learned(policy):
        if policy != LEARNED:
            greedy = policy == LEARNED_GREEDY
        from ray.rllib.core.rl_module.rl_module import RLModule

        if not modules:
            raise ValueError(f"policy {policy!r} needs the learned modules' checkpoint paths")
        loaded = {module_id: RLModule.from_checkpoint(path) for module_id, path in modules.items()}
        mapping = {
            agent: "shared" if "shared" in loaded else agent for agent in env.possible_agents
        }
        agent = env.possible_agents[0]
        loaded = {
            module_id: fit_to_spaces(module, env.observation_space(agent), env.action_space(agent))
            for module_id, module in loaded.items()
        }

        import torch

        generator = None if greedy else torch.Generator().manual_seed(seed)

        def act(obs: dict) -> dict[str, int]:
            return policy_actions(loaded, mapping, obs, generator)
    else:
        driver = HeuristicPodPolicy(env, policy, seed=seed)

        def act(obs: dict) -> dict[str, int]:
            return driver.actions()

    episode_return = 0.0
    while env.agents:
        observations, rewards, *_ = env.step(act(observations))
        episode_return += float(sum(rewards.values()))
    result = SimulationResult.from_simulator(env.sim, policy)
    return {
        "policy": policy,
        "seed": seed,
        "metrics": result.metrics(),
        "jct": result.job_times(),
        "episode_return": episode_return,
    }


def evaluate(
    env_name: str,
    env_config: dict[str, Any],
    seeds: list[int],
    baselines: list[str],
    modules: dict[str, str] | None = None,
    greedy: bool | None = None,
    local_episodes: int = LOCAL_EPISODES,
) -> dict[str, dict[str, Any]]:
    """``{policy: {"metrics": mean metrics over seeds, "episodes": per-seed metrics,
    "seeds", "undefined_seeds", "jct": every episode's job times, "episode_return": mean
    return}}`` (the means and ``undefined_seeds`` of :func:`seed_means`; ``jct`` the
    episodes' :class:`envs.sim.metrics.JobTimes` in seed order, unfinished jobs marked).

    The learned policy is included when ``modules`` (module id -> checkpoint path) is
    given: as both rows ``learned-greedy`` and ``learned-sampled`` (``greedy=None``), or
    only the greedy (``True``) or the sampled (``False``) one. Its rows come first, then
    ``baselines`` in order; ``episodes[i]`` is the episode of ``seeds[i]``. Episodes run
    as Ray tasks when Ray is up and there are more than ``local_episodes`` of them
    (:func:`tune.episode_tasks.play_episodes`), in this process otherwise.
    """
    policies = (learned_rows(greedy) if modules else []) + list(baselines)
    calls = [(env_name, env_config, seed, policy, modules) for policy in policies for seed in seeds]
    episodes = play_episodes(run_episode, calls, local_episodes)
    table: dict[str, dict[str, Any]] = {}
    for policy in policies:
        mine = [episode for episode in episodes if episode["policy"] == policy]
        seeds_played = [episode["seed"] for episode in mine]
        means, undefined = seed_means([episode["metrics"] for episode in mine], seeds_played)
        table[policy] = {
            "metrics": means,
            "undefined_seeds": undefined,
            "episodes": [
                {**episode["metrics"], "episode_return": episode["episode_return"]}
                for episode in mine
            ],
            "seeds": seeds_played,
            "jct": concatenate_job_times([episode["jct"] for episode in mine]),
            # A NaN return (none expected) would show: a plain mean drops no seed.
            "episode_return": float(np.mean([episode["episode_return"] for episode in mine])),
        }
    return table


def seed_means(
    per_seed: Sequence[dict[str, Any]], seeds: Sequence[int]
) -> tuple[dict[str, float], dict[str, list[int]]]:
    """Each metric's mean over every seed of ``per_seed`` (one metrics dict per seed of
    ``seeds``, in order), and per metric undefined on some seed (None or NaN) the seeds
    where it was.

    A mean over fewer seeds than the row claims would compare policies on different
    workloads (the seed a policy failed on dropped from its own mean only), so such a
    metric's mean is NaN -- shown as missing, never as a figure over the other seeds -- and
    ``{metric: [seed, ...]}`` says why; metrics defined on every seed are not listed.
    """
    if len(per_seed) != len(seeds):
        raise ValueError(f"{len(per_seed)} seeds' metrics for {len(seeds)} seeds")
    keys = list(dict.fromkeys(key for metrics in per_seed for key in metrics))
    means: dict[str, float] = {}
    undefined: dict[str, list[int]] = {}
    for key in keys:
        values = np.array([_value_or_nan(metrics.get(key)) for metrics in per_seed])
        missing = np.isnan(values)
        if missing.any():
            undefined[key] = [int(seed) for seed, gap in zip(seeds, missing, strict=True) if gap]
        means[key] = float(values.mean()) if len(values) and not missing.any() else float("nan")
    return means, undefined


def _value_or_nan(value: Any) -> float:
    """A metric's value as a float; None (undefined, as JSON writes NaN) as NaN."""
    return float("nan") if value is None else float(value)
