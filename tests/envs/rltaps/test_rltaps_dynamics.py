"""RL-TAPS's dynamics by hand: preemption, elastic GPU counts, penalties, image, episode end."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.rltaps import RLTapsEnv
from envs.rltaps.core import split_observation

from .conftest import CELL_FLOPS, EFFECTIVE, NONE, P100, STEP_S, assignment, job

# One GPU at 0.9 v_P100 for one step does 0.9 of a cell (Appendix A).
ONE_GPU_CELLS = EFFECTIVE * STEP_S / CELL_FLOPS


def test_appendix_a_calibration() -> None:
    config = RLTapsEnv().config
    assert config.cell_flops == pytest.approx(5.12e14)
    assert config.step_seconds == pytest.approx(5.12e15 / 10.6e12 / 10)  # 48.3 s
    assert pytest.approx(0.9) == ONE_GPU_CELLS
    # The calibration job itself (vgg-vd-19, 256 examples, 1000 iterations = 10 rows of one
    # GPU) at the P100's full speed takes exactly the image's 10 rows.
    env = RLTapsEnv(gpu_efficiency=1.0, jobs=[job("vgg-vd-19", 256, 10, 1)])
    env.reset()
    steps, terminated = 0, False
    while not terminated:
        _, reward, terminated, _, _ = env.step(assignment({7: 0}))
        assert reward == pytest.approx(1.0)  # one v_P100
        steps += 1
    assert steps == 10


def test_paused_job_keeps_its_progress_and_resumes_elsewhere() -> None:
    # 2 rows x 1 GPU = 2 cells; each step on one GPU does 0.9 of a cell.
    env = RLTapsEnv(jobs=[job("vgg-vd-19", 256, 2, 1)])
    env.reset()
    core = env.core
    _, reward, *_ = env.step(assignment({0: 0}))
    assert reward == pytest.approx(0.9)
    assert core.remaining[0] == pytest.approx(1.1 * CELL_FLOPS)

    obs, reward, _, _, info = env.step(assignment({}))  # paused: no GPU
    # eq. 5 with one GPU (no reduction): d_m x 1 / tt_m = 0.9 v_P100.
    assert reward == pytest.approx(-0.9) and info["idle_penalty"] == pytest.approx(0.9)
    assert core.remaining[0] == pytest.approx(1.1 * CELL_FLOPS)
    assert core.slot_job[0] == 0 and core.preemptions == 1
    assert split_observation(obs, env.config)["slots"][:3, 0, 0] == pytest.approx([1, 0.1, 0])

    _, reward, terminated, *_ = env.step(assignment({31: 0}))  # resumed on another machine
    assert reward == pytest.approx(0.9) and not terminated
    assert core.remaining[0] == pytest.approx(0.2 * CELL_FLOPS)
    _, reward, terminated, _, info = env.step(assignment({17: 0}))
    assert reward == pytest.approx(0.2)  # only the 0.2 cell left, averaged over the step
    assert terminated and core.finish[0] == 4
    assert info["episode"]["mean_slowdown"] == pytest.approx(4 / 2)
    assert info["episode"]["return"] == pytest.approx(0.9 - 0.9 + 0.9 + 0.2)


def test_more_gpus_than_requested_run_faster_without_penalty() -> None:
    env = RLTapsEnv(jobs=[job("vgg-vd-19", 256, 10, 1)])
    env.reset()
    _, reward, _, _, info = env.step(assignment({0: 0, 1: 0, 2: 0, 3: 0}))
    d_m = 20e9 * 256
    reduction = 0.005 + 0.02 * 448 / 400  # sr(4, 548 MB), one machine, alone
    assert reward == pytest.approx(d_m * 4 / (d_m / EFFECTIVE + reduction) / P100)
    assert reward > 0.9 * 3
    assert info["shortfall_penalty"] == 0.0 and info["busy_gpus"] == 4


def test_idle_and_fewer_than_requested_penalties_eq_5_and_6() -> None:
    # A (alexnet, 128) asks for 3 GPUs and gets 1; B (resnet-50, 64, 98 MB) asks for 6 and
    # gets none.
    env = RLTapsEnv(jobs=[job("alexnet", 128, 5, 3), job("resnet-50", 64, 3, 6)])
    env.reset()
    _, reward, _, _, info = env.step(assignment({9: 0}))
    speed = 0.9  # one GPU, no reduction
    shortfall = 0.727e9 * 128 * (3 - 1) / (0.727e9 * 128 / EFFECTIVE + 0.0) / P100  # eq. 6
    d_m_b = 4e9 * 64
    single_rack = (0.005 * math.sqrt(6) - 0.005) * 98 / 100
    idle = d_m_b * 6 / (d_m_b / EFFECTIVE + single_rack) / P100  # eq. 5
    assert shortfall == pytest.approx(1.8)
    assert info["speed"] == pytest.approx(speed)
    assert info["shortfall_penalty"] == pytest.approx(shortfall)
    assert info["idle_penalty"] == pytest.approx(idle)
    assert reward == pytest.approx(speed - shortfall - idle)

    weighted = RLTapsEnv(
        idle_penalty=0.5,
        shortfall_penalty=0.0,
        jobs=[job("alexnet", 128, 5, 3), job("resnet-50", 64, 3, 6)],
    )
    weighted.reset()
    _, reward, *_ = weighted.step(assignment({9: 0}))
    assert reward == pytest.approx(speed - 0.5 * idle)


def test_image_blocks_are_calibrated() -> None:
    # 12 jobs at step 0: 10 slots, 2 in the backlog.
    jobs = [job("vgg-vd-19", 256, 3, 5)] + [job("resnet-50", 32, 1, 1)] * 11
    env = RLTapsEnv(jobs=jobs)
    obs, _ = env.reset()
    assert obs.shape == (10 * (32 + 10 * 12 + 6),) and obs.dtype == np.float32
    blocks = split_observation(obs, env.config)
    slot = blocks["slots"][:, 0, :]
    assert slot[:3, :5].tolist() == [[1.0] * 5] * 3 and slot.sum() == 15  # len x gpusreq
    assert blocks["slots"][:, 1, :].sum() == 1
    assert blocks["backlog"][0].tolist() == [1, 1, 0, 0, 0, 0]
    assert blocks["backlog"].sum() == 2 and blocks["cluster"].sum() == 0

    obs, *_ = env.step(assignment({gpu: 0 for gpu in range(5)}))
    blocks = split_observation(obs, env.config)
    core = env.core
    speed = core.last_speeds.speed_flops[0]
    # Slot 0's colour is 1/10; its GPUs are painted for the steps it needs at its speed.
    rows = math.ceil(core.remaining[0] / (speed * STEP_S))
    expected = np.zeros((10, 5), dtype=np.float32)
    expected[:rows] = np.float32(0.1)
    assert 1 <= rows < 10 and (blocks["cluster"][:, :5] == expected).all()
    assert blocks["cluster"][:, 5:].sum() == 0
    # The slot block's area is what is left, in cells (the last row holds the fraction).
    assert blocks["slots"][:, 0, :].sum() == pytest.approx(core.remaining[0] / CELL_FLOPS, 1e-6)


def test_gpu_sent_to_an_empty_slot_stays_idle() -> None:
    env = RLTapsEnv(jobs=[job("resnet-50", 64, 2, 1)])
    _, info = env.reset()
    mask = info["action_mask"].reshape(32, 11)
    assert mask[:, 0].all() and not mask[:, 1:NONE].any() and mask[:, NONE].all()
    _, reward, _, _, info = env.step(assignment({0: 0, 1: 3, 2: 9}))
    assert info["invalid_assignments"] == 2 and info["busy_gpus"] == 1
    assert reward == pytest.approx(0.9)


def test_full_slots_and_backlog_drop_jobs_and_slowdown_charges_t_max() -> None:
    jobs = [
        job("resnet-50", 64, 1, 1),
        job("resnet-50", 64, 2, 1),
        job("resnet-50", 64, 4, 1),
        job("resnet-50", 64, 4, 1, arrival=4),
    ]
    env = RLTapsEnv(num_slots=1, backlog_size=1, max_steps=5, jobs=jobs)
    env.reset()
    core = env.core
    assert core.slot_job.tolist() == [0] and list(core.backlog) == [1]
    assert core.dropped.tolist() == [False, False, True, False]
    truncated = False
    for _ in range(5):
        _, _, terminated, truncated, info = env.step(assignment({0: 0, 1: 0}, none=1))
    assert truncated and not terminated
    # Two GPUs do ~1.7 cells a step: job 0 (1 cell) ends at 1; job 1 (2 cells) takes the
    # slot at 1 and ends at 3; job 3 arrives at 4 and is unfinished at T_max = 5.
    assert core.finish.tolist() == [1, 3, -1, -1]
    slowdowns = [1 / 1, 3 / 2, 5 / 4, (5 - 4) / 4]  # the dropped job finishes at T_max too
    assert info["episode"]["mean_slowdown"] == pytest.approx(np.mean(slowdowns))
    assert info["episode"]["dropped"] == 1 and info["episode"]["jobs_finished"] == 2


def test_arrivals_refill_slots_and_episode_terminates_when_all_are_done() -> None:
    jobs = [job("resnet-50", 64, 1, 1, arrival=0), job("resnet-50", 64, 1, 2, arrival=3)]
    env = RLTapsEnv(num_slots=1, jobs=jobs)
    env.reset()
    terminated, steps = False, 0
    while not terminated:
        _, _, terminated, truncated, info = env.step(assignment({0: 0, 1: 0, 2: 0}, none=1))
        assert not truncated
        steps += 1
    assert env.core.finish.tolist() == [1, 4] and steps == 4
    assert info["episode"]["jobs_arrived"] == 2
