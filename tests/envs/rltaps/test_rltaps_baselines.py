"""003 §5.3's baselines: Random, SJF, Tetris pickers, left-to-right allocation, no preemption."""

from __future__ import annotations

import numpy as np
import pytest

from envs.rltaps.baselines import (
    RLTAPS_BASELINES,
    format_baseline_table,
    left_to_right,
    parse_baselines,
    pick,
    run_rltaps_baseline,
    run_sequence,
)
from envs.rltaps.config import RLTapsConfig
from envs.rltaps.core import RLTapsCore
from envs.rltaps.jobs import parse_jobs

from .conftest import EFFECTIVE, STEP_S, job

CONFIG = RLTapsConfig()


def static_core(jobs: list[dict]) -> RLTapsCore:
    core = RLTapsCore(CONFIG, preemptive=False)
    core.reset(parse_jobs(jobs, CONFIG))
    return core


def test_allocator_takes_the_first_free_gpus_left_to_right() -> None:
    core = static_core([job("resnet-50", 64, 5, 3), job("resnet-50", 64, 5, 4)])
    core.start(0, left_to_right(core, 3))
    assert core.gpu_job[:3].tolist() == [0, 0, 0]
    # Slot 0 is left empty (no backlog): the second job is still in slot 1.
    assert core.slot_job[:2].tolist() == [-1, 1]
    assert left_to_right(core, 4).tolist() == [3, 4, 5, 6]
    core.gpu_job[5] = 0  # a hole: the allocator skips busy GPUs
    assert left_to_right(core, 4).tolist() == [3, 4, 6, 7]


def test_sjf_and_tetris_pick_among_the_jobs_that_fit() -> None:
    jobs = [job("resnet-50", 64, 5, 2), job("resnet-50", 64, 2, 12), job("resnet-50", 64, 9, 6)]
    rng = np.random.default_rng(0)
    core = static_core(jobs)
    assert pick(core, "sjf", rng) == 1  # len 2
    assert pick(core, "tetris", rng) == 1  # 12 GPUs x 32 free is the largest product
    core.gpu_job[:22] = 0  # only 10 GPUs left
    assert pick(core, "sjf", rng) == 0  # the 12-GPU job no longer fits
    assert pick(core, "tetris", rng) == 2
    core.gpu_job[:31] = 0  # one GPU left: nothing fits
    assert pick(core, "sjf", rng) is None and pick(core, "tetris", rng) is None


def test_random_draws_over_slots_and_move_on_like_deeprm() -> None:
    core = static_core([job("resnet-50", 64, 5, 2)])
    same = np.random.default_rng(5)
    draws = [int(same.integers(11)) for _ in range(50)]
    rng = np.random.default_rng(5)
    picks = [pick(core, "random", rng) for _ in range(50)]
    # Slot 0 is the only one with a job: every other draw (empty slot or "move on") is None.
    assert picks == [0 if draw == 0 else None for draw in draws]


def test_one_job_replayed_by_hand() -> None:
    # vgg-vd-19 x 256 on 4 GPUs, len 1: 4 cells. SJF starts it at step 0 on GPUs 0..3.
    result = run_rltaps_baseline("sjf", jobs=[job("vgg-vd-19", 256, 1, 4)])
    d_m = 20e9 * 256
    speed = d_m * 4 / (d_m / EFFECTIVE + 0.005 + 0.02 * 448 / 400)
    cells_per_step = speed * STEP_S / (20e9 * 256 * 1000 / 10)
    assert 2 < cells_per_step < 4  # so it needs two steps
    (sequence,) = result["sequences"]
    assert sequence["jobs_finished"] == 1 and sequence["final_time"] == 2
    assert result["mean_slowdown"] == pytest.approx(2.0)
    # No idle step, so the return is the work done in cells: 4 x d_cell / (t_step v_P100).
    assert result["mean_reward"] == pytest.approx(4.0)
    assert sequence["mean_speed"] == pytest.approx(2.0)


def test_started_jobs_keep_their_gpus_until_they_finish() -> None:
    jobs = [job("resnet-50", 64, 3, 30), job("resnet-50", 64, 1, 4)]
    config = RLTapsConfig(max_gpus_request=30)
    core = RLTapsCore(config, preemptive=False)
    core.reset(parse_jobs(jobs, config))
    rng = np.random.default_rng(0)
    seen = []
    while not core.over:
        slot = pick(core, "sjf", rng)
        while slot is not None:
            core.start(slot, left_to_right(core, int(core.jobs.gpus[core.slot_job[slot]])))
            slot = pick(core, "sjf", rng)
        seen.append(core.gpu_job.copy())
        core.advance()
    # SJF starts the 4-GPU job first (len 1); the 30-GPU one waits for its GPUs to free.
    assert seen[0][:4].tolist() == [1, 1, 1, 1] and (seen[0][4:] == -1).all()
    started = next(index for index, gpus in enumerate(seen) if (gpus == 0).any())
    assert (seen[started][:30] == 0).all()
    for gpus in seen[started:]:
        assert (gpus[:30] == 0).all()  # the same GPUs every step until it is done
    assert core.finish.min() >= 1 and core.preemptions == 0


def test_baselines_are_seeded_and_summarized() -> None:
    params = {"num_jobs": 60, "max_steps": 200}
    results = {name: run_rltaps_baseline(name, seed=4, **params) for name in RLTAPS_BASELINES}
    for name, result in results.items():
        assert result == run_rltaps_baseline(name, seed=4, **params)
        assert result["policy"] == name and result["num_sequences"] == 1
        assert result["mean_slowdown"] >= 10 / 9  # a job runs at 0.9 of its ideal at best
        assert 0 < result["gpu_utilization"] <= 1
        sequence = result["sequences"][0]
        assert sequence["jobs_arrived"] == 60 and sequence["invalid_assignments"] == 0
    two = run_rltaps_baseline("sjf", seed=4, num_sequences=2, **params)
    assert [s["seed"] for s in two["sequences"]] == [4, 5]
    assert two["mean_reward"] == pytest.approx(np.mean([s["return"] for s in two["sequences"]]))
    table = format_baseline_table(results)
    assert table.splitlines()[0].split("|")[0].strip() == "policy"
    assert [line.split("|")[0].strip() for line in table.splitlines()[2:]] == list(RLTAPS_BASELINES)


def test_unknown_baselines_are_refused() -> None:
    assert parse_baselines("sjf, Tetris") == ["sjf", "tetris"]
    with pytest.raises(ValueError, match="unknown RL-TAPS baseline 'fifo'"):
        parse_baselines("sjf,fifo")
    with pytest.raises(ValueError, match="unknown RL-TAPS baseline"):
        run_rltaps_baseline("packer")
    with pytest.raises(ValueError, match="num_sequences"):
        run_rltaps_baseline("sjf", num_sequences=0)


def test_run_sequence_matches_the_environment_seeded_sequence() -> None:
    from envs.rltaps import RLTapsEnv

    env = RLTapsEnv(num_jobs=30)
    env.reset(seed=9)
    result = run_rltaps_baseline("tetris", seed=9, num_jobs=30)
    # Tetris draws no random numbers, so any generator replays it.
    again = run_sequence(env.config, env.core.jobs, "tetris", np.random.default_rng(0))
    assert again["return"] == pytest.approx(result["sequences"][0]["return"])
