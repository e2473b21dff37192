"""Which RLlib result numbers become MLflow training curves."""

from __future__ import annotations

from tune.mlflow_tracking import curated_metrics


def test_curated_metrics_keep_ppo_and_dqn_learner_statistics() -> None:
    result = {
        "env_runners": {"episode_return_mean": -3.5, "episode_len_mean": float("nan")},
        "time_this_iter_s": 2.0,
        "learners": {
            "__all_modules__": {"total_loss": 9.0},  # an aggregate, not a module
            "default_policy": {"qf_loss": 0.25, "td_error_mean": -0.5, "qf_mean": 4, "other": 1},
            "shared": {"policy_loss": 0.1, "vf_loss": 2.0, "entropy": 1.5},
        },
    }
    assert curated_metrics(result) == {
        "episode_return_mean": -3.5,  # NaN episode length dropped
        "time_this_iter_s": 2.0,
        "default_policy/qf_loss": 0.25,
        "default_policy/td_error_mean": -0.5,
        "default_policy/qf_mean": 4.0,
        "shared/policy_loss": 0.1,
        "shared/vf_loss": 2.0,
        "shared/entropy": 1.5,
    }
