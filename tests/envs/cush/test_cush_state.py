"""004 §3.2's state and queue on a hand-made case of Fig. 3's size (2 nodes, T = 5, Q = 3).

Columns 0..3 are the CPUs (node 0: 0, 1; node 1: 2, 3), columns 4..11 the GPUs (node 0:
4..7; node 1: 8..11); channel 0 is the cluster, channel j slot j's job.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs.cush import CuSHEnv


def job(arrival: int, length: int, gpus: int, cpus: int, kind: str) -> dict[str, Any]:
    return {"arrival": arrival, "length": length, "gpus": gpus, "cpus": cpus, "type": kind}


JOBS = [
    job(0, 2, 4, 1, "dgemm"),  # j0
    job(0, 7, 6, 2, "daxpy"),  # j1: longer than T = 5
    job(1, 3, 2, 1, "dgemm"),  # j2
    job(1, 1, 1, 0, "daxpy"),  # j3: arrives when the 3 slots are full -> backlog
    job(2, 4, 8, 4, "dgemm"),  # j4
]


def slot_block(value: float, cpus: int, gpus: int, rows: int) -> np.ndarray:
    """The (12, 5) picture of a slot's job: its CPUs and GPUs for ``rows`` rows."""
    block = np.zeros((12, 5), dtype=np.float32)
    block[:cpus, :rows] = value
    block[4 : 4 + gpus, :rows] = value
    return block


@pytest.fixture
def env() -> CuSHEnv:
    return CuSHEnv(nodes=2, queue_size=3, jobs=JOBS)


def test_image_shape_is_fig3s(env: CuSHEnv) -> None:
    # 004 §3.2: "in the example of Figure 3 that would be 12 x 5 x 4".
    assert env.observation_space["image"].shape == (12, 5, 4)


def test_waiting_jobs_carry_their_waiting_time_and_long_jobs_show_as_t(env: CuSHEnv) -> None:
    obs, info = env.reset(seed=0)
    image = obs["image"]
    assert info["time"] == 0 and env.core.slots == [0, 1, -1]
    assert not image[:, :, 0].any()  # nothing runs
    np.testing.assert_array_equal(image[:, :, 1], slot_block(1.0, 1, 4, 2))
    # j1 lasts 7 steps, shown as T = 5 rows.
    np.testing.assert_array_equal(image[:, :, 2], slot_block(1.0, 2, 6, 5))
    assert not image[:, :, 3].any()
    np.testing.assert_array_equal(obs["job_types"], [[1, 0], [0, 1], [0, 0]])
    np.testing.assert_array_equal(obs["action_mask"], [1, 1, 1, 0, 1, 1])

    obs, reward, *_ = env.step([0, 0])  # do nothing: time 1, j2 and j3 arrive
    image = obs["image"]
    assert env.core.time == 1
    assert env.core.slots == [0, 1, 2] and list(env.core.backlog) == [3]
    np.testing.assert_array_equal(image[:, :, 1], slot_block(2.0, 1, 4, 2))  # waited 1 step
    np.testing.assert_array_equal(image[:, :, 2], slot_block(2.0, 2, 6, 5))
    np.testing.assert_array_equal(image[:, :, 3], slot_block(1.0, 1, 2, 3))
    # -sum wt/l over slots and backlog: j0 1/2, j1 1/7, j2 0/3, j3 0/1.
    assert reward == pytest.approx(-(1 / 2 + 1 / 7))


def test_scheduling_freezes_time_refills_from_the_backlog_and_draws_the_cluster(
    env: CuSHEnv,
) -> None:
    env.reset(seed=0)
    env.step([0, 0])
    obs, reward, _, _, info = env.step([1, 0])  # j0 depth-first: node 0 whole
    assert info["time"] == 1 and info["placed"]["job"] == 0
    assert info["placed"]["nodes"] == 1 and info["psm_reward"] == 0.0
    # The backlog's head (j3) takes the freed slot 1.
    assert env.core.slots == [3, 1, 2] and not env.core.backlog
    cluster = np.zeros((12, 5), dtype=np.float32)
    cluster[[0, 4, 5, 6, 7], :2] = 1.0  # socket 0 and GPUs 0..3 busy during steps 1 and 2
    np.testing.assert_array_equal(obs["image"][:, :, 0], cluster)
    np.testing.assert_array_equal(obs["image"][:, :, 1], slot_block(1.0, 0, 1, 1))
    # Waiting now: j3 0/1, j1 1/7, j2 0/3.
    assert reward == pytest.approx(-1 / 7)
    # j1 needs 6 GPUs, 4 are free: masked; j3 and j2 fit.
    np.testing.assert_array_equal(obs["action_mask"], [1, 1, 0, 1, 1, 1])

    obs, _, _, _, info = env.step([2, 1])  # masked: taken as do nothing
    assert info["invalid_action"] and "placed" not in info
    assert env.core.time == 2
    assert list(env.core.backlog) == [4]  # j4 arrived with every slot full
    cluster[:, 1] = 0.0
    np.testing.assert_array_equal(obs["image"][:, :, 0], cluster)  # shifted up one row
    np.testing.assert_array_equal(obs["image"][:, :, 2], slot_block(3.0, 2, 6, 5))


def test_backlog_is_first_in_first_out() -> None:
    jobs = [job(0, 1, 8, 0, "dgemm")] + [job(1, 1, 1, 0, "dgemm") for _ in range(5)]
    env = CuSHEnv(nodes=2, queue_size=2, jobs=jobs)
    env.reset(seed=0)
    env.step([1, 0])  # j0 takes the whole cluster for step 0
    env.step([0, 0])
    assert env.core.slots == [1, 2] and list(env.core.backlog) == [3, 4, 5]
    env.step([2, 0])
    assert env.core.slots == [1, 3] and list(env.core.backlog) == [4, 5]
    env.step([1, 0])
    assert env.core.slots == [4, 3] and list(env.core.backlog) == [5]


def test_the_episode_ends_when_every_job_has_finished(env: CuSHEnv) -> None:
    env.reset(seed=0)
    terminated = False
    steps = 0
    while not terminated:
        _, _, terminated, truncated, info = env.step(env.baseline_action("fcfs+df"))
        assert not truncated
        steps += 1
    summary = info["episode"]
    assert summary["jobs_finished"] == 5 and summary["steps"] == steps
    assert all(record["finish"] is not None for record in summary["jobs"])
    assert info["global_reward"] == summary["avg_ntat"]


def test_doing_nothing_forever_is_truncated_at_max_time() -> None:
    env = CuSHEnv(nodes=2, max_time=30, jobs=[job(0, 2, 1, 1, "dgemm")])
    env.reset(seed=0)
    truncated = False
    while not truncated:
        _, _, terminated, truncated, info = env.step([0, 0])
        assert not terminated
    assert env.core.time == 30
    assert "global_reward" not in info and info["episode"]["jobs_finished"] == 0
