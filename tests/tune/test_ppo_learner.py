"""The lean PPO learner: RLlib's PPO update, fused Adam, the batch built without a graph."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.tune.test_rllib_config import SMALL_POD
from tune.anchor import AnchoredPPOTorchLearner
from tune.experiment import config_from_dict, load_config
from tune.ppo_learner import LeanPPOTorchLearner, fused_adam
from tune.rllib_config import algorithm_config

CONFIGS = Path(__file__).resolve().parents[2] / "tune" / "configs"


def test_fused_adam_takes_adams_default_steps() -> None:
    torch.manual_seed(0)
    weights = [torch.randn(64, 32), torch.randn(32)]
    plain = [w.clone().requires_grad_() for w in weights]
    fused = [w.clone().requires_grad_() for w in weights]
    reference, optimizer = torch.optim.Adam(plain), fused_adam(fused)
    assert optimizer.defaults["fused"] is True
    for key in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"):
        assert optimizer.defaults[key] == reference.defaults[key], key
    for _ in range(5):
        gradients = [torch.randn_like(w) for w in weights]
        for params, opt in ((plain, reference), (fused, optimizer)):
            for param, gradient in zip(params, gradients, strict=True):
                param.grad = gradient.clone()
            opt.step()
    for a, b in zip(plain, fused, strict=True):
        # The same update rule; one kernel instead of a loop may round differently.
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)
    assert not torch.equal(plain[0], weights[0])


def test_every_ppo_experiment_gets_the_lean_learner() -> None:
    assert algorithm_config(config_from_dict(SMALL_POD)).learner_class is LeanPPOTorchLearner
    assert issubclass(AnchoredPPOTorchLearner, LeanPPOTorchLearner)
    dqn = load_config(CONFIGS / "sced2_dqn.yaml")
    assert not issubclass(algorithm_config(dqn).learner_class, LeanPPOTorchLearner)


def _reseed() -> None:
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)


@pytest.mark.integration
def test_the_lean_update_equals_rllibs_on_the_same_episodes(ray_local) -> None:
    """Same seed, same episodes, same minibatch order: the lean learner's statistics and
    weights after one PPO update are RLlib's own up to float32 rounding; its value pass for
    GAE runs without autograd and its optimizer is fused."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    experiment = config_from_dict(SMALL_POD)
    lean_algo = algorithm_config(experiment, seed=0).build_algo()
    stock_algo = (
        algorithm_config(experiment, seed=0).learners(learner_class=PPOTorchLearner).build_algo()
    )
    try:
        lean, stock = lean_algo.learner_group._learner, stock_algo.learner_group._learner
        assert type(lean) is LeanPPOTorchLearner and type(stock) is PPOTorchLearner
        assert lean.get_optimizer("shared").defaults["fused"] is True
        assert not stock.get_optimizer("shared").defaults.get("fused")
        initial = {key: value.clone() for key, value in lean.module["shared"].state_dict().items()}
        for key, value in stock.module["shared"].state_dict().items():
            assert torch.equal(value, initial[key]), key
        episodes = lean_algo.env_runner.sample(num_timesteps=64)

        grad_modes = []
        module = lean.module["shared"]
        values = module.compute_values

        def recording(batch, embeddings=None):
            if embeddings is None:  # GAE's pass over the whole batch
                grad_modes.append(torch.is_grad_enabled())
            return values(batch, embeddings)

        module.compute_values = recording
        results = {}
        for name, learner in (("lean", lean), ("stock", stock)):
            _reseed()
            reduced = learner.update(
                episodes=copy.deepcopy(episodes), num_epochs=2, minibatch_size=32, timesteps={}
            )
            # The last minibatch's statistics (RLlib reduces them over a window of 1).
            results[name] = {key: float(stat.peek()) for key, stat in reduced["shared"].items()}
        assert grad_modes and not any(grad_modes)
        for stat in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "total_loss"):
            lean_stat, stock_stat = results["lean"][stat], results["stock"][stat]
            assert np.isclose(lean_stat, stock_stat, rtol=1e-4, atol=1e-6), (stat, lean_stat)
        after = lean.module["shared"].state_dict()
        changed = [key for key in after if not torch.equal(after[key], initial[key])]
        assert changed  # the update moved the weights, by the same steps in both
        for key, value in stock.module["shared"].state_dict().items():
            assert torch.allclose(value, after[key], rtol=1e-4, atol=1e-6), key
    finally:
        lean_algo.stop()
        stock_algo.stop()


@pytest.mark.integration
def test_gradients_step_as_rllibs_checks_would_have_them(ray_local) -> None:
    """Finite gradients are set as they are and stepped; finite gradients whose total norm
    overflows, and a NaN, take RLlib's own path (the NaN zeroed), which steps too."""
    algo = algorithm_config(config_from_dict(SMALL_POD), seed=0).build_algo()
    try:
        learner = algo.learner_group._learner
        params = learner._params
        optimizer = learner.get_optimizer("shared")
        first = next(iter(params))

        def steps_taken() -> set[float]:
            """Adam's step count of every parameter (none before the first step)."""
            return {
                float(optimizer.state[p]["step"]) if p in optimizer.state else 0.0
                for p in params.values()
            }

        before = {pid: p.detach().clone() for pid, p in params.items()}
        grads = {pid: torch.ones_like(p) for pid, p in params.items()}
        learner.apply_gradients(grads)
        assert all(params[pid].grad is grads[pid] for pid in params)
        assert all(not torch.equal(params[pid], before[pid]) for pid in params)
        assert steps_taken() == {1.0}

        grads = {pid: torch.full_like(p, 3.0e38) for pid, p in params.items()}
        assert torch.isinf(torch.nn.utils.get_total_norm(list(grads.values())))
        learner.apply_gradients(grads)  # every gradient finite: RLlib sets and steps
        assert all(params[pid].grad is grads[pid] for pid in params)
        assert steps_taken() == {2.0}

        grads = {pid: torch.ones_like(p) for pid, p in params.items()}
        grads[first].view(-1)[0] = float("nan")
        learner.apply_gradients(grads)
        repaired = params[first].grad.view(-1)
        assert repaired[0] == 0 and bool(torch.isfinite(repaired).all())
        assert steps_taken() == {3.0}
    finally:
        algo.stop()
