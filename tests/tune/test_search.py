"""What a sweep varies: the training settings, the GNN's size, and the config fields the
environment's class declares (``sweep_choices``), looked up, not switched on by id."""

from __future__ import annotations

import pytest

from envs.pod.config import CONTENTION_WEIGHT_BRANCHES
from envs.registry import ENVIRONMENTS, environment_class
from tune.experiment import config_from_dict
from tune.search import search_space, swept_params


def test_the_pod_environment_sweeps_its_graph_level_and_000s_weights() -> None:
    space = search_space(config_from_dict({}))
    assert set(space["training"]) == {"lr", "entropy_coeff"}
    assert set(space["model"]) == {"inner_layers", "hidden"}
    assert space["environment"]["level"].categories == ["device", "server"]
    # 000's reward weights are swept only when that reward is trained.
    assert "contention_weight" not in space["environment"]
    contended = config_from_dict({"environment": {"config": {"reward": "contention"}}})
    weights = search_space(contended)["environment"]["contention_weight"].categories
    assert weights == [0.3, 0.4, 0.5, 0.6, 0.7] == list(CONTENTION_WEIGHT_BRANCHES)


def test_a_single_agent_formulation_sweeps_no_environment_field() -> None:
    sced2 = {"environment": {"name": "podsched/SCED2-v0"}, "model": {"name": "deeprm"}}
    space = search_space(config_from_dict(sced2))
    assert space["environment"] == {} and space["model"] == {}


@pytest.mark.parametrize("env_id", sorted(ENVIRONMENTS))
def test_every_environment_declares_what_a_sweep_varies(env_id: str) -> None:
    choices = environment_class(env_id).sweep_choices({})
    assert all(isinstance(values, list) and values for values in choices.values())


def test_unknown_environment_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown environment 'nope'; known: pod_scheduling_v0"):
        environment_class("nope")


def test_a_trial_reports_the_fields_the_space_varies() -> None:
    space = search_space(config_from_dict({}))
    trial = {
        "lr": 1e-4,
        "gamma": 0.99,
        "model_config": {"hidden": 16, "encoder_hidden": 32},
        "env_config": {"level": "server", "reward": "jct", "contention_weight": 0.5},
    }
    assert swept_params(trial, space) == {
        "lr": 1e-4,
        "model_config.hidden": 16,
        "env_config.level": "server",
    }
