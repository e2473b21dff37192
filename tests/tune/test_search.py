"""Sweeps from the config's ``sweep:`` section: parsing, the checks before Ray (every key
at the edges of its distribution), the Tune search space, scheduler and search."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tune.experiment import ConfigError, config_from_dict, load_config
from tune.search import check_sweep, param_space, probe_values, swept_params, tune_config

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"
SCED2_DQN = ROOT / "tune" / "configs" / "sced2_dqn.yaml"


def with_sweep(path: Path, **sweep: object):
    """``path``'s experiment with the sweep section ``sweep``."""
    return config_from_dict({**load_config(path).to_dict(), "sweep": sweep})


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({"space": {}}, r"sweep.space must map dotted config keys to distributions"),
        (
            {"space": {"algorithm.lr": {"lognormal": [1, 2]}}},
            r"sweep.space.algorithm.lr: unknown distribution 'lognormal'; allowed: uniform, "
            r"loguniform, quniform, randint, qrandint, choice, grid",
        ),
        (
            {"space": {"algorithm.lr": {"loguniform": [0, 1e-3]}}},
            r"sweep.space.algorithm.lr: loguniform needs low > 0, got \[0, 0.001\]",
        ),
        (
            {"space": {"algorithm.lr": {"uniform": [1e-3]}}},
            r"sweep.space.algorithm.lr: uniform takes 2 numbers, got \[0.001\]",
        ),
        (
            {"space": {"resources.num_env_runners": {"choice": [0, 1]}}},
            r"sweep.space.resources.num_env_runners: a sweep varies keys under algorithm., "
            r"model.config., environment.config.",
        ),
        (
            {"space": {"algorithm.lr": {"choice": [1e-4]}}, "scheduler": "hyperband"},
            r"sweep.scheduler='hyperband'; allowed: fifo, asha, pbt",
        ),
        (
            {"space": {"algorithm.lr": {"choice": [1e-4]}}, "scheduler": "pbt", "search": "optuna"},
            r"sweep.scheduler=pbt perturbs its own population; it takes search: random",
        ),
        (
            {"space": {"algorithm.lr": {"choice": [1e-4]}}, "scheduler_config": {"grace": 1}},
            r"sweep.scheduler_config.grace is not a asha setting; allowed: grace_period, "
            r"reduction_factor, brackets",
        ),
        (
            {"space": {"algorithm.lr": {"grid": [1e-4, 1e-3]}}, "search": "optuna"},
            r"sweep.space.algorithm.lr: grid needs search: random",
        ),
        (
            {"space": {"algorithm.lr": {"choice": [1e-4]}}, "metric": "reward"},
            r"sweep.metric='reward'; allowed: episode_return_mean, episode_len_mean or a Tune "
            r"result key",
        ),
        (
            {"space": {"algorithm.lr": {"choice": [1e-4]}}, "metric": "config/lr"},
            r"sweep.metric='config/lr'; allowed: .* not a config/ setting",
        ),
        # Tune asserts these only when the sweep starts, after Ray and the parent run.
        (
            {
                "space": {"algorithm.lr": {"choice": [1e-4]}},
                "scheduler_config": {"grace_period": 0},
            },
            r"sweep.scheduler_config.grace_period must be an integer in \[1, inf\], got 0",
        ),
        (
            {
                "space": {"algorithm.lr": {"choice": [1e-4]}},
                "scheduler_config": {"reduction_factor": 1},
            },
            r"sweep.scheduler_config.reduction_factor must be a number in \(1, inf\), got 1",
        ),
        (
            {
                "space": {"algorithm.lr": {"choice": [1e-4]}},
                "scheduler": "pbt",
                "scheduler_config": {"quantile_fraction": 0.8},
            },
            r"sweep.scheduler_config.quantile_fraction must be a number in \[0, 0.5\], got 0.8",
        ),
        (
            {
                "space": {"algorithm.lr": {"choice": [1e-4]}},
                "scheduler": "pbt",
                "scheduler_config": {"resample_probability": 2},
            },
            r"sweep.scheduler_config.resample_probability must be a number in \[0, 1\]",
        ),
        (
            {"space": {"algorithm.lr": {"quniform": [0.1, 1.0, 0.25]}}},
            r"sweep.space.algorithm.lr: quniform's bounds must be multiples of q",
        ),
        (
            {"space": {"algorithm.train_batch_size": {"qrandint": [501, 503, 100]}}},
            r"sweep.space.algorithm.train_batch_size: qrandint draws multiples of q in "
            r"\[low, high\]; none lies there",
        ),
    ],
)
def test_a_bad_sweep_section_names_the_key(sweep: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"sweep": sweep})


@pytest.mark.parametrize(
    ("path", "space", "message"),
    [
        # PPO's entropy bonus under DQN: caught for the key, before Ray.
        (
            SCED2_DQN,
            {"algorithm.entropy_coeff": {"choice": [0.0, 0.05]}},
            "sweep.space.algorithm.entropy_coeff=0.0: algorithm.entropy_coeff applies to PPO, "
            "APPO only, not algorithm.name='DQN'; remove it (DQN's own settings go in "
            "algorithm.extra)",
        ),
        (
            SCED2_DQN,
            {"algorithm.extra.clip_param": {"uniform": [0.1, 0.3]}},
            "sweep.space.algorithm.extra.clip_param=0.1: algorithm.extra.clip_param is not a "
            "DQN training setting",
        ),
        (
            TINY,
            {"environment.config.reward": {"choice": ["jct", "jtc"]}},
            "sweep.space.environment.config.reward='jtc': environment.config "
            "(pod_scheduling_v0): reward='jtc'; allowed: progress, jct, contention",
        ),
        (
            TINY,
            {"model.config.hidden": {"randint": [0, 9]}},
            "sweep.space.model.config.hidden=0: model.config (pod_gnn): hidden must be an "
            "integer >= 1, got 0",
        ),
        (
            TINY,
            {"algorithm.learning_rate": {"choice": [1e-4]}},
            "sweep.space.algorithm.learning_rate: not an algorithm setting; allowed: "
            "algorithm.<one of clip_param, entropy_coeff, gamma, lambda_, lr, "
            "minibatch_size, num_epochs, train_batch_size> or "
            "algorithm.extra.<a PPO training setting>",
        ),
    ],
)
def test_every_key_is_checked_at_its_edges_before_ray(
    path: Path, space: dict, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_sweep(with_sweep(path, space=space))
    assert str(caught.value).startswith(message)


def test_pbt_varies_algorithm_keys_only_and_asha_needs_iterations() -> None:
    with pytest.raises(ConfigError, match=r"sweep.space.model.config.hidden: PBT continues trials"):
        check_sweep(
            with_sweep(TINY, space={"model.config.hidden": {"choice": [8]}}, scheduler="pbt")
        )
    no_iterations = {
        **load_config(TINY).to_dict(),
        "stop": {"training_iteration": None, "time_total_s": 60},
        "sweep": {"space": {"algorithm.lr": {"choice": [1e-4]}}},
    }
    with pytest.raises(ConfigError, match=r"sweep.scheduler=asha schedules by training iteration"):
        check_sweep(config_from_dict(no_iterations))


def test_probe_values_are_the_edges() -> None:
    assert probe_values({"choice": ["a", "b"]}) == ["a", "b"]
    assert probe_values({"loguniform": [1e-5, 1e-3]}) == [1e-5, 1e-3]
    assert probe_values({"randint": [2, 9]}) == [2, 8]  # Tune's randint excludes 9
    assert probe_values({"qrandint": [2, 8, 2]}) == [2, 8]
    # Tune's qrandint draws multiples of q, the top included except for q = 1.
    assert probe_values({"qrandint": [1, 10, 4]}) == [4, 8]
    assert probe_values({"qrandint": [1, 5, 1]}) == [1, 4]


def test_the_draws_of_qrandint_are_tunes() -> None:
    from ray import tune as ray_tune

    from tune.experiment import quantized_ints

    for low, high, step in [(1, 10, 4), (1, 5, 1), (2, 8, 2), (0, 100, 25)]:
        domain = ray_tune.qrandint(low, high, step)
        drawn = set(domain.sample(size=400, random_state=np.random.default_rng(0)))
        assert drawn == set(quantized_ints(low, high, step)), (low, high, step)


def test_asha_s_grace_period_must_come_before_the_stop_and_reporting_keys_are_not_swept() -> None:
    shortened = {
        **load_config(SCED2_DQN).to_dict(),
        "stop": {"training_iteration": 20},
    }
    with pytest.raises(ConfigError, match=r"grace_period=100 is past stop.training_iteration=20"):
        check_sweep(config_from_dict(shortened))
    with pytest.raises(
        ConfigError, match=r"sweep.space.algorithm.min_env_steps_per_iteration: not"
    ):
        check_sweep(
            with_sweep(TINY, space={"algorithm.min_env_steps_per_iteration": {"choice": [100]}})
        )


def test_the_shipped_dqn_sweep_is_valid_and_becomes_asha_with_optuna() -> None:
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    experiment = load_config(SCED2_DQN)
    check_sweep(experiment)
    config = tune_config(experiment)
    assert (config.metric, config.mode, config.num_samples) == (
        "env_runners/episode_return_mean",
        "max",
        8,
    )
    assert isinstance(config.scheduler, ASHAScheduler)
    # Grace period 100, halving: ASHA's rungs at 100, 200, 400, 800, 1600 of 3000 iterations.
    assert config.scheduler._max_t == 3000 and config.scheduler._reduction_factor == 2
    assert [rung for rung, _ in config.scheduler._brackets[0]._rungs] == [1600, 800, 400, 200, 100]
    assert isinstance(config.search_alg, OptunaSearch)
    space = param_space(experiment).to_dict()
    assert (space["lr"].lower, space["lr"].upper) == (1e-5, 1e-3)
    assert space["gamma"].categories == [0.95, 0.99]
    assert space["target_network_update_freq"].categories == [500, 2000, 8000]
    # Unswept settings keep the config's values.
    assert space["train_batch_size"] == 32 and space["env_config"] == {"num_jobs": 1000}


def test_model_and_environment_keys_land_in_their_nested_configs() -> None:
    experiment = with_sweep(
        TINY,
        space={
            "model.config.hidden": {"choice": [8, 16]},
            "environment.config.workload_params.rate": {"uniform": [1.0, 3.0]},
            "algorithm.lambda_": {"choice": [0.9, 0.95]},
        },
        scheduler="fifo",
    )
    check_sweep(experiment)
    space = param_space(experiment).to_dict()
    assert space["_model_config"]["hidden"].categories == [8, 16]
    assert space["_model_config"]["inner_layers"] == 1  # the rest of the model's settings
    rate = space["env_config"]["workload_params"]["rate"]
    assert (rate.lower, rate.upper) == (1.0, 3.0)
    assert space["env_config"]["num_jobs"] == 8
    assert space["lambda"].categories == [0.9, 0.95]
    trial = {
        "lambda": 0.9,
        "_model_config": {"hidden": 16, "inner_layers": 1},
        "env_config": {"workload_params": {"rate": 2.5}, "num_jobs": 8},
    }
    assert swept_params(trial, experiment) == {
        "model.config.hidden": 16,
        "environment.config.workload_params.rate": 2.5,
        "algorithm.lambda_": 0.9,
    }


def test_pbt_mutates_the_rllib_names_of_algorithm_keys() -> None:
    from ray.tune.schedulers import PopulationBasedTraining

    experiment = with_sweep(
        TINY,
        space={
            "algorithm.lr": {"loguniform": [1e-4, 1e-3]},
            "algorithm.lambda_": {"choice": [0.9]},
        },
        scheduler="pbt",
        scheduler_config={"perturbation_interval": 1},
    )
    check_sweep(experiment)
    scheduler = tune_config(experiment).scheduler
    assert isinstance(scheduler, PopulationBasedTraining)
    assert set(scheduler._hyperparam_mutations) == {"lr", "lambda"}
    assert scheduler._perturbation_interval == 1
    # A choice mutates within its list: PBT multiplied a sampled choice by 0.8 or 1.2.
    assert scheduler._hyperparam_mutations["lambda"] == [0.9]
    from ray.tune.schedulers.pbt import _explore

    for draw in range(40):
        explored, _ = _explore(
            {"lr": 5e-4, "lambda": 0.9},
            scheduler._hyperparam_mutations,
            resample_probability=0.25,
            perturbation_factors=(1.2, 0.8),
            custom_explore_fn=None,
        )
        assert explored["lambda"] == 0.9, draw


def test_a_config_without_a_sweep_section_says_how_to_add_one() -> None:
    with pytest.raises(ConfigError, match=r"config 'tiny' has no sweep section; add one"):
        check_sweep(load_config(TINY))
