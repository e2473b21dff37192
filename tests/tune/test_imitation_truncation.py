"""Imitation warm start on truncated episodes: their returns are censored at the horizon
(PPO bootstraps them with the critic), so the critic is neither fitted nor measured on them,
while the actor still clones every row."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from envs.pod.env import PodSchedulingEnv
from envs.pod.heuristic import HeuristicPodPolicy
from tests.tune.test_imitation import ENV, tiny_experiment
from tune.imitation import (
    ImitationReport,
    Trajectories,
    _losses,
    build_module,
    centre_critic,
    evaluate_imitation,
    pretrain,
    record_trajectories,
)

# With a horizon of 6 intervals seed 1 still finishes all its jobs (terminated) and seed 3
# is cut off (truncated); the first test checks that premise by replaying both.
SHORT = {**ENV, "horizon_intervals": 6}
TERMINATED, TRUNCATED = 1, 3


def episode_end(env_config: dict, seed: int) -> str:
    """How the heuristic's episode on ``seed`` ends: "terminated" or "truncated"."""
    env = PodSchedulingEnv(**env_config)
    env.reset(seed=seed)
    driver = HeuristicPodPolicy(env, "fifo+packing", seed=seed)
    while env.agents:
        _, _, terminations, truncations, _ = env.step(driver.actions())
    assert any(terminations.values()) != any(truncations.values())
    return "terminated" if any(terminations.values()) else "truncated"


def fit(
    module: torch.nn.Module, train: Trajectories, heldout: Trajectories, epochs: int, lr: float
) -> tuple[ImitationReport, list[str]]:
    """:func:`pretrain` of ``module`` on fifo+packing's recorded rows (minibatches of 64,
    value weight 1, seed 0): its report and the lines it logged."""
    lines: list[str] = []
    report = pretrain(
        module,
        train,
        heldout,
        heuristic="fifo+packing",
        epochs=epochs,
        lr=lr,
        minibatch_size=64,
        value_weight=1.0,
        seed=0,
        log=lines.append,
    )
    return report, lines


def frozen_critic(value: float) -> torch.nn.Module:
    """The tiny experiment's module with a critic that outputs ``value`` for every row
    (its last layer's weights zero, its bias ``value``)."""
    module = build_module(tiny_experiment())
    last = module.net.value_head[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.fill_(value)
    return module


def four_rows() -> Trajectories:
    """Four recorded rows with hand-set returns; the last two are censored."""
    recorded = record_trajectories("pod_scheduling_v0", ENV, "fifo+packing", [TERMINATED], 0.9)
    return dataclasses.replace(
        recorded.select(np.arange(4)),
        returns=np.array([-1.0, -3.0, -10.0, -20.0]),
        censored=np.array([False, False, True, True]),
    )


def test_rows_of_a_truncated_episode_are_marked_censored() -> None:
    assert episode_end(SHORT, TERMINATED) == "terminated"
    assert episode_end(SHORT, TRUNCATED) == "truncated"
    recorded = record_trajectories(
        "pod_scheduling_v0", SHORT, "fifo+packing", [TERMINATED, TRUNCATED], 0.9
    )
    cut = recorded.episodes == TRUNCATED
    assert cut.any() and (~cut).any()
    np.testing.assert_array_equal(recorded.censored, cut)
    np.testing.assert_array_equal(recorded.complete, ~cut)
    # The episode that ended within the horizon is recorded as it is without one.
    alone = record_trajectories("pod_scheduling_v0", ENV, "fifo+packing", [TERMINATED], 0.9)
    assert not alone.censored.any()
    np.testing.assert_array_equal(recorded.actions[~cut], alone.actions)
    np.testing.assert_array_equal(recorded.returns[~cut], alone.returns)
    # Selecting rows keeps every field, the flag included.
    chosen = recorded.select(cut)
    for field in ("actions", "returns", "episodes", "decided", "censored"):
        np.testing.assert_array_equal(getattr(chosen, field), getattr(recorded, field)[cut])
    for key, value in recorded.observations.items():
        np.testing.assert_array_equal(chosen.observations[key], value[cut])
    assert (chosen.episodes == TRUNCATED).all() and chosen.censored.all()


def test_the_critic_loss_and_its_gradient_leave_censored_rows_out() -> None:
    rows = four_rows()
    module = frozen_critic(0.0)
    # Values 0, scale 2, complete returns -1 and -3: ((0 + 1) / 2)^2 = 0.25 and
    # ((0 + 3) / 2)^2 = 2.25, mean 1.25 (with the censored -10 and -20: 31.875).
    _, critic, _, _ = _losses(module, rows, np.arange(4), 2.0)
    assert critic.item() == pytest.approx(1.25)
    # d/db of mean(((b - G) / 2)^2) at b = 0: mean(2 (0 - G) / 4) = (0.5 + 1.5) / 2 = 1.0.
    critic.backward()
    assert module.net.value_head[-1].bias.grad.item() == pytest.approx(1.0)
    # A batch of censored rows only gives the critic nothing to fit: 0, no NaN.
    assert _losses(module, rows, np.array([2, 3]), 2.0)[1].item() == 0.0
    # Measured the same way, the complete rows count as they would alone.
    assert evaluate_imitation(module, rows, 2.0)["critic_loss"] == pytest.approx(1.25)
    assert evaluate_imitation(module, rows.select(np.arange(2)), 2.0)["critic_loss"] == (
        pytest.approx(1.25)
    )
    assert math.isnan(evaluate_imitation(module, rows.select(np.arange(2, 4)), 2.0)["critic_loss"])


def test_the_critic_is_centred_and_scaled_on_complete_returns() -> None:
    from ray.rllib.core.columns import Columns

    rows = four_rows()
    module = frozen_critic(0.0)
    assert centre_critic(module, rows)
    # The mean of -1 and -3 (of all four returns: -8.5).
    values = module.compute_values(
        {Columns.OBS: {k: torch.as_tensor(v) for k, v in rows.observations.items()}}
    )
    np.testing.assert_allclose(values.detach().numpy(), -2.0, atol=1e-6)
    with pytest.raises(ValueError, match="no row with a complete return"):
        centre_critic(module, rows.select(np.arange(2, 4)))
    # pretrain (no epochs: only the centring) on the same rows: return scale std(-1, -3) = 1
    # (of all four: 7.43), train critic MSE ((-2 + 1)^2 + (-2 + 3)^2) / 2 = 1.
    report, lines = fit(frozen_critic(0.0), rows, rows, epochs=0, lr=1e-3)
    assert report.return_scale == pytest.approx(1.0)
    assert report.critic_loss == pytest.approx(1.0)
    assert (report.censored, report.heldout_censored) == (2, 2)
    assert lines == [
        "warm start: 2 of 4 training rows come from episodes truncated at the horizon "
        "(horizon_intervals): their returns are censored, so the critic is fitted without them"
    ]
    assert "2 of 4 training rows (2 of 4 held out) left out of the critic's fit" in (
        report.summary()
    )


def test_with_every_row_censored_only_the_actor_is_fitted() -> None:
    short = {**ENV, "horizon_intervals": 2}
    assert episode_end(short, TRUNCATED) == "truncated"
    recorded = record_trajectories("pod_scheduling_v0", short, "fifo+packing", [TRUNCATED], 0.9)
    assert recorded.censored.all() and recorded.informative.any()
    torch.manual_seed(0)
    module = build_module(tiny_experiment())
    before = {key: value.clone() for key, value in module.state_dict().items()}
    report, lines = fit(module, recorded, recorded, epochs=2, lr=1e-2)
    rows = len(recorded)
    assert lines[0] == (
        f"warm start: {rows} of {rows} training rows come from episodes truncated at the "
        "horizon (horizon_intervals): their returns are censored, so the critic is not "
        "fitted (only the actor is cloned)"
    )
    assert all("critic MSE" not in line for line in lines)
    after = module.state_dict()
    # The critic's head is neither centred nor trained; the actor is.
    critic = [key for key in before if "value_head" in key]
    assert critic
    for key in critic:
        assert torch.equal(before[key], after[key]), key
    assert any(not torch.equal(before[key], after[key]) for key in before if key not in critic)
    assert report.censored == report.train_steps == rows
    assert not report.critic_measured
    assert math.isnan(report.critic_loss) and math.isnan(report.return_scale)
    assert "critic not fitted" in report.summary()


def test_a_critic_fitted_but_held_out_only_on_truncated_episodes_is_not_measured() -> None:
    # Training rows from a terminated episode fit the critic; the held-out rows all come
    # from a truncated one, so there is no complete return to measure it on: the summary
    # says so instead of printing a MSE of nan.
    train = record_trajectories("pod_scheduling_v0", SHORT, "fifo+packing", [TERMINATED], 0.9)
    heldout = record_trajectories("pod_scheduling_v0", SHORT, "fifo+packing", [TRUNCATED], 0.9)
    assert not train.censored.any() and heldout.censored.all()
    torch.manual_seed(0)
    report, _ = fit(build_module(tiny_experiment()), train, heldout, epochs=1, lr=1e-2)
    assert report.critic_measured and math.isnan(report.heldout_critic_loss)
    summary = report.summary()
    assert "critic fitted, not measured: every held-out episode was truncated" in summary
    assert "critic MSE" not in summary
