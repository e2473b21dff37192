"""A sweep judges trials only on results whose metric is a number (tune.pbt.AwaitMetric).

RLlib 2.60 reports ``env_runners/episode_return_mean`` as the mean over the episodes that
finished during the iteration: absent until the first has, NaN in an iteration that
finished none. A SCED2 episode of 1000 jobs takes about 1,800 steps, DQN's iteration
1,000, so the shipped ``tune/configs/sced2_dqn.yaml`` sweep failed at its first result
(Tune's strict metric check) -- the integration test of tests/platform/test_train.py
shortens the episodes to 50 jobs, which finish inside the first iteration. Here: the
schedulers and the search on such results (no Ray), the same in real Tune runs of a
trainable that reports as RLlib does on long episodes, and the shipped sweep itself.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from ray import tune as ray_tune

from tune.experiment import load_config
from tune.pbt import SweepASHA, SweepOptuna
from tune.search import (
    STRICT_METRIC_SWITCH,
    MetricNotReportedError,
    best_result,
    check_metric_reported,
    config_error_in,
    domain,
    last_metric,
    metric_value,
    sweep_checks_the_metric,
    tune_config,
)

ROOT = Path(__file__).resolve().parents[2]
SCED2_DQN = ROOT / "tune" / "configs" / "sced2_dqn.yaml"
RETURN = "env_runners/episode_return_mean"
NAN = float("nan")


def result(iteration: int, value: float | None, episodes: int | None = None) -> dict:
    """A flat Tune result as RLlib reports it: ``value`` None before the first finished
    episode (the key is absent), NaN in an iteration that finished none."""
    flat: dict[str, Any] = {"training_iteration": iteration}
    flat["env_runners/num_episodes_lifetime"] = (
        episodes if episodes is not None else 0 if value is None else 1
    )
    if value is not None:
        flat[RETURN] = value
        flat["env_runners/episode_len_mean"] = 1800.0
    return flat


# --- the rule ------------------------------------------------------------------------------


def test_a_result_has_a_value_when_its_metric_is_a_finite_number() -> None:
    assert metric_value(result(2, 943.6), RETURN) == 943.6
    assert metric_value(result(1, None), RETURN) is None  # no episode finished yet
    assert metric_value(result(3, NAN), RETURN) is None  # none finished in this iteration
    assert metric_value({RETURN: True}, RETURN) is None


def test_a_missing_episode_metric_is_refused_once_episodes_have_finished() -> None:
    check_metric_reported(result(1, None), RETURN)  # no episode yet: it may still come
    check_metric_reported(result(3, NAN), RETURN)  # reported, as NaN this iteration
    typo = "env_runners/episode_reward_mean"  # the old API stack's name
    with pytest.raises(MetricNotReportedError) as raised:
        check_metric_reported(result(2, 943.6), typo, "DQN_a")
    assert str(raised.value) == (
        "sweep.metric: trial DQN_a finished 1 episode(s) by iteration 2, but its results have "
        f"no {typo!r} to rank it by; keys like it: env_runners/episode_return_mean, "
        "env_runners/episode_len_mean, env_runners/num_episodes_lifetime (or use "
        "episode_return_mean, episode_len_mean)"
    )
    # A learner's statistic comes once learning starts: nothing to say before.
    check_metric_reported(result(2, 943.6), "learners/default_policy/qf_loss")


# --- the schedulers and the search, on such results ----------------------------------------


def asha() -> SweepASHA:
    scheduler = SweepASHA(
        time_attr="training_iteration", max_t=8, grace_period=2, reduction_factor=2
    )
    scheduler.set_search_properties(RETURN, "max")
    return scheduler


def test_asha_judges_a_trial_at_a_rung_by_its_first_result_with_a_value() -> None:
    """Rungs at 2 and 4. Trial b's result at rung 2 is NaN: Tune's ASHA recorded the NaN,
    which is below no cutoff, so b passed the rung unjudged; here it is judged by its next
    value, and stopped (worse than a's)."""
    scheduler = asha()
    a, b = SimpleNamespace(trial_id="a"), SimpleNamespace(trial_id="b")
    for trial in (a, b):
        scheduler.on_trial_add(None, trial)
    assert scheduler.on_trial_result(None, a, result(1, None)) == "CONTINUE"
    assert scheduler.on_trial_result(None, a, result(2, 10.0)) == "CONTINUE"
    assert scheduler.on_trial_result(None, b, result(1, None)) == "CONTINUE"
    assert scheduler.on_trial_result(None, b, result(2, NAN)) == "CONTINUE"
    rungs = dict(scheduler._brackets[0]._rungs)
    assert rungs[2] == {"a": 10.0}  # b not recorded on a NaN
    assert scheduler.on_trial_result(None, b, result(3, 1.0)) == "STOP"
    assert rungs[2] == {"a": 10.0, "b": 1.0}
    scheduler.on_trial_complete(None, a, result(4, NAN))  # Tune's ASHA: NaN at rung 4
    assert rungs[4] == {}


def test_optuna_learns_each_trial_s_last_value() -> None:
    """Optuna's own search raised KeyError on a result without the metric and dropped a
    trial whose last result was NaN (left RUNNING in the study, never learnt from)."""
    import optuna

    search = SweepOptuna(space={"lr": ray_tune.loguniform(1e-5, 1e-3)}, metric=RETURN, mode="max")
    for trial_id in ("a", "b"):
        assert search.suggest(trial_id) is not None
    search.on_trial_result("a", result(1, None))
    search.on_trial_result("a", result(2, 943.6))
    search.on_trial_result("a", result(3, NAN))
    search.on_trial_complete("a", result(3, NAN))
    search.on_trial_result("b", result(1, None))
    search.on_trial_complete("b", result(1, None))  # stopped before any episode ended
    first, second = search._ot_study.trials
    assert (first.state, first.value) == (optuna.trial.TrialState.COMPLETE, 943.6)
    assert first.intermediate_values == {2: 943.6}
    assert second.state == optuna.trial.TrialState.PRUNED


def test_the_summary_takes_each_trial_s_last_value_and_the_best_by_it() -> None:
    """A trial's last result may hold NaN: its value is the last number it reported."""
    history = pd.DataFrame({RETURN: [NAN, 940.0, NAN, 950.0, NAN]})
    ended_on_nan = SimpleNamespace(metrics={"env_runners": {"episode_return_mean": NAN}})
    ended_on_nan.metrics_dataframe = history
    better = SimpleNamespace(metrics={"env_runners": {"episode_return_mean": 948.0}})
    never = SimpleNamespace(metrics={"training_iteration": 1}, metrics_dataframe=pd.DataFrame())
    assert last_metric(ended_on_nan, RETURN) == 950.0
    assert last_metric(better, RETURN) == 948.0  # no history kept: the last result's
    assert last_metric(never, RETURN) is None
    assert best_result([better, ended_on_nan, never], RETURN, "max") is ended_on_nan
    assert best_result([better, ended_on_nan, never], RETURN, "min") is better
    assert best_result([never], RETURN, "max") is None


def test_tune_s_own_check_is_off_while_a_sweep_runs_only() -> None:
    before = os.environ.get(STRICT_METRIC_SWITCH)
    with sweep_checks_the_metric():
        assert os.environ[STRICT_METRIC_SWITCH] == "1"
    assert os.environ.get(STRICT_METRIC_SWITCH) == before


# --- real Tune runs ------------------------------------------------------------------------


def long_episodes(config: dict) -> None:
    """Reports as RLlib does when an episode lasts two iterations: nothing in iteration 1,
    then a return every even iteration (``1000 * lr`` plus the iteration) and NaN between."""
    for iteration in range(1, 100):
        runners: dict[str, Any] = {"num_episodes_lifetime": iteration // 2}
        if iteration >= 2:
            even = iteration % 2 == 0
            runners["episode_return_mean"] = 1000 * config["lr"] + iteration if even else NAN
        ray_tune.report({"env_runners": runners})


def sweep_run(tmp_path: Path, *overrides: str) -> tuple[Any, Any]:
    """The shipped DQN sweep's Tune run (its scheduler, search and metric, 2 trials of 3
    iterations) over :func:`long_episodes`, as :func:`tune.search.run_sweep` runs it."""
    experiment = load_config(
        SCED2_DQN,
        ["stop.training_iteration=3", "sweep.scheduler_config.grace_period=1", *overrides],
    )
    space = {key.split(".")[-1]: domain(spec) for key, spec in experiment.sweep.space.items()}
    config = tune_config(experiment, num_samples=2)
    tuner = ray_tune.Tuner(
        ray_tune.with_resources(long_episodes, {"cpu": 1}),
        param_space=space,
        tune_config=config,
        run_config=ray_tune.RunConfig(
            name="long-episodes",
            storage_path=str(tmp_path),
            stop={"training_iteration": 3},
            verbose=0,
        ),
    )
    with sweep_checks_the_metric():
        return tuner.fit(), config


@pytest.mark.integration
@pytest.mark.parametrize(
    "overrides",
    [
        (),  # as shipped: ASHA and Optuna's TPE
        (
            "sweep.scheduler=pbt",
            "sweep.search=random",
            "sweep.scheduler_config={perturbation_interval: 1, quantile_fraction: 0.5}",
        ),
    ],
    ids=["asha-optuna", "pbt"],
)
def test_a_sweep_goes_on_through_iterations_without_a_value(
    ray_local, tmp_path: Path, overrides: tuple[str, ...]
) -> None:
    """Tune's strict check failed the run at the first result; with it off, Tune's PBT
    raised there and Optuna's search raised KeyError."""
    results, config = sweep_run(tmp_path, *overrides)
    assert not results.errors
    # ASHA may stop the worse trial at iteration 2; the better one ends on a NaN.
    assert sorted(r.metrics["training_iteration"] for r in results)[-1] == 3
    values = [last_metric(r, RETURN) for r in results]  # each trial's value of iteration 2
    assert values == [1000 * r.config["lr"] + 2 for r in results]
    best = best_result(list(results), RETURN, "max")
    assert best.config["lr"] == max(r.config["lr"] for r in results)
    assert math.isnan(best.metrics["env_runners"]["episode_return_mean"])
    if config.search_alg is not None:  # TPE learnt both trials' values
        trials = config.search_alg._ot_study.trials
        assert sorted(trial.value for trial in trials) == sorted(values)


@pytest.mark.integration
def test_a_metric_the_trials_never_report_stops_the_sweep_in_one_line(
    ray_local, tmp_path: Path
) -> None:
    """Once an episode has finished, the missing metric is a misspelt one: the run stops
    there (Tune's own check said so at the first result, on every sweep) and
    :func:`tune.search.run_sweep` raises its ConfigError, which sweep.py prints."""
    from ray.tune.error import TuneError

    with pytest.raises(TuneError) as raised:
        sweep_run(tmp_path, "sweep.metric=env_runners/episode_reward_mean")
    refused = config_error_in(raised.value)
    assert isinstance(refused, MetricNotReportedError)
    assert "by iteration 2, but its results have no 'env_runners/episode_reward_mean'" in str(
        refused
    )
    assert "keys like it: env_runners/episode_return_mean" in str(refused)


@pytest.mark.integration
def test_the_shipped_dqn_sweep_runs_on_its_own_episodes(tmp_path: Path, sqlite_uri: str) -> None:
    """sced2_dqn.yaml's sweep as shipped, 1000-job episodes and all, on a budget of one
    trial of 3 iterations: no result at iteration 1, a return at 2, NaN at 3."""
    overrides = [
        f"tracking.tracking_uri={sqlite_uri}",
        "stop.training_iteration=3",
        "sweep.scheduler_config.grace_period=1",
    ]
    completed = subprocess.run(
        [sys.executable, str(ROOT / "tune" / "sweep.py"), "--config", str(SCED2_DQN), "--json"]
        + ["--num-samples", "1", "--storage", str(tmp_path / "results")]
        + [arg for override in overrides for arg in ("--set", override)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    payload = json.loads(completed.stdout.strip().splitlines()[-1])
    assert payload["status"] == "FINISHED"
    [row] = payload["trials"]
    assert row["training_iteration"] == 3 and row["error"] is None
    assert row["metric"] > 0  # iteration 2's return: the sum of 1000 jobs' effectiveness
    assert payload["best_trial"] == row["trial"]
