"""MLflow tracking of experiments: one run per trial, batched metrics, evaluation runs.

The tracking URI defaults to a sqlite store in the results root (:mod:`tune.paths`; MLflow 3
refuses the old file store), and experiments keep their artifacts in an explicit location;
an ``mlflow server`` works through ``tracking.tracking_uri`` or ``MLFLOW_TRACKING_URI``.
Metrics go in one ``log_batch`` per result (the stock Tune callback sends one request per
metric: ~1.8 s per result on sqlite, see shared/notes). Evaluation runs of the learned
policy and of every heuristic carry the SAME metric names (those of ``simulate.py run``),
and a ``policy`` tag, so the MLflow UI compares them side by side.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from ray import tune as ray_tune

from tune.experiment import ExperimentConfig, flatten
from tune.paths import artifact_location, default_tracking_uri, results_root

# Result keys worth a curve, under short MLflow names.
TRAINING_METRICS = {
    "env_runners/episode_return_mean": "episode_return_mean",
    "env_runners/episode_len_mean": "episode_len_mean",
    "env_runners/num_env_steps_sampled_lifetime": "env_steps_lifetime",
    "env_runners/num_agent_steps_sampled_lifetime": "agent_steps_lifetime",
    "time_this_iter_s": "time_this_iter_s",
    "timers/env_runner_sampling_timer": "sampling_s",
    "timers/learner_update_timer": "learning_s",
}
# Per-module learner statistics: PPO/APPO's losses, entropy and KL; DQN's Q loss, mean TD
# error and Q values. An algorithm logs the ones it reports.
LEARNER_METRICS = (
    "policy_loss",
    "vf_loss",
    "entropy",
    "mean_kl_loss",
    "total_loss",
    "qf_loss",
    "td_error_mean",
    "qf_mean",
)


def resolve_tracking_uri(experiment: ExperimentConfig) -> str:
    """Config, else ``MLFLOW_TRACKING_URI``, else ``sqlite:///<results root>/mlflow.db``
    (:mod:`tune.paths`; the folder is created)."""
    if experiment.tracking.tracking_uri:
        return experiment.tracking.tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    results_root().mkdir(parents=True, exist_ok=True)
    return default_tracking_uri()


def ui_command(tracking_uri: str) -> str:
    """How to open the runs in the MLflow UI."""
    if tracking_uri.startswith(("http://", "https://")):
        return f"open {tracking_uri}"
    return f"mlflow ui --backend-store-uri {tracking_uri}"


def _client(tracking_uri: str) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def experiment_id(tracking_uri: str, name: str) -> str:
    """The id of MLflow experiment ``name``, created if missing -- with an explicit
    artifact location (:func:`tune.paths.artifact_location`), never ``./mlruns`` of
    whatever folder the program runs in."""
    client = _client(tracking_uri)
    existing = client.get_experiment_by_name(name)
    if existing:
        return existing.experiment_id
    return client.create_experiment(name, artifact_location=artifact_location(tracking_uri, name))


def experiment_tags(experiment: ExperimentConfig) -> dict[str, str]:
    """Tags every run of the experiment carries."""
    env_config = experiment.environment.config
    return {
        "formulation": experiment.environment.name,
        "topology": str(env_config.get("topology", "")),
        "experiment_config": experiment.name,
    }


def curated_metrics(result: dict[str, Any]) -> dict[str, float]:
    """The training metrics logged per iteration (finite numbers only)."""
    flat = flatten(result, separator="/")
    metrics = {name: flat.get(key) for key, name in TRAINING_METRICS.items()}
    learners = result.get("learners", {})
    for module, stats in learners.items():
        if module.startswith("__") or not isinstance(stats, dict):
            continue
        for name in LEARNER_METRICS:
            metrics[f"{module}/{name}"] = stats.get(name)
    return {
        name: float(value)
        for name, value in metrics.items()
        if isinstance(value, int | float) and math.isfinite(value)
    }


def log_run(
    tracking_uri: str,
    experiment_name: str,
    run_name: str,
    *,
    params: dict[str, Any] | None = None,
    metrics: dict[str, float] | None = None,
    tags: dict[str, str] | None = None,
    artifacts: list[Path] | None = None,
    parent_run_id: str | None = None,
) -> str:
    """Create a finished run with params, metrics, tags and artifacts; returns its id."""
    from mlflow.entities import Metric, Param, RunTag

    client = _client(tracking_uri)
    all_tags = dict(tags or {})
    all_tags["mlflow.runName"] = run_name
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(experiment_id(tracking_uri, experiment_name), tags=all_tags)
    run_id = run.info.run_id
    now = int(time.time() * 1000)
    client.log_batch(
        run_id,
        metrics=[
            # NaN is kept (MLflow stores it): every policy then has the same metric names.
            Metric(key, float(value), now, 0)
            for key, value in (metrics or {}).items()
            if isinstance(value, int | float)
        ],
        params=[Param(key, _param_value(value)) for key, value in (params or {}).items()],
        tags=[RunTag(key, str(value)) for key, value in all_tags.items()],
    )
    for artifact in artifacts or []:
        client.log_artifact(run_id, str(artifact))
    client.set_terminated(run_id)
    return run_id


def _param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 6000 else text[:5997] + "..."


class MLflowTrialCallback(ray_tune.Callback):
    """One MLflow run per Tune trial: flattened config as params, batched metrics.

    Trial -> run ids are kept in the callback's state, which Tune checkpoints, and are
    looked up by the run's ``trial_id`` tag when that state was not saved yet, so a
    resumed experiment keeps logging into the same runs.
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment: ExperimentConfig,
        parent_run_id: str | None = None,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.parent_run_id = parent_run_id
        self.run_ids: dict[str, str] = {}

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Open (or reopen after a resume) the trial's run."""
        from mlflow.entities import Param, RunTag

        client = _client(self.tracking_uri)
        if trial.trial_id in self.run_ids:
            return
        known = self._existing_run(client, trial.trial_id)
        if known is not None:
            # Killed before Tune saved the callback state: the run exists all the same.
            self.run_ids[trial.trial_id] = known
            return
        trial_config = trial.config or {}
        seed = trial_config.get("seed")
        tags = {
            **experiment_tags(self.experiment),
            "policy": "learned",
            "policy_kind": "learned",
            "trial_id": trial.trial_id,
            "seed": str(seed),
            "mlflow.runName": f"{self.experiment.name}-{trial.trial_id}",
        }
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        run = client.create_run(
            experiment_id(self.tracking_uri, self.experiment.experiment_name), tags=tags
        )
        self.run_ids[trial.trial_id] = run.info.run_id
        params = self.experiment.flat()
        params.update(
            {f"trial.{key}": value for key, value in flatten(trial.evaluated_params).items()}
        )
        params["trial.seed"] = seed
        client.log_batch(
            run.info.run_id,
            params=[Param(key, _param_value(value)) for key, value in params.items()],
            tags=[RunTag(key, str(value)) for key, value in tags.items()],
        )

    def _existing_run(self, client: Any, trial_id: str) -> str | None:
        """The run an earlier driver opened for ``trial_id`` in this experiment, if any.

        Tune saves the callback's state every few seconds, so a driver killed in between
        resumes without the mapping; trial ids are unique within a Tune experiment.
        """
        found = client.search_runs(
            [experiment_id(self.tracking_uri, self.experiment.experiment_name)],
            filter_string=f"tags.trial_id = '{trial_id}'",
            max_results=1,
        )
        return found[0].info.run_id if found else None

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        """Log the curated metrics of one training iteration in one request."""
        from mlflow.entities import Metric

        run_id = self.run_ids.get(trial.trial_id)
        if run_id is None:
            return
        step = int(result.get("training_iteration", 0))
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, step) for k, v in curated_metrics(result).items()]
        _client(self.tracking_uri).log_batch(run_id, metrics=metrics)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Mark the trial's run finished."""
        self._end(trial, "FINISHED")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Mark the trial's run failed."""
        self._end(trial, "FAILED")

    def _end(self, trial: Any, status: str) -> None:
        run_id = self.run_ids.get(trial.trial_id)
        if run_id is not None:
            _client(self.tracking_uri).set_terminated(run_id, status=status)

    def get_state(self) -> dict[str, Any] | None:
        """Tune checkpoints this with the experiment."""
        return {"run_ids": dict(self.run_ids), "parent_run_id": self.parent_run_id}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the trial -> run mapping when an experiment resumes."""
        self.run_ids = dict(state.get("run_ids", {}))
        self.parent_run_id = state.get("parent_run_id", self.parent_run_id)
