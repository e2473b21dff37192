"""REINFORCE with per-sequence Monte-Carlo baselines (003 eq. 8-9 / Alg. 1, 004 Alg. 1):
the returns, the per-time-step baseline and the advantages by hand; whole groups of E
episodes of one job sequence from the env runner; the loss; one update through RLlib for
RL-TAPS and for CuSH's two networks, each at its own learning rate."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from tune.experiment import ConfigError, config_from_dict, load_config
from tune.reinforce import (
    SEQUENCE_KEY,
    WEIGHT_COLUMN,
    ReinforceSettings,
    ReinforceTorchLearner,
    SequenceGroupEnvRunner,
    advantage_column,
    advantage_columns,
    cush_policy_shares,
    discounted_returns,
    group_advantages,
    timestep_baseline,
)
from tune.rllib_config import algorithm_config

CONFIGS = Path(__file__).resolve().parents[2] / "tune" / "configs"


def test_discounted_returns_by_hand() -> None:
    # G_2 = 3; G_1 = 2 + 0.5 x 3 = 3.5; G_0 = 1 + 0.5 x 3.5 = 2.75.
    assert discounted_returns([1.0, 2.0, 3.0], 0.5) == pytest.approx([2.75, 3.5, 3.0])
    assert discounted_returns([], 0.9).size == 0


def test_the_baseline_is_the_mean_return_at_each_time_step_over_the_episodes() -> None:
    """003 eq. 9, b_t = (1/E) sum_i G_t^i, E = 3 episodes of lengths 3, 2 and 4: an
    episode that has ended counts 0 (its return after its end)."""
    returns = [np.array([3.0, 2.0, 1.0]), np.array([5.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0])]
    baseline = timestep_baseline(returns)
    assert baseline == pytest.approx([9 / 3, 4 / 3, 2 / 3, 1 / 3])
    advantages = group_advantages(returns, ["s", "s", "s"])
    assert advantages[0] == pytest.approx([0.0, 2 / 3, 1 / 3])
    assert advantages[1] == pytest.approx([2.0, -1 / 3])
    assert advantages[2] == pytest.approx([-2.0, -1 / 3, 1 / 3, 2 / 3])
    with pytest.raises(ValueError, match="at least one episode"):
        timestep_baseline([])


def test_each_sequence_has_its_own_baseline() -> None:
    # Interleaved episodes of two sequences: a's mean is [2, 2], b's [10].
    returns = [np.array([1.0, 3.0]), np.array([10.0]), np.array([3.0, 1.0])]
    advantages = group_advantages(returns, ["a", "b", "a"])
    assert advantages[0] == pytest.approx([-1.0, 1.0])
    assert advantages[1] == pytest.approx([0.0])
    assert advantages[2] == pytest.approx([1.0, -1.0])
    with pytest.raises(ValueError, match="group ids"):
        group_advantages(returns, ["a"])


def test_batch_columns_for_rl_taps() -> None:
    settings = ReinforceSettings(returns="discounted", episodes_per_sequence=2)
    # gamma 1: G = reversed cumulative sums. Episode 1: [3, 2]; episode 2: [1, 1, 1].
    episodes = [(7, [1.0, 2.0], [{}, {}]), (7, [0.0, 0.0, 1.0], [{}, {}, {}])]
    columns = advantage_columns(settings, episodes, gamma=1.0)
    # b = [(3 + 1) / 2, (2 + 1) / 2, (0 + 1) / 2] = [2, 1.5, 0.5].
    assert columns[advantage_column("joint")] == pytest.approx([1.0, 0.5, -1.0, -0.5, 0.5])
    # Alg. 1 line 16: the summed gradient is divided by the B x E episodes.
    assert columns[WEIGHT_COLUMN] == pytest.approx([0.5] * 5)
    assert columns[WEIGHT_COLUMN].dtype == np.float32


def test_batch_columns_for_cush_give_each_network_its_return() -> None:
    """004 Alg. 1: the job selector's advantage is eq. 1's return minus the mean over the
    simulations of its job set at the same step (line 15); the policy selector's is its
    own locality penalty, with no baseline (line 16)."""
    settings = ReinforceSettings(returns="cush", episodes_per_sequence=2)
    first = [
        {"local_reward": -1.0, "psm_reward": -3.0},
        {"local_reward": 0.0, "global_reward": 2.0},
    ]
    second = [{"local_reward": -2.0, "global_reward": 1.0}]
    columns = advantage_columns(settings, [(1, [0.0, 0.0], first), (1, [0.0], second)], 0.5)
    # eq. 1: first v = [(-1 + 0.5 x 0) x 2, 0] = [-2, 0]; second v = [-2 x 1] = [-2].
    # b = [(-2 - 2) / 2, (0 + 0) / 2] = [-2, 0].
    assert columns[advantage_column("job")] == pytest.approx([0.0, 0.0, 0.0])
    assert columns[advantage_column("policy")] == pytest.approx([-3.0, 0.0, 0.0])
    assert columns[WEIGHT_COLUMN] == pytest.approx([0.5, 0.5, 0.5])


def test_fig6_shares_of_a_batch_by_hand() -> None:
    # Slots: 1 dgemm, 2 daxpy (the same in every row). Rows: dgemm DF, dgemm BF, daxpy BF,
    # do nothing (not a placement), daxpy DF -> dgemm DF 1/2, daxpy BF 1/2.
    job_types = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).expand(5, 2, 2)
    actions = torch.tensor([[1, 0], [1, 1], [2, 1], [0, 1], [2, 0]])
    shares = cush_policy_shares(job_types, actions)
    assert shares == {"dgemm_depth_first": 0.5, "daxpy_breadth_first": 0.5}
    only_daxpy = cush_policy_shares(job_types[:1], torch.tensor([[2, 1]]))
    assert np.isnan(only_daxpy["dgemm_depth_first"])
    assert only_daxpy["daxpy_breadth_first"] == 1.0


def test_settings_are_validated() -> None:
    assert ReinforceSettings.from_learner_config({"reinforce": {}}).episodes_per_sequence == 20
    bad = [
        ({"returns": "gae"}, "allowed: discounted, cush"),
        ({"episodes_per_sequence": 0}, "integer >= 1"),
        ({"optimizer": "sgd"}, "allowed: adam, rmsprop"),
        ({"head_lr": {"job": 1e-3}}, "has the heads joint"),
        ({"returns": "cush", "head_lr": {"job": 2.0}}, r"in \(0, 1\)"),
        ({"episodes": 3}, "unknown key"),
        ({"training_sequences": 0}, "training_sequences must be an integer >= 1"),
    ]
    for data, message in bad:
        with pytest.raises(ValueError, match=message):
            ReinforceSettings.from_learner_config({"reinforce": data})
    with pytest.raises(ValueError, match="must be a mapping"):
        ReinforceSettings.from_learner_config({})


def test_the_shipped_configs_select_the_protocol_and_pass_the_preflight() -> None:
    from tune.preflight import check_algorithm

    for name, returns, episodes in (
        ("cush.yaml", "cush", 24),
        ("rltaps_reinforce.yaml", "discounted", 20),
    ):
        experiment = load_config(CONFIGS / name)
        check_algorithm(experiment)
        config = algorithm_config(experiment)
        assert config.learner_class is ReinforceTorchLearner
        assert config.env_runner_cls is SequenceGroupEnvRunner
        assert config.batch_mode == "complete_episodes"
        settings = ReinforceSettings.from_learner_config(config.learner_config_dict)
        assert (settings.returns, settings.episodes_per_sequence) == (returns, episodes)
    # The PPO variants keep PPO's own sampler.
    for name in ("cush_ppo.yaml", "rltaps.yaml"):
        config = algorithm_config(load_config(CONFIGS / name))
        assert config.learner_class is not ReinforceTorchLearner
    bad = load_config(
        CONFIGS / "cush.yaml", ["algorithm.extra.learner_config_dict.reinforce.returns=gae"]
    )
    with pytest.raises(ConfigError, match=r"reinforce\.returns='gae'"):
        check_algorithm(bad)
    # Several sub-environments would keep the first E episodes to end, the short ones.
    vector = load_config(CONFIGS / "cush.yaml", ["resources.num_envs_per_env_runner=2"])
    message = r"set resources\.num_envs_per_env_runner to 1 \(got 2\)"
    with pytest.raises(ValueError, match=message):
        algorithm_config(vector)
    with pytest.raises(ConfigError, match=message):
        check_algorithm(vector)


TINY_RLTAPS = {
    "name": "tiny_rltaps",
    "environment": {
        "name": "podsched/RLTAPS-v0",
        "config": {
            "racks": [2],
            "num_slots": 3,
            "num_jobs": 8,
            "max_steps": 60,
            "max_gpus_request": 8,
            "small_gpus": [1, 3],
            "large_gpus": [4, 8],
        },
    },
    "model": {"name": "multi_softmax", "config": {"hidden": 16}},
    "algorithm": {
        "name": "PPO",
        "lr": 1.0e-3,
        "gamma": 0.99,
        "train_batch_size": 1,
        "minibatch_size": 1,
        "num_epochs": 1,
        "extra": {
            "learner_config_dict": {
                "reinforce": {"episodes_per_sequence": 3, "sequences_per_update": 2}
            }
        },
    },
}


def _parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in module.named_parameters()}


@pytest.mark.integration
def test_rl_taps_samples_whole_groups_and_takes_one_reinforce_step(ray_local) -> None:
    algo = algorithm_config(config_from_dict(TINY_RLTAPS), seed=0).build_algo()
    try:
        episodes = algo.env_runner.sample()
        # B = 2 sequences x E = 3 episodes, every one whole and tagged with its sequence.
        assert len(episodes) == 6
        assert all(e.is_done and e.t_started == 0 for e in episodes)
        groups: dict[int, list] = {}
        for episode in episodes:
            groups.setdefault(episode.custom_data[SEQUENCE_KEY], []).append(episode)
        assert sorted(len(g) for g in groups.values()) == [3, 3]
        # The episodes of a group replay one job sequence: the same first state; the two
        # sequences differ.
        firsts = [[e.get_observations(0) for e in g] for g in groups.values()]
        for group in firsts:
            assert all(np.array_equal(group[0], other) for other in group[1:])
        assert not np.array_equal(firsts[0][0], firsts[1][0])

        learner = algo.learner_group._learner
        module = learner.module["default_policy"]
        # The loss on a hand-made batch: -sum_rows weight x advantage x logp.
        obs = torch.stack([torch.as_tensor(e.get_observations(0)) for e in episodes])
        actions = torch.stack([torch.as_tensor(e.get_actions(0)) for e in episodes])
        batch = {
            Columns.OBS: obs,
            Columns.ACTIONS: actions,
            advantage_column("joint"): torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0, -1.0]),
            WEIGHT_COLUMN: torch.full((6,), 0.25),
        }
        fwd_out = module.forward_train(batch)
        loss = learner.compute_loss_for_module(
            module_id="default_policy",
            config=learner.config.get_config_for_module("default_policy"),
            batch=batch,
            fwd_out=fwd_out,
        )
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        expected = -(0.25 * batch[advantage_column("joint")] * dist.logp(actions)).sum()
        assert torch.allclose(loss, expected)

        before = _parameters(module)
        result = algo.train()
        after = _parameters(module)
    finally:
        algo.stop()
    stats = result["learners"]["default_policy"]
    assert stats["episodes"] == 6
    # The policy moved; the critic (no part of REINFORCE) did not.
    assert not torch.equal(before["heads.weight"], after["heads.weight"])
    assert not torch.equal(before["hidden.0.weight"], after["hidden.0.weight"])
    for name in ("critic_hidden.0.weight", "critic_out.weight"):
        assert torch.equal(before[name], after[name])


@pytest.mark.integration
def test_a_fixed_training_set_is_replayed_epoch_after_epoch(ray_local) -> None:
    """003's non-streaming protocol: 3 training sequences, 2 an update. Over three
    updates (two epochs) each sequence is played in each epoch, every time with the
    same jobs (the same first state), and no fourth sequence appears."""
    spec = copy.deepcopy(TINY_RLTAPS)
    spec["algorithm"]["extra"]["learner_config_dict"]["reinforce"]["training_sequences"] = 3
    algo = algorithm_config(config_from_dict(spec), seed=0).build_algo()
    try:
        played = [algo.env_runner.sample() for _ in range(3)]
    finally:
        algo.stop()
    order = []
    firsts: dict[int, list] = {}
    for episodes in played:
        for episode in episodes[::3]:  # one of each group of E = 3
            order.append(episode.custom_data[SEQUENCE_KEY])
        for episode in episodes:
            firsts.setdefault(episode.custom_data[SEQUENCE_KEY], []).append(
                episode.get_observations(0)
            )
    assert sorted(order[:3]) == [1, 2, 3] and sorted(order[3:]) == [1, 2, 3]
    for states in firsts.values():
        assert len(states) == 6 and all(np.array_equal(states[0], s) for s in states[1:])
    assert not np.array_equal(firsts[1][0], firsts[2][0])


@pytest.mark.integration
def test_cush_trains_each_network_at_its_own_rate_from_the_config(ray_local) -> None:
    experiment = load_config(
        CONFIGS / "cush.yaml",
        [
            "environment.config.nodes=8",
            "environment.config.num_jobs=6",
            "environment.config.max_time=100",
            "algorithm.extra.learner_config_dict.reinforce.episodes_per_sequence=3",
            "algorithm.extra.learner_config_dict.reinforce.sequences_per_update=2",
        ],
    )
    algo = algorithm_config(experiment, seed=0).build_algo()
    try:
        learner = algo.learner_group._learner
        optimizers = learner.get_optimizers_for_module("default_policy")
        # 004 §4: RMSprop, 1e-4 for the job selector, 1e-3 for the policy selector.
        rates = sorted(opt.param_groups[0]["lr"] for _, opt in optimizers)
        assert rates == pytest.approx([1.0e-4, 1.0e-3])
        assert all(isinstance(opt, torch.optim.RMSprop) for _, opt in optimizers)
        module = learner.module["default_policy"]
        before = _parameters(module)
        result = algo.train()
        after = _parameters(module)
    finally:
        algo.stop()
    stats = result["learners"]["default_policy"]
    assert stats["episodes"] == 6
    assert {"mean_advantage_job", "mean_advantage_policy"} <= set(stats)
    # 004 Fig. 6 during training: the sampled policy selector's choice per job type.
    assert 0.0 <= stats["dgemm_depth_first"] <= 1.0 or np.isnan(stats["dgemm_depth_first"])
    for name in ("jsm.5.weight", "psm.2.weight"):
        assert not torch.equal(before[name], after[name]), name
    for name in ("critic_features.0.weight", "critic_out.weight"):
        assert torch.equal(before[name], after[name]), name
