"""The Gymnasium face of SCED2: registration, spaces, seeding, errors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from envs.sced2 import Sced2Env
from envs.sced2.config import Sced2Config
from envs.sced2.jobs import generate_workload


def test_registered_id_makes_the_environment_with_overrides(registered: str) -> None:
    env = gymnasium.make(registered, servers=4, window=5, profiles=3, num_jobs=30)
    assert isinstance(env.unwrapped, Sced2Env)
    assert env.action_space == gymnasium.spaces.Discrete(6)
    assert env.observation_space["observation"].shape == (4 * 8 + (3 + 2) * 5 + 4,)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)


def test_default_spaces_follow_002_table_1() -> None:
    env = Sced2Env()
    # NM + (k + 2) J + 4 with N = 15, M = 8, k = 4, J = 10.
    assert env.observation_space["observation"].shape == (15 * 8 + 6 * 10 + 4,) == (184,)
    assert env.observation_space["observation"].dtype == np.float32
    assert env.observation_space["action_mask"].shape == (11,)
    assert env.observation_space["action_mask"].dtype == np.int8
    assert env.action_space == gymnasium.spaces.Discrete(11)
    assert env.config.hold_action == 10


def test_reset_draws_the_trace_from_the_env_generator() -> None:
    env = Sced2Env(num_jobs=50)
    env.reset(seed=3)
    expected = generate_workload(Sced2Config(num_jobs=50), np.random.default_rng(3))
    assert env.core.workload == expected
    env.reset()  # no seed: the generator goes on, a new trace
    assert env.core.workload != expected


def test_generated_traces_are_gpu_only_and_scaled() -> None:
    config = Sced2Config(num_jobs=200)
    base = generate_workload(config, np.random.default_rng(0))
    assert (base.worker_demand[:, 1] == 0).all()  # 002 schedules GPUs only
    assert 0.55 < (base.num_workers == 1).mean() < 0.8  # ~68% 1-GPU jobs
    faster = generate_workload(
        Sced2Config(num_jobs=200, interval_scale=0.5), np.random.default_rng(0)
    )
    np.testing.assert_allclose(faster.arrival_time, base.arrival_time * 0.5)
    sixty = generate_workload(
        Sced2Config(num_jobs=2000, workload="sced2-60"), np.random.default_rng(0)
    )
    assert abs((sixty.num_workers == 1).mean() - 0.60) < 0.04


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"servers": 0}, "servers must be an integer >= 1"),
        ({"gpus_per_server": 2.5}, "gpus_per_server must be an integer"),
        ({"window": True}, "window must be an integer"),
        ({"profiles": 0}, "profiles must be an integer >= 1"),
        ({"num_jobs": -3}, "num_jobs must be an integer >= 1"),
        ({"time_unit_s": 0}, "time_unit_s must be a finite number > 0"),
        ({"interval_scale": float("inf")}, "interval_scale must be a finite number > 0"),
        ({"workload": "philly"}, "workload must be one of sced2, sced2-60, sced2-75"),
        ({"workload_options": [1]}, "workload_options must be a mapping"),
        ({"skip_forced_holds": "yes"}, "skip_forced_holds must be true or false"),
        ({"max_steps": 0}, "max_steps must be an integer >= 1"),
        ({"colour": "red"}, "unknown SCED2 parameter"),
    ],
)
def test_bad_configuration_raises_value_error(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Sced2Env(**params)


def test_bad_traces_options_and_actions_raise(small_env: Sced2Env) -> None:
    with pytest.raises(ValueError, match="takes no option 'rate'"):
        Sced2Env(workload_options={"rate": 3}).reset(seed=0)
    with pytest.raises(ValueError, match="asks for 16 GPUs but the cluster has 8"):
        Sced2Env(servers=1, jobs=[{"arrival": 0, "model": "VGG16", "gpus": 16, "duration": 9}])
    with pytest.raises(ValueError, match="unknown model 'BERT'"):
        Sced2Env(jobs=[{"arrival": 0, "model": "BERT", "gpus": 1, "duration": 9}])
    with pytest.raises(ValueError, match="exactly the keys arrival, model, gpus, duration"):
        Sced2Env(jobs=[{"arrival": 0, "model": "VGG16", "gpus": 1}])
    with pytest.raises(ValueError, match="duration > 0"):
        Sced2Env(jobs=[{"arrival": 0, "model": "VGG16", "gpus": 1, "duration": 0}])
    with pytest.raises(ValueError, match="a SCED2 config must be a mapping"):
        Sced2Config.from_dict([("servers", 3)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="render_mode must be None"):
        Sced2Env(render_mode="human")
    with pytest.raises(ValueError, match="unknown reset option"):
        small_env.reset(options={"trace": []})
    small_env.reset(seed=0)
    for action in (11, -1, 2.5, "1", [1, 2]):
        with pytest.raises(ValueError, match="action must be"):
            small_env.step(action)
    with pytest.raises(ValueError, match="unknown SCED2 baseline"):
        small_env.baseline_action("srtf")
    with pytest.raises(ValueError, match="run_sced2_baseline"):
        small_env.baseline_action("dsif")
