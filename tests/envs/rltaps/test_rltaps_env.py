"""The Gymnasium face of RL-TAPS: registration, spaces, sequences, seeding, errors."""

from __future__ import annotations

import re

import gymnasium
import numpy as np
import pytest

from envs import make_env
from envs.base import EPISODE_OVER
from envs.registry import environment_names
from envs.rltaps import RLTapsEnv
from envs.rltaps.cnns import CNN_NAMES
from envs.rltaps.config import RLTapsConfig
from envs.rltaps.core import RLTapsCore
from envs.rltaps.jobs import generate_jobs, parse_jobs

from .conftest import NONE, assignment, job


def test_registered_and_listed_with_overrides(registered: str) -> None:
    assert registered in environment_names()
    env = make_env(registered, racks=(2, 2), num_slots=5, max_gpus_request=8, large_gpus=(5, 8))
    assert isinstance(env.unwrapped, RLTapsEnv)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([6] * 16)
    assert env.observation_space.shape == (10 * (16 + 5 * 8 + 6),)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)


def test_default_spaces_follow_003() -> None:
    env = RLTapsEnv()
    # M = 32 softmaxes of N + 1 = 11 units (003 §5.1: 32 x 11 = 352 outputs).
    assert env.action_space == gymnasium.spaces.MultiDiscrete([11] * 32)
    assert int(env.action_space.nvec.sum()) == 352
    assert env.observation_space.shape == (1580,) and env.observation_space.dtype == np.float32
    assert env.config.image_shape == (10, 158)
    _, info = env.reset(seed=0)
    assert info["action_mask"].shape == (352,) and info["action_mask"].dtype == np.int8


def test_generated_sequences_follow_5_1() -> None:
    config = RLTapsConfig(num_jobs=4000)
    jobs = generate_jobs(config, np.random.default_rng(0))
    assert jobs.arrival.tolist() == list(range(4000))  # one job per step
    length, gpus = jobs.length, jobs.gpus
    assert set(length.tolist()) == {1, 2, 3, 6, 7, 8, 9, 10}
    assert set(gpus.tolist()) == set(range(1, 13))
    assert 0.45 < (length >= 6).mean() < 0.55 and 0.45 < (gpus >= 8).mean() < 0.55
    assert set(jobs.minibatch.tolist()) == {32, 64, 128, 256, 512}
    assert len(set(jobs.model.tolist())) == len(CNN_NAMES)
    assert parse_jobs(jobs, config).to_list() == jobs.to_list()


def test_reset_replays_explicit_jobs() -> None:
    jobs = [job("resnet-50", 64, 2, 3, arrival=1), job("alexnet", 32, 1, 2, arrival=0)]
    env = RLTapsEnv(jobs=jobs)
    env.reset(seed=0)
    # Sorted by arrival: alexnet (arrival 0) first, in slot 0 from the start.
    assert env.core.jobs.to_list()[0]["model"] == "alexnet"
    assert env.core.slot_job.tolist()[:2] == [0, -1]
    env.reset(options={"jobs": [job("vgg-vd-19", 256, 1, 12)]})
    assert len(env.core.jobs) == 1 and env.core.jobs.gpus.tolist() == [12]
    env.reset()
    assert len(env.core.jobs) == 2


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (np.zeros(31, dtype=np.int64), "32 integers"),
        (np.full(32, NONE + 1), r"in \[0, 10\]"),
        (np.full(32, -1), r"in \[0, 10\]"),
        (np.zeros(32, dtype=np.float32), "32 integers"),
        (3, "32 integers"),
    ],
)
def test_bad_actions_are_refused(action: object, message: str) -> None:
    env = RLTapsEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        env.step(action)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"racks": ()}, "racks"),
        ({"racks": (2, 0)}, "racks"),
        ({"num_slots": 0}, "num_slots"),
        ({"short_len": (3, 1)}, "short_len"),
        ({"long_len": (6, 30)}, "30 rows long but the image has horizon=10 rows"),
        ({"large_gpus": (8, 13)}, "max_gpus_request"),
        ({"max_gpus_request": 40}, "at most the cluster's 32 GPUs"),
        ({"models": ("resnet-50", "lenet")}, "unknown CNN"),
        ({"minibatch_sizes": (32, 0)}, "minibatch"),
        ({"gpu_efficiency": 1.5}, "gpu_efficiency"),
        ({"reduction_fit_100mb": (0.01, -0.1)}, "reduction time >= 0"),
        ({"long_len_share": 2}, "long_len_share"),
        ({"idle_penalty": -1}, "idle_penalty"),
        ({"colour": 1}, "unknown RL-TAPS parameter"),
    ],
)
def test_bad_configs_are_refused(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RLTapsEnv(**params)


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([], "non-empty list"),
        ([{"arrival": 0}], "exactly the keys"),
        ([job("lenet", 32, 1, 1)], "unknown model"),
        ([job("resnet-50", 32, 0, 1)], r"len must be an integer in 1\.\.10"),
        # 003 §4.6.2: the image holds a job's whole work; 11 rows would be drawn as 10.
        ([job("resnet-50", 32, 11, 1)], r"len must be an integer in 1\.\.10"),
        ([job("resnet-50", 32, 1, 13)], r"gpus must be an integer in 1\.\.12"),
        ({"tasks": []}, "an RL-TAPS job list"),
    ],
)
def test_bad_job_lists_are_refused(jobs: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RLTapsEnv(jobs=jobs)


def test_unknown_reset_option_and_stepping_after_the_end() -> None:
    env = RLTapsEnv(jobs=[job("resnet-50", 64, 1, 1)])
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"seed": 1})
    env.reset()
    _, _, terminated, _, info = env.step(np.zeros(32, dtype=np.int64))
    assert terminated and info["episode"]["jobs_finished"] == 1
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(32, dtype=np.int64))


def test_stepping_before_reset_is_refused_like_the_other_environments() -> None:
    env = RLTapsEnv()
    with pytest.raises(RuntimeError, match=re.escape(EPISODE_OVER)):
        env.step(np.zeros(32, dtype=np.int64))


def test_a_step_refused_after_the_end_changes_nothing() -> None:
    # One 10-row job in slot 0 left idle for one step: truncated at T_max = 1.
    env = RLTapsEnv(max_steps=1, jobs=[job("resnet-50", 64, 10, 1)])
    env.reset()
    _, _, terminated, truncated, _ = env.step(assignment({}))
    assert truncated and not terminated
    core = env.core
    before = core.summary()
    assert before["invalid_assignments"] == 0 and (core.gpu_job == -1).all()
    assert core.slot_job[0] == 0
    # GPU 0 to slot 0 (its job) and GPU 1 to the empty slot 1: had assign() run, job 0
    # would hold GPU 0 and the episode would count one invalid assignment.
    with pytest.raises(RuntimeError, match=re.escape(EPISODE_OVER)):
        env.step(assignment({0: 0, 1: 1}))
    assert core.summary() == before
    assert core.invalid_assignments == 0 and (core.gpu_job == -1).all()


def test_the_static_core_refuses_start_before_reset_and_after_the_end() -> None:
    config = RLTapsConfig(max_steps=1)
    core = RLTapsCore(config, preemptive=False)
    with pytest.raises(RuntimeError, match=re.escape(EPISODE_OVER)):
        core.start(0, np.array([0]))
    # Two 10-row jobs in slots 0 and 1; one step with neither started reaches T_max = 1.
    core.reset(parse_jobs([job("resnet-50", 64, 10, 1), job("resnet-50", 64, 10, 1)], config))
    core.advance()
    assert core.truncated and core.over
    with pytest.raises(RuntimeError, match=re.escape(EPISODE_OVER)):
        core.start(0, np.array([0]))
    # Job 0 is still in slot 0 and GPU 0 still free: the refused start changed nothing.
    assert core.slot_job.tolist() == [0, 1] + [-1] * 8
    assert (core.gpu_job == -1).all() and core.job_slot.tolist() == [0, 1]


def test_a_job_sequence_too_long_for_memory_is_refused_by_the_config() -> None:
    """``simulate.py rltaps --num-jobs 100000000`` ended in a MemoryError drawing it."""
    with pytest.raises(ValueError, match=r"num_jobs must be at most 10,000,000 .*100,000,000"):
        RLTapsConfig(num_jobs=100_000_000)
