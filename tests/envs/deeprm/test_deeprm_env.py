"""The Gymnasium face of DeepRM: registration, spaces, layouts, config errors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from envs.deeprm import ENV_ID, DeepRMEnv
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.jobs import generate_sequence


def test_registered_id_makes_the_environment_with_overrides() -> None:
    env = gymnasium.make(ENV_ID, observation="compact", num_nw=3)
    assert isinstance(env.unwrapped, DeepRMEnv)
    assert env.action_space == gymnasium.spaces.Discrete(4)
    assert env.observation_space.shape == ((2 + 1) * (20 + 3) + 1,)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)


def test_default_spaces_are_the_references() -> None:
    env = DeepRMEnv()
    # (res_slot + num_nw * max_job_size) * num_res + backlog 60 / 20 + 1 = 124 columns.
    assert env.observation_space.shape == (20, 124)
    assert env.observation_space.dtype == np.float32
    assert env.action_space.n == 6
    assert DeepRMEnv(observation="compact").observation_space.shape == (76,)


def test_generated_jobs_follow_the_bimodal_distribution() -> None:
    config = DeepRMConfig(simu_len=40_000)
    jobs = generate_sequence(config, np.random.default_rng(0))
    assert jobs.arrival_times.min() >= 1
    assert len(jobs) / (config.simu_len - 1) == pytest.approx(0.7, abs=0.01)
    lengths = jobs.lengths
    assert set(np.unique(lengths)) == {1, 2, 3, *range(10, 16)}
    assert np.mean(lengths <= 3) == pytest.approx(0.8, abs=0.01)
    dominant = jobs.sizes.max(axis=1)
    other = jobs.sizes.min(axis=1)
    assert set(np.unique(dominant)) == set(range(5, 11))
    assert set(np.unique(other)) == {1, 2}
    assert np.mean(jobs.sizes[:, 0] > jobs.sizes[:, 1]) == pytest.approx(0.5, abs=0.01)


JOB = {"arrival_time": 1, "len": 3, "res": [4, 2]}


def test_image_layout_slots_backlog_and_time_since_arrival() -> None:
    # Slot j of resource r starts at column r * 60 + 10 + 10 j; backlog at 120..122; 123 last.
    jobs = [{**JOB, "arrival_time": t} for t in range(1, 10)]
    env = DeepRMEnv(jobs=jobs)
    env.reset(seed=0)
    for _ in range(9):
        obs, *_ = env.step(5)
    # Slots 0..4 hold J0..J4 (3 x [4, 2]); J5..J8 are backlogged (4 cells, 3 per row).
    for slot in range(5):
        for res, demand in ((0, 4), (1, 2)):
            start = res * 60 + 10 + 10 * slot
            block = obs[:, start : start + 10]
            expected = np.zeros((20, 10), dtype=np.float32)
            expected[:3, :demand] = 1
            np.testing.assert_array_equal(block, expected)
    backlog = np.zeros((20, 3), dtype=np.float32)
    backlog[0, :] = 1
    backlog[1, 0] = 1
    np.testing.assert_array_equal(obs[:, 120:123], backlog)
    np.testing.assert_array_equal(obs[:, 123], 0.0)  # a job arrived this step
    np.testing.assert_array_equal(obs[:, :10], 0.0)  # nothing booked
    for expected_since in (1, 2):
        obs, *_ = env.step(5)
        np.testing.assert_array_equal(obs[:, 123], np.float32(expected_since / 10))


def test_image_canvas_books_the_lowest_free_columns_of_each_row() -> None:
    # A = [4, 2] x 3 at offset 0; B = [3, 5] x 4 later fits at offset 0 too (res 1: 2+5 <= 10).
    jobs = [JOB, {"arrival_time": 2, "len": 4, "res": [3, 5]}]
    env = DeepRMEnv(jobs=jobs)
    env.reset(seed=0)
    env.step(5)  # t=1, A -> slot 0
    env.step(0)  # A at rows 0..2
    env.step(5)  # t=2, B -> slot 0; A now in rows 0..1
    obs, *_ = env.step(0)  # B at rows 0..3
    a_colour, b_colour = env.core.colormap[:2].astype(np.float32)
    assert 0 < a_colour < 1 and 0 < b_colour < 1 and a_colour != b_colour
    res0, res1 = obs[:, 0:10], obs[:, 60:70]
    expected0 = np.zeros((20, 10), dtype=np.float32)
    expected0[:2, :4] = a_colour
    expected0[:2, 4:7] = b_colour  # B takes the free columns after A's ...
    expected0[2:4, :3] = b_colour  # ... and the lowest ones where A has gone
    expected1 = np.zeros((20, 10), dtype=np.float32)
    expected1[:2, :2] = a_colour
    expected1[:2, 2:7] = b_colour
    expected1[2:4, :5] = b_colour
    np.testing.assert_array_equal(res0, expected0)
    np.testing.assert_array_equal(res1, expected1)
    # The canvas mirrors the free capacity.
    np.testing.assert_array_equal((res0 == 0).sum(axis=1), env.core.avbl[:, 0])


def test_compact_layout() -> None:
    jobs = [JOB, {"arrival_time": 2, "len": 2, "res": [1, 6]}]
    env = DeepRMEnv(jobs=jobs, observation="compact")
    env.reset(seed=0)
    env.step(5)
    env.step(0)  # J0 at rows 0..2 (runs 1..4)
    obs, *_ = env.step(5)  # t=2: J0 finishes in 2 steps; J1 in slot 0
    running_after = np.zeros(20)
    running_after[:2] = 1  # still running after 0 and 1 steps, gone after 2
    free0 = np.full(20, 10)
    free0[:2] = 6
    free1 = np.full(20, 10)
    free1[:2] = 8
    slots = [2, 1, 6] + [0, 0, 0] * 4
    np.testing.assert_array_equal(obs, [*running_after, *free0, *free1, *slots, 0])


def test_ansi_render_shows_the_image() -> None:
    env = DeepRMEnv(jobs=[JOB], render_mode="ansi")
    env.reset(seed=0)
    env.step(5)
    text = env.render()
    lines = text.splitlines()
    assert lines[0].startswith("time 1")
    assert len(lines) == 21 and lines[1][10:14] == "####"
    assert DeepRMEnv().render() is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"time_horizon": 1}, "time_horizon must be an integer >= 2"),
        ({"max_job_len": 20}, "max_job_len must be <= time_horizon - 1 = 19"),
        ({"max_job_size": 11}, "max_job_size must be <= res_slot = 10"),
        ({"num_nw": 0}, "num_nw must be an integer >= 1"),
        ({"num_res": True}, "num_res must be an integer"),
        ({"res_slot": 2.5}, "res_slot must be an integer"),
        ({"backlog_size": -1}, "backlog_size must be an integer >= 0"),
        ({"new_job_rate": 1.5}, r"new_job_rate must be a number in \[0, 1\]"),
        ({"job_small_chance": "0.8"}, "job_small_chance must be a number"),
        ({"end": "forever"}, "end must be one of all_done, no_new_job"),
        ({"observation": "rgb"}, "observation must be one of image, compact"),
        ({"max_episode_steps": 0}, "max_episode_steps must be an integer >= 1"),
        ({"job_num_cap": 1}, "job_num_cap must be an integer >= 2"),
        ({"horizon": 20}, r"unknown DeepRM parameter\(s\) horizon; known: backlog_size"),
    ],
)
def test_bad_configs_say_what_is_wrong(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DeepRMEnv(**params)
    with pytest.raises(ValueError, match=message):
        DeepRMEnv(config=params)


def test_bad_arguments_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        DeepRMEnv(render_mode="human")
    with pytest.raises(ValueError, match="config must be a DeepRMConfig or a mapping"):
        DeepRMEnv(config=[("num_nw", 3)])
    env = DeepRMEnv()
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) seed; known: jobs"):
        env.reset(options={"seed": 3})
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be in 0..5, got 6"):
        env.step(6)
    with pytest.raises(ValueError, match="action must be an integer"):
        env.step(1.5)
    with pytest.raises(ValueError, match="needs max_job_len >= 5"):
        DeepRMEnv(max_job_len=4).reset(seed=0)
    with pytest.raises(ValueError, match="policy must be one of sjf, packer, random"):
        env.baseline_action("fifo")


def test_an_image_too_large_for_memory_is_refused_by_the_config() -> None:
    """``simulate.py deeprm --num-nw 100000000`` ended in a MemoryError building a
    20 x 2e9 image; the config now refuses it, naming the knobs."""
    with pytest.raises(ValueError, match=r"image would have 20 x 2,000,000,024 cells .*num_nw"):
        DeepRMConfig(num_nw=100_000_000)
    DeepRMConfig(num_nw=10_000)  # 2,000 times the reference's 5 slots: fine
