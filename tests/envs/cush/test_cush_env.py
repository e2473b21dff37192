"""The Gymnasium face of CuSH: registration, spaces, seeding, errors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from envs.cush import CuSHEnv
from envs.cush.config import JOB_TYPES, CuSHConfig
from envs.cush.jobs import generate_job_set


def test_registered_id_makes_the_environment_with_overrides(registered: str) -> None:
    env = gymnasium.make(registered, cluster="summit", nodes=16, queue_size=4)
    assert isinstance(env.unwrapped, CuSHEnv)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([5, 2])
    assert env.observation_space["image"].shape == (16 * (2 + 6), 5, 5)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)


def test_default_spaces_follow_004() -> None:
    env = CuSHEnv()
    # Sierra, N = 128: 128 x (2 CPUs + 4 GPUs) columns, T = 5 rows, Q + 1 = 6 channels.
    assert env.observation_space["image"].shape == (768, 5, 6)
    assert env.observation_space["image"].dtype == np.float32
    assert env.observation_space["action_mask"].shape == (5 + 1 + 2,)
    assert env.observation_space["action_mask"].dtype == np.int8
    assert env.observation_space["job_types"].shape == (5, 2)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([6, 2])


def test_reset_draws_the_job_set_from_the_env_generator() -> None:
    env = CuSHEnv()
    env.reset(seed=3)
    expected = generate_job_set(CuSHConfig(), np.random.default_rng(3))
    assert env.core.jobs.to_list() == expected.to_list()


def test_generated_sets_follow_004_section_4() -> None:
    config = CuSHConfig()
    rng = np.random.default_rng(0)
    for _ in range(50):
        jobs = generate_job_set(config, rng)
        assert len(jobs) == 20
        assert (jobs.length >= 1).all() and (jobs.length <= 20).all()
        assert (jobs.length <= 10).sum() == 15  # 75% of the jobs are <= 10t
        assert (jobs.arrival >= 0).all() and (jobs.arrival <= 9).all()  # the first 10t
        assert (np.diff(jobs.arrival) >= 0).all()
        assert (jobs.gpus >= 1).all() and (jobs.gpus <= 256).all()  # <= half of 512 GPUs
        assert (jobs.cpus >= 1).all() and (jobs.cpus <= 128).all()
    heavy = generate_job_set(CuSHConfig(dgemm_fraction=1.0), rng)
    assert (heavy.kind == 0).all()


def test_the_environment_and_make_workload_draw_one_distribution() -> None:
    # One sampler of 004's lengths, arrivals and types: the same seed, the same draws.
    from envs.workload import get_catalog, make_workload

    for seed in range(5):
        jobs = generate_job_set(CuSHConfig(), np.random.default_rng(seed))
        workload = make_workload("cush", num_jobs=20, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(workload.arrival_time, jobs.arrival.astype(float))
        np.testing.assert_array_equal(workload.duration, jobs.length.astype(float))
        names = [get_catalog("cush").names[model] for model in workload.model]
        assert names == [JOB_TYPES[kind] for kind in jobs.kind]


def test_short_jobs_only_when_long_jobs_have_no_lengths() -> None:
    """short_fraction 1 with max_job_len == short_max_len (the validator's allowed case):
    every job is short, 1..10 steps, and no empty range of long lengths is drawn."""
    config = CuSHConfig(short_fraction=1.0, short_max_len=10, max_job_len=10, num_jobs=40)
    for seed in range(3):
        jobs = generate_job_set(config, np.random.default_rng(seed))
        assert len(jobs.length) == 40 and 1 <= jobs.length.min() <= jobs.length.max() <= 10
    CuSHEnv(config).reset(seed=0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"cluster": "frontier"}, "cluster must be one of sierra, summit"),
        ({"nodes": 0}, "nodes must be an integer >= 1"),
        ({"queue_size": 2.5}, "queue_size must be an integer"),
        ({"time_horizon": True}, "time_horizon must be an integer"),
        ({"short_fraction": 1.5}, "short_fraction must be a number in"),
        ({"max_job_len": 5}, "max_job_len must be an integer >= 10"),
        ({"max_job_share": 0.0}, "max_job_share must be a number in"),
        ({"dgemm_remote_penalty": -1}, "dgemm_remote_penalty"),
        ({"reward": "global"}, "reward must be one of local, global_scaled"),
        ({"gamma": 2}, "gamma must be a number in"),
        ({"step_seconds": 0}, "step_seconds"),
        ({"max_time": 3}, "max_time must be an integer >= 10"),
        ({"colour": "red"}, "unknown CuSH parameter"),
    ],
)
def test_bad_configuration_raises_value_error(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CuSHEnv(**params)


def test_bad_config_objects_and_render_modes_raise() -> None:
    with pytest.raises(ValueError, match="unknown CuSH parameter"):
        CuSHConfig.from_dict({"nodes": 4, "queues": 3})
    with pytest.raises(ValueError, match="config must be a CuSHConfig"):
        CuSHEnv(config=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="render_mode must be None"):
        CuSHEnv(render_mode="human")
    assert CuSHEnv({"nodes": 4}, queue_size=2).config == CuSHConfig(nodes=4, queue_size=2)


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([], "at least one job"),
        ([{"arrival": 0, "length": 1, "gpus": 1, "cpus": 0}], "missing type"),
        ([{"arrival": 0, "length": 1, "gpus": 1, "cpus": 0, "type": "hpl"}], "type must be"),
        ([{"arrival": 0, "length": 0, "gpus": 1, "cpus": 0, "type": "dgemm"}], "length must"),
        ([{"arrival": 0, "length": 1, "gpus": 9, "cpus": 0, "type": "dgemm"}], "gpus must"),
        ([{"arrival": 0, "length": 1, "gpus": 1, "cpus": 5, "type": "dgemm"}], "cpus must"),
        ([{"arrival": -1, "length": 1, "gpus": 1, "cpus": 0, "type": "dgemm"}], "arrival"),
        (
            [
                {"arrival": 2, "length": 1, "gpus": 1, "cpus": 0, "type": "dgemm"},
                {"arrival": 1, "length": 1, "gpus": 1, "cpus": 0, "type": "dgemm"},
            ],
            "arrival order",
        ),
        ({"job": []}, "job set is"),
        ("jobs.json", "list of job objects"),
    ],
)
def test_bad_job_sets_raise_value_error(jobs: object, message: str) -> None:
    env = CuSHEnv(nodes=2)
    with pytest.raises(ValueError, match=message):
        env.reset(options={"jobs": jobs})
    with pytest.raises(ValueError, match=message):
        CuSHEnv(nodes=2, jobs=jobs)


def test_bad_actions_and_options_raise_value_error(tiny_env: CuSHEnv) -> None:
    with pytest.raises(ValueError, match="unknown reset option"):
        tiny_env.reset(options={"seed": 1})
    tiny_env.reset(seed=0)
    for action in ([4, 0], [0, 2], [-1, 0], 3, [1, 0, 0], ["a", "b"]):
        with pytest.raises(ValueError, match="action must be"):
            tiny_env.step(action)
    with pytest.raises(ValueError, match="unknown CuSH baseline"):
        tiny_env.baseline_action("lifo+df")


def test_stepping_after_the_end_needs_a_reset() -> None:
    env = CuSHEnv(
        nodes=2, jobs=[{"arrival": 0, "length": 1, "gpus": 1, "cpus": 1, "type": "dgemm"}]
    )
    env.reset(seed=0)
    env.step([1, 0])
    *_, terminated, _, info = env.step([0, 0])
    assert terminated and info["global_reward"] == 1.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step([0, 0])


def test_a_view_too_large_for_memory_is_refused_by_the_config() -> None:
    """``paper_baselines.py cush --queue-size 100000000`` (or ``--time-horizon``) ended in a
    MemoryError allocating a 768 x 5 x 1e8 image; the config now refuses it, naming the
    knobs."""
    from envs.cush.config import MAX_TIME_HORIZON

    with pytest.raises(
        ValueError, match=r"image would have 768 x 5 x 100,000,001 cells .*lower queue_size"
    ):
        CuSHConfig(queue_size=100_000_000)
    with pytest.raises(ValueError, match=r"^time_horizon must be at most 10,000 .*100,000,000"):
        CuSHConfig(time_horizon=100_000_000)
    with pytest.raises(ValueError, match="image would have 768 x 10,000 x 100,001 cells"):
        CuSHConfig(time_horizon=MAX_TIME_HORIZON, queue_size=100_000)
    # Generous: the largest cluster allowed (2^20 nodes) with 004's view, a long view.
    CuSHConfig(cluster="summit", nodes=2**20)
    CuSHConfig(time_horizon=MAX_TIME_HORIZON)
    CuSHConfig(queue_size=10_000)
