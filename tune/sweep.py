"""A Ray Tune sweep over what matters in the papers, tracked as one MLflow parent run.

How to run
----------
    python tune/sweep.py --config tune/configs/demo.yaml --num-samples 8
    python tune/sweep.py --config tune/configs/demo.yaml --num-samples 2 \\
        --set stop.training_iteration=3 --json

What you get
------------
``--num-samples`` trials drawn from the search space: learning rate (log-uniform 1e-5 to
1e-3), entropy bonus, GNN depth and width, device- vs server-level graphs, and -- when the
environment's reward is ``contention`` -- 000's reward weights (branches A-E: W1 = 0.3,
0.4, 0.5, 0.6, 0.7). One MLflow parent run for the sweep with one child run per trial
(params, per-iteration metrics), comparable in the MLflow UI; a summary table at the end,
and the best trial's checkpoint and configuration (``--json``: one object with ``trials``,
``best_checkpoint``, ``best_config``, ``tracking_uri``, ``parent_run_id``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from tune.experiment import ConfigError, ExperimentConfig, flatten, load_config

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BEST_METRIC = "env_runners/episode_return_mean"
W1_BRANCHES = [0.3, 0.4, 0.5, 0.6, 0.7]


def search_space(experiment: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Tune search spaces by config section (what the papers vary)."""
    from ray import tune as ray_tune

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
    if experiment.environment.name == "pod_scheduling_v0":
        space["environment"]["level"] = ray_tune.choice(["device", "server"])
        if experiment.environment.config.get("reward") == "contention":
            space["environment"]["contention_weight"] = ray_tune.choice(W1_BRANCHES)
    return space


def param_space(experiment: ExperimentConfig) -> Any:
    """The experiment's AlgorithmConfig with the search spaces put in."""
    from tune.rllib_config import algorithm_config

    space = search_space(experiment)
    config = algorithm_config(experiment, seed=experiment.seeds[0])
    config = config.training(**space["training"])
    config = config.rl_module(model_config={**experiment.model.config, **space["model"]})
    env_config = {**experiment.environment.config, **space["environment"]}
    return config.environment(env_config=env_config)


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="sweep.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True, help="experiment YAML")
    parser.add_argument("--num-samples", type=int, default=4, help="trials to draw (default 4)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument(
        "--storage",
        type=Path,
        default=PROJECT_ROOT / "ray_results",
        help="Tune results folder (default ray_results/ in the project)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.num_samples < 1:
            raise ConfigError(f"--num-samples must be >= 1, got {args.num_samples}")
        experiment = load_config(args.config, args.set)
        if experiment.warm_start is not None:
            # The search space changes the network's shape and the action space (GNN depth
            # and width, device/server level): one pretrained module cannot fit every trial.
            raise ConfigError(
                "warm_start is not supported by sweep.py (the sweep varies the network and "
                "graph level); remove it (--set warm_start=null) or train with platform/train.py"
            )
    except (ConfigError, ValueError) as error:
        print(f"sweep.py: error: {error}", file=sys.stderr)
        return 2
    import ray
    from ray import tune as ray_tune

    from tune.mlflow_tracking import MLflowTrialCallback, log_run, resolve_tracking_uri, ui_command

    tracking_uri = resolve_tracking_uri(experiment)
    os.environ["MLFLOW_TRACKING_URI"] = tracking_uri
    runtime_env = {"env_vars": {"MLFLOW_TRACKING_URI": tracking_uri}}
    ray.init(
        address=os.environ.get("RAY_ADDRESS"),
        include_dashboard=False,
        runtime_env=runtime_env,
        log_to_driver=False,
    )
    sweep_name = f"{experiment.name}-sweep"
    parent_id = log_run(
        tracking_uri,
        experiment.experiment_name,
        sweep_name,
        params={**experiment.flat(), "num_samples": args.num_samples},
        tags={"stage": "sweep", "formulation": experiment.environment.name},
    )
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=tracking_uri).update_run(parent_id, status="RUNNING")
    tuner = ray_tune.Tuner(
        experiment.algorithm.name,
        param_space=param_space(experiment),
        tune_config=ray_tune.TuneConfig(num_samples=args.num_samples),
        run_config=ray_tune.RunConfig(
            name=sweep_name,
            storage_path=str(args.storage.resolve()),
            stop=experiment.stop.criteria(),
            checkpoint_config=ray_tune.CheckpointConfig(
                checkpoint_frequency=experiment.checkpoint.frequency,
                num_to_keep=experiment.checkpoint.keep,
                checkpoint_at_end=True,
            ),
            callbacks=[MLflowTrialCallback(tracking_uri, experiment, parent_run_id=parent_id)],
            verbose=0 if args.json else 1,
        ),
    )
    results = tuner.fit()
    rows = []
    for result in results:
        params = {key: value for key, value in flatten(result.config).items() if _swept(key)}
        rows.append(
            {
                "trial": result.path.rsplit("/", 1)[-1] if result.path else "?",
                "params": params,
                "episode_return_mean": (result.metrics or {})
                .get("env_runners", {})
                .get("episode_return_mean"),
                "error": str(result.error) if result.error else None,
            }
        )
    finished = [row for row in rows if row["episode_return_mean"] is not None]
    best = results.get_best_result(metric=BEST_METRIC, mode="max") if finished else None
    best_checkpoint = best.checkpoint.path if best and best.checkpoint else None
    best_params = {k: v for k, v in flatten(best.config).items() if _swept(k)} if best else {}
    client = MlflowClient(tracking_uri=tracking_uri)
    if best is not None and best.metrics:
        client.log_metric(
            parent_id,
            "best_episode_return_mean",
            best.metrics["env_runners"]["episode_return_mean"],
        )
    client.set_terminated(parent_id, status="FINISHED" if finished else "FAILED")
    if args.json:
        print(
            json.dumps(
                {
                    "trials": rows,
                    "best_checkpoint": best_checkpoint,
                    "best_config": best_params,
                    "tracking_uri": tracking_uri,
                    "parent_run_id": parent_id,
                },
                default=str,
            )
        )
    else:
        print(format_summary(rows))
        print(f"\nbest checkpoint: {best_checkpoint}")
        print(f"best configuration: {best_params}")
        print(f"MLflow parent run {parent_id} in '{experiment.experiment_name}'")
        print(f"open it with: {ui_command(tracking_uri)}")
    return 0 if finished else 1


SWEPT_SUFFIXES = ("lr", "entropy_coeff", "inner_layers", "hidden", "level", "contention_weight")


def _swept(key: str) -> bool:
    return key.rsplit(".", 1)[-1] in SWEPT_SUFFIXES


def format_summary(rows: list[dict[str, Any]]) -> str:
    """One line per trial: its sampled values and final mean return."""
    lines = ["trial  return  parameters"]
    ranked = sorted(rows, key=lambda row: -(row["episode_return_mean"] or float("-inf")))
    for row in ranked:
        value = row["episode_return_mean"]
        shown = "failed" if value is None else f"{value:.2f}"
        params = ", ".join(
            f"{k.rsplit('.', 1)[-1]}={v:.3g}"
            if isinstance(v, float)
            else f"{k.rsplit('.', 1)[-1]}={v}"
            for k, v in sorted(row["params"].items())
        )
        lines.append(f"{row['trial'][:40]}  {shown}  {params}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
