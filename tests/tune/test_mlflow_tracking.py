"""Which RLlib result numbers become MLflow training curves, run names, resumed runs, and
which tracking URIs the programs accept, and the params a sweep's trial runs log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tune.mlflow_tracking import curated_metrics

TINY = Path(__file__).resolve().parents[2] / "tests" / "data" / "configs" / "tiny.yaml"


def test_curated_metrics_keep_ppo_and_dqn_learner_statistics() -> None:
    result = {
        "env_runners": {"episode_return_mean": -3.5, "episode_len_mean": float("nan")},
        "time_this_iter_s": 2.0,
        "learners": {
            "__all_modules__": {"total_loss": 9.0},  # an aggregate, not a module
            "default_policy": {"qf_loss": 0.25, "td_error_mean": -0.5, "qf_mean": 4, "other": 1},
            "shared": {"policy_loss": 0.1, "vf_loss": 2.0, "entropy": 1.5},
        },
    }
    assert curated_metrics(result) == {
        "episode_return_mean": -3.5,  # NaN episode length dropped
        "time_this_iter_s": 2.0,
        "default_policy/qf_loss": 0.25,
        "default_policy/td_error_mean": -0.5,
        "default_policy/qf_mean": 4.0,
        "shared/policy_loss": 0.1,
        "shared/vf_loss": 2.0,
        "shared/entropy": 1.5,
    }


def tune_trial(trial_id: str, seed: int) -> Any:
    """A Tune ``Trial`` as the controller holds it (PENDING). ``stub``: its trainable is not
    looked up -- the callback never uses it, and looking "PPO" up by name imports every
    algorithm RLlib registers (see tune.rllib_config.algorithm_class)."""
    from ray.tune.experiment import Trial

    return Trial("PPO", stub=True, trial_id=trial_id, config={"seed": seed})


def start(callback: Any, trial: Any, trials: list) -> None:
    """What Tune's controller does when a trial's actor has started: the callbacks hear
    it, then the trial is RUNNING (TuneController._actor_started)."""
    callback.on_trial_start(iteration=0, trials=trials, trial=trial)
    trial.set_status(trial.RUNNING)


def test_a_resumed_trial_finds_its_run_without_the_saved_state(tmp_path, sqlite_uri: str) -> None:
    """A driver killed before Tune saved the callback's state resumes into the same run."""
    from mlflow.tracking import MlflowClient

    from tune.experiment import config_from_dict
    from tune.mlflow_tracking import MLflowTrialCallback, experiment_id

    uri = sqlite_uri
    experiment = config_from_dict({"name": "resumed"})
    trial = tune_trial("ab12c_00000", seed=0)
    first = MLflowTrialCallback(uri, experiment)
    start(first, trial, [trial])
    # A new driver: no state restored (set_state never called); Tune resumes the
    # unfinished trial as PENDING.
    second = MLflowTrialCallback(uri, experiment)
    trial.set_status(trial.PENDING)
    start(second, trial, [trial])
    assert second.run_ids == first.run_ids
    other = tune_trial("ab12c_00001", seed=1)
    start(second, other, [trial, other])
    runs = MlflowClient(uri).search_runs([experiment_id(uri, "resumed")])
    assert sorted(run.data.tags["trial_id"] for run in runs) == ["ab12c_00000", "ab12c_00001"]
    # An experiment that ends with its trials unfinished (Ctrl-C) leaves their runs KILLED;
    # a resumed driver sets them RUNNING again, and a completed trial ends FINISHED. At
    # Ctrl-C Tune marks every trial whose actor is live TERMINATED, with no completion
    # heard (TuneController._cleanup_trials), then ends the experiment; a paused trial
    # stays PAUSED.
    client = MlflowClient(uri)
    trial.set_status(trial.TERMINATED)
    other.set_status(other.PAUSED)
    second.on_experiment_end(trials=[trial, other])
    assert client.get_run(first.run_ids[trial.trial_id]).info.status == "KILLED"
    assert client.get_run(second.run_ids[other.trial_id]).info.status == "KILLED"
    third = MLflowTrialCallback(uri, experiment)
    third.set_state(second.get_state())
    trial.set_status(trial.PENDING)
    start(third, trial, [trial, other])
    assert client.get_run(third.run_ids[trial.trial_id]).info.status == "RUNNING"
    # Completed: the callbacks hear it while the trial is RUNNING, then it is TERMINATED
    # (TuneController.stop_trial).
    third.on_trial_complete(iteration=0, trials=[trial, other], trial=trial)
    trial.set_status(trial.TERMINATED)
    assert client.get_run(third.run_ids[trial.trial_id]).info.status == "FINISHED"
    # Named by stage, seed and trial: what the MLflow UI lists.
    assert sorted(run.data.tags["mlflow.runName"] for run in runs) == [
        "resumed-train-seed0-ab12c_00000",
        "resumed-train-seed1-ab12c_00001",
    ]


def test_run_names_say_the_policy_and_the_seeds() -> None:
    from tune.runs import evaluation_run_name

    assert evaluation_run_name("learned-greedy", [1000, 1001, 1002]) == (
        "eval-learned-greedy-seeds1000-1002"
    )
    assert evaluation_run_name("fifo+packing", [7]) == "eval-fifo+packing-seed7"


def _tracking(uri):
    from tune.experiment import config_from_dict

    return config_from_dict({"tracking": {"tracking_uri": uri}})


@pytest.mark.parametrize("uri", ["file:///tmp/podsched-mlruns", "./mlruns", "/srv/mlruns"])
def test_a_file_store_is_refused_with_what_is_allowed(monkeypatch, uri) -> None:
    from tune.experiment import ConfigError
    from tune.mlflow_tracking import resolve_tracking_uri

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(ConfigError) as refused:
        resolve_tracking_uri(_tracking(uri))
    message = str(refused.value)
    assert message.startswith(f"tracking.tracking_uri={uri!r} is MLflow's file store")
    assert "sqlite:///" in message and "export MLFLOW_ALLOW_FILE_STORE=true" in message
    # The same URI from the environment names the variable.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    with pytest.raises(ConfigError, match=r"^MLFLOW_TRACKING_URI="):
        resolve_tracking_uri(_tracking(None))
    # MLflow's own switch lets it through, as MLflow then opens it.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    assert resolve_tracking_uri(_tracking(uri)) == uri


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite:///{tmp}/mlflow.db",
        "postgresql+psycopg2://mlflow@db:5432/mlflow",
        "http://127.0.0.1:5000",
        "https://mlflow.example",
    ],
)
def test_databases_and_servers_pass_unchanged(monkeypatch, tmp_path, uri) -> None:
    from tune.mlflow_tracking import resolve_tracking_uri

    uri = uri.format(tmp=tmp_path)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    assert resolve_tracking_uri(_tracking(uri)) == uri


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("bogus://x", r"MLflow keeps no runs at a bogus:// URI; allowed: sqlite, postgresql"),
        ("sqlite:////proc/nope/x.db", r"the database's folder /proc/nope does not exist"),
    ],
)
def test_a_tracking_uri_mlflow_cannot_use_is_refused_before_any_work(uri, message) -> None:
    """MLflow refused both only when the first run was logged: after training, or in
    reproduce.py with a traceback."""
    from tune.experiment import ConfigError
    from tune.mlflow_tracking import resolve_tracking_uri

    with pytest.raises(ConfigError, match=message):
        resolve_tracking_uri(_tracking(uri))


def test_mlflow_itself_refuses_the_file_store(monkeypatch, tmp_path) -> None:
    """Why the check exists: the pinned MLflow refuses it as soon as a client opens it,
    which the programs do first when they log (after training)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(MlflowException, match="maintenance mode"):
        MlflowClient(tracking_uri=f"file://{tmp_path / 'mlruns'}").create_experiment("refused")


def test_a_sweep_trials_run_logs_the_values_it_trains_with(sqlite_uri: str) -> None:
    """Each swept key's param holds the trial's own value, as Tune resolved it from the
    sweep's space -- not the config's base value, which every child run of a sweep showed
    (algorithm.lr the same in all, the used value only under trial.lr)."""
    from mlflow.tracking import MlflowClient
    from ray.tune.experiment import Trial
    from ray.tune.search.variant_generator import generate_variants

    from tune.experiment import config_from_dict, load_config
    from tune.mlflow_tracking import MLflowTrialCallback
    from tune.search import param_space

    space = {
        "algorithm.lr": {"choice": [2.5e-5]},
        "algorithm.lambda_": {"choice": [0.9]},  # RLlib's "lambda"
        "model.config.hidden": {"choice": [16]},
        # A mapping: its keys replace the base one's (rate 2.0).
        "environment.config.workload_params": {"choice": [{"rate": 3.0}]},
    }
    experiment = config_from_dict(
        {**load_config(TINY).to_dict(), "sweep": {"space": space, "scheduler": "fifo"}}
    )
    # What Tune's random search does with the param space (BasicVariantGenerator).
    resolved, config = next(generate_variants(param_space(experiment).to_dict()))
    evaluated = {"/".join(map(str, path)): value for path, value in resolved.items()}
    trial = Trial(
        "PPO", stub=True, trial_id="sw33p_00000", config=config, evaluated_params=evaluated
    )
    callback = MLflowTrialCallback(sqlite_uri, experiment)
    start(callback, trial, [trial])
    params = MlflowClient(sqlite_uri).get_run(callback.run_ids[trial.trial_id]).data.params
    assert {
        key: params.get(key) for key in (*space, "environment.config.workload_params.rate")
    } == {
        "algorithm.lr": "2.5e-05",
        "algorithm.lambda_": "0.9",
        "model.config.hidden": "16",
        "environment.config.workload_params": None,  # logged by its keys, as flat() does
        "environment.config.workload_params.rate": "3.0",
    }
    assert (params["trial.lr"], params["trial.lambda"]) == ("2.5e-05", "0.9")
    assert params["algorithm.train_batch_size"] == "200"  # not swept: the config's value
    assert params["trial.seed"] == str(config["seed"])


@pytest.mark.parametrize("scheduler", ["pbt", "asha"])
def test_a_pbt_trial_s_run_follows_the_values_each_iteration_trained_with(
    sqlite_uri: str, scheduler: str
) -> None:
    """MLflow params are write-once: under PBT each iteration's swept values are metrics
    ``pbt/<key>``, read from the result the trainable reported (Tune's scheduler has
    already moved the trial's own config on to the next iteration's values when the
    callback hears a result); a value that is no number by its position in its choice
    list. Other sweeps' values never change: the params say it all, no such metrics."""
    from mlflow.tracking import MlflowClient
    from ray.tune.experiment import Trial

    from tune.experiment import config_from_dict, load_config
    from tune.mlflow_tracking import MLflowTrialCallback

    space = {
        "algorithm.lr": {"loguniform": [1e-4, 1e-3]},
        "algorithm.extra.td_error_loss_fn": {"choice": ["huber", "mse"]},
    }
    experiment = config_from_dict(
        {**load_config(TINY).to_dict(), "sweep": {"space": space, "scheduler": scheduler}}
    )
    first = {"lr": 2e-4, "td_error_loss_fn": "huber", "seed": 0}
    trial = Trial("PPO", stub=True, trial_id="pbt00_00001", config=dict(first))
    callback = MLflowTrialCallback(sqlite_uri, experiment)
    start(callback, trial, [trial])
    exploited = {**first, "lr": 2.4e-4, "td_error_loss_fn": "mse"}
    for iteration, trained in ((1, first), (2, first), (3, exploited)):
        # PBT exploited at iteration 2's result: the trial holds iteration 3's values.
        trial.set_config(exploited if iteration >= 2 else dict(first))
        result = {"training_iteration": iteration, "time_this_iter_s": 1.0, "config": trained}
        callback.on_trial_result(iteration=iteration, trials=[trial], trial=trial, result=result)
    client = MlflowClient(sqlite_uri)
    run = client.get_run(callback.run_ids[trial.trial_id])
    histories = {
        key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
        for key in run.data.metrics
        if key.startswith("pbt/")
    }
    expected = {
        "pbt/algorithm.lr": [(1, 2e-4), (2, 2e-4), (3, 2.4e-4)],
        "pbt/algorithm.extra.td_error_loss_fn/index": [(1, 0.0), (2, 0.0), (3, 1.0)],
    }
    assert histories == (expected if scheduler == "pbt" else {})
    # The params: the values the trial began with.
    assert run.data.params["algorithm.lr"] == "0.0002"
    assert run.data.params["algorithm.extra.td_error_loss_fn"] == "huber"
