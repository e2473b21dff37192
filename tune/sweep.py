"""A Ray Tune sweep of an experiment's ``sweep:`` section, tracked as one MLflow parent run.

How to run
----------
    python tune/sweep.py --config tune/configs/sced2_dqn.yaml
    python tune/sweep.py --config tune/configs/sced2_dqn.yaml --num-samples 8 \\
        --set sweep.scheduler=pbt --set sweep.search=random --set 'sweep.scheduler_config={}' \\
        --set stop.training_iteration=20 --json
    python tune/sweep.py --config tune/configs/sced2_dqn.yaml \\
        --set 'sweep.space.algorithm.lr={loguniform: [1e-4, 1e-2]}' \\
        --set sweep.space.algorithm.gamma=null     # one swept key changed, one no longer swept
    python tune/sweep.py --config tune/configs/sced2_dqn.yaml --resume   # after Ctrl-C / a kill

What you get
------------
The config's ``sweep`` section (:class:`tune.experiment.SweepSection`) says what varies:
dotted keys under ``algorithm.``, ``model.config.`` and ``environment.config.``, one Tune
distribution each (``loguniform``, ``uniform``, ``quniform``, ``randint``, ``qrandint``,
``choice``, ``grid``), ``num_samples`` trials, the ``metric`` and ``mode`` they are ranked
by, the trial scheduler (``fifo``, ``asha``: stop poor trials early, ``pbt``: population
based training over ``algorithm.*`` keys, its perturbations kept inside each range) and
the search (``random`` or ``optuna``). Every key is checked before Ray starts, at each
choice and both ends of each range (as the floats Tune draws from ``uniform``,
``loguniform`` and ``quniform``), alone and combined with the other keys' values, against
the algorithm (PPO and DQN take different settings), the model and the environment (with
``model.sharing: per-agent``, the same agents); a bad one prints one line and exits with
status 2. Every trial trains on the first of the config's training ``seeds`` (the same
workloads for all, so trials differ by their values alone; with several seeds a warning
says so: train the chosen values on every seed with ``platform/train.py``). One MLflow
parent run for the sweep (its params the config, ``sweep.num_samples`` and ``sweep.seed``),
with one child run per trial (params: the values the trial starts with; per-iteration
metrics; under PBT also ``pbt/<swept key>``, the value each iteration trained with, as PBT
changes them), comparable in the MLflow UI; a summary table at the end (each trial's
final values and the last value of the metric it reported: RLlib reports an episode
metric once a trial's first episode has finished, and NaN for an iteration that finished
none, and the schedulers and the search judge a trial on its results with a value alone),
ranked by the metric, and the best trial's checkpoint (its best kept by
``checkpoint.score`` when the config declares one, else its latest) and values (``--json``:
one object with ``trials``, ``metric``, ``mode``, ``status``, ``best_trial``,
``best_checkpoint``, ``best_checkpoint_by`` (the score's key or "latest"), ``best_config``,
``tracking_uri``, ``parent_run_id``, ``parent_run_error``; Tune's progress goes to
stderr). ``--resume`` continues an interrupted sweep (same storage and config) in the same
parent run. Exit status 0 when every trial finished, 1 when a trial failed (named on
stderr; the best is then the best of the others) or none reported the metric, or when
MLflow could not be told the parent run's end (after 5 minutes of retries: one warning
line, the summary printed all the same), 2 as soon as a trial has finished episodes
without reporting an ``env_runners/`` metric (a misspelt ``sweep.metric``: one line
naming the keys like it), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from tune.cli import OneLineParser
from tune.experiment import ConfigError, load_config
from tune.paths import default_storage, resolve_storage
from tune.worker_env import bound_spin_waits


def build_parser() -> OneLineParser:
    """The command line."""
    parser = OneLineParser(
        prog="sweep.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True, help="experiment YAML")
    parser.add_argument(
        "--num-samples", type=int, help="trials to draw (default: the config's sweep.num_samples)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (value read as YAML); a swept key is one key of "
        "sweep.space, dots and all: 'sweep.space.algorithm.lr={loguniform: [1e-5, 1e-3]}' "
        "(or sweep.space.algorithm.lr.loguniform=[1e-5,1e-3]) sets its distribution, "
        "sweep.space.algorithm.lr=null stops sweeping it",
    )
    parser.add_argument(
        "--storage",
        help="Tune results: a folder, or a URI Tune accepts (s3://..., file://...), passed "
        "through untouched (default $PODSCHED_RESULTS/ray_results, else "
        "~/podsched-results/ray_results)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the interrupted sweep of this config"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; returns the exit status."""
    bound_spin_waits()  # before anything loads torch (tune.worker_env)
    args = build_parser().parse_or_exit(argv)
    from tune.mlflow_tracking import resolve_tracking_uri, ui_command

    try:
        if args.num_samples is not None and args.num_samples < 1:
            raise ConfigError(f"--num-samples must be >= 1, got {args.num_samples}")
        experiment = load_config(args.config, args.set)
        storage = resolve_storage(args.storage or default_storage())
        from tune.preflight import check_experiment, resource_warnings
        from tune.runs import check_resumable, start_ray_for
        from tune.search import check_sweep, seed_warning, sweep_name

        if args.resume:  # nothing to resume: say so before Ray, MLflow or the preflight
            check_resumable(experiment, storage, sweep_name(experiment))

        tracking_uri = resolve_tracking_uri(experiment)  # milliseconds, the preflight seconds
        check_experiment(experiment)
        check_sweep(experiment)
        for warning in [*resource_warnings(experiment), seed_warning(experiment)]:
            if warning:
                print(f"sweep.py: warning: {warning}", file=sys.stderr)
        start_ray_for(experiment, tracking_uri)
    except (ConfigError, ValueError) as error:
        print(f"sweep.py: error: {error}", file=sys.stderr)
        return 2
    from tune.search import run_sweep

    # With --json stdout carries only the final object; Tune's progress goes to stderr.
    quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    try:
        with quiet:
            payload = run_sweep(
                experiment,
                storage,
                tracking_uri,
                resume=args.resume,
                num_samples=args.num_samples,
            )
    except ConfigError as error:
        print(f"sweep.py: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sweep.py: interrupted; the parent run is KILLED", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(payload, default=str))
    else:
        print(format_summary(payload))
        print(f"\nbest checkpoint ({payload['best_checkpoint_by']}): {payload['best_checkpoint']}")
        print(f"best configuration: {payload['best_config']}")
        print(f"MLflow parent run {payload['parent_run_id']} in '{experiment.experiment_name}'")
        print(f"open it with: {ui_command(tracking_uri)}")
    status, complaint = exit_status(payload)
    if complaint:
        print(f"sweep.py: {complaint}", file=sys.stderr)
    return status


def exit_status(payload: dict[str, Any]) -> tuple[int, str | None]:
    """The program's exit status for a sweep's summary, and the line that explains a
    non-zero one: 130 interrupted, 1 when a trial failed or the sweep did, 1 when the
    MLflow parent run could not be updated (``parent_run_error``; its warning line, which
    :func:`tune.search.finish_sweep` printed, explains it: no second line), else 0."""
    if payload["status"] == "KILLED":
        return 130, "interrupted; continue with --resume"
    failed = [row["trial"] for row in payload["trials"] if row["error"]]
    if failed:
        return 1, (
            f"{len(failed)} of {len(payload['trials'])} trials failed ({', '.join(failed)}); "
            "the best is the best of the others"
        )
    if payload["status"] != "FINISHED":
        return 1, "no trial reported the sweep's metric"
    if payload.get("parent_run_error"):
        # Every result is in the summary, but MLflow, where the sweep is compared, may
        # show its parent run RUNNING without best_<metric>: not a clean success.
        return 1, None
    return 0, None


def format_summary(payload: dict[str, Any]) -> str:
    """One line per trial, best first by the sweep's metric: its value, iterations
    reached and sampled values."""
    sign = -1.0 if payload["mode"] == "max" else 1.0
    rows = sorted(
        payload["trials"],
        key=lambda row: float("inf") if row["metric"] is None else sign * row["metric"],
    )
    lines = [f"trial  {payload['metric']}  iterations  parameters"]
    for row in rows:
        value = row["metric"]
        shown = "failed" if row["error"] else "-" if value is None else f"{value:.4g}"
        params = ", ".join(
            f"{key}={value:.3g}" if isinstance(value, float) else f"{key}={value}"
            for key, value in sorted(row["params"].items())
        )
        lines.append(f"{row['trial'][:48]}  {shown}  {row['training_iteration']}  {params}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
