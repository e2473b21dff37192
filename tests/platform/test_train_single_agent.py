"""platform/train.py trains the SCED2 (PPO and DQN), contention-aware and RL-TAPS configs
for real: Ray, Tune, RLlib and MLflow, two iterations each on small workloads, then the
learned module is restored from the checkpoint and acts legally in its environment."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tune" / "configs"
SMALL_PPO = [
    "algorithm.train_batch_size=200",
    "algorithm.minibatch_size=50",
    "algorithm.num_epochs=1",
]

# config -> (overrides that keep two iterations short, module class, loss key)
CASES = {
    "sced2": (
        ["environment.config.num_jobs=30", *SMALL_PPO],
        "Sced2Module",
        "total_loss",
    ),
    "sced2_dqn": (
        [
            "environment.config.num_jobs=30",
            "algorithm.train_batch_size=16",
            "algorithm.extra.replay_buffer_config.capacity=2000",
            "algorithm.extra.num_steps_sampled_before_learning_starts=200",
            # One update per 16 sampled steps; iterations of 250 env steps, not DQN's 1,000.
            "algorithm.extra.training_intensity=1",
            "algorithm.min_env_steps_per_iteration=250",
        ],
        "Sced2QModule",
        "qf_loss",
    ),
    "contention": (
        ["environment.config.num_jobs=20", *SMALL_PPO],
        "ContentionModule",
        "total_loss",
    ),
    "rltaps": (
        ["environment.config.num_jobs=20", *SMALL_PPO],
        "MultiSoftmaxModule",
        "total_loss",
    ),
}


def train(config: str, overrides: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    sets = [item for override in overrides for item in ("--set", override)]
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "platform" / "train.py"),
            *("--config", str(CONFIGS / f"{config}.yaml"), "--stop-iters", "2"),
            *("--storage", str(tmp_path / "results"), "--skip-evaluation", "--json"),
            *("--set", f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", *sets),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=dict(os.environ),
    )


@pytest.mark.integration
@pytest.mark.parametrize("config", sorted(CASES))
def test_two_iterations_train_and_the_module_acts_legally(config: str, tmp_path: Path) -> None:
    from ray.rllib.core.rl_module.rl_module import RLModule

    from envs import make_env
    from tune.evaluation import module_paths
    from tune.evaluation.single_agent import greedy_action
    from tune.experiment import load_config

    overrides, class_name, loss = CASES[config]
    result = train(config, overrides, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(payload["checkpoint"]).is_dir() and payload["policies"] == {}
    experiment = load_config(CONFIGS / f"{config}.yaml", overrides)
    [trial] = (tmp_path / "results" / experiment.name).glob(f"{experiment.algorithm.name}_*")
    rows = [json.loads(line) for line in (trial / "result.json").open()]
    assert [row["training_iteration"] for row in rows] == [1, 2]
    sampled = [row["env_runners"]["num_env_steps_sampled_lifetime"] for row in rows]
    steps = experiment.algorithm.min_env_steps_per_iteration
    if steps is None:
        assert 0 < sampled[0] < sampled[1]
    else:  # each iteration stops once it has its steps (the last sample may overshoot)
        assert steps <= sampled[0] < 2 * steps and 2 * steps <= sampled[1] < 3 * steps
    assert math.isfinite(rows[-1]["learners"]["default_policy"][loss])

    path = module_paths(payload["checkpoint"], ["default_policy"])["default_policy"]
    module = RLModule.from_checkpoint(path)
    assert type(module).__name__ == class_name
    env = make_env(experiment.environment.name, **experiment.environment.config)
    observation, _ = env.reset(seed=7)
    for _ in range(20):
        action = greedy_action(module, observation)
        assert env.action_space.contains(
            np.asarray(action, dtype=np.int64).reshape(env.action_space.shape)
        )
        if isinstance(observation, dict):
            assert observation["action_mask"][action] == 1
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
