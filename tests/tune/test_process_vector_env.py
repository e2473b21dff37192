"""Sub-environments stepped in helper processes: the same vector env as RLlib's, call for call."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv

from tune.env_server import pack_observations, unpack_observations
from tune.process_vector_env import ProcessVectorMultiAgentEnv, chunk_bounds
from tune.rllib_envs import rllib_env_creator

ENV = "pod_scheduling_v0"
# Short episodes with advice and room features (every observation key of the demo), so
# that the steps below cross several autoresets.
CONFIG = {
    "topology": "fat-tree",
    "topology_params": {"k": 4},
    "num_jobs": 6,
    "horizon_intervals": 8,
    "room_features": True,
    "job_times": True,
    "advice": "dsif+locality",
}


def make_local():
    return rllib_env_creator(ENV)(dict(CONFIG))


def test_chunks_are_contiguous_and_balanced() -> None:
    assert chunk_bounds(16, 2) == [(0, 8), (8, 16)]
    assert chunk_bounds(5, 3) == [(0, 2), (2, 4), (4, 5)]
    assert chunk_bounds(3, 1) == [(0, 3)]
    for processes in (0, 4):
        with pytest.raises(ValueError, match="between 1 and the number of environments"):
            chunk_bounds(3, processes)


def test_packed_observations_round_trip_exactly() -> None:
    rng = np.random.default_rng(0)
    observations = [
        {
            agent: {
                "features": rng.normal(size=(3, 2)).astype(np.float32),
                "mask": rng.integers(0, 2, 5).astype(np.int8),
                # a key whose shape differs between agents travels as a list
                "ragged": np.arange(index + 1),
            }
            for index, agent in enumerate(["a", "b"])
        }
        for _ in range(3)
    ]
    agents, columns = pack_observations(observations)
    assert agents == [["a", "b"]] * 3
    assert columns["features"].shape == (6, 3, 2)  # one array for all six agents
    assert columns["ragged"].dtype == object
    restored = unpack_observations((agents, columns))
    for original, back in zip(observations, restored, strict=True):
        assert list(back) == list(original)
        for agent in original:
            assert list(back[agent]) == list(original[agent])
            for key, value in original[agent].items():
                assert back[agent][key].dtype == value.dtype
                np.testing.assert_array_equal(back[agent][key], value)
    # arrays of one key but different dtypes are not converted to a common one
    mixed = [{"a": {"x": np.zeros(2, np.int8)}, "b": {"x": np.zeros(2, np.float32)}}]
    back = unpack_observations(pack_observations(mixed))[0]
    assert back["a"]["x"].dtype == np.int8 and back["b"]["x"].dtype == np.float32
    with pytest.raises(ValueError, match="same observation keys"):
        pack_observations([{"a": {"x": np.zeros(1)}, "b": {"y": np.zeros(1)}}])


def first_legal_or_advised(observations: list[dict]) -> list[dict]:
    """A deterministic policy: the advised action where there is one, else the first legal."""
    actions = []
    for observation in observations:
        chosen = {}
        for agent, obs in observation.items():
            advised = np.flatnonzero(obs["advice"])
            chosen[agent] = int(
                advised[0] if len(advised) else np.flatnonzero(obs["action_mask"])[0]
            )
        actions.append(chosen)
    return actions


def assert_same_step(ours: tuple, theirs: tuple) -> None:
    observations, others = ours[0], theirs[0]
    assert len(observations) == len(others)
    for mine, reference in zip(observations, others, strict=True):
        assert list(mine) == list(reference)
        for agent in reference:
            assert list(mine[agent]) == list(reference[agent])
            for key, value in reference[agent].items():
                assert mine[agent][key].dtype == value.dtype, key
                np.testing.assert_array_equal(mine[agent][key], value, err_msg=key)
    for index in range(1, len(theirs)):
        # rewards, terminateds, truncateds, infos: numpy object arrays of dicts
        assert type(ours[index]) is type(theirs[index])
        assert len(ours[index]) == len(theirs[index])
        for mine, reference in zip(ours[index], theirs[index], strict=True):
            assert mine.keys() == reference.keys()
            for key, value in reference.items():
                if isinstance(value, dict):
                    for field, item in value.items():
                        np.testing.assert_array_equal(mine[key][field], item)
                else:
                    assert mine[key] == value


def test_helper_processes_step_exactly_as_rllibs_vector_env() -> None:
    reference = SyncVectorMultiAgentEnv([make_local] * 3)
    ours = ProcessVectorMultiAgentEnv(ENV, CONFIG, make_local, num_envs=3, processes=2)
    try:
        assert ours.processes == 2
        assert ours.single_observation_spaces == reference.single_observation_spaces
        observations, infos = ours.reset(seed=7)
        expected, expected_infos = reference.reset(seed=7)
        assert infos == expected_infos
        assert_same_step((observations,), (expected,))
        ended = np.zeros(3, dtype=int)
        for _ in range(120):
            actions = first_legal_or_advised(expected)
            step = ours.step(actions)
            expected_step = reference.step(actions)
            assert_same_step(step, expected_step)
            expected = expected_step[0]
            ended += [
                terminated["__all__"] or truncated["__all__"]
                for terminated, truncated in zip(expected_step[2], expected_step[3], strict=True)
            ]
        # Episodes ended, and were reset on the next step, in both chunks: the runner's
        # (environments 0 and 1) and the helper's (environment 2).
        assert ended[:2].sum() >= 2 and ended[2] >= 1
    finally:
        ours.close()
        reference.close()


def test_a_failing_environment_is_reported_with_the_helpers_traceback() -> None:
    env = ProcessVectorMultiAgentEnv(ENV, CONFIG, make_local, num_envs=3, processes=3)
    try:
        observations, _ = env.reset(seed=0)
        actions = first_legal_or_advised(observations)
        actions[1] = {agent: "not an action" for agent in actions[1]}
        with pytest.raises(
            RuntimeError, match=r"(?s)sub-environments 1-1 .*failed:\n.*ValueError: invalid literal"
        ):
            env.step(actions)
        # Both helpers go on serving, in step: the other helper's reply to the failed step
        # was read, so the next requests get their own replies.
        observations, _ = env.reset(seed=0)
        step = env.step(first_legal_or_advised(observations))
        assert len(step[0]) == 3 and all(len(rewards) == 4 for rewards in step[1])
    finally:
        env.close()


def test_a_helper_that_dies_is_named_with_its_exit_code() -> None:
    env = ProcessVectorMultiAgentEnv(ENV, CONFIG, make_local, num_envs=2, processes=2)
    try:
        env.reset(seed=0)
        helper = env._helpers[0]
        os.kill(helper.process.pid, signal.SIGKILL)
        helper.process.wait(timeout=10)
        with pytest.raises(
            RuntimeError, match=r"stepping sub-environments 1-1 exited \(exit code -9\)"
        ):
            env.reset(seed=0)
    finally:
        env.close()


def test_closing_ends_the_helper_processes() -> None:
    env = ProcessVectorMultiAgentEnv(ENV, CONFIG, make_local, num_envs=3, processes=3)
    processes = [helper.process for helper in env._helpers]
    assert len(processes) == 2 and all(process.poll() is None for process in processes)
    env.close()
    # they exited on request, not terminated
    assert [process.returncode for process in processes] == [0, 0]


def test_a_helper_that_cannot_build_is_reported_and_reaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subprocess

    import tune.process_vector_env as module

    started, original = [], subprocess.Popen

    def popen(*args, **kwargs):
        started.append(original(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(module.subprocess, "Popen", popen)
    with pytest.raises(RuntimeError, match=r"(?s)sub-environments 1-1 .*failed:\n.*no_such_env"):
        ProcessVectorMultiAgentEnv("no_such_env", CONFIG, make_local, num_envs=2, processes=2)
    # The helper exited and was waited for: no zombie is left behind.
    assert len(started) == 1 and started[0].returncode is not None
