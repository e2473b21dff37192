"""What a sweep's trials can draw is what they train with, and what check_sweep accepted:
a swept credit rule reaches the sampler, PBT keeps its perturbations inside each range,
float draws meet integer settings before Ray, keys are checked together, a per-agent
sweep keeps its agents, every trial trains on the one seed the sweep says it does, and
the summary outlives an MLflow that cannot be told."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from tests.tune.test_mlflow_retry import ReopenAfterWaits
from tests.tune.test_rllib_config import SMALL_POD
from tune.credit import credit_rewards_on_episode_end
from tune.experiment import ConfigError, config_from_dict, load_config
from tune.search import (
    _parent_run,
    check_sweep,
    close_parent_run,
    finish_sweep,
    pairwise_rows,
    param_space,
    probe_rows,
    probe_values,
    seed_warning,
    tune_config,
    within,
)

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"


def with_sweep(path: Path = TINY, overrides: tuple[str, ...] = (), **sweep: object):
    """``path``'s experiment with the ``--set`` ``overrides``, with ``sweep`` (FIFO unless
    it names a scheduler)."""
    data = load_config(path, list(overrides)).to_dict()
    return config_from_dict({**data, "sweep": {"scheduler": "fifo", **sweep}})


# --- a swept credit rule -------------------------------------------------------------------

UNDISCOUNTED = ("algorithm.gamma=1.0", "algorithm.lambda_=1.0")


def test_a_credit_sweep_that_can_draw_job_samples_whole_episodes_with_the_callback() -> None:
    """The base config's credit (round) decided the sampling: a trial drawing job trained
    on truncated batches without its credited rewards, as round."""
    experiment = with_sweep(
        overrides=UNDISCOUNTED, space={"environment.config.credit": {"choice": ["round", "job"]}}
    )
    assert experiment.environment.config.get("credit", "round") == "round"
    check_sweep(experiment)
    space = param_space(experiment)
    assert space.batch_mode == "complete_episodes"
    assert space.callbacks_on_episode_end is credit_rewards_on_episode_end
    # A sweep that never draws job samples as before.
    rounds = with_sweep(space={"environment.config.credit": {"choice": ["round"]}})
    assert param_space(rounds).batch_mode == "truncate_episodes"
    assert param_space(rounds).callbacks_on_episode_end is None


def played_episode(credit: str):
    """One whole episode of SMALL_POD's environment with ``credit``, mask-legal random
    actions, recorded as the RLlib episode the env runner hands the callback."""
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

    from envs import make_env

    settings = {**SMALL_POD["environment"]["config"], "horizon_intervals": 8}
    env = make_env("pod_scheduling_v0", **settings, reward="jct", credit=credit)
    observations, infos = env.reset(seed=0)
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations=observations, infos=infos)
    rng = np.random.default_rng(0)
    while True:
        actions = {
            agent: int(rng.choice(np.flatnonzero(observation["action_mask"])))
            for agent, observation in observations.items()
        }
        observations, rewards, terminated, truncated, infos = env.step(actions)
        done = all(terminated.values()) or all(truncated.values())
        episode.add_env_step(
            observations=observations,
            actions=actions,
            rewards=rewards,
            infos=infos,
            terminateds={**terminated, "__all__": all(terminated.values())},
            truncateds={**truncated, "__all__": all(truncated.values())},
        )
        if done:
            return episode


def rewards_of(episode) -> dict[str, list[float]]:
    return {
        agent: [float(r) for r in each.get_rewards()]
        for agent, each in episode.agent_episodes.items()
    }


def test_the_credit_callback_leaves_a_round_episode_as_it_is() -> None:
    """A credit sweep gives round trials the callback too: they have no credited rewards,
    and their episodes keep the rewards the environment paid (a job episode's change)."""
    round_episode = played_episode("round")
    paid = rewards_of(round_episode)
    credit_rewards_on_episode_end(episode=round_episode)
    assert rewards_of(round_episode) == paid and round_episode.env_steps() > 1
    job_episode = played_episode("job")
    job_paid = rewards_of(job_episode)
    assert job_paid == paid  # the same episode: credit changes what is learned, not paid
    credit_rewards_on_episode_end(episode=job_episode)
    assert rewards_of(job_episode) != paid


# --- PBT within the ranges -----------------------------------------------------------------

PBT_SPACE = {
    "algorithm.lambda_": {"uniform": [0.9, 1.0]},
    "algorithm.lr": {"loguniform": [1.0e-5, 1.0e-3]},
    "algorithm.minibatch_size": {"randint": [16, 201]},
    "algorithm.num_epochs": {"qrandint": [2, 10, 2]},
    "algorithm.clip_param": {"quniform": [0.1, 0.4, 0.05]},
    "algorithm.gamma": {"choice": [0.95, 0.99]},
}


@pytest.mark.parametrize("resample_probability", [0.0, 0.25])
def test_pbt_perturbations_stay_inside_each_range(resample_probability: float) -> None:
    """Tune's own perturbation (``_explore``, as PBT calls it): multiplied by 0.8 or 1.2,
    lambda_ reached 2.05 and a randint minibatch 1261 past its range."""
    from ray.tune.schedulers.pbt import _explore

    experiment = with_sweep(
        space=PBT_SPACE,
        scheduler="pbt",
        scheduler_config={"resample_probability": resample_probability},
    )
    check_sweep(experiment)
    scheduler = tune_config(experiment).scheduler
    random.seed(1)
    config = {
        "lambda": 0.99,
        "lr": 9e-4,
        "minibatch_size": 190,
        "num_epochs": 10,
        "clip_param": 0.35,
        "gamma": 0.99,
    }
    seen_top = set()
    for _ in range(200):
        config, _ = _explore(
            config,
            scheduler._hyperparam_mutations,
            scheduler._resample_probability,
            scheduler._perturbation_factors,
            scheduler._custom_explore_fn,
        )
        assert 0.9 <= config["lambda"] <= 1.0
        assert 1e-5 <= config["lr"] <= 1e-3
        assert type(config["minibatch_size"]) is int and 16 <= config["minibatch_size"] <= 200
        assert config["num_epochs"] in (2, 4, 6, 8, 10) and type(config["num_epochs"]) is int
        assert 0.1 <= config["clip_param"] <= 0.4
        assert abs(config["clip_param"] / 0.05 - round(config["clip_param"] / 0.05)) < 1e-9
        assert config["gamma"] in (0.95, 0.99)
        seen_top.add(config["lambda"] == 1.0)
    assert seen_top == {True, False}  # it got to the edge and came back


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ({"uniform": [0.9, 1.0]}, 1.188, 1.0),
        ({"uniform": [0.9, 1.0]}, 0.72, 0.9),
        ({"uniform": [0.9, 1.0]}, 0.95, 0.95),
        ({"loguniform": [1e-5, 1e-3]}, 1.2e-3, 1e-3),
        ({"randint": [128, 1001]}, 1261, 1000),  # the top is excluded
        ({"randint": [128, 1001]}, 760.4, 760),
        ({"qrandint": [2, 10, 2]}, 12, 10),
        ({"qrandint": [2, 10, 2]}, 4.9, 4),
        ({"qrandint": [1, 10, 4]}, 1, 4),  # Tune draws 4 and 8 only
        ({"quniform": [0.1, 0.4, 0.05]}, 0.48, 0.4),
        ({"choice": [0.9, 0.99]}, 0.99, 0.99),
    ],
)
def test_a_perturbed_value_goes_to_the_nearest_drawable_one(
    spec: dict, value: float, expected: float
) -> None:
    moved = within(spec, value)
    assert moved == pytest.approx(expected) and type(moved) is type(expected)


# --- float draws on integer settings -------------------------------------------------------


def test_float_ranges_are_probed_with_the_floats_tune_draws() -> None:
    assert probe_values({"uniform": [2, 8]}) == [2.0, 5.5, 8.0]  # the middle is whole
    assert probe_values({"uniform": [1, 4]}) == [1.0, 2.5, 4.0]
    assert probe_values({"loguniform": [1, 100]}) == [1.0, 10.5, 100.0]
    assert probe_values({"uniform": [0, 1]}) == [0.0, 0.5, 1.0]
    assert probe_values({"quniform": [1, 2, 0.5]}) == [1.0, 1.5, 2.0]
    # Whole steps draw whole floats (1.0, 2.0, ...); fractional ends need nothing inside.
    assert probe_values({"quniform": [1, 8, 1]}) == [1.0, 8.0]
    assert probe_values({"uniform": [0.9, 1.0]}) == [0.9, 1.0]
    assert all(type(value) is float for value in probe_values({"uniform": [2, 8]}))


@pytest.mark.parametrize(
    ("key", "spec", "value"),
    [
        ("algorithm.num_epochs", {"uniform": [2, 8]}, "2.0"),
        ("algorithm.num_epochs", {"quniform": [1, 8, 1]}, "1.0"),
        ("algorithm.train_batch_size", {"loguniform": [200, 800]}, "200.0"),
        ("environment.config.num_jobs", {"uniform": [4, 8]}, "4.0"),
    ],
)
def test_a_float_distribution_on_an_integer_setting_is_refused(
    key: str, spec: dict, value: str
) -> None:
    """Tune draws 3.0 or 6.89 for num_epochs from these; check_sweep probed 2 and 8."""
    with pytest.raises(ConfigError) as caught:
        check_sweep(with_sweep(space={key: spec}))
    message = str(caught.value)
    name = next(iter(spec))
    assert message.startswith(f"sweep.space.{key}={value}: "), message
    assert f"({name} draws floats such as {value}, which this setting refuses; for an " in message
    assert "integer setting use randint, qrandint or choice)" in message


def test_a_float_range_on_a_float_setting_passes_and_a_bad_range_has_no_integer_hint() -> None:
    check_sweep(with_sweep(space={"environment.config.workload_params.rate": {"uniform": [1, 3]}}))
    with pytest.raises(ConfigError) as caught:
        check_sweep(with_sweep(space={"model.config.hidden": {"uniform": [0, 8]}}))
    # 0.0 is refused, but so is 0: no advice to use integers.
    assert str(caught.value).startswith("sweep.space.model.config.hidden=0.0: ")
    assert "randint" not in str(caught.value)


# --- keys checked together -----------------------------------------------------------------


def test_two_values_a_trial_can_draw_together_are_checked_together() -> None:
    """Each passes alone (the other key at the config's value); (512, 256) is refused."""
    space = {
        "algorithm.minibatch_size": {"choice": [64, 100]},
        "algorithm.train_batch_size": {"choice": [100, 400]},
    }
    check_sweep(with_sweep(space=space))
    space["algorithm.minibatch_size"] = {"choice": [64, 150]}
    with pytest.raises(ConfigError) as caught:
        check_sweep(with_sweep(space=space))
    assert str(caught.value) == (
        "sweep.space: a trial can draw algorithm.minibatch_size=150, "
        "algorithm.train_batch_size=100 together: algorithm.minibatch_size (150) must not "
        "exceed algorithm.train_batch_size (100); narrow the ranges or choices so that every "
        "combination is valid"
    )


def test_a_large_space_is_checked_pairwise() -> None:
    """3**5 combinations: past the limit, every pair of values is still tried."""
    space = {
        "algorithm.lr": {"choice": [1e-4, 3e-4, 1e-3]},
        "algorithm.gamma": {"choice": [0.9, 0.95, 0.99]},
        "algorithm.minibatch_size": {"choice": [50, 100, 150]},
        "algorithm.train_batch_size": {"choice": [100, 200, 400]},
        "algorithm.entropy_coeff": {"choice": [0.0, 0.01, 0.02]},
    }
    rows = probe_rows(space)
    assert len(rows) < 3**5
    for first, second in itertools.combinations(space, 2):
        pairs = {(row[first], row[second]) for row in rows}
        assert len(pairs) == 9, (first, second)
    with pytest.raises(
        ConfigError, match=r"minibatch_size=150, algorithm.train_batch_size=100, .* together"
    ):
        check_sweep(with_sweep(space=space))


def test_a_small_space_is_checked_whole_and_pairwise_rows_cover_every_pair() -> None:
    space = {"a.x": {"choice": [1, 2]}, "a.y": {"uniform": [0.5, 1.5]}, "a.z": {"choice": [3]}}
    assert probe_rows(space) == [
        {"a.x": x, "a.y": y, "a.z": 3} for x, y in itertools.product([1, 2], [0.5, 1.5])
    ]
    for sizes in ([2, 2, 2], [3, 1, 4, 2], [5, 5, 5, 5, 5, 5], [7, 2]):
        rows = pairwise_rows(sizes)
        assert all(len(row) == len(sizes) for row in rows)
        for first, second in itertools.combinations(range(len(sizes)), 2):
            pairs = {(row[first], row[second]) for row in rows}
            assert len(pairs) == sizes[first] * sizes[second]
        assert len(rows) <= np.prod(sizes) and pairwise_rows(sizes) == rows  # deterministic
    assert len(pairwise_rows([5] * 6)) <= 40  # against 15,625 combinations


# --- per-agent modules ---------------------------------------------------------------------


def test_a_per_agent_sweep_must_keep_the_agents() -> None:
    """Every trial got the k=4 environment's four modules, k=6 trials included."""
    topology = {"environment.config.topology_params.k": {"choice": [4, 6]}}
    with pytest.raises(ConfigError) as caught:
        check_sweep(with_sweep(overrides=("model.sharing=per-agent",), space=topology))
    assert str(caught.value) == (
        "sweep.space.environment.config.topology_params.k=6: the environment has 6 agents "
        "(scheduler_0 .. scheduler_5) where environment.config has 4 (scheduler_0 .. "
        "scheduler_3): with model.sharing=per-agent every trial trains one module per agent "
        "of environment.config; sweep only keys that keep the agents, or use "
        "model.sharing: shared"
    )
    check_sweep(with_sweep(space=topology))  # one shared module fits any topology
    rate = {"environment.config.workload_params.rate": {"choice": [1.0, 3.0]}}
    check_sweep(with_sweep(overrides=("model.sharing=per-agent",), space=rate))


# --- the end of a sweep against MLflow -----------------------------------------------------


def tune_results(tmp_path: Path) -> tuple[list, object]:
    """Two finished trials as Tune reports them (real Result objects), the second best."""
    from ray.tune import Result

    results = [
        Result(
            metrics={
                "done": True,
                "training_iteration": 2,
                "env_runners": {"episode_return_mean": value},
                "config": {"lr": lr},
            },
            checkpoint=None,
            error=None,
            path=str(tmp_path / f"PPO_{index}"),
            best_checkpoints=[],
        )
        for index, (value, lr) in enumerate([(-5.0, 1e-4), (-2.0, 3e-4)])
    ]
    return results, results[1]


def sweep_experiment(name: str):
    return with_sweep(
        overrides=(f"tracking.experiment={name}",),
        space={"algorithm.lr": {"choice": [1e-4, 3e-4]}},
    )


def parent_run(uri: str, name: str) -> str:
    """A RUNNING parent run, as :func:`tune.search.run_sweep` opens it."""
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import log_run

    run_id = log_run(uri, name, "tiny-sweep", tags={"stage": "sweep"})
    MlflowClient(tracking_uri=uri).update_run(run_id, status="RUNNING")
    return run_id


def run_of(uri: str, run_id: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_run(run_id)


def test_the_summary_is_built_and_the_parent_run_ends(sqlite_uri: str, tmp_path: Path) -> None:
    experiment = sweep_experiment("sweep-end")
    parent = parent_run(sqlite_uri, "sweep-end")
    assert run_of(sqlite_uri, parent).info.status == "RUNNING"
    results, best = tune_results(tmp_path)
    payload = finish_sweep(experiment, results, best, sqlite_uri, parent)
    assert payload["status"] == "FINISHED" and payload["parent_run_error"] is None
    assert payload["best_trial"] == "PPO_1" and payload["best_config"] == {"algorithm.lr": 3e-4}
    run = run_of(sqlite_uri, parent)
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"best_episode_return_mean": -2.0}


def test_a_refused_parent_run_update_is_a_warning_not_a_lost_summary(
    sqlite_uri: str, tmp_path: Path, capsys
) -> None:
    """The parent run is gone (deleted in the UI meanwhile): MLflow refuses at once."""
    from mlflow.tracking import MlflowClient

    experiment = sweep_experiment("sweep-refused")
    parent = parent_run(sqlite_uri, "sweep-refused")
    MlflowClient(tracking_uri=sqlite_uri).delete_run(parent)
    results, best = tune_results(tmp_path)
    payload = finish_sweep(experiment, results, best, sqlite_uri, parent)
    assert payload["status"] == "FINISHED" and len(payload["trials"]) == 2
    problem = payload["parent_run_error"]
    assert problem.startswith(
        f"MLflow parent run {parent} at {sqlite_uri}: best_episode_return_mean=-2 not logged "
        "and not set to FINISHED (it may still show RUNNING) (MlflowException: "
    )
    assert problem.endswith("); the sweep's results are in this summary and in Tune's storage")
    err = capsys.readouterr().err
    assert err == f"sweep.py: warning: {problem}\n"  # one line, no outage waited for


@pytest.mark.integration
def test_the_parent_run_ends_after_an_outage(gated_mlflow, tmp_path: Path, capsys) -> None:
    gate, uri = gated_mlflow
    experiment = sweep_experiment("sweep-outage")
    parent = parent_run(uri, "sweep-outage")
    results, best = tune_results(tmp_path)
    gate.close()  # the server restarts as the sweep ends
    payload = finish_sweep(
        experiment, results, best, uri, parent, deadline=ReopenAfterWaits(uri, gate, waits=2)
    )
    assert payload["parent_run_error"] is None
    run = run_of(uri, parent)
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"best_episode_return_mean": -2.0}
    assert f"MLflow: cannot reach {uri} (" in capsys.readouterr().err


@pytest.mark.integration
def test_an_outage_past_the_deadline_keeps_the_summary(
    gated_mlflow, tmp_path: Path, capsys
) -> None:
    from tune.search import parent_run_deadline

    gate, uri = gated_mlflow
    experiment = sweep_experiment("sweep-lost")
    parent = parent_run(uri, "sweep-lost")
    results, best = tune_results(tmp_path)
    gate.close()
    payload = finish_sweep(experiment, results, best, uri, parent, parent_run_deadline(uri, 2.0))
    assert payload["best_trial"] == "PPO_1" and payload["status"] == "FINISHED"
    assert payload["parent_run_error"].startswith(
        f"MLflow parent run {parent} at {uri}: best_episode_return_mean=-2 not logged and not "
        "set to FINISHED (it may still show RUNNING) ("
    )
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"MLflow: cannot reach {uri} (")
    assert err[0].endswith("); the sweep's parent run is updated again for up to 2 s")
    assert err[-1] == f"sweep.py: warning: {payload['parent_run_error']}"
    gate.open()
    assert run_of(uri, parent).info.status == "RUNNING"  # what the warning says


def test_an_error_in_the_sweep_ends_the_parent_run_failed(sqlite_uri: str) -> None:
    parent = parent_run(sqlite_uri, "sweep-error")
    assert close_parent_run(sqlite_uri, parent, "FAILED", {}) is None
    assert run_of(sqlite_uri, parent).info.status == "FAILED"


def test_a_metric_mlflow_refuses_does_not_keep_the_parent_run_running(sqlite_uri: str) -> None:
    parent = parent_run(sqlite_uri, "sweep-bad-metric")
    problem = close_parent_run(sqlite_uri, parent, "FINISHED", {"best_a,b": 1.5})
    assert problem.startswith(
        f"MLflow parent run {parent} at {sqlite_uri}: best_a,b=1.5 not logged (MlflowException: "
    )
    assert run_of(sqlite_uri, parent).info.status == "FINISHED"


# --- the training seed ---------------------------------------------------------------------


def test_every_trial_trains_on_the_first_seed_and_the_sweep_says_so(
    sqlite_uri: str, tmp_path: Path
) -> None:
    """Of seeds [3, 4] a sweep trains every trial on 3 (tune.search.sweep_seed says why):
    a warning says so, and the parent run records it as sweep.seed -- its ``seeds`` param,
    the config's, lists both, which alone read as if the trials trained on both."""
    from ray.tune.search.variant_generator import generate_variants

    experiment = with_sweep(
        overrides=("seeds=[3, 4]", "tracking.experiment=sweep-seed"),
        space={"algorithm.lr": {"loguniform": [1e-4, 1e-3]}},
    )
    space = param_space(experiment).to_dict()
    drawn = [config["seed"] for _ in range(3) for _, config in generate_variants(space)]
    assert drawn == [3, 3, 3]
    assert seed_warning(experiment) == (
        "every trial trains on seed 3, the first of seeds [3, 4] (trials are compared on one "
        "seed); train the chosen values on every seed with platform/train.py"
    )
    parent = _parent_run(experiment, str(tmp_path), sqlite_uri, "tiny-sweep", resume=False)
    params = run_of(sqlite_uri, parent).data.params
    assert (params["seeds"], params["sweep.seed"]) == ("[3, 4]", "3")
    one_seed = with_sweep(space={"algorithm.lr": {"loguniform": [1e-4, 1e-3]}})
    assert seed_warning(one_seed) is None
