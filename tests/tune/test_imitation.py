"""Imitation warm start: recording, the masked loss, pretraining, loading into RLlib, config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from envs.pod.env import PodSchedulingEnv
from envs.pod.heuristic import HeuristicPodPolicy
from envs.pod.rollouts import HoldImprovedPolicy
from tune.experiment import ConfigError, config_from_dict
from tune.imitation import (
    build_module,
    departures,
    discounted_returns,
    masked_cross_entropy,
    record_trajectories,
    warm_start,
)

# Two racks of two power8 servers: two scheduler agents, forwarding, a few short episodes.
ENV = {
    "topology": "racks",
    "topology_params": {"racks": [2, 2]},
    "num_jobs": 8,
    "reward": "jct",
    "workload_params": {"rate": 3.0},
}
MODEL = {"hidden": 8, "inner_layers": 1, "inter_layers": 1, "encoder_hidden": 16, "head_hidden": 16}


def tiny_experiment(**warm: object) -> object:
    """A tiny experiment with a warm_start section (``warm`` overrides its keys)."""
    return config_from_dict(
        {
            "environment": {"name": "pod_scheduling_v0", "config": ENV},
            "model": {"name": "pod_gnn", "config": MODEL},
            "algorithm": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1},
            "warm_start": {
                "episodes": 4,
                "heldout_episodes": 2,
                "epochs": 8,
                "lr": 3e-3,
                "minibatch_size": 64,
                **warm,
            },
        }
    )


def test_recorded_actions_equal_the_heuristic_drivers() -> None:
    seeds = [3, 4]
    recorded = record_trajectories("pod_scheduling_v0", ENV, "fifo+packing", seeds, 0.9)
    actions, masks, episodes = [], [], []
    env = PodSchedulingEnv(**ENV)
    for seed in seeds:
        observations, _ = env.reset(seed=seed)
        driver = HeuristicPodPolicy(env, "fifo+packing", seed=seed)
        while env.agents:
            chosen = driver.actions()
            for agent, action in chosen.items():
                actions.append(action)
                masks.append(observations[agent]["action_mask"])
                episodes.append(seed)
            observations, *_ = env.step(chosen)
    np.testing.assert_array_equal(recorded.actions, actions)
    np.testing.assert_array_equal(recorded.observations["action_mask"], np.stack(masks))
    np.testing.assert_array_equal(recorded.episodes, episodes)
    # The heuristic only ever takes legal actions.
    assert recorded.observations["action_mask"][np.arange(len(actions)), actions].all()


def test_an_improved_teacher_is_recorded_with_its_departures_from_the_advice() -> None:
    # The contended setting's load, 60 jobs: the teacher holds some jobs the plan spreads.
    env_config = {
        "server": "mixed",
        "workload_params": {"rate": 10.0},
        "num_jobs": 60,
        "queue_order": "ideal-time",
        "room_features": True,
        "job_times": True,
        "advice": "dsif+locality",
    }
    recorded = record_trajectories(
        "pod_scheduling_v0", env_config, "dsif+locality", [1], 0.99, improve="hold"
    )
    env = PodSchedulingEnv(**env_config)
    env.reset(seed=1)
    teacher = HoldImprovedPolicy(env, "dsif+locality", seed=1)
    actions = []
    while env.agents:
        chosen = teacher.actions()
        actions.extend(chosen.values())
        env.step(chosen)
    np.testing.assert_array_equal(recorded.actions, actions)
    # Every hold is a departure: the advice places the job, the teacher sends it back.
    departed = departures(recorded)
    wait = recorded.observations["action_mask"].shape[1] - 1
    assert departed.sum() == teacher.holds > 0
    assert (recorded.actions[departed] == wait).all()
    # The rows the rollouts decided: every hold candidate, held or not.
    assert recorded.decided.sum() == teacher.candidates >= teacher.holds
    assert recorded.decided[departed].all()


def test_weights_make_the_cross_entropy_a_weighted_mean() -> None:
    # Rows 0 and 2 have a choice, row 1 can only wait: its weight does not matter.
    mask = torch.tensor([[1, 1, 0], [0, 0, 1], [1, 0, 1]], dtype=torch.int8)
    logits = torch.tensor([[0.2, 1.0, -1e9], [-1e9, -1e9, 0.0], [1.5, -1e9, 0.5]])
    actions = torch.tensor([0, 2, 2])
    weights = torch.tensor([1.0, 7.0, 3.0])
    loss, _ = masked_cross_entropy(logits, actions, mask, weights=weights)
    log_p = torch.log_softmax(logits, -1)
    expected = -(1.0 * log_p[0, 0] + 3.0 * log_p[2, 2]) / 4.0
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    unweighted = masked_cross_entropy(logits, actions, mask)[0]
    ones = masked_cross_entropy(logits, actions, mask, weights=torch.ones(3))[0]
    assert ones.item() == pytest.approx(unweighted.item(), rel=1e-6)


def test_discounted_returns_per_agent() -> None:
    rewards = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, -1.0]])
    expected = np.array([[1 + 0.5**2 * 3, 0.5 * 2 - 0.25], [0.5 * 3, 2 - 0.5], [3.0, -1.0]])
    np.testing.assert_allclose(discounted_returns(rewards, 0.5), expected)


def test_cross_entropy_excludes_single_legal_action_steps() -> None:
    # Rows 0 and 2 have a choice; rows 1 and 3 can only wait (their logits masked like the
    # module's, with a large negative value).
    mask = torch.tensor([[1, 1, 1], [0, 0, 1], [1, 0, 1], [0, 0, 1]], dtype=torch.int8)
    logits = torch.tensor(
        [[2.0, 0.5, -1.0], [-1e9, -1e9, 0.3], [0.1, -1e9, 1.2], [-1e9, -1e9, -4.0]]
    )
    actions = torch.tensor([1, 2, 0, 2])
    loss, informative = masked_cross_entropy(logits, actions, mask)
    assert informative.tolist() == [True, False, True, False]
    expected = (
        -(torch.log_softmax(logits[0], -1)[1] + torch.log_softmax(logits[2, [0, 2]], -1)[0]) / 2
    )
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    # Single-action rows neither count in the mean nor get a gradient.
    logits = logits.clone().requires_grad_(True)
    masked_cross_entropy(logits, actions, mask)[0].backward()
    assert logits.grad is not None
    assert torch.all(logits.grad[[1, 3]] == 0)
    only_waits = masked_cross_entropy(logits[[1, 3]], actions[[1, 3]], mask[[1, 3]])[0]
    assert only_waits.item() == 0.0


def test_confidence_spreads_the_rest_over_the_other_legal_actions() -> None:
    # Row 0: three legal actions, the teacher chose 1; row 1 can only wait.
    mask = torch.tensor([[1, 1, 1, 0], [0, 0, 0, 1]], dtype=torch.int8)
    logits = torch.tensor([[2.0, 0.5, -1.0, -1e9], [-1e9, -1e9, -1e9, 0.0]])
    actions = torch.tensor([1, 3])
    loss, _ = masked_cross_entropy(logits, actions, mask, confidence=0.8)
    log_p = torch.log_softmax(logits[0], -1)
    expected = -(0.8 * log_p[1] + 0.1 * log_p[0] + 0.1 * log_p[2])
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert masked_cross_entropy(logits, actions, mask, confidence=1.0)[0].item() == (
        pytest.approx(-log_p[1].item(), rel=1e-6)
    )
    # Its minimum is the target itself: 0.8 on the teacher, 0.1 on each other legal one.
    free = torch.zeros(1, 4, requires_grad=True)
    optimizer = torch.optim.Adam([free], lr=0.1)
    masked = torch.tensor([[0.0, 0.0, 0.0, -1e9]])
    for _ in range(500):
        optimizer.zero_grad()
        masked_cross_entropy(free + masked, actions[:1], mask[:1], 0.8)[0].backward()
        optimizer.step()
    probabilities = torch.softmax(free + masked, -1)[0]
    assert probabilities.tolist() == pytest.approx([0.1, 0.8, 0.1, 0.0], abs=1e-3)


def test_explore_wait_puts_the_rest_on_the_wait_action_alone() -> None:
    # Row 0: the teacher places (action 1), waiting (3) is legal; row 1: the teacher waits;
    # row 2: waiting is masked, so the teacher's action takes the whole target.
    mask = torch.tensor([[1, 1, 0, 1], [1, 0, 0, 1], [1, 1, 0, 0]], dtype=torch.int8)
    logits = torch.tensor([[2.0, 0.5, -1e9, -1.0], [0.3, -1e9, -1e9, 0.7], [1.0, -0.5, -1e9, -1e9]])
    actions = torch.tensor([1, 3, 0])
    loss, _ = masked_cross_entropy(logits, actions, mask, confidence=0.8, explore="wait")
    log_p = torch.log_softmax(logits, -1)
    expected = -((0.8 * log_p[0, 1] + 0.2 * log_p[0, 3]) + log_p[1, 3] + log_p[2, 0]) / 3
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    # Its minimum: 0.8 on the teacher, 0.2 on waiting, nothing on the other legal action.
    free = torch.zeros(1, 4, requires_grad=True)
    optimizer = torch.optim.Adam([free], lr=0.1)
    masked = torch.tensor([[0.0, 0.0, -1e9, 0.0]])
    for _ in range(800):
        optimizer.zero_grad()
        masked_cross_entropy(free + masked, actions[:1], mask[:1], 0.8, "wait")[0].backward()
        optimizer.step()
    probabilities = torch.softmax(free + masked, -1)[0]
    assert probabilities.tolist() == pytest.approx([0.0, 0.8, 0.0, 0.2], abs=2e-3)


def test_pretraining_beats_random_legal_actions_and_is_deterministic(tmp_path: Path) -> None:
    experiment = tiny_experiment()
    path, report = warm_start(experiment, tmp_path / "first")
    assert report.heldout_informative > 50
    assert report.accuracy > report.random_accuracy + 0.25, report
    assert report.critic_loss < 1.0, report  # better than predicting the mean return
    # Saved where RLlib can load it, and the same bits on a second run with the same seed.
    again = build_module(experiment)
    again.restore_from_path(path)
    _, second = warm_start(
        tiny_experiment(epochs=1, episodes=1, heldout_episodes=1), tmp_path / "a"
    )
    _, third = warm_start(tiny_experiment(epochs=1, episodes=1, heldout_episodes=1), tmp_path / "b")
    assert second == third
    state_a = build_module(experiment)
    state_a.restore_from_path(str(tmp_path / "a"))
    state_b = build_module(experiment)
    state_b.restore_from_path(str(tmp_path / "b"))
    for key, value in state_a.state_dict().items():
        assert torch.equal(value, state_b.state_dict()[key]), key


def test_cosine_schedule_ends_at_zero_and_still_imitates(tmp_path: Path) -> None:
    """With lr_schedule cosine the step size falls to 0 by the last minibatch (constant
    keeps it), and the fit still beats random legal actions by the same margin."""
    lines: list[str] = []
    experiment = tiny_experiment(lr_schedule="cosine")
    _, report = warm_start(experiment, tmp_path / "cosine", log=lines.append)
    epochs = [line for line in lines if line.startswith("warm start epoch")]
    assert len(epochs) == experiment.warm_start.epochs
    rates = [float(line.rsplit("lr now ", 1)[1]) for line in epochs]
    assert rates == sorted(rates, reverse=True) and rates[-1] < 1e-9 < rates[0]
    assert report.accuracy > report.random_accuracy + 0.25, report
    lines.clear()
    warm_start(tiny_experiment(epochs=2), tmp_path / "constant", log=lines.append)
    constant = [float(line.rsplit("lr now ", 1)[1]) for line in lines if "lr now" in line]
    assert constant == [experiment.warm_start.lr] * 2


def test_restarts_fit_clones_of_one_recording(tmp_path: Path) -> None:
    """Clones differ only by their seed: the same recorded steps, different weights; the
    one-clone entry point refuses a config asking for several."""
    from tune.imitation import warm_start_clones

    experiment = tiny_experiment(
        epochs=1, episodes=2, heldout_episodes=1, restarts=2, clone_seeds=[300, 301]
    )
    clones = warm_start_clones(experiment, tmp_path / "clones")
    assert [Path(path).name for path, _ in clones] == ["clone-0", "clone-1"]
    assert clones[0][1].train_steps == clones[1][1].train_steps
    first, second = build_module(experiment), build_module(experiment)
    first.restore_from_path(clones[0][0])
    second.restore_from_path(clones[1][0])
    assert any(
        not torch.equal(value, second.state_dict()[key])
        for key, value in first.state_dict().items()
    )
    with pytest.raises(ConfigError, match=r"warm_start.restarts=2: train the clones"):
        warm_start(experiment, tmp_path / "one")


@pytest.mark.integration
def test_the_saved_module_loads_into_the_algorithm(ray_local, tmp_path: Path) -> None:
    from tune.rllib_config import algorithm_config

    experiment = tiny_experiment(epochs=1, episodes=1, heldout_episodes=1)
    path, _ = warm_start(experiment, tmp_path / "warm")
    saved = build_module(experiment)
    saved.restore_from_path(path)
    expected = saved.state_dict()
    fresh = algorithm_config(experiment, seed=0).build_algo()
    algo = algorithm_config(experiment, seed=0, warm_start_path=path).build_algo()
    try:
        learner = algo.learner_group._learner.module["shared"]
        runner = algo.env_runner.module["shared"]
        for module in (learner, runner):
            state = module.state_dict()
            assert state.keys() == expected.keys()
            for key, value in expected.items():
                assert torch.equal(state[key].cpu(), value), key
        # Without the path the weights are RLlib's own random start, not the saved ones.
        untouched = fresh.learner_group._learner.module["shared"].state_dict()
        assert any(not torch.equal(untouched[key], value) for key, value in expected.items())
    finally:
        algo.stop()
        fresh.stop()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"warm_start": {"heuristic": "fifo+warp"}}, r"warm_start.heuristic: unknown placement"),
        ({"warm_start": {"episodes": 0}}, r"warm_start.episodes must be an integer >= 1, got 0"),
        ({"warm_start": {"lr": 1.5}}, r"warm_start.lr must be in \(0, 1\), got 1.5"),
        ({"warm_start": {"restarts": 0}}, r"warm_start.restarts must be an integer >= 1, got 0"),
        (
            {"warm_start": {"restarts": 2}},
            r"warm_start.restarts=2 needs warm_start.clone_seeds \(two or more workloads",
        ),
        (
            {"warm_start": {"restarts": 2, "clone_seeds": [7]}},
            r"warm_start.restarts=2 needs warm_start.clone_seeds",
        ),
        (
            {"warm_start": {"clone_seeds": [7, 8]}},
            r"warm_start.clone_seeds choose among restarts; with restarts: 1 there is one",
        ),
        (
            {"warm_start": {"restarts": 2, "clone_seeds": [7, 7]}},
            r"warm_start.clone_seeds repeats \[7\]",
        ),
        # Chosen on the validation seeds, the best of several clones would be the incumbent
        # checkpoints must beat on those very workloads.
        (
            {
                "warm_start": {"restarts": 2, "clone_seeds": [300, 301]},
                "evaluation": {"validation_seeds": [301, 302]},
            },
            r"warm_start.clone_seeds \[301\] are also evaluation.validation_seeds",
        ),
        (
            {"warm_start": {"restarts": 2, "clone_seeds": [1000, 7]}},
            r"warm_start.clone_seeds \[1000\] are also evaluation.seeds",
        ),
        (
            {"warm_start": {"restarts": 2, "clone_seeds": [0, 7]}},
            r"warm_start.clone_seeds \[0\] are also training seeds",
        ),
        (
            {"warm_start": {"restarts": 2, "clone_seeds": [100_001, 7]}},
            r"warm_start.clone_seeds \[100001\] are also warm_start seeds",
        ),
        (
            {"warm_start": {"lr_schedule": "linear"}},
            r"warm_start.lr_schedule='linear'; allowed: constant, cosine",
        ),
        (
            {"warm_start": {"confidence": 0}},
            r"warm_start.confidence must be in \(0, 1\] \(the teacher's target "
            r"probability\), got 0",
        ),
        (
            {"warm_start": {"confidence": 1.2}},
            r"warm_start.confidence must be in \(0, 1\]",
        ),
        (
            {"warm_start": {"improve": "forward"}},
            r"warm_start.improve='forward'; allowed: hold, hold-first or null",
        ),
        (
            {"warm_start": {"decision_weight": 0}},
            r"warm_start.decision_weight must be a number > 0, got 0",
        ),
        (
            {"warm_start": {"explore": "forward"}},
            r"warm_start.explore='forward'; allowed: legal, wait",
        ),
        (
            {"warm_start": {"value_weight": -1}},
            r"warm_start.value_weight must be a number >= 0, got -1",
        ),
        ({"warm_start": {"epoch": 3}}, r"unknown key\(s\) warm_start.epoch"),
        (
            {"warm_start": {"seeds_from": 998, "episodes": 2, "heldout_episodes": 1}},
            r"evaluation.seeds \[1000\] are also warm_start seeds",
        ),
        (
            {"warm_start": {}, "algorithm": {"name": "DQN"}},
            r"warm_start trains an actor and a critic; algorithm.name='DQN'",
        ),
        (
            {"warm_start": {}, "environment": {"name": "podsched/DeepRM-v0"}},
            r"warm_start needs a multi-agent environment",
        ),
    ],
)
def test_bad_warm_start_sections_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_warm_start_is_off_unless_configured() -> None:
    assert config_from_dict({}).warm_start is None
    assert config_from_dict({"warm_start": None}).warm_start is None
    section = config_from_dict({"warm_start": {"episodes": 3, "heldout_episodes": 2}}).warm_start
    assert section is not None
    assert section.training_seeds == [100000, 100001, 100002]
    assert section.heldout_seeds == [100003, 100004]


def test_a_critic_without_an_output_bias_is_said_not_centred() -> None:
    """The warm start centres the critic by its last layer's bias; a module without one
    trains the offset itself, and the log says so instead of passing silently."""
    from tune.imitation import centre_critic, pretrain

    experiment = tiny_experiment()
    recorded = record_trajectories("pod_scheduling_v0", ENV, "fifo+packing", [3], 0.9)
    module = build_module(experiment)
    assert centre_critic(module, recorded)  # the usual module: its bias is found
    last = module.net.value_head[-1]
    last.bias = None  # the same network without the output bias
    assert not centre_critic(module, recorded)
    lines: list[str] = []
    pretrain(
        module,
        recorded,
        recorded,
        heuristic="fifo+packing",
        epochs=1,
        lr=1e-3,
        minibatch_size=64,
        value_weight=1.0,
        seed=0,
        log=lines.append,
    )
    mean = float(np.mean(recorded.returns))
    assert lines[0] == (
        f"warm start: no critic output bias found to centre on the mean return ({mean:.2f}); "
        "the fit has to learn the offset"
    )
