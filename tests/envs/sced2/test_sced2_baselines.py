"""002's baselines (SIF, DSIF, SAF, LRF, SPF, FIFO with packing) on explicit traces."""

from __future__ import annotations

import numpy as np
import pytest

from envs.sced2 import Sced2Env
from envs.sced2.baselines import (
    SCED2_BASELINES,
    run_sced2_baseline,
    simulate_baseline,
    window_choice,
)
from envs.sced2.config import Sced2Config
from envs.sced2.jobs import parse_jobs
from envs.schedulers import make_scheduler


def job(arrival: float, model: str, gpus: int, duration: float) -> dict:
    return {"arrival": arrival, "model": model, "gpus": gpus, "duration": duration}


def replay(policy: str, jobs: list[dict], servers: int) -> tuple[np.ndarray, np.ndarray]:
    """``(first start, finish)`` per job of ``jobs`` run by baseline ``policy``, with the
    servers used as a third array."""
    config = Sced2Config(servers=servers)
    sim, servers_used = simulate_baseline(config, parse_jobs(jobs, config), policy)
    assert np.isfinite(sim.finish_time).all()
    return sim.first_start, sim.finish_time, servers_used


# One 8-GPU server: a blocker runs first; when it ends four jobs wait. Ideal times are
# 002's T_ideal, each job's profiled time on its best placement (one group or one server,
# its ring over PCIe), not its compute time alone.
QUEUE = [
    job(0, "Transformer", 8, 1000),  # 0: the blocker
    job(1, "DeepSpeech", 2, 4000),  # 1: ideal 4143 s, GPUs x ideal 8286
    job(2, "DeepSpeech", 1, 3000),  # 2: ideal 3000 s, GPUs x ideal 3000
    job(3, "VGG16", 8, 1000),  # 3: ideal 1828 s, GPUs x ideal 14624
    job(4, "DeepSpeech", 4, 2500),  # 4: ideal 2634 s, GPUs x ideal 10536
]


@pytest.mark.parametrize(
    ("policy", "started_with_the_free_server"),
    [
        # 002: FIFO "schedules jobs in order": 1 and 2 start, the 8-GPU job 3 does not
        # fit, and job 4 waits behind it.
        ("fifo", [1, 2]),
        ("sif", [3]),  # the shortest ideal time takes the whole server
        ("dsif", [3]),  # ... and gets its best locality, so nothing is held
        ("lrf", [1, 2, 4]),  # fewest GPUs first: 2 (1), 1 (2), 4 (4); 3 is passed over
        ("spf", [1, 2, 4]),  # smallest product: 2, 1, 4
        # Placed times on the empty server are the ideal ones: the VGG16's 1828 s is the
        # shortest, as for SIF (SAF differs from SIF only where a job would land worse
        # than on its best placement).
        ("saf", [3]),
    ],
)
def test_who_starts_when_the_server_frees(
    policy: str, started_with_the_free_server: list[int]
) -> None:
    start, _, _ = replay(policy, QUEUE, servers=1)
    freed = start[1:].min()
    assert np.flatnonzero(start == freed).tolist() == started_with_the_free_server


def test_ideal_time_is_the_profiled_time_on_the_best_placement() -> None:
    config = Sced2Config(servers=1)
    sim, _ = simulate_baseline(config, parse_jobs(QUEUE, config), "sif")
    # Every job of QUEUE ran on its best placement, so its run time is its T_ideal.
    np.testing.assert_allclose(sim.run_time, sim.ideal_duration)
    np.testing.assert_allclose(
        sim.ideal_duration, [1196, 4143, 3000, 1828, 2634], atol=1, err_msg="T_ideal (s)"
    )


@pytest.mark.parametrize(
    ("backfill", "starts"),
    [
        # Strict (002's FIFO): 1 and 2 at 1196 s (blocker 0's end); 3 at 5339 s, when job 1
        # frees its GPUs and the server is whole again; 4 after 3, at 7167 s.
        (None, [0, 1196, 1196, 5339, 7167]),
        (False, [0, 1196, 1196, 5339, 7167]),
        # FIFO with backfilling: 4 starts with 1 and 2, and 3 still at 5339 s.
        (True, [0, 1196, 1196, 5339, 1196]),
    ],
)
def test_fifo_does_not_backfill_unless_asked(backfill: bool | None, starts: list[int]) -> None:
    config = Sced2Config(servers=1)
    sim, _ = simulate_baseline(config, parse_jobs(QUEUE, config), "fifo", backfill)
    np.testing.assert_allclose(sim.first_start, starts, atol=1)
    result = run_sced2_baseline("fifo", servers=1, jobs=QUEUE, backfill=backfill)
    assert result["backfill"] is (backfill is True)
    # The environment's FIFO (the agent's view, J = 10 >= the queue) plays the same.
    env = Sced2Env(servers=1, jobs=QUEUE)
    env.reset(seed=0)
    done, held_with_a_fit = False, False
    while not done:
        action = window_choice(env.core, "fifo", backfill)
        held_with_a_fit |= action == env.config.hold_action and bool(env.core.feasible().any())
        *_, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert held_with_a_fit is (backfill is not True)
    assert info["episode"]["avg_jct"] == pytest.approx(result["avg_jct"])
    with pytest.raises(ValueError, match="backfill must be true, false or null"):
        run_sced2_baseline("fifo", servers=1, jobs=QUEUE, backfill="no")


# Two 8-GPU servers, 6 GPUs busy on each until 5935 s and 10683 s (packing puts the two
# blockers on different servers). At 10 s a short-but-sensitive 4-GPU VGG16 (ideal 3420 s
# in one group, 20170 s spread over the two servers' 2 + 2 free GPUs) and a 1-GPU
# DeepSpeech (4000 s) arrive.
SPREAD = [
    job(0, "Transformer", 6, 5000),
    job(0, "Transformer", 6, 9000),
    job(10, "VGG16", 4, 2000),  # 2
    job(10, "DeepSpeech", 1, 4000),  # 3
]


@pytest.mark.parametrize(
    ("policy", "first", "vgg_after", "vgg_servers"),
    [
        ("sif", 2, None, 2),  # shortest ideal: the VGG16 goes first, spread
        ("fifo", 2, None, 2),
        # The oracle sees 20170 s spread vs 4000 s; the VGG16 starts, spread, when the
        # DeepSpeech ends.
        ("saf", 3, 3, 2),
        ("lrf", 3, 3, 2),
        ("spf", 3, 3, 2),  # 4000 < 4 x 3420
        # Held at 10 s and when the DeepSpeech ends, placed in one server when blocker 0
        # ends (the third decision, within DSIF's 3 delays).
        ("dsif", 3, 0, 1),
    ],
)
def test_locality_shapes_the_choice(
    policy: str, first: int, vgg_after: int | None, vgg_servers: int
) -> None:
    start, finish, servers_used = replay(policy, SPREAD, servers=2)
    assert start[first] == pytest.approx(10)
    assert servers_used[2] == vgg_servers
    expected = 10 if vgg_after is None else finish[vgg_after]
    assert start[2] == pytest.approx(expected)


# SPREAD, with four 8-GPU jobs arriving at 100-400 s that cannot start before 9000 s: each
# arrival is one more decision at which the VGG16 is held.
IMPATIENT = [
    *SPREAD[:3],
    *(job(arrival, "Transformer", 8, 50_000) for arrival in (100, 200, 300, 400)),
]


@pytest.mark.parametrize(
    ("policy", "vgg_after", "vgg_servers"),
    [
        # Held at 10, 100 and 200 s: 002's three delays spent, placed spread at 300 s.
        ("dsif", None, 2),
        # Held at all five decisions, then one server of its own when blocker 0 ends.
        ("dsif-patient", 0, 1),
        # The other patient orderings rank the VGG16 first too (earliest, fewest GPUs,
        # smallest GPUs x ideal time, shortest estimate, smallest dominant share): the
        # same five holds, the same server.
        ("fifo-patient", 0, 1),
        ("lrf-patient", 0, 1),
        ("spf-patient", 0, 1),
        ("saf-patient", 0, 1),
        ("drf-patient", 0, 1),
    ],
)
def test_the_patient_dsif_outwaits_the_three_delays(
    policy: str, vgg_after: int | None, vgg_servers: int
) -> None:
    # The product's scheduler on 002's cluster (the patient orderings are not 002's baselines).
    config = Sced2Config(servers=2)
    scheduler = make_scheduler(f"{policy}+packing")
    sim, servers = simulate_baseline(config, parse_jobs(IMPATIENT, config), scheduler)
    expected = 300 if vgg_after is None else sim.finish_time[vgg_after]
    assert sim.first_start[2] == pytest.approx(expected)
    assert servers[2] == vgg_servers


def test_run_sced2_baseline_summarizes_seeded_traces() -> None:
    params = {
        "servers": 3,
        "num_jobs": 60,
        "interval_scale": 0.2,
        "workload_options": {"multi_gpu_sizes": (2, 4, 8), "multi_gpu_weights": (1, 1, 1)},
    }
    results = {
        policy: run_sced2_baseline(policy, seed=3, num_traces=2, **params)
        for policy in SCED2_BASELINES
    }
    for policy, result in results.items():
        assert result["policy"] == policy and result["num_traces"] == 2
        assert [trace["seed"] for trace in result["traces"]] == [3, 4]
        assert all(trace["jobs_finished"] == 60 for trace in result["traces"])
        assert 0 < result["execution_effectiveness"] <= 1
        assert 0 <= result["fragmentation"] < 1 and 0 < result["gpu_utilization"] <= 1
        mean = np.mean([trace["avg_jct"] for trace in result["traces"]])
        assert result["avg_jct"] == pytest.approx(mean)
    assert run_sced2_baseline("sif+packing", seed=3, num_traces=2, **params) == results["sif"]
    # Trace i is what the environment draws on reset(seed = seed + i): an agent that
    # behaves like FIFO and sees the whole queue gets FIFO's numbers.
    env = Sced2Env(window=60, **params)
    env.reset(seed=4)
    done = False
    while not done:
        _, _, done, _, info = env.step(env.baseline_action("fifo"))
    assert info["episode"]["avg_jct"] == pytest.approx(results["fifo"]["traces"][1]["avg_jct"])


def test_window_baseline_equals_the_scheduler_when_the_queue_fits_the_window() -> None:
    for policy in ("fifo", "sif", "lrf", "spf", "saf"):
        env = Sced2Env(servers=2, jobs=SPREAD)
        env.reset(seed=0)
        done = False
        while not done:
            _, _, done, _, info = env.step(env.baseline_action(policy))
        expected = run_sced2_baseline(policy, servers=2, jobs=SPREAD)
        assert info["episode"]["avg_jct"] == pytest.approx(expected["avg_jct"])
        assert info["episode"]["execution_effectiveness"] == pytest.approx(
            expected["execution_effectiveness"]
        )


def test_bad_baseline_arguments_raise() -> None:
    with pytest.raises(ValueError, match="unknown SCED2 baseline 'las'"):
        run_sced2_baseline("las")
    with pytest.raises(ValueError, match="num_traces must be an integer >= 1"):
        run_sced2_baseline("sif", num_traces=0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        run_sced2_baseline("sif", seed=-1)
    with pytest.raises(ValueError, match="workload must be one of"):
        run_sced2_baseline("sif", workload="deepshare")
