"""Ray, Tune and MLflow, set up one way for every program.

``platform/train.py``, ``tune/sweep.py`` and ``platform/evaluate.py`` join or start Ray
with :func:`start_ray`, build their Tune runs with :func:`make_tuner` (checkpoints and the
MLflow trial callback from the experiment's config) or :func:`restore_tuner`, and log a
held-out comparison to MLflow with :func:`log_evaluation_runs`: one run per policy, with
the same metric names, so the MLflow UI compares them side by side.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tune.experiment import ConfigError, ExperimentConfig
from tune.mlflow_retry import Deadline
from tune.paths import results_root, storage_join
from tune.worker_env import worker_env_vars

#: The training result Tune ranks trials by.
BEST_METRIC = "env_runners/episode_return_mean"


def start_ray(tracking_uri: str | None = None) -> None:
    """Join the cluster in RAY_ADDRESS (``ray job submit`` sets it) or start a local Ray;
    with ``tracking_uri``, code inside trials and tasks sees it as MLFLOW_TRACKING_URI.
    Workers get short OpenMP spin waits (:mod:`tune.worker_env`); variables a submitted job's
    runtime environment sets itself are left to it."""
    import ray

    options: dict[str, Any] = {"log_to_driver": False}
    extra = {}
    if tracking_uri is not None:
        # Code inside trials must see the tracking URI too (ray#36257).
        os.environ["MLFLOW_TRACKING_URI"] = tracking_uri
        extra["MLFLOW_TRACKING_URI"] = tracking_uri
    # Every worker's torch threads spin briefly before they sleep (tune.worker_env says why).
    env_vars = worker_env_vars(extra)
    if env_vars:
        options["runtime_env"] = {"env_vars": env_vars}
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], **options)
    else:
        ray.init(include_dashboard=False, **options)


def start_ray_for(experiment: ExperimentConfig, tracking_uri: str | None = None) -> None:
    """:func:`start_ray`, once one trial of ``experiment`` is known to fit: before a local
    Ray starts, against this machine's CPUs and GPUs; after joining the cluster in
    RAY_ADDRESS, against the cluster's (Ray is left again then). A trial that fits nowhere
    would wait for its resources forever: :class:`ConfigError` instead."""
    import ray

    from tune.preflight import check_resources, local_resources

    address = os.environ.get("RAY_ADDRESS")
    if not address:
        check_resources(experiment, local_resources(), "this machine (where a local Ray starts)")
    start_ray(tracking_uri)
    if address:
        try:
            check_resources(experiment, ray.cluster_resources(), f"the Ray cluster at {address}")
        except ConfigError:
            ray.shutdown()
            raise


def make_tuner(
    experiment: ExperimentConfig,
    param_space: Any,
    storage: str,
    tracking_uri: str,
    *,
    name: str | None = None,
    verbose: int = 1,
    tune_config: Any = None,
    parent_run_id: str | None = None,
) -> Any:
    """A Tune run of ``experiment.algorithm`` over ``param_space``, named ``name`` (default
    the experiment's) under ``storage``: the config's stop criteria and checkpoints (and one
    at the end), each trial an MLflow run (a child of ``parent_run_id`` when given); a trial
    that fails (a lost node, a crashed process) is retried from its last checkpoint up to
    ``checkpoint.max_failures`` times."""
    from ray import tune as ray_tune

    from tune.mlflow_tracking import MLflowTrialCallback
    from tune.rllib_config import algorithm_class

    return ray_tune.Tuner(
        algorithm_class(experiment.algorithm.name),
        param_space=param_space,
        tune_config=tune_config,
        run_config=ray_tune.RunConfig(
            name=name or experiment.name,
            storage_path=str(storage),
            stop=experiment.stop.criteria(),
            checkpoint_config=ray_tune.CheckpointConfig(
                checkpoint_frequency=experiment.checkpoint.frequency,
                num_to_keep=experiment.checkpoint.keep,
                checkpoint_at_end=True,
                # Keep the best by the declared score (None: the latest).
                checkpoint_score_attribute=experiment.checkpoint.score_key,
                checkpoint_score_order=experiment.checkpoint.order,
            ),
            failure_config=ray_tune.FailureConfig(max_failures=experiment.checkpoint.max_failures),
            callbacks=[MLflowTrialCallback(tracking_uri, experiment, parent_run_id=parent_run_id)],
            verbose=verbose,
        ),
    )


def restore_tuner(
    experiment: ExperimentConfig, param_space: Any, storage: str, name: str | None = None
) -> Any:
    """The interrupted Tune run ``name`` (default the experiment's) under ``storage``, to
    finish its unfinished and errored trials; :class:`ConfigError` when there is none."""
    from ray import tune as ray_tune

    from tune.rllib_config import algorithm_class

    experiment_dir = check_resumable(experiment, storage, name)
    return ray_tune.Tuner.restore(
        experiment_dir,
        trainable=algorithm_class(experiment.algorithm.name),
        param_space=param_space,
        resume_unfinished=True,
        resume_errored=True,
    )


def check_resumable(experiment: ExperimentConfig, storage: str, name: str | None = None) -> str:
    """The folder of the interrupted Tune run ``name`` (default the experiment's) under
    ``storage``; :class:`ConfigError` when there is none to resume (checked before any
    work, such as a warm start, that a resume would otherwise do first)."""
    from ray import tune as ray_tune

    experiment_dir = storage_join(storage, name or experiment.name)
    if not ray_tune.Tuner.can_restore(experiment_dir):
        raise ConfigError(f"--resume: no interrupted experiment at {experiment_dir}")
    return experiment_dir


def evaluation_run_name(policy: str, seeds: list[int]) -> str:
    """``eval-<policy>-seed<s>`` or ``eval-<policy>-seeds<first>-<last>``: the policy and
    the held-out seeds, as the MLflow UI lists runs."""
    if len(seeds) == 1:
        return f"eval-{policy}-seed{seeds[0]}"
    return f"eval-{policy}-seeds{seeds[0]}-{seeds[-1]}"


def log_evaluation_or_keep(
    experiment: ExperimentConfig,
    tracking_uri: str,
    table: dict[str, dict[str, Any]],
    info: dict[str, Any],
    params: dict[str, str],
    keep: Callable[[Path], Path],
    artifacts: list[Path] | None = None,
    deadline: Deadline | None = None,
) -> tuple[Path, BaseException] | None:
    """:func:`log_evaluation_runs`; None once logged. When the tracking server stays
    unreachable, ``keep(folder)`` saves what would have been logged under a new
    ``$PODSCHED_RESULTS/unlogged-evaluations/<time>`` folder (:mod:`tune.paths`), and what
    it saved is returned with the error: an evaluation took minutes to play."""
    from tune.mlflow_retry import outage_errors
    from tune.paths import unlogged_evaluations_folder

    try:
        log_evaluation_runs(experiment, tracking_uri, table, info, params, artifacts, deadline)
    except outage_errors() as error:
        folder = unlogged_evaluations_folder()
        folder.mkdir(parents=True, exist_ok=True)
        return keep(folder), error
    return None


def log_evaluation_runs(
    experiment: ExperimentConfig,
    tracking_uri: str,
    table: dict[str, dict[str, Any]],
    info: dict[str, Any],
    params: dict[str, str],
    artifacts: list[Path] | None = None,
    deadline: Deadline | None = None,
) -> None:
    """One MLflow run (:func:`evaluation_run_name`) per row of ``table``
    (:mod:`tune.evaluation`): its means and ``<metric>_ci95`` half-widths, ``params`` plus
    the policy, tags saying its kind, whether it is the best heuristic or the learned
    summary row of ``info`` (:func:`tune.evaluation.summary`) and whether it is compared
    (``compared``: false, with ``truncated_seeds``, for a row cut off by the step cap on
    some seeds, ``info["truncated_rows"]``); ``artifacts`` (the policy among them) go on
    the learned summary row, which every other run links to. An unreachable server is
    waited for until ``deadline`` (default: one :data:`tune.mlflow_retry.RETRY_FOR_S`
    seconds from now for all the runs), then its error is raised."""
    from tune.evaluation import bound_metrics, logged_metrics
    from tune.mlflow_retry import log_run_retrying, retrying
    from tune.mlflow_tracking import experiment_tags

    tags = experiment_tags(experiment)
    cut_off = info.get("truncated_rows") or {}
    # The learned summary row first: its run holds the artifacts (the policy among them),
    # and every other run of the comparison links to it.
    order = sorted(table, key=lambda policy: policy != info["learned"])
    linked: dict[str, str] = {}
    deadline = deadline or Deadline(tracking_uri)
    for policy in order:
        entry = table[policy]
        run_id = log_run_retrying(
            tracking_uri,
            experiment.experiment_name,
            evaluation_run_name(policy, experiment.evaluation.seeds),
            deadline,
            params={"policy": policy, **params},
            metrics={**logged_metrics(entry), **bound_metrics(info, policy)},
            tags={
                **tags,
                **linked,
                "policy": policy,
                "policy_kind": entry.get("kind", "heuristic"),
                "stage": "evaluation",
                "best_heuristic": str(policy == info["best_heuristic"]).lower(),
                "learned_summary": str(policy == info["learned"]).lower(),
                # A row cut off by the step cap on some seeds averages other workloads
                # than the rest: not ranked, no vs-best figure (tune.evaluation), and a
                # run compared in MLflow's UI must say so too.
                "compared": str(policy not in cut_off).lower(),
                **({"truncated_seeds": str(cut_off[policy])} if policy in cut_off else {}),
            },
            artifacts=artifacts if policy == info["learned"] else None,
        )
        if policy == info["learned"] and any(Path(a).name == "policy" for a in artifacts or []):
            uri = f"runs:/{run_id}/policy"
            linked = {"policy_artifacts": uri}
            retrying(
                lambda run_id=run_id, uri=uri: client_tag(
                    tracking_uri, run_id, "policy_artifacts", uri
                ),
                deadline,
            )


def checkpoint_folder(checkpoint: Any) -> str:
    """A local folder holding Tune ``checkpoint``: its own path on a local filesystem, else
    a copy under ``<results root>/checkpoints/`` (storage on s3://, gs://, ...)."""
    if checkpoint.filesystem.type_name == "local":
        return str(checkpoint.path)
    parts = Path(checkpoint.path).parts[-3:]  # experiment / trial / checkpoint_NNNNNN
    target = results_root().joinpath("checkpoints", *parts)
    if not target.is_dir():
        checkpoint.to_directory(str(target))
    return str(target)


def client_tag(tracking_uri: str, run_id: str, key: str, value: str) -> None:
    """Set one tag on a finished run."""
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=tracking_uri).set_tag(run_id, key, value)
