"""PPO anchored to the warm-start clone: the KL term, the config, and RLlib's use of it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from models.pod_gnn import MASKED_LOGIT
from tests.tune.test_imitation import tiny_experiment
from tune.anchor import ANCHOR_KL_KEY, AnchoredPPOTorchLearner, anchor_kl
from tune.experiment import ConfigError, config_from_dict


def test_anchor_kl_matches_the_hand_computed_divergence() -> None:
    # Anchor (1/2, 1/2, 0), policy (3/4, 1/4, 0), the third action masked in both:
    # KL = 1/2 ln(1/2 / 3/4) + 1/2 ln(1/2 / 1/4) = 1/2 ln(4/3).
    anchor = torch.tensor([[0.0, 0.0, MASKED_LOGIT]])
    policy = torch.tensor([[math.log(3.0), 0.0, MASKED_LOGIT]])
    assert anchor_kl(anchor, policy).item() == pytest.approx(0.5 * math.log(4 / 3), rel=1e-6)


def test_anchor_kl_is_zero_for_the_same_policy_and_never_nan_on_masks() -> None:
    logits = torch.tensor([[1.0, -2.0, MASKED_LOGIT, 0.5], [MASKED_LOGIT] * 3 + [0.0]])
    kl = anchor_kl(logits, logits)
    assert torch.isfinite(kl).all()
    assert kl.abs().max().item() < 1e-6


def test_anchor_kl_is_positive_where_the_policy_drops_the_anchors_choice() -> None:
    anchor = torch.tensor([[4.0, 0.0, MASKED_LOGIT]])
    policy = torch.tensor([[0.0, 4.0, MASKED_LOGIT]])
    assert anchor_kl(anchor, policy).item() > 1.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"warm_start": {"anchor": -0.1}}, r"warm_start.anchor must be a number >= 0, got -0.1"),
        ({"warm_start": {"anchor": "yes"}}, r"warm_start.anchor must be a number >= 0"),
        (
            {"warm_start": {"anchor": 0.5}, "algorithm": {"name": "APPO"}},
            r"warm_start.anchor=0.5 adds a term to PPO's loss; algorithm.name='APPO'",
        ),
    ],
)
def test_bad_anchor_settings_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_the_anchor_defaults_to_plain_ppo() -> None:
    from tune.rllib_config import algorithm_config

    experiment = tiny_experiment()
    assert experiment.warm_start.anchor == 0.0
    config = algorithm_config(experiment, warm_start_path="/nonexistent")
    assert config.learner_class is not AnchoredPPOTorchLearner


@pytest.mark.integration
def test_anchored_ppo_trains_from_the_clone_and_logs_the_divergence(
    ray_local, tmp_path: Path
) -> None:
    from tune.imitation import warm_start
    from tune.rllib_config import algorithm_config

    experiment = tiny_experiment(epochs=1, episodes=1, heldout_episodes=1, anchor=0.5)
    path, _ = warm_start(experiment, tmp_path / "warm")
    # Without the warm-start module there is no anchor: PPO's own learner.
    assert algorithm_config(experiment, seed=0).learner_class is not AnchoredPPOTorchLearner
    algo = algorithm_config(experiment, seed=0, warm_start_path=path).build_algo()
    try:
        learner = algo.learner_group._learner
        assert isinstance(learner, AnchoredPPOTorchLearner)
        # The anchor is the clone: the same weights as the module PPO starts from.
        anchor, module = learner._anchor.state_dict(), learner.module["shared"].state_dict()
        assert anchor.keys() == module.keys()
        assert all(torch.equal(anchor[key], module[key].cpu()) for key in anchor)
        # On the learner's device, where its batches are (a GPU learner's too).
        assert all(p.device == learner._device for p in learner._anchor.parameters())
        result = algo.train()
        divergence = result["learners"]["shared"][ANCHOR_KL_KEY]
        # A KL divergence: finite and >= 0 up to float32 rounding of the log-softmaxes.
        assert math.isfinite(divergence) and divergence >= -1e-6
        # The anchor itself is frozen: PPO's update left it at the clone's weights.
        saved = learner._anchor.state_dict()
        assert all(torch.equal(saved[key], anchor[key]) for key in anchor)
        assert any(p.requires_grad for p in learner.module["shared"].parameters())
        assert not any(p.requires_grad for p in learner._anchor.parameters())
    finally:
        algo.stop()
