"""Train scheduler agents with RLlib through Ray Tune, tracked in MLflow, then evaluate.

How to run
----------
    python platform/train.py --config tune/configs/demo.yaml
    python platform/train.py --config tune/configs/demo.yaml --set algorithm.lr=1e-4 --stop-iters 5
    python platform/train.py --config tune/configs/demo.yaml --resume      # after Ctrl-C / a kill
    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python platform/train.py --config tune/configs/demo.yaml --json

What you get
------------
Connects to the Ray cluster in ``RAY_ADDRESS`` (or the one ``ray job submit`` runs it on),
else starts a local Ray. One Tune trial per training seed of the config, with Tune's
progress table, checkpoints under ``--storage`` (default
``$PODSCHED_RESULTS/ray_results/<name>``, else ``~/podsched-results/...``: :mod:`tune.paths`)
and every trial logged to MLflow
(flattened config as params, curated metrics per iteration, tags). At the end the trained
policy -- the last checkpoint, or with ``evaluation.validation_seeds`` the kept checkpoint
or warm-start module with the lowest avg JCT on those seeds (:mod:`tune.selection`) --
played greedily (``learned-greedy``) and sampled (``learned-sampled``) -- and
the configured heuristics (``evaluation.baselines: all``: the full table) play held-out
workloads (evaluation seeds never used in training); the comparison (mean ± 95% Student-t
confidence interval over seeds of avg/p90 JCT, makespan and contention, the best heuristic
and each row's difference to it) is printed and logged to MLflow, one run per policy with
the same metric names (means, plus ``<metric>_ci95`` half-widths), plus artifacts on the
learned summary row (config, learning curve, JCT CDF of the learned rows against the best
heuristic, ``evaluation.csv`` and ``evaluation.json`` with per-seed values, checkpoint path).
An MLflow server that cannot be reached is waited for, training's metrics buffered and the
evaluation runs retried for up to five minutes; if it stays down, the evaluation's files
are kept under ``$PODSCHED_RESULTS/unlogged-evaluations/`` (``evaluation_unlogged`` in the
JSON), the table is still printed, and the exit status is 1.
``--json`` prints one final object: ``checkpoint`` (the evaluated policy's folder),
``tracking_uri``, ``experiment``,
``policies`` ({name: {metric: mean}}), ``evaluation`` ({name: {kind, metrics, ci95, seeds,
per_seed}}), ``summary`` (best heuristic, learned summary row, relative differences) and
``training_s``. A bad config -- any section, ``environment.config``, ``model.config`` and
``algorithm.extra`` included, a model that does not fit the environment, or a trial that
needs more CPUs/GPUs than the machine (or the joined cluster) has -- prints one line on
stderr naming the key and what is allowed, and exits with status 2 before training starts
(:mod:`tune.preflight`). A reader that closes the output early (``| head``) does not stop
the run: training, evaluation and their MLflow runs finish, the rest of the output is
dropped, and the exit status is 141 (128 + SIGPIPE, as for any Unix tool).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from envs.sim.report import json_safe
from tune.cli import STDOUT_CLOSED_STATUS, GuardedStdout, OneLineParser
from tune.experiment import ConfigError, ExperimentConfig, load_config
from tune.paths import (
    default_storage,
    local_folder,
    resolve_storage,
)
from tune.runs import BEST_METRIC, checkpoint_folder
from tune.worker_env import bound_spin_waits

#: The exit status of an interrupted run (128 + SIGINT, as shells report Ctrl-C).
INTERRUPTED = 130


def build_parser() -> OneLineParser:
    """The command line."""
    parser = OneLineParser(
        prog="train.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config", type=Path, required=True, help="experiment YAML (tune/configs/)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, dotted, repeatable (e.g. algorithm.lr=1e-4)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the interrupted experiment of this config"
    )
    parser.add_argument("--stop-iters", type=int, help="override stop.training_iteration")
    parser.add_argument(
        "--storage",
        help="Tune results: a folder, or a URI Tune accepts (s3://bucket/path, gs://..., "
        "file://...), passed through untouched (default $PODSCHED_RESULTS/ray_results, "
        "else ~/podsched-results/ray_results)",
    )
    parser.add_argument(
        "--skip-evaluation", action="store_true", help="train only; no held-out comparison"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    return parser


def load(args: argparse.Namespace) -> ExperimentConfig:
    """The config with --set and --stop-iters applied (validated, before Ray)."""
    overrides = list(args.set)
    if args.stop_iters is not None:
        if args.stop_iters < 1:
            raise ConfigError(f"--stop-iters must be >= 1, got {args.stop_iters}")
        overrides.append(f"stop.training_iteration={args.stop_iters}")
    return load_config(args.config, overrides)


def start_from_clone(
    experiment: ExperimentConfig, folder: Path, log: Any
) -> tuple[str, dict[str, float]]:
    """Train the warm start's clone(s); returns the folder PPO starts from (``folder``)
    and each clone's avg JCT on ``warm_start.clone_seeds`` by its folder name (none for a
    single clone).

    With ``warm_start.restarts`` > 1 the clones go to ``<folder>-clones/clone-<k>``, play
    the clone seeds, and the best is copied to ``folder`` (where ``--resume`` finds it).
    """
    from tune.imitation import warm_start, warm_start_clones

    if experiment.warm_start is None or experiment.warm_start.restarts == 1:
        return warm_start(experiment, folder, log=log)[0], {}
    from tune.selection import choose_clone

    clones = warm_start_clones(experiment, folder.with_name(f"{folder.name}-clones"), log=log)
    chosen, scores = choose_clone(experiment, [path for path, _ in clones])
    for path, score in scores.items():
        marker = " (chosen)" if path == chosen else ""
        log(f"warm start {Path(path).name}: clone-seed avg JCT {score / 3600:.3f} h{marker}")
    shutil.copytree(chosen, folder, dirs_exist_ok=True)
    return str(folder), {Path(path).name: score for path, score in scores.items()}


def run_tune(
    experiment: ExperimentConfig, storage: str, tracking_uri: str, resume: bool
) -> tuple[Any, str | None, dict[str, float]]:
    """Fit (or resume) the Tune experiment; returns its ResultGrid, the warm-start
    module's folder (None without a ``warm_start`` section) and the clones' scores on
    ``warm_start.clone_seeds`` (empty unless ``warm_start.restarts`` > 1 trained them now)."""
    from ray import tune as ray_tune

    from tune.rllib_config import algorithm_config
    from tune.runs import make_tuner, restore_tuner

    warm_start_path, clone_scores = None, {}
    if experiment.warm_start is not None:
        # Once, before Tune: every trial starts from the same imitation-trained module.
        # On --resume the checkpoints supersede it; reuse it for trials that never saved one.
        folder = local_folder(storage, "warm_start", experiment.name)
        if resume and folder.is_dir():
            warm_start_path = str(folder)
        else:
            warm_start_path, clone_scores = start_from_clone(
                experiment, folder, log=lambda line: print(line, flush=True)
            )
    config = algorithm_config(experiment, warm_start_path=warm_start_path)
    seeds = experiment.seeds
    config = config.debugging(seed=seeds[0] if len(seeds) == 1 else ray_tune.grid_search(seeds))
    if resume:
        tuner = restore_tuner(experiment, config, storage)
    else:
        tuner = make_tuner(experiment, config, storage, tracking_uri)
    return tuner.fit(), warm_start_path, clone_scores


def scored_checkpoint(experiment: ExperimentConfig, results: Any) -> Any:
    """The kept checkpoint with the best declared ``checkpoint.score`` of all trials;
    without one, or when no kept checkpoint reported it (a short run whose episodes had
    not ended: a warning, the training is not lost), the last checkpoint of the trial
    with the best final training return."""
    from tune.selection import checkpoint_by_score

    key = experiment.checkpoint.score_key
    checkpoint, _ = checkpoint_by_score(results, key, experiment.checkpoint.order, None)
    if checkpoint is not None:
        return checkpoint
    if key is not None:
        print(
            f"train.py: warning: no kept checkpoint reported {key!r}; taking the latest",
            file=sys.stderr,
        )
    return best_trial(results).checkpoint


def best_trial(results: Any) -> Any:
    """The trial (a Tune Result) with the highest final mean episode return; the first
    trial when none reported one (episodes longer than a short run), where Tune's own
    choice raises for several trials and a single one is its own best."""
    try:
        return results.get_best_result(metric=BEST_METRIC, mode="max")
    except RuntimeError:  # no trial reported BEST_METRIC: the training is not lost over it
        return results[0]


def choose_policy(
    experiment: ExperimentConfig, results: Any, warm_start_path: str | None
) -> tuple[str, dict[str, str], Any]:
    """The policy to evaluate: ``(folder, module folders by id, validation)``.

    Without ``evaluation.validation_seeds``: the kept checkpoint with the best declared
    ``checkpoint.score`` of all trials (without one, the last checkpoint of the trial with
    the best final return); validation None. With them: the candidate
    :func:`tune.selection.select` picks on those seeds among every kept checkpoint and the
    warm-start module (the warm start unless a checkpoint is significantly better), and
    its :class:`tune.selection.Selection`.
    """
    from tune.evaluation import module_paths
    from tune.rllib_config import module_ids

    ids = module_ids(experiment)
    if not experiment.evaluation.validation_seeds:
        checkpoint = checkpoint_folder(scored_checkpoint(experiment, results))
        return checkpoint, module_paths(checkpoint, ids), None
    from tune.selection import checkpoint_candidates, select

    kept = [
        checkpoint_folder(checkpoint)
        for result in results
        for checkpoint, _ in (result.best_checkpoints or [])
    ]
    selection = select(experiment, checkpoint_candidates(kept, ids, warm_start_path))
    return selection.chosen.path, selection.chosen.modules, selection


def write_evaluation_table(
    table: dict[str, dict[str, Any]], info: dict[str, Any], out: Path
) -> list[Path]:
    """``evaluation.csv`` (per policy: kind, best-heuristic mark, mean and 95% half-width of
    each metric, relative difference to the best heuristic) and ``evaluation.json`` (the
    same with per-seed values) in ``out``."""
    from tune.evaluation import statistics_table

    keys = list(dict.fromkeys(key for entry in table.values() for key in entry["metrics"]))
    csv_path = out / "evaluation.csv"
    with csv_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        header = ["policy", "kind", "best_heuristic", "learned_summary", "seeds"]
        writer.writerow(
            [*header, *(f"{k}{suffix}" for k in keys for suffix in ("", "_ci95")), "vs_best"]
        )
        for policy, entry in table.items():
            row = [
                policy,
                entry.get("kind"),
                policy == info["best_heuristic"],
                policy == info["learned"],
                len(entry.get("seeds", [])),
            ]
            for key in keys:
                row += [entry["metrics"].get(key), entry.get("ci95", {}).get(key)]
            writer.writerow([*row, info["relative_to_best"].get(policy)])
    json_path = out / "evaluation.json"
    payload = {"summary": info, "policies": statistics_table(table)}
    json_path.write_text(json.dumps(json_safe(payload), indent=1))
    return [csv_path, json_path]


class EvaluationNotLoggedError(Exception):
    """MLflow stayed unreachable while the evaluation runs were logged; their files
    (tables, plots, the policy) were kept in ``folder``."""

    def __init__(self, folder: Path, error: BaseException) -> None:
        super().__init__(f"evaluation not logged ({error}); kept in {folder}")
        self.folder, self.error = folder, error


def log_evaluation(
    experiment: ExperimentConfig,
    tracking_uri: str,
    table: dict[str, dict[str, Any]],
    best: Any,
    checkpoint: str,
    info: dict[str, Any] | None = None,
    modules: dict[str, str] | None = None,
) -> None:
    """One MLflow run per evaluated policy (same metric names: means and ``_ci95``
    half-widths), artifacts on the learned summary row: with ``modules`` (the evaluated
    RLModule folders) the policy itself as ``policy/`` (:mod:`tune.policy_artifact`)."""
    from result_plots import plot_jct_cdfs, plot_learning_curve

    from tune.evaluation import summary
    from tune.runs import log_evaluation_or_keep

    info = summary(experiment, table) if info is None else info
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        (out / "config.yaml").write_text(yaml.safe_dump(experiment.to_dict(), sort_keys=False))
        frame = best.metrics_dataframe
        if frame is not None and BEST_METRIC in frame:
            plot_learning_curve(
                frame["training_iteration"], frame[BEST_METRIC], out / "learning_curve.png"
            )
        # The learned rows against the best heuristic: with the full table (96 heuristics)
        # one line per policy would be unreadable.
        shown = [policy for policy, entry in table.items() if entry.get("kind") == "learned"]
        shown += [info["best_heuristic"]] if info["best_heuristic"] else []
        if shown and all("jct" in table[policy] for policy in shown):
            labels = {
                policy: f"{policy} (best heuristic)" if policy == info["best_heuristic"] else policy
                for policy in shown
            }
            plot_jct_cdfs(
                {labels[policy]: table[policy]["jct"] for policy in shown}, out / "jct_cdf.png"
            )
        write_evaluation_table(table, info, out)
        (out / "checkpoint.txt").write_text(checkpoint + "\n")
        if modules:
            from tune.policy_artifact import save_policy

            save_policy(experiment, modules, checkpoint, out / "policy")
        if "validation" in info:
            # Which candidate was evaluated and why: every candidate's validation avg JCT.
            (out / "validation.json").write_text(json.dumps(info["validation"], indent=1))
        seeds = ",".join(map(str, experiment.evaluation.seeds))
        failure = log_evaluation_or_keep(
            experiment,
            tracking_uri,
            table,
            info,
            {"evaluation.seeds": seeds},
            lambda folder: Path(shutil.copytree(out, folder / experiment.name)),
            artifacts=sorted(out.iterdir()),
        )
        if failure is not None:
            raise EvaluationNotLoggedError(*failure) from failure[1]


def main(argv: list[str] | None = None) -> int:
    """Run the program; returns the exit status."""
    bound_spin_waits()  # before anything loads torch (tune.worker_env)
    args = build_parser().parse_or_exit(argv)
    from tune.mlflow_tracking import resolve_tracking_uri

    try:
        experiment = load(args)
        storage = resolve_storage(args.storage or default_storage())
        from tune.preflight import check_experiment, resource_warnings
        from tune.runs import start_ray_for

        # The tracking store first: it answers in milliseconds, the preflight (which
        # imports RLlib and builds the environment and the model) in seconds.
        tracking_uri = resolve_tracking_uri(experiment)
        if args.resume:  # before the preflight, and before a warm start retrains its clone
            from tune.runs import check_resumable

            check_resumable(experiment, storage)
        check_experiment(experiment)
        for warning in resource_warnings(experiment):
            print(f"train.py: warning: {warning}", file=sys.stderr)
        start_ray_for(experiment, tracking_uri)
    except (ConfigError, ValueError) as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    try:
        return train_and_print(args, experiment, storage, tracking_uri)
    except KeyboardInterrupt:
        # Outside Tune's own handling (warm start, evaluation): nothing half-done is logged.
        print("train.py: interrupted; nothing was evaluated or logged as finished", file=sys.stderr)
        return INTERRUPTED


def train_and_print(
    args: argparse.Namespace, experiment: ExperimentConfig, storage: str, tracking_uri: str
) -> int:
    """:func:`train_and_evaluate`, then the ``--json`` object; returns the exit status.

    A reader that closes stdout (``| head``) stops neither: the rest of the output is
    dropped (:class:`tune.cli.GuardedStdout`) and the status, 0 otherwise, is
    :data:`tune.cli.STDOUT_CLOSED_STATUS`. Unguarded, Tune's first progress line raised
    BrokenPipeError before any trial ran, and with ``--json`` the final object raised it
    after the training and the MLflow runs, in a traceback.
    """
    stdout = GuardedStdout(sys.stdout)
    with contextlib.redirect_stdout(stdout):
        # With --json stdout carries only the final object; Tune's progress and every other
        # line go to stderr, where a terminal or `ray job logs` shows them as the run goes.
        quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with quiet:
            status, payload = train_and_evaluate(args, experiment, storage, tracking_uri)
        if args.json and payload is not None:
            print(json.dumps(json_safe(payload)))
        # Now, not at exit: the interpreter's own flush would raise past this guard.
        stdout.flush()
    return status or (STDOUT_CLOSED_STATUS if stdout.reader_left else 0)


def train_and_evaluate(
    args: argparse.Namespace, experiment: ExperimentConfig, storage: str, tracking_uri: str
) -> tuple[int, dict[str, Any] | None]:
    """Train, then evaluate unless ``--skip-evaluation``; prints the report (not with
    ``--json``). Returns the exit status and the ``--json`` object (None on an error)."""
    from tune.mlflow_tracking import ui_command

    started = time.monotonic()
    try:
        results, warm_start_path, clone_scores = run_tune(
            experiment, storage, tracking_uri, args.resume
        )
    except ConfigError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2, None
    errors = [result.error for result in results if result.error is not None]
    if errors:
        print(f"train.py: error: a trial failed: {errors[0]}", file=sys.stderr)
        return 1, None
    unfinished = [result for result in results if not (result.metrics or {}).get("done")]
    if unfinished:
        # Stopped before its stop criterion (Ctrl-C, SIGUSR1): a partial policy is not
        # evaluated as if it were the trained one.
        reached = min(int((r.metrics or {}).get("training_iteration", 0)) for r in unfinished)
        print(
            f"train.py: training interrupted ({len(unfinished)} trial(s) unfinished, the "
            f"earliest at iteration {reached}); their MLflow runs are KILLED and nothing was "
            "evaluated; continue with --resume",
            file=sys.stderr,
        )
        return INTERRUPTED, None
    training_s = time.monotonic() - started
    best = best_trial(results)
    table: dict[str, dict[str, Any]] = {}
    info: dict[str, Any] = {}
    validation: dict[str, float] = {}  # every candidate's validation avg JCT by label
    evaluation_s = 0.0
    unlogged: str | None = None
    if args.skip_evaluation:
        # Validation (which may choose another candidate) is part of the evaluation.
        checkpoint = checkpoint_folder(scored_checkpoint(experiment, results))
    else:
        from tune.evaluation import evaluate_experiment, summary

        started = time.monotonic()
        checkpoint, modules, selection = choose_policy(experiment, results, warm_start_path)
        table = evaluate_experiment(experiment, modules)
        evaluation_s = time.monotonic() - started
        info = summary(experiment, table)
        if selection is not None:
            validation = selection.scores
            info["validation"] = {
                "chosen": checkpoint,
                "avg_jct": validation,
                "per_seed_avg_jct": selection.per_seed,
                # Seeds where a candidate left a job unfinished (its avg JCT a lower bound).
                "unfinished_seeds": selection.unfinished_seeds,
                "seeds": list(experiment.evaluation.validation_seeds),
                "selection_confidence": experiment.evaluation.selection_confidence,
            }
            if clone_scores:
                # Scored on warm_start.clone_seeds, not on the validation seeds above.
                info["validation"]["clones"] = clone_scores
                info["validation"]["clone_seeds"] = list(experiment.warm_start.clone_seeds)
        try:
            log_evaluation(experiment, tracking_uri, table, best, checkpoint, info, modules)
        except EvaluationNotLoggedError as failure:
            print(
                f"train.py: warning: the evaluation runs were not logged to {tracking_uri} "
                f"({type(failure.error).__name__}); their files are in {failure.folder}, "
                f"the table follows",
                file=sys.stderr,
            )
            unlogged = str(failure.folder)
    from tune.evaluation import statistics_table

    payload = {
        "checkpoint": checkpoint,
        "tracking_uri": tracking_uri,
        "experiment": experiment.experiment_name,
        "policies": {policy: entry["metrics"] for policy, entry in table.items()},
        "evaluation": statistics_table(table),
        "summary": info,
        "training_s": round(training_s, 1),
        "evaluation_s": round(evaluation_s, 1),
    }
    if unlogged is not None:
        payload["evaluation_unlogged"] = unlogged
    if not args.json:
        if table:
            from tune.evaluation import format_evaluation

            print(f"\nHeld-out evaluation ({len(experiment.evaluation.seeds)} seeds):")
            print(format_evaluation(table, info))
        for label, score in validation.items():
            print(f"validation avg JCT {score / 3600:.3f} h: {label}")
        print(f"\nevaluated policy: {checkpoint}")
        print(f"MLflow experiment '{experiment.experiment_name}' at {tracking_uri}")
        print(f"open it with: {ui_command(tracking_uri)}")
    return (0 if unlogged is None else 1), payload


if __name__ == "__main__":
    sys.exit(main())
