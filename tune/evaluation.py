"""Held-out evaluation of an experiment: its learned policy next to its baselines.

One entry point for ``platform/train.py`` and ``platform/evaluate.py``, whatever the
environment: the multi-agent ``pod_scheduling_v0`` plays the simulator's schedulers in
parallel over Ray (:mod:`tune.policy_evaluation`); a single-agent formulation plays its
paper's baselines on the same seeded episodes (:mod:`tune.single_agent_evaluation`).

How to use::

    from tune.evaluation import evaluate_experiment
    from tune.policy_evaluation import module_paths
    from tune.rllib_config import module_ids

    table = evaluate_experiment(experiment, module_paths(checkpoint, module_ids(experiment)))
    table["learned"]["metrics"], table["fifo+packing"]["metrics"]
"""

from __future__ import annotations

from typing import Any

from tune.experiment import ExperimentConfig


def evaluate_experiment(
    experiment: ExperimentConfig, modules: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{policy: {"metrics": mean over the evaluation seeds, ...}}`` for the learned
    policy (when ``modules``, module id -> checkpoint folder, is given) and the configured
    baselines, on ``experiment.evaluation``'s seeds and environment overrides."""
    from envs.registry import MULTI_AGENT_ENVIRONMENTS

    env_name = experiment.environment.name
    env_config = {**experiment.environment.config, **experiment.evaluation.environment}
    evaluation = experiment.evaluation
    baselines = evaluation.baselines_for(env_name)
    if env_name in MULTI_AGENT_ENVIRONMENTS:
        from tune.policy_evaluation import evaluate

        return evaluate(
            env_name, env_config, evaluation.seeds, baselines, modules, greedy=evaluation.greedy
        )
    from tune.single_agent_evaluation import evaluate_single_agent

    return evaluate_single_agent(
        env_name,
        env_config,
        evaluation.seeds,
        None if modules is None else modules["default_policy"],
        baselines,
        greedy=evaluation.greedy,
    )
