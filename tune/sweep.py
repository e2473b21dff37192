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
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from tune.experiment import ConfigError, load_config
from tune.paths import default_storage, resolve_storage


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
        help="Tune results: a folder, or a URI Tune accepts (s3://..., file://...), passed "
        "through untouched (default $PODSCHED_RESULTS/ray_results, else "
        "~/podsched-results/ray_results)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; returns the exit status."""
    args = build_parser().parse_args(argv)
    from tune.mlflow_tracking import resolve_tracking_uri, ui_command

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
        from tune.preflight import check_experiment
        from tune.runs import start_ray_for

        check_experiment(experiment)
        tracking_uri = resolve_tracking_uri(experiment)
        start_ray_for(experiment, tracking_uri)
    except (ConfigError, ValueError) as error:
        print(f"sweep.py: error: {error}", file=sys.stderr)
        return 2
    from tune.search import run_sweep

    # With --json stdout carries only the final object; Tune's progress goes to stderr.
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        storage = resolve_storage(args.storage or default_storage())
        payload = run_sweep(experiment, args.num_samples, storage, tracking_uri)
    rows = payload["trials"]
    finished = [row for row in rows if row["episode_return_mean"] is not None]
    if args.json:
        print(json.dumps(payload, default=str))
    else:
        print(format_summary(rows))
        print(f"\nbest checkpoint: {payload['best_checkpoint']}")
        print(f"best configuration: {payload['best_config']}")
        print(f"MLflow parent run {payload['parent_run_id']} in '{experiment.experiment_name}'")
        print(f"open it with: {ui_command(tracking_uri)}")
    return 0 if finished else 1


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
