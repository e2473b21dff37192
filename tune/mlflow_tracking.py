"""MLflow tracking of experiments: one run per trial, batched metrics, evaluation runs.

The tracking URI defaults to a sqlite store in the results root (:mod:`tune.paths`; MLflow 3
refuses the old file store), and experiments keep their artifacts in an explicit location;
an ``mlflow server`` works through ``tracking.tracking_uri`` or ``MLFLOW_TRACKING_URI``.
Metrics go in one ``log_batch`` per result (the stock Tune callback sends one request per
metric: ~1.8 s per result on sqlite, see shared/notes). Evaluation runs of the learned
policy and of every heuristic carry the SAME metric names (those of ``simulate.py run``),
and a ``policy`` tag, so the MLflow UI compares them side by side.

**What a PBT trial trains with.** A sweep's trial run logs its swept keys as params with
the values the trial starts with (:func:`trial_params`). Under ``sweep.scheduler: pbt``
those values change while the trial runs -- an exploit copies a better trial's values,
then perturbs them -- and MLflow params are write-once, so the run would keep showing
values its later iterations never used. Each such run therefore also logs, at every
training iteration and with that iteration as its step, one metric per swept key named
``pbt/<swept key>`` (``pbt/algorithm.lr``): the value that iteration trained with, read
from the result the trainable reported (:func:`trained_values`). In the MLflow UI its
chart is the trial's schedule next to its return, its last value (the runs table's
column) the value the trial ended with, and the param the value it began with. A value
that is not a number (a ``choice`` of strings or lists) is logged as its position in the
key's ``choice`` or ``grid`` list, as ``pbt/<swept key>/index``. Other sweeps and
trainings log no such metrics: their values never change, and the params hold them.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ray import tune as ray_tune

from tune.experiment import ConfigError, ExperimentConfig, flatten
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
    # CuSH's policy selector under REINFORCE (tune/reinforce.py): 004 Fig. 6's shares.
    "dgemm_depth_first",
    "daxpy_breadth_first",
)


def resolve_tracking_uri(experiment: ExperimentConfig) -> str:
    """Config, else ``MLFLOW_TRACKING_URI``, else ``sqlite:///<results root>/mlflow.db``
    (:mod:`tune.paths`; the folder is created). A file store (``file://`` or a plain path)
    is a :class:`ConfigError` unless ``MLFLOW_ALLOW_FILE_STORE`` lets MLflow open it: MLflow
    3 refuses it at the first run it logs, which would be after training."""
    if experiment.tracking.tracking_uri:
        uri, source = experiment.tracking.tracking_uri, "tracking.tracking_uri"
    elif os.environ.get("MLFLOW_TRACKING_URI"):
        uri, source = os.environ["MLFLOW_TRACKING_URI"], "MLFLOW_TRACKING_URI"
    else:
        try:
            results_root().mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(
                f"cannot create the results folder {results_root()} ({error.strerror}); set "
                "PODSCHED_RESULTS to a writable folder"
            ) from None
        return default_tracking_uri()
    if is_file_store(uri):
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE

        if not MLFLOW_ALLOW_FILE_STORE.get():
            raise ConfigError(
                f"{source}={uri!r} is MLflow's file store, which this MLflow refuses "
                f"(maintenance mode); use a database such as {default_tracking_uri()!r}, "
                "an http(s):// MLflow server, or export MLFLOW_ALLOW_FILE_STORE=true"
            )
        return uri
    # Checked now: MLflow would refuse either only when the first run is logged.
    scheme = urlparse(uri).scheme
    if scheme.split("+")[0] not in TRACKING_SCHEMES:
        raise ConfigError(
            f"{source}={uri!r}: MLflow keeps no runs at a {scheme}:// URI; allowed: "
            f"{', '.join(TRACKING_SCHEMES)} (e.g. {default_tracking_uri()!r} or "
            "http://127.0.0.1:5000)"
        )
    if scheme == "sqlite" and uri.startswith("sqlite:///"):
        # SQLAlchemy's sqlite:///<file>: relative, or absolute with a fourth slash.
        folder = Path(uri.removeprefix("sqlite:///").split("?")[0]).parent
        if not folder.is_dir():
            raise ConfigError(
                f"{source}={uri!r}: the database's folder {folder} does not exist; create "
                "it or name another"
            )
    return uri


#: URI schemes MLflow keeps runs at (a database through SQLAlchemy, optionally with its
#: driver as ``postgresql+psycopg2``; a tracking server; Databricks).
TRACKING_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https", "databricks")


def is_file_store(uri: str) -> bool:
    """Whether MLflow keeps ``uri``'s runs in its file store: a ``file:`` URI or a path."""
    return urlparse(uri).scheme in ("", "file")


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


#: The prefix of the metrics that follow a PBT trial's swept values (module docstring).
PBT_PREFIX = "pbt/"


def trained_values(experiment: ExperimentConfig, result: dict[str, Any]) -> dict[str, float]:
    """Under ``sweep.scheduler: pbt``, the value of each swept key that the training
    iteration of ``result`` ran with, as metrics (see the module docstring): ``pbt/<key>``
    for a number (a bool as 0 or 1), else ``pbt/<key>/index``, its position in the key's
    ``choice`` or ``grid`` list. Empty without a PBT sweep.

    The values come from the result's own ``config`` (the trainable's config when it
    trained), not from the trial's: Tune's scheduler hears a result before the callbacks
    do, so after an exploit the trial's config already holds the next iteration's values.
    """
    sweep = experiment.sweep
    config = result.get("config")
    if sweep is None or sweep.scheduler != "pbt" or not isinstance(config, dict):
        return {}
    from tune.search import swept_params

    values: dict[str, float] = {}
    for key, value in swept_params(config, experiment).items():
        # numbers.Real: numpy's numbers too, which a config dict may hold.
        if isinstance(value, numbers.Real) and math.isfinite(value):
            values[f"{PBT_PREFIX}{key}"] = float(value)
            continue
        ((name, args),) = sweep.space[key].items()
        if name in ("choice", "grid") and value in args:
            values[f"{PBT_PREFIX}{key}/index"] = float(args.index(value))
    return values


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
    on_created: Callable[[str], None] | None = None,
) -> str:
    """Create a finished run with params, metrics, tags and artifacts; returns its id.
    ``on_created`` hears the run's id as soon as the run exists (before its contents)."""
    from mlflow.entities import Metric, Param, RunTag

    client = _client(tracking_uri)
    all_tags = dict(tags or {})
    all_tags["mlflow.runName"] = run_name
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(experiment_id(tracking_uri, experiment_name), tags=all_tags)
    run_id = run.info.run_id
    if on_created is not None:
        on_created(run_id)
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
        if Path(artifact).is_dir():  # a folder keeps its name and layout
            client.log_artifacts(run_id, str(artifact), artifact_path=Path(artifact).name)
        else:
            client.log_artifact(run_id, str(artifact))
    client.set_terminated(run_id)
    return run_id


def trial_params(experiment: ExperimentConfig, trial_config: dict[str, Any]) -> dict[str, Any]:
    """A trial run's params: the flattened config (:meth:`ExperimentConfig.flat`) with
    each swept key's value the one the trial trains with, read from its RLlib
    ``trial_config`` (:func:`tune.search.swept_params`), not the config's base value --
    which the trial never used, and which made every child run of a sweep show the same
    ``algorithm.lr``. A swept mapping replaces the base one's keys; without a sweep the
    flattened config is the trial's.

    PBT changes values later; MLflow params cannot change, so they hold the values the
    trial started with, and the metrics ``pbt/<swept key>`` what each iteration trained
    with (:func:`trained_values`).
    """
    params = experiment.flat()
    if experiment.sweep is None:
        return params
    from tune.search import swept_params

    for key, value in swept_params(trial_config, experiment).items():
        # The base value (the key itself, or a swept mapping's keys) and an empty mapping
        # above the key, which flat() keeps as a value.
        stale = [
            name
            for name in params
            if name == key or name.startswith(f"{key}.") or key.startswith(f"{name}.")
        ]
        for name in stale:
            del params[name]
        if isinstance(value, dict) and value:
            params.update(flatten(value, prefix=f"{key}."))
        else:
            params[key] = value
    return params


def _param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 6000 else text[:5997] + "..."


#: MLflow's HTTP retries while the callback sends (its default, 7 retries with backoff,
#: would hold Tune's driver loop -- and so training -- for minutes during an outage).
QUICK_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
#: The metric every training result has: its last step tells where a run's curve ends.
STEP_METRIC = "time_this_iter_s"


@contextlib.contextmanager
def quick_http() -> Iterator[None]:
    """MLflow's HTTP client with few retries and a short timeout, for this block only."""
    saved = {key: os.environ.get(key) for key in QUICK_HTTP}
    os.environ.update(QUICK_HTTP)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class MLflowTrialCallback(ray_tune.Callback):
    """One MLflow run per Tune trial: flattened config as params, batched metrics (with,
    under a PBT sweep, the values each iteration trained with: :func:`trained_values`),
    and a status that says how the trial ended.

    - A run ends FINISHED when its trial completes, FAILED when it errors, and KILLED
      when the experiment ends with the trial neither (Ctrl-C, a stop signal); a resumed
      trial's run is set RUNNING again.
    - Trial -> run ids are kept in the callback's state, which Tune checkpoints, and are
      looked up by the run's ``trial_id`` tag when that state was not saved yet, so a
      resumed experiment keeps logging into the same runs. A trial resumed from an older
      checkpoint than its last logged result repeats some iterations: their steps are not
      logged twice (the run keeps the values first logged; the tag
      ``repeated_iterations`` counts the skipped ones).
    - When MLflow cannot be reached, what was to be sent (metrics, statuses) is kept in
      order and sent with the next result that gets through; at the experiment's end the
      callback retries for up to ``retry_for_s`` seconds. Training never waits on MLflow
      for more than one short request.
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment: ExperimentConfig,
        parent_run_id: str | None = None,
        retry_for_s: float = 300.0,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.parent_run_id = parent_run_id
        self.retry_for_s = retry_for_s
        self.run_ids: dict[str, str] = {}
        self.last_steps: dict[str, int] = {}
        self.repeated: dict[str, int] = {}
        self.ended: set[str] = set()
        self.pending: list[tuple[str, str, Any]] = []
        self._outage_since: float | None = None

    # ---------------------------------------------------------------- trial events
    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Open the trial's run, or reopen it (RUNNING again) after a resume."""
        try:
            with quick_http():
                self._open(trial)
        except Exception as error:  # MLflow down: opened with the next result
            self._note_outage(error)

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        """Log the curated metrics of one training iteration, and under a PBT sweep the
        values it trained with, in one request (buffered while MLflow is unreachable)."""
        from mlflow.entities import Metric

        if trial.trial_id not in self.run_ids:
            self.on_trial_start(iteration, trials, trial)
            if trial.trial_id not in self.run_ids:
                return
        step = int(result.get("training_iteration", 0))
        if step <= self.last_steps.get(trial.trial_id, 0):
            self.repeated[trial.trial_id] = self.repeated.get(trial.trial_id, 0) + 1
            return
        self.last_steps[trial.trial_id] = step
        now = int(time.time() * 1000)
        values = {**curated_metrics(result), **trained_values(self.experiment, result)}
        metrics = [Metric(k, v, now, step) for k, v in values.items()]
        self._send("metrics", self.run_ids[trial.trial_id], metrics)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Mark the trial's run finished."""
        self._end(trial.trial_id, "FINISHED")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Mark the trial's run failed."""
        self._end(trial.trial_id, "FAILED")

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        """Runs of trials that neither completed nor failed end KILLED (an interrupted
        experiment); then everything still buffered is sent, retrying for a while."""
        for trial in trials:
            if trial.trial_id in self.run_ids and trial.trial_id not in self.ended:
                self._end(trial.trial_id, "FAILED" if trial.status == "ERROR" else "KILLED")
        deadline = time.monotonic() + self.retry_for_s
        while self.pending and time.monotonic() < deadline:
            time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
            self._flush()
        if self.pending:
            print(
                f"MLflow: {len(self.pending)} update(s) could not be sent to "
                f"{self.tracking_uri} within {self.retry_for_s:g} s; they are lost",
                file=sys.stderr,
                flush=True,
            )

    # ---------------------------------------------------------------- helpers
    def _open(self, trial: Any) -> None:
        from mlflow.entities import Param, RunTag

        client = _client(self.tracking_uri)
        trial_id = trial.trial_id
        run_id = self.run_ids.get(trial_id) or self._existing_run(client, trial_id)
        if run_id is not None:
            self.run_ids[trial_id] = run_id
            # Resumed: running again, and its curve goes on after its last logged step.
            client.update_run(run_id, status="RUNNING")
            self.ended.discard(trial_id)
            history = client.get_metric_history(run_id, STEP_METRIC)
            self.last_steps[trial_id] = max((metric.step for metric in history), default=0)
            return
        trial_config = trial.config or {}
        seed = trial_config.get("seed")
        tags = {
            **experiment_tags(self.experiment),
            "policy": "learned",
            "policy_kind": "learned",
            "trial_id": trial_id,
            "seed": str(seed),
            # What the MLflow UI lists: the stage, the seed and which trial.
            "mlflow.runName": f"{self.experiment.name}-train-seed{seed}-{trial_id}",
        }
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        run = client.create_run(
            experiment_id(self.tracking_uri, self.experiment.experiment_name), tags=tags
        )
        self.run_ids[trial_id] = run.info.run_id
        params = trial_params(self.experiment, trial_config)
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

    def _end(self, trial_id: str, status: str) -> None:
        run_id = self.run_ids.get(trial_id)
        if run_id is None:
            return
        self.ended.add(trial_id)
        repeated = self.repeated.pop(trial_id, 0)
        if repeated:
            self._send("tag", run_id, ("repeated_iterations", str(repeated)))
        self._send("status", run_id, status)

    def _send(self, kind: str, run_id: str, payload: Any) -> None:
        """Queue one update and send everything queued, in order."""
        self.pending.append((kind, run_id, payload))
        self._flush()

    def _flush(self) -> None:
        client = _client(self.tracking_uri)
        with quick_http():
            while self.pending:
                kind, run_id, payload = self.pending[0]
                try:
                    if kind == "metrics":
                        client.log_batch(run_id, metrics=payload)
                    elif kind == "tag":
                        client.set_tag(run_id, *payload)
                    else:
                        client.set_terminated(run_id, status=payload)
                except Exception as error:
                    self._note_outage(error)
                    return
                self.pending.pop(0)
        if self._outage_since is not None:
            print(
                f"MLflow: {self.tracking_uri} reachable again after "
                f"{time.monotonic() - self._outage_since:.0f} s; buffered updates sent",
                file=sys.stderr,
                flush=True,
            )
            self._outage_since = None

    def _note_outage(self, error: BaseException) -> None:
        if self._outage_since is None:
            self._outage_since = time.monotonic()
            print(
                f"MLflow: cannot reach {self.tracking_uri} ({type(error).__name__}); training "
                f"goes on, updates are kept and retried",
                file=sys.stderr,
                flush=True,
            )

    def get_state(self) -> dict[str, Any] | None:
        """Tune checkpoints this with the experiment (updates not sent yet included)."""
        return {
            "run_ids": dict(self.run_ids),
            "parent_run_id": self.parent_run_id,
            "pending": list(self.pending),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the trial -> run mapping (and unsent updates) when an experiment resumes."""
        self.run_ids = dict(state.get("run_ids", {}))
        self.parent_run_id = state.get("parent_run_id", self.parent_run_id)
        self.pending = list(state.get("pending", [])) + self.pending
