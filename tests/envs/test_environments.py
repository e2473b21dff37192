"""What every registered single-agent Gymnasium environment must do (Gymnasium's own
``tests/envs/test_envs.py`` is the model): pass the env checker, replay an episode under a
seed, survive pickling (Ray ships environments to workers) and never touch the global numpy
random state. Behaviour particular to one formulation lives in its own test folder."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.registry import SINGLE_AGENT_ENVIRONMENTS, register_envs

#: (id, keyword config) of every case: each registered id with a small, quick config, plus
#: the variants whose spaces or dynamics differ (other cluster, hybrid mode, no forced holds).
CASES: list[tuple[str, dict[str, Any]]] = [
    ("podsched/DeepRM-v0", {}),
    ("podsched/DeepRM-v0", {"observation": "compact"}),
    ("podsched/CuSH-v0", {"nodes": 16}),
    ("podsched/CuSH-v0", {"cluster": "summit", "nodes": 3, "queue_size": 2, "num_jobs": 4}),
    (
        "podsched/SCED2-v0",
        {
            "servers": 3,
            "num_jobs": 40,
            "interval_scale": 0.2,
            "workload_options": {
                "multi_gpu_sizes": (2, 4, 8),
                "multi_gpu_weights": (0.4, 0.4, 0.2),
            },
        },
    ),
    ("podsched/SCED2-v0", {"skip_forced_holds": False, "servers": 2, "num_jobs": 20, "window": 3}),
    ("podsched/Contention-v0", {"num_jobs": 24, "gpu_choices": (1, 2, 4, 8), "job_hours": 0.5}),
    ("podsched/Contention-v0", {"mode": "hybrid", "num_jobs": 10, "preempt_cs": 1.5}),
    (
        "podsched/RLTAPS-v0",
        {
            "racks": (1, 1),
            "num_slots": 4,
            "backlog_size": 8,
            "max_gpus_request": 6,
            "small_gpus": (1, 3),
            "large_gpus": (4, 6),
            "num_jobs": 30,
            "max_steps": 120,
        },
    ),
]
#: Further cases only the checker runs: an explicit, empty workload.
CHECKER_CASES = [*CASES, ("podsched/DeepRM-v0", {"jobs": {"jobs": []}})]
IDS = [f"{env_id.removeprefix('podsched/')}-{index}" for index, (env_id, _) in enumerate(CASES)]
#: Steps of a trajectory compared across runs (episodes restart when they end).
STEPS = 150


def make(env_id: str, config: dict[str, Any]) -> gymnasium.Env:
    """The unwrapped environment of ``env_id``, as ``gymnasium.make`` builds it."""
    return gymnasium.make(env_id, **config).unwrapped


def valid_action(env: gymnasium.Env, observation: Any, info: dict[str, Any], draw: int) -> Any:
    """An action chosen by ``draw``: among the legal ones where the env marks them (a flat
    discrete mask), else a sample of the action space seeded by ``draw``."""
    mask = observation.get("action_mask") if isinstance(observation, dict) else None
    if isinstance(env.action_space, gymnasium.spaces.Discrete) and mask is not None:
        legal = np.flatnonzero(mask)
        if len(legal):
            return int(legal[draw % len(legal)])
    env.action_space.seed(draw)
    return env.action_space.sample()


def flatten(value: Any) -> tuple:
    """A comparable form of an observation or reward."""
    if isinstance(value, dict):
        return tuple((key, flatten(item)) for key, item in sorted(value.items()))
    array = np.asarray(value)
    return (array.dtype.str, array.shape, array.tobytes())


def trajectory(
    env: gymnasium.Env, seed: int | None, steps: int = STEPS, start: tuple | None = None
) -> list[tuple]:
    """``steps`` transitions from ``reset(seed=seed)`` (or from ``start``, an observation and
    info the env is at), restarting ended episodes."""
    observation, info = env.reset(seed=seed) if start is None else start
    record: list[tuple] = [flatten(observation)]
    draws = np.random.default_rng(0).integers(0, 1 << 30, size=steps).tolist()
    for draw in draws:
        action = valid_action(env, observation, info, draw)
        observation, reward, terminated, truncated, info = env.step(action)
        record.append((flatten(observation), float(reward), terminated, truncated))
        if terminated or truncated:
            observation, info = env.reset()
    return record


def test_every_registered_environment_has_a_case() -> None:
    assert {env_id for env_id, _ in CASES} == set(SINGLE_AGENT_ENVIRONMENTS)


def test_import_registers_the_ids_and_registration_is_idempotent() -> None:
    code = (
        "import gymnasium, envs\n"
        "for env_id in envs.registry.SINGLE_AGENT_ENVIRONMENTS:\n"
        "    assert env_id in gymnasium.registry, env_id\n"
        "gymnasium.make('podsched/DeepRM-v0')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert register_envs() == list(SINGLE_AGENT_ENVIRONMENTS)
    assert register_envs() == list(SINGLE_AGENT_ENVIRONMENTS)  # nothing changes
    assert set(SINGLE_AGENT_ENVIRONMENTS) <= set(envs.environment_names())


@pytest.mark.parametrize(("env_id", "config"), CHECKER_CASES, ids=[*IDS, "DeepRM-v0-no-jobs"])
def test_passes_the_gymnasium_env_checker(env_id: str, config: dict[str, Any]) -> None:
    env = make(env_id, config)
    # Made through the registry so the checker can re-make it in every render mode.
    check_env(env, skip_render_check=not env.metadata["render_modes"])


@pytest.mark.parametrize(("env_id", "config"), CASES, ids=IDS)
def test_same_seed_same_trajectory_other_seed_other_one(
    env_id: str, config: dict[str, Any]
) -> None:
    first = trajectory(make(env_id, config), seed=7)
    assert trajectory(make(env_id, config), seed=7) == first
    assert trajectory(make(env_id, config), seed=8) != first


@pytest.mark.parametrize(("env_id", "config"), CASES, ids=IDS)
def test_a_pickled_environment_goes_on_as_the_original(env_id: str, config: dict[str, Any]) -> None:
    env = make(env_id, config)
    copy = pickle.loads(pickle.dumps(env))
    assert trajectory(copy, seed=3) == trajectory(env, seed=3)
    # Mid-episode too: the copy carries the state and the generator.
    observation, info = env.reset(seed=4)
    observation, _, _, _, info = env.step(valid_action(env, observation, info, draw=1))
    copy, start = pickle.loads(pickle.dumps((env, (observation, info))))
    assert trajectory(copy, None, 40, start) == trajectory(env, None, 40, (observation, info))


@pytest.mark.parametrize(("env_id", "config"), CASES, ids=IDS)
def test_spaces_are_built_once(env_id: str, config: dict[str, Any]) -> None:
    env = make(env_id, config)
    spaces = (env.observation_space, env.action_space)
    trajectory(env, seed=0, steps=20)
    assert env.observation_space is spaces[0] and env.action_space is spaces[1]


@pytest.mark.parametrize(("env_id", "config"), CASES, ids=IDS)
def test_never_touches_the_global_numpy_random_state(env_id: str, config: dict[str, Any]) -> None:
    np.random.seed(5)
    expected = np.random.random()
    np.random.seed(5)
    env = make(env_id, config)
    trajectory(env, seed=1)
    env.reset()
    assert np.random.random() == expected
