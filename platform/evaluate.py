"""Evaluate a trained checkpoint and heuristics on chosen workloads and seeds.

How to run
----------
    python platform/evaluate.py --config tune/configs/demo.yaml \\
        --checkpoint ray_results/demo/<trial>/checkpoint_000011
    python platform/evaluate.py --config tune/configs/demo.yaml --baselines fifo+packing,las+lif \\
        --seeds 2000,2001,2002 --set environment.config.num_jobs=80 --json
    python platform/evaluate.py --config tune/configs/demo.yaml --checkpoint PATH --mlflow
    # the policy an evaluation run logged (its policy_artifacts tag), or one in s3://, gs://
    python platform/evaluate.py --config tune/configs/demo.yaml --checkpoint runs:/<run id>/policy

What you get
------------
Every policy (the checkpoint's learned policy and each heuristic) plays the same episodes
-- one per seed, the workload drawn from the seed as ``simulate.py`` draws it -- in
parallel over Ray for ``pod_scheduling_v0``; a single-agent formulation (DeepRM, CuSH,
SCED2, contention-aware, RL-TAPS) is compared with its paper's baselines instead. The
learned policy plays greedily (``learned-greedy``) and sampled (``learned-sampled``);
``--baselines all`` plays the full table of heuristics. A table of the mean ± 95%
Student-t confidence interval over seeds per policy, with the best heuristic marked and
each row's difference to it, or with ``--json`` one object ``{"policies": {name: {metric:
mean}}, "evaluation": {name: {kind, metrics, ci95, seeds, per_seed}}, "summary": {...}}``;
with ``--mlflow`` each policy is also logged as a run of the config's MLflow experiment
(means and ``<metric>_ci95``). ``--checkpoint`` takes an Algorithm checkpoint or a policy
folder, local or by URI: an MLflow artifact (``runs:/<run id>/policy``, downloaded from the
config's tracking server) or any URI Tune's storage takes (:mod:`tune.policy_source`).
Without ``--checkpoint`` only heuristics are evaluated. Bad
arguments and bad configs (nested keys included, :mod:`tune.preflight`) print one line on
stderr and exit with status 2 before Ray starts. A reader that closes the output early
(``| head``) ends the program quietly with status 141, after the ``--mlflow`` logging.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from envs.sim.report import json_safe
from tune.cli import STDOUT_CLOSED_STATUS, OneLineParser, silence_stdout
from tune.experiment import ConfigError, ExperimentConfig, load_config
from tune.mlflow_retry import Deadline
from tune.worker_env import bound_spin_waits


def seed_list(text: str) -> list[int]:
    """An argparse type: seeds, integers >= 0 separated by commas. Checked here, so that
    a bad one is named as ``--seeds`` (the config's own check names evaluation.seeds)."""
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(
            f"takes seeds, integers >= 0 separated by commas (e.g. 2000,2001), got {text!r}"
        )
    return seeds


def build_parser() -> OneLineParser:
    """The command line."""
    parser = OneLineParser(
        prog="evaluate.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True, help="the experiment YAML")
    parser.add_argument(
        "--checkpoint",
        help="an Algorithm checkpoint or policy folder: a path, runs:/<run id>/policy, s3://...",
    )
    parser.add_argument(
        "--baselines",
        help="heuristics, comma separated, or 'all' (default: the config's evaluation list)",
    )
    parser.add_argument(
        "--seeds",
        type=seed_list,
        help="episode seeds, integers >= 0, comma separated (default: the config's)",
    )
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
    bound_spin_waits()  # before anything loads torch (tune.worker_env)
    args = build_parser().parse_or_exit(argv)
    overrides = list(args.set)
    if args.baselines is not None:
        names = [name.strip() for name in args.baselines.split(",") if name.strip()]
        if names == ["all"]:
            overrides.append("evaluation.baselines=all")
        else:
            overrides.append(f"evaluation.baselines=[{', '.join(names)}]")
    if args.seeds is not None:
        # Validation seeds choose among training checkpoints; an evaluation of one policy
        # never reads them, so they need not stay apart from the seeds asked for here.
        seeds = ", ".join(map(str, args.seeds))
        overrides += [f"evaluation.seeds=[{seeds}]", "evaluation.validation_seeds=[]"]
    with tempfile.TemporaryDirectory(prefix="podsched-policy-") as workdir:
        return evaluate(args, overrides, Path(workdir))


def evaluate(args: argparse.Namespace, overrides: list[str], workdir: Path) -> int:
    """Check the config, fetch the policy (into ``workdir``), play and report."""
    try:
        experiment = load_config(args.config, overrides)
        if args.checkpoint is None and not experiment.evaluation.baselines_for(
            experiment.environment.name
        ):
            raise ConfigError(
                "nothing to evaluate: give --checkpoint, or baselines (--baselines or the "
                "config's evaluation.baselines)"
            )
        from tune.mlflow_tracking import resolve_tracking_uri
        from tune.policy_source import MLFLOW_SCHEMES
        from tune.preflight import check_experiment

        # MLflow is needed to log (--mlflow) or to download the checkpoint; a store it
        # refuses then fails here, in milliseconds, before the preflight and the evaluation.
        needs_mlflow = args.mlflow or (args.checkpoint or "").startswith(MLFLOW_SCHEMES)
        tracking_uri = resolve_tracking_uri(experiment) if needs_mlflow else None
        check_experiment(experiment)  # nested keys, model/env fit: before Ray, one line
        modules = None
        if args.checkpoint is not None:
            from tune.policy_source import policy_modules
            from tune.rllib_config import module_ids

            modules = policy_modules(args.checkpoint, module_ids(experiment), tracking_uri, workdir)
    except (ConfigError, ValueError) as error:
        print(f"evaluate.py: error: {error}", file=sys.stderr)
        return 2
    from tune.evaluation import evaluate_experiment, format_evaluation, statistics_table, summary
    from tune.runs import start_ray

    if not args.no_ray:
        start_ray()
    table = evaluate_experiment(experiment, modules)
    info = summary(experiment, table)
    payload = {
        "policies": {policy: entry["metrics"] for policy, entry in table.items()},
        "evaluation": statistics_table(table),
        "summary": info,
    }
    # The results first: logging may wait out an unreachable server for minutes and fail.
    # A reader that stopped reading (``| head``) still gets the runs logged.
    reader_left = False
    try:
        if args.json:
            print(json.dumps(json_safe(payload)), flush=True)
        else:
            print(f"{len(experiment.evaluation.seeds)} episode(s) per policy")
            print(format_evaluation(table, info), flush=True)
    except BrokenPipeError:
        silence_stdout()
        reader_left = True
    status = 0
    if args.mlflow:  # tracking_uri was resolved (and checked) above
        status = log_or_keep(experiment, tracking_uri, table, info, args.checkpoint or "", payload)
    return status or (STDOUT_CLOSED_STATUS if reader_left else 0)


def log_or_keep(
    experiment: ExperimentConfig,
    tracking_uri: str,
    table: dict[str, Any],
    info: dict[str, Any],
    checkpoint: str,
    payload: dict[str, Any],
    deadline: Deadline | None = None,
) -> int:
    """Log the evaluation runs, waiting out an unreachable server until ``deadline``
    (default :data:`tune.mlflow_retry.RETRY_FOR_S` from now); when it fails, keep the
    results under ``$PODSCHED_RESULTS/unlogged-evaluations/`` instead, say where in one
    line and return 1."""
    from tune.runs import log_evaluation_or_keep

    def keep(folder: Path) -> Path:
        path = folder / f"{experiment.name}.json"
        path.write_text(json.dumps(json_safe(payload)))
        return path

    failure = log_evaluation_or_keep(
        experiment,
        tracking_uri,
        table,
        info,
        {"checkpoint": checkpoint},
        keep,
        deadline=deadline,
    )
    if failure is not None:
        path, error = failure
        print(
            f"evaluate.py: error: the evaluation runs were not logged to {tracking_uri} "
            f"({type(error).__name__}); the results are in {path}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
