"""Checks before Ray: nested config keys, model/environment fit, algorithm settings and
resources, each refused with one line naming the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tune.experiment import ConfigError, config_from_dict, load_config
from tune.preflight import check_experiment, check_resources, resource_warnings, trial_resources

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"
SCED2 = ROOT / "tune" / "configs" / "sced2.yaml"
SCED2_DQN = ROOT / "tune" / "configs" / "sced2_dqn.yaml"
POD_OPTIONS = (
    "topology, topology_params, server, workload, workload_params, num_jobs, trace, "
    "trace_format, trace_params, interval_s, max_jobs, forward_limit, level, "
    "fuse_top_switches, reward, credit, contention_weight, illegal_action_penalty, "
    "horizon_intervals, others, home, perf, interference, communication, room_features, "
    "release_features, queue_order, job_times, advice, interference_coefficients"
)
GNN_KEYS = (
    "hidden, inner_layers, inter_layers, encoder_hidden, head_hidden, edge_network, "
    "edge_rank, aggregation, critic_gradient"
)


def refused(path: Path, *overrides: str) -> str:
    """The one-line message the pre-Ray check gives for ``path`` with ``overrides``."""
    with pytest.raises(ConfigError) as caught:
        check_experiment(load_config(path, list(overrides)))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_unknown_environment_key_names_the_allowed_ones() -> None:
    message = refused(TINY, "environment.config.topolgy=fat-tree")
    assert message == (
        "environment.config (pod_scheduling_v0): unknown pod_scheduling_v0 option(s) "
        f"topolgy; allowed: {POD_OPTIONS}"
    )


def test_an_unknown_key_of_a_single_agent_environment() -> None:
    message = refused(SCED2, "environment.config.num_job=10")
    assert message.startswith(
        "environment.config (podsched/SCED2-v0): unknown SCED2 parameter(s) num_job; known: "
    )
    assert "num_jobs" in message.split("known: ")[1].split(", ")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "environment.config.topology_params={k: 5}",
            "fat-tree k must be an even integer >= 2, got 5",
        ),
        ("environment.config.reward=jtc", "reward='jtc'; allowed: progress, jct, contention"),
        (
            "environment.config.topology=vl3",
            "unknown topology 'vl3'; known: bcube, fat-tree, flat, racks, vl2",
        ),
    ],
)
def test_a_bad_environment_value(override: str, expected: str) -> None:
    assert refused(TINY, override) == f"environment.config (pod_scheduling_v0): {expected}"


def test_an_unknown_model_key_names_the_allowed_ones() -> None:
    assert refused(TINY, "model.config.inner_layrs=2") == (
        f"model.config (pod_gnn): unknown GNNModelConfig key(s) inner_layrs; allowed: {GNN_KEYS}"
    )


def test_a_bad_model_value() -> None:
    assert refused(TINY, "model.config.edge_network=dense") == (
        "model.config (pod_gnn): edge_network='dense'; allowed: full, factorized"
    )


def test_a_model_of_another_environment_does_not_fit() -> None:
    # DeepRM's network reads a Box image; the pod environment observes a Dict of graphs.
    assert refused(TINY, "model.name=deeprm", "model.config={}") == (
        "model.name='deeprm' does not fit environment pod_scheduling_v0: building it on the "
        "environment's spaces failed (AttributeError: 'Dict' object has no attribute 'high')"
    )


def test_a_model_setting_the_environment_also_has_must_agree() -> None:
    # The SCED2 network cannot tell 10 x 8 from 15 x 8 GPUs in the flat observation
    # (both split evenly into jobs): only the environment's own servers=15 can tell.
    assert refused(SCED2, "model.config.servers=10") == (
        "model.config.servers=10 does not fit the environment: podsched/SCED2-v0 has "
        "servers=15; set the same value in both"
    )


def test_an_unknown_algorithm_setting_suggests_the_close_one() -> None:
    message = refused(TINY, "algorithm.extra={clip_parm: 0.3}")
    head, allowed = message.split("; allowed: ")
    assert (
        head == "algorithm.extra.clip_parm is not a PPO training setting (did you mean clip_param?)"
    )
    assert {"clip_param", "vf_clip_param", "kl_coeff", "lambda_"} <= set(allowed.split(", "))
    # Deprecated keywords (num_sgd_iter) are not offered.
    assert "num_sgd_iter" not in allowed.split(", ")


def test_a_ppo_setting_is_refused_for_dqn() -> None:
    message = refused(SCED2_DQN, "algorithm.extra.entropy_coeff=0.1")
    head, allowed = message.split("; allowed: ")
    assert head == "algorithm.extra.entropy_coeff is not a DQN training setting"
    assert {"replay_buffer_config", "epsilon", "double_q"} <= set(allowed.split(", "))
    with pytest.raises(ConfigError) as caught:
        load_config(SCED2_DQN, ["algorithm.clip_param=0.3"])
    assert str(caught.value) == (
        "algorithm.clip_param applies to PPO, APPO only, not algorithm.name='DQN'; remove it "
        "(DQN's own settings go in algorithm.extra)"
    )


def test_a_trial_that_needs_more_than_the_cluster_has() -> None:
    # One learner in the trial's process (1 CPU) plus four env runners of 1 CPU each.
    experiment = config_from_dict(
        {**load_config(TINY).to_dict(), "resources": {"num_env_runners": 4}}
    )
    assert trial_resources(experiment) == {"CPU": 5.0}
    with pytest.raises(ConfigError) as caught:
        check_resources(experiment, {"CPU": 2.0, "GPU": 0.0}, "the test cluster")
    assert str(caught.value) == (
        "resources: one trial needs 5 CPUs (num_env_runners=4, num_cpus_per_env_runner=1, "
        "num_learners=0, num_gpus_per_learner=0.0, num_cpus_per_learner=1), the test cluster "
        "has 2; lower resources.num_gpus_per_learner, num_learners, num_env_runners or "
        "num_cpus_per_* to fit"
    )
    gpu = load_config(TINY, ["resources.num_gpus_per_learner=1"])
    assert trial_resources(gpu) == {"CPU": 1.0, "GPU": 1.0}
    with pytest.raises(ConfigError, match=r"^resources: one trial needs 1 GPUs .* has 0;"):
        check_resources(gpu, {"CPU": 2.0}, "the test cluster")
    check_resources(gpu, {"CPU": 1.0, "GPU": 1.0}, "a GPU machine")  # fits: no error


HELPERS_BEYOND_CPUS = (
    "resources.env_processes=2 with num_env_runners=2 of num_cpus_per_env_runner=1: each "
    "remote runner starts 1 helper process(es) on CPUs Ray did not give it; set "
    "env_processes to at most num_cpus_per_env_runner"
)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # Remote runners of one CPU, each with a helper Ray does not count.
        (["resources.num_env_runners=2", "resources.env_processes=2"], [HELPERS_BEYOND_CPUS]),
        # As many processes per runner as it has CPUs: nothing to say.
        (
            [
                "resources.num_env_runners=2",
                "resources.num_cpus_per_env_runner=2",
                "resources.env_processes=2",
            ],
            [],
        ),
        (["resources.num_env_runners=2"], []),
        # The local runner (the demo's case): the helper uses the core sampling leaves idle.
        (["resources.env_processes=2"], []),
    ],
    ids=["helpers-beyond-cpus", "one-cpu-each", "no-helpers", "local-runner"],
)
def test_helpers_beyond_a_remote_runners_cpus_are_warned_of(
    overrides: list[str], expected: list[str]
) -> None:
    experiment = load_config(TINY, ["resources.num_envs_per_env_runner=4", *overrides])
    assert resource_warnings(experiment) == expected


def test_a_misspelt_evaluation_environment_key_is_refused_before_training() -> None:
    """It was merged over environment.config only when validation and evaluation played:
    train.py trained in full, then failed."""
    assert refused(TINY, "evaluation.environment={num_job: 80}") == (
        "evaluation.environment {'num_job': 80} (over environment.config, pod_scheduling_v0): "
        f"unknown pod_scheduling_v0 option(s) num_job; allowed: {POD_OPTIONS}"
    )
    assert refused(TINY, "evaluation.environment={topology_params: {k: 5}}") == (
        "evaluation.environment {'topology_params': {'k': 5}} (over environment.config, "
        "pod_scheduling_v0): fat-tree k must be an even integer >= 2, got 5"
    )


def test_the_trained_model_must_play_the_evaluation_environment() -> None:
    # The SCED2 network is built for model.config's 15 servers.
    assert refused(SCED2, "evaluation.environment={servers: 10}") == (
        "evaluation.environment {'servers': 10}: model.config.servers=15 does not fit the "
        "evaluation environment: podsched/SCED2-v0 has servers=10; the network is trained "
        "for model.config: evaluate with the same value"
    )
    # The MLP's weights depend on the fabric's size, the GNN's do not (fit_to_spaces).
    message = refused(
        TINY,
        "model.name=pod_mlp",
        "model.config={}",
        "evaluation.environment={topology_params: {k: 6}}",
    )
    assert message.startswith(
        "evaluation.environment {'topology_params': {'k': 6}}: the learned PodMLPModule cannot "
        "play this environment: its weights depend on the spaces it was trained on (Error(s) "
        "in loading state_dict for PodMLPModule: size mismatch for "
    )
    check_experiment(load_config(TINY, ["evaluation.environment={topology_params: {k: 6}}"]))
    check_experiment(load_config(SCED2, ["evaluation.environment={num_jobs: 30}"]))
