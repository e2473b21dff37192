"""Experiment configs: YAML -> validated dataclasses, overrides, clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tune.experiment import ConfigError, apply_overrides, config_from_dict, load_config
from tune.preflight import check_experiment

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "tune" / "configs").glob("*.yaml"))
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"


@pytest.mark.parametrize("path", [*CONFIGS, TINY], ids=lambda p: p.stem)
def test_shipped_configs_load(path: Path) -> None:
    experiment = load_config(path)
    assert experiment.stop.criteria()
    assert not set(experiment.seeds) & set(experiment.evaluation.seeds)
    # What only the environment, the model and RLlib can judge passes too (before Ray).
    check_experiment(experiment)


def test_shipped_configs_cover_the_paper_settings() -> None:
    names = {path.stem for path in CONFIGS}
    assert {"demo", "fattree_k20", "vl2", "bcube", "heterogeneous"} <= names
    k20 = load_config(ROOT / "tune" / "configs" / "fattree_k20.yaml")
    assert k20.environment.config["topology_params"] == {"k": 20}


def test_overrides_reach_nested_keys() -> None:
    experiment = load_config(
        ROOT / "tune" / "configs" / "demo.yaml",
        ["algorithm.lr=1e-4", "environment.config.topology_params.k=6", "seeds=[3, 4]"],
    )
    assert experiment.algorithm.lr == 1e-4
    assert experiment.environment.config["topology_params"]["k"] == 6
    assert experiment.seeds == [3, 4]
    assert experiment.flat()["algorithm.lr"] == 1e-4


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"algorithm": {"lr": 2}}, r"algorithm.lr must be in \(0, 1\), got 2"),
        ({"algorithm": {"name": "A3C"}}, r"algorithm.name='A3C'; allowed: PPO, APPO, DQN"),
        ({"algorihm": {}}, r"unknown top-level key\(s\) algorihm"),
        ({"model": {"nmae": "x"}}, r"unknown key\(s\) model.nmae; allowed in model: name"),
        (
            {"model": {"name": "pod_cnn"}},
            r"model.name='pod_cnn'; known: contention, cush, deeprm, multi_softmax, pod_gnn",
        ),
        (
            {"environment": {"name": "pod_v9"}},
            r"environment.name='pod_v9'; known: pod_scheduling_v0",
        ),
        ({"evaluation": {"baselines": ["fifo+warp"]}}, r"evaluation.baselines: unknown placement"),
        ({"seeds": [1000]}, r"evaluation.seeds \[1000\] are also training seeds"),
        # 998's runner seeds its 4 environments' first episodes 998-1001.
        (
            {"seeds": [998], "resources": {"num_envs_per_env_runner": 4}},
            r"evaluation.seeds \[1000, 1001\] are also training seeds \(trial seeds \[998\]: "
            r"RLlib seeds the first episodes seed \+ runner index \+ environment index, up to "
            r"seed \+ 3\)",
        ),
        (
            {"evaluation": {"seeds": [5, 6], "validation_seeds": [6, 7]}},
            r"evaluation.validation_seeds \[6\] are also evaluation seeds",
        ),
        (
            {"seeds": [7], "evaluation": {"validation_seeds": [7]}},
            r"evaluation.validation_seeds \[7\] are also training seeds",
        ),
        (
            {"evaluation": {"validation_seeds": [100_001]}, "warm_start": {"episodes": 3}},
            r"evaluation.validation_seeds \[100001\] are also warm_start seeds",
        ),
        (
            {"evaluation": {"validation_seeds": "2000"}},
            r"evaluation.validation_seeds must be a list of integers >= 0, got '2000'",
        ),
        ({"evaluation": {"seeds": 5}}, r"evaluation.seeds must be a non-empty list of integers"),
        ({"seeds": 5}, r"seeds must be a non-empty list of integers >= 0, got 5"),
        ({"seeds": [1, 1]}, r"seeds repeats \[1\]: each seed is one trial"),
        (
            {"evaluation": {"baselines": ["fifo+packing", "sjf+packing", "fifo+packing"]}},
            r"evaluation.baselines repeats fifo\+packing: a heuristic named twice",
        ),
        ({"algorithm": {"clip_param": -1}}, r"algorithm.clip_param must be a number in \(0, inf\]"),
        ({"algorithm": {"clip_param": float("nan")}}, r"algorithm.clip_param must be a number"),
        ({"algorithm": {"lambda_": 2}}, r"algorithm.lambda_ must be a number in \[0, 1\], got 2"),
        ({"algorithm": {"lambda_": float("nan")}}, r"algorithm.lambda_ must be a number"),
        (
            {"algorithm": {"entropy_coeff": "abc"}},
            r"algorithm.entropy_coeff must be a number in \[0, inf\], got 'abc'",
        ),
        ({"algorithm": {"extra": 5}}, r"algorithm.extra must be a mapping of RLlib training"),
        ({"stop": {"training_iteration": 0}}, r"stop.training_iteration must be an integer >= 1"),
        (
            {"algorithm": {"train_batch_size": 100, "minibatch_size": 200}},
            r"minibatch_size \(200\) must not exceed",
        ),
        (
            {"resources": {"num_env_runners": -1}},
            r"resources.num_env_runners must be an integer >= 0",
        ),
        ({"resources": {"env_processes": 0}}, r"resources.env_processes must be an integer >= 1"),
        (
            {"algorithm": {"min_env_steps_per_iteration": 0}},
            r"algorithm.min_env_steps_per_iteration must be an integer >= 1, got 0",
        ),
        (
            {"resources": {"local_episodes": -1}},
            r"resources.local_episodes must be an integer >= 0, got -1",
        ),
        (
            {"resources": {"num_envs_per_env_runner": 2, "env_processes": 3}},
            r"resources.env_processes \(3\) must not exceed resources.num_envs_per_env_runner "
            r"\(2\): each process steps at least one environment",
        ),
    ],
)
def test_bad_configs_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


@pytest.mark.parametrize(
    ("evaluation", "message"),
    [
        ({"seeds": [1000, 1001, 1000]}, r"evaluation.seeds repeats \[1000\]"),
        ({"validation_seeds": [5, 5, 5]}, r"evaluation.validation_seeds repeats \[5\]"),
        ({"validation_seeds": [2000]}, "validation_seeds has one seed"),
    ],
)
def test_seeds_that_cannot_carry_a_comparison_are_refused(
    evaluation: dict[str, Any], message: str
) -> None:
    data = {
        "environment": {"name": "pod_scheduling_v0"},
        "evaluation": {"seeds": [1000, 1001], **evaluation},
        "warm_start": {"heuristic": "fifo+packing"},
    }
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)
    # One validation seed chooses by the lowest mean when told to.
    if evaluation.get("validation_seeds") == [2000]:
        data["evaluation"]["selection_confidence"] = 0
        assert config_from_dict(data).evaluation.validation_seeds == [2000]


def test_bad_override_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--set takes KEY=VALUE"):
        apply_overrides({}, ["algorithm.lr"])
    with pytest.raises(ConfigError, match=r"--set evaluation.seeds: '\[3000,,3001\]' is not a"):
        apply_overrides({}, ["evaluation.seeds=[3000,,3001]"])
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nalgorithm: {lr: [1, 2}\n")
    # One line: what PyYAML found and where, not its multi-line excerpt with a caret.
    with pytest.raises(ConfigError) as raised:
        load_config(broken)
    assert str(raised.value) == (
        f"{broken} is not valid YAML: expected ',' or ']', but got '}}' at line 2, column 22"
    )
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xd0\xcf\x11\xe0 not text")
    with pytest.raises(ConfigError, match=r"config .*binary.yaml is not a text file"):
        load_config(binary)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.yaml")


def test_round_trip_through_yaml(tmp_path: Path) -> None:
    experiment = load_config(ROOT / "tune" / "configs" / "demo.yaml")
    path = tmp_path / "again.yaml"
    path.write_text(yaml.safe_dump(experiment.to_dict()))
    assert load_config(path) == experiment


@pytest.mark.parametrize(
    ("environment", "got"),
    [(["num_jobs"], "list: ['num_jobs']"), (None, "NoneType: None"), ("num_jobs=80", "str")],
)
def test_evaluation_environment_must_be_a_mapping(environment: Any, got: str) -> None:
    """It is merged over environment.config only when validation and evaluation play,
    after training: a list passed every check and failed there."""
    with pytest.raises(ConfigError) as refused:
        config_from_dict({"evaluation": {"environment": environment}})
    assert str(refused.value).startswith(
        "evaluation.environment must be a mapping of environment.config overrides for the "
        f"held-out episodes (e.g. {{num_jobs: 80}}; {{}} for none), got {got}"
    )


URI_ALLOWED = (
    "a URI such as sqlite:///path/mlflow.db or http://host:5000) or null "
    "(MLFLOW_TRACKING_URI, else the default sqlite store)"
)
NAME_ALLOWED = "the MLflow experiment's name) or null (the config's name)"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "tracking.experiment=2024",
            f"tracking.experiment must be a non-empty string ({NAME_ALLOWED}, got int 2024; "
            "quote it: '2024'",
        ),
        (
            "tracking.experiment=[a, b]",
            f"tracking.experiment must be a non-empty string ({NAME_ALLOWED}, got list ['a', 'b']",
        ),
        (
            "tracking.experiment=' '",
            f"tracking.experiment must be a non-empty string ({NAME_ALLOWED}, got str ' '",
        ),
        (
            "tracking.tracking_uri=[a]",
            f"tracking.tracking_uri must be a non-empty string ({URI_ALLOWED}, got list ['a']",
        ),
        (
            "tracking.tracking_uri={sqlite: x}",
            f"tracking.tracking_uri must be a non-empty string ({URI_ALLOWED}, got dict "
            "{'sqlite': 'x'}",
        ),
    ],
)
def test_tracking_settings_must_be_strings(override: str, message: str) -> None:
    """MLflow took them only to fail at its first request: during training with a
    TypeError read as an outage, after it with the evaluation neither logged nor kept."""
    with pytest.raises(ConfigError) as refused:
        load_config(TINY, [override])
    assert str(refused.value) == message


def test_a_quoted_set_value_stays_a_string() -> None:
    """What the refusal above says to do: a quoted number is a name, not a float."""
    experiment = load_config(TINY, ["tracking.experiment='2024'", 'name="1e3"'])
    assert experiment.experiment_name == "2024"
    assert experiment.name == "1e3"
    # Unquoted, a scalar Python reads as a float is one (YAML 1.1 misses 1e-4).
    assert load_config(TINY, ["algorithm.lr=1e-4"]).algorithm.lr == 1e-4


def test_scientific_notation_pyyaml_misses_is_a_number_in_set_mappings() -> None:
    """YAML 1.1 (PyYAML) reads 1e9 -- no dot, no exponent sign -- as a string; RLlib took
    vf_clip_param '1e9' and failed in training (torch.clamp(x, 0, '1e9'))."""
    experiment = load_config(
        TINY,
        [
            "algorithm.extra={vf_clip_param: 1e9, vf_loss_coeff: 0.01, kl_target: '1.0e+9'}",
            "evaluation.environment={workload_params: {rate: 2e0}}",
            "environment.config.workload_params={rate: [1.5E1, 1e-1, x1e9]}",
        ],
    )
    # A string PyYAML itself would read as a number was quoted on purpose: it stays one.
    assert experiment.algorithm.extra == {
        "vf_clip_param": 1e9,
        "vf_loss_coeff": 0.01,
        "kl_target": "1.0e+9",
    }
    assert experiment.evaluation.environment == {"workload_params": {"rate": 2.0}}
    assert experiment.environment.config["workload_params"] == {"rate": [15.0, 0.1, "x1e9"]}


def test_scientific_notation_in_a_yaml_files_algorithm_extra_is_a_number(tmp_path: Path) -> None:
    """algorithm.extra goes to RLlib unchecked, its sweep values too: there a 1e9 left a
    string failed only in training. Elsewhere the fields' own checks refuse a string."""
    path = tmp_path / "extra.yaml"
    path.write_text(
        "name: extra\n"
        "algorithm:\n"
        "  extra: {vf_clip_param: 1e9, grad_clip: .5e2, lr_schedule: [[0, 1e-3]], kl_target: 1.5}\n"
        "sweep:\n"
        "  space:\n"
        "    algorithm.extra.vf_loss_coeff: {choice: [1e-2, 1.0e-1]}\n"
        "environment:\n"
        "  config: {trace: 1e5}\n"
    )
    experiment = load_config(path)
    assert experiment.algorithm.extra == {
        "vf_clip_param": 1e9,
        "grad_clip": 50.0,
        "lr_schedule": [[0, 1e-3]],
        "kl_target": 1.5,
    }
    assert experiment.sweep is not None
    assert experiment.sweep.space["algorithm.extra.vf_loss_coeff"] == {"choice": [0.01, 0.1]}
    assert experiment.environment.config == {"trace": "1e5"}  # not under algorithm.extra


DQN_SWEEP = ROOT / "tune" / "configs" / "sced2_dqn.yaml"


def test_set_changes_adds_and_removes_one_swept_key() -> None:
    """A swept key is one key of sweep.space, dots and all. Split at every dot, each of
    these made a section ``algorithm`` (or ``environment``) in the space, refused as a key
    no sweep varies."""
    space = load_config(
        DQN_SWEEP,
        [
            "sweep.space.algorithm.lr={loguniform: [1e-4, 1e-2]}",  # replaced
            "sweep.space.algorithm.extra.n_step={choice: [1, 3]}",  # added
            "sweep.space.environment.config.num_jobs.choice=[40, 80]",  # as MLflow names it
            "sweep.space.algorithm.gamma=null",  # no longer swept
        ],
    ).sweep.space
    assert space == {
        "algorithm.lr": {"loguniform": [1e-4, 1e-2]},
        "algorithm.extra.target_network_update_freq": {"choice": [500, 2000, 8000]},
        "algorithm.extra.n_step": {"choice": [1, 3]},
        "environment.config.num_jobs": {"choice": [40, 80]},
    }
    # The name a distribution's arguments have in the parent run's MLflow params.
    switched = load_config(DQN_SWEEP, ["sweep.space.algorithm.gamma.uniform=[0.9, 0.99]"])
    assert switched.sweep.space["algorithm.gamma"] == {"uniform": [0.9, 0.99]}
    # A config without a sweep section gets one.
    started = load_config(TINY, ["sweep.space.algorithm.lr={choice: [1e-4]}"])
    assert started.sweep.space == {"algorithm.lr": {"choice": [1e-4]}}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "sweep.space.algorithm.nope=null",
            "--set sweep.space.algorithm.nope=null stops sweeping a key, and sweep.space has "
            "no 'algorithm.nope'; its keys: algorithm.extra.target_network_update_freq, "
            "algorithm.gamma, algorithm.lr",
        ),
        (
            "sweep.space.algorithm.lr.lognormal=[1, 2]",
            "sweep.space.algorithm.lr.lognormal must be one distribution, e.g. {choice: [a, b]}; "
            "allowed: uniform, loguniform",
        ),
        ("sweep.space.algorithm.lr={loguniform: [1e-4]}", "sweep.space.algorithm.lr: loguniform"),
        ("sweep.space.algorithm.name={choice: [PPO]}", "sweep.space.algorithm.name: a sweep"),
    ],
)
def test_a_bad_swept_key_set_names_it_as_written(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(DQN_SWEEP, [override])
    assert str(error.value).startswith(message)


def test_sweep_py_says_in_one_line_what_a_bad_set_swept_key_lacks(capsys) -> None:
    """Refused before Ray, MLflow or the preflight start: exit status 2, one line."""
    from tune.sweep import main

    status = main(
        ["--config", str(DQN_SWEEP), "--set", "sweep.space.algorithm.lr={loguniform: [1e-4]}"]
    )
    assert status == 2
    assert capsys.readouterr().err.splitlines() == [
        "sweep.py: error: sweep.space.algorithm.lr: loguniform takes 2 numbers, got [0.0001]"
    ]
