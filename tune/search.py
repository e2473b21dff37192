"""A Ray Tune sweep over what matters in the papers, as one MLflow parent run.

:func:`search_space` says what a sweep varies: learning rate (log-uniform 1e-5 to 1e-3),
entropy bonus, GNN depth and width, and what the environment declares
(``sweep_choices(config)`` of its class, :func:`envs.registry.environment_class`: for
``pod_scheduling_v0`` device- vs server-level graphs and, when its reward is
``contention``, 000's reward weights, branches A-E: W1 = 0.3, 0.4, 0.5, 0.6, 0.7).
:func:`run_sweep` runs ``num_samples`` trials of it under one MLflow parent run (one child
run per trial) and reports each trial and the best one; ``tune/sweep.py`` is its command
line.
"""

from __future__ import annotations

from typing import Any

from tune.experiment import ExperimentConfig, flatten
from tune.runs import BEST_METRIC


def search_space(experiment: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Tune search spaces by config section (what the papers vary)."""
    from ray import tune as ray_tune

    from envs.registry import environment_class

    space: dict[str, dict[str, Any]] = {
        "training": {
            "lr": ray_tune.loguniform(1e-5, 1e-3),
            "entropy_coeff": ray_tune.choice([0.0, 0.01, 0.05]),
        },
        "model": {},
        "environment": {},
    }
    if experiment.model.name == "pod_gnn":
        space["model"] = {
            "inner_layers": ray_tune.choice([2, 4]),
            "hidden": ray_tune.choice([16, 32, 64]),
        }
    environment = environment_class(experiment.environment.name)
    for key, choices in environment.sweep_choices(experiment.environment.config).items():
        space["environment"][key] = ray_tune.choice(list(choices))
    return space


def param_space(
    experiment: ExperimentConfig, space: dict[str, dict[str, Any]] | None = None
) -> Any:
    """The experiment's AlgorithmConfig with the search spaces (``space``, else
    :func:`search_space`'s) put in."""
    from tune.rllib_config import algorithm_config

    space = search_space(experiment) if space is None else space
    config = algorithm_config(experiment, seed=experiment.seeds[0])
    config = config.training(**space["training"])
    config = config.rl_module(model_config={**experiment.model.config, **space["model"]})
    env_config = {**experiment.environment.config, **space["environment"]}
    return config.environment(env_config=env_config)


def swept_params(config: dict[str, Any], space: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The entries of a trial's ``config`` that the sweep ``space`` varies, by flattened key
    (matched on the key's last part, as the AlgorithmConfig nests them)."""
    names = {name for section in space.values() for name in section}
    return {key: value for key, value in flatten(config).items() if key.rsplit(".", 1)[-1] in names}


def run_sweep(
    experiment: ExperimentConfig,
    num_samples: int,
    storage: str,
    tracking_uri: str,
    verbose: int = 1,
) -> dict[str, Any]:
    """Run the sweep (Ray must be up); returns ``trials`` (per trial: name, swept
    ``params``, final ``episode_return_mean``, ``error``), ``best_checkpoint``,
    ``best_config``, ``tracking_uri`` and ``parent_run_id``."""
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import log_run
    from tune.runs import make_tuner

    sweep_name = f"{experiment.name}-sweep"
    parent_id = log_run(
        tracking_uri,
        experiment.experiment_name,
        sweep_name,
        params={**experiment.flat(), "num_samples": num_samples},
        tags={"stage": "sweep", "formulation": experiment.environment.name},
    )
    client = MlflowClient(tracking_uri=tracking_uri)
    client.update_run(parent_id, status="RUNNING")
    try:
        space = search_space(experiment)
        tuner = make_tuner(
            experiment,
            param_space(experiment, space),
            storage,
            tracking_uri,
            name=sweep_name,
            verbose=verbose,
            num_samples=num_samples,
            parent_run_id=parent_id,
        )
        results = tuner.fit()
    except BaseException as error:
        # The parent run never stays RUNNING: KILLED on Ctrl-C, FAILED on any error.
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        client.set_terminated(parent_id, status=status)
        raise
    rows = []
    for result in results:
        rows.append(
            {
                "trial": result.path.rsplit("/", 1)[-1] if result.path else "?",
                "params": swept_params(result.config, space),
                "episode_return_mean": (result.metrics or {})
                .get("env_runners", {})
                .get("episode_return_mean"),
                "error": str(result.error) if result.error else None,
            }
        )
    finished = [row for row in rows if row["episode_return_mean"] is not None]
    best = results.get_best_result(metric=BEST_METRIC, mode="max") if finished else None
    if best is not None and best.metrics:
        client.log_metric(
            parent_id,
            "best_episode_return_mean",
            best.metrics["env_runners"]["episode_return_mean"],
        )
    unfinished = [result for result in results if not (result.metrics or {}).get("done")]
    status = "FINISHED" if finished else "FAILED"
    if any(result.error is None for result in unfinished):
        status = "KILLED"  # interrupted before every trial reached its stop criterion
    client.set_terminated(parent_id, status=status)
    return {
        "trials": rows,
        "best_checkpoint": best.checkpoint.path if best and best.checkpoint else None,
        "best_config": swept_params(best.config, space) if best else {},
        "tracking_uri": tracking_uri,
        "parent_run_id": parent_id,
    }
