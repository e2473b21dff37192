"""Evaluate a trained checkpoint and heuristics on chosen workloads and seeds.

How to run
----------
    python platform/evaluate.py --config tune/configs/demo.yaml \\
        --checkpoint ray_results/demo/<trial>/checkpoint_000011
    python platform/evaluate.py --config tune/configs/demo.yaml --baselines fifo+packing,las+lif \\
        --seeds 2000,2001,2002 --set environment.config.num_jobs=80 --json
    python platform/evaluate.py --config tune/configs/demo.yaml --checkpoint PATH --mlflow

What you get
------------
Every policy (the checkpoint's learned policy and each heuristic) plays the same episodes
-- one per seed, the workload drawn from the seed as ``simulate.py`` draws it -- in
parallel over Ray for ``pod_scheduling_v0``; a single-agent formulation (DeepRM, CuSH,
SCED2, contention-aware, RL-TAPS) is compared with its paper's baselines instead. A table
of the mean metrics per policy (the metric names of ``simulate.py run --json``, or the
formulation's own), or with ``--json`` one object ``{"policies": {name:
{metric: value}}}``; with ``--mlflow`` each policy is also logged as a run of the config's
MLflow experiment. Without ``--checkpoint`` only heuristics are evaluated. Bad arguments
print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from envs.sim.report import format_comparison, json_safe
from tune.experiment import ConfigError, load_config


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="evaluate.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True, help="the experiment YAML")
    parser.add_argument("--checkpoint", type=Path, help="an Algorithm checkpoint folder")
    parser.add_argument(
        "--baselines", help="heuristics, comma separated (default: the config's evaluation list)"
    )
    parser.add_argument("--seeds", help="episode seeds, comma separated (default: the config's)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument("--mlflow", action="store_true", help="log every policy to MLflow")
    parser.add_argument(
        "--no-ray", action="store_true", help="run the episodes in this process, one by one"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the program; returns the exit status."""
    args = build_parser().parse_args(argv)
    overrides = list(args.set)
    if args.baselines is not None:
        names = [name.strip() for name in args.baselines.split(",") if name.strip()]
        overrides.append(f"evaluation.baselines=[{', '.join(names)}]")
    if args.seeds is not None:
        overrides.append(f"evaluation.seeds=[{args.seeds}]")
    try:
        experiment = load_config(args.config, overrides)
        modules = None
        if args.checkpoint is not None:
            from tune.policy_evaluation import module_paths
            from tune.rllib_config import module_ids

            modules = module_paths(args.checkpoint.resolve(), module_ids(experiment))
    except (ConfigError, ValueError, FileNotFoundError) as error:
        print(f"evaluate.py: error: {error}", file=sys.stderr)
        return 2
    from tune.evaluation import evaluate_experiment
    from tune.mlflow_tracking import experiment_tags, log_run, resolve_tracking_uri

    if not args.no_ray:
        import ray

        ray.init(
            address=os.environ.get("RAY_ADDRESS"), include_dashboard=False, log_to_driver=False
        )
    table = evaluate_experiment(experiment, modules)
    metrics = {policy: entry["metrics"] for policy, entry in table.items()}
    if args.mlflow:
        tracking_uri = resolve_tracking_uri(experiment)
        for policy, values in metrics.items():
            log_run(
                tracking_uri,
                experiment.experiment_name,
                f"eval-{policy}",
                params={"policy": policy, "checkpoint": str(args.checkpoint or "")},
                metrics=values,
                tags={
                    **experiment_tags(experiment),
                    "policy": policy,
                    "policy_kind": "learned" if policy == "learned" else "heuristic",
                    "stage": "evaluation",
                },
            )
    if args.json:
        print(json.dumps(json_safe({"policies": metrics})))
    else:
        print(f"{len(experiment.evaluation.seeds)} episode(s) per policy")
        print(format_comparison(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
