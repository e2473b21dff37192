"""Replays of small explicit traces with hand-derived outcomes: packing (002 Fig. 2),
E_j (002 eq. 2), frozen time, masks, the observation and the fragmentation metric."""

from __future__ import annotations

import numpy as np
import pytest

from envs.sced2 import Sced2Env
from envs.sced2.core import split_observation
from envs.sim import Simulator, SimulatorConfig
from envs.workload import get_catalog

CATALOG = get_catalog("sced2")
PCIE_GBPS, PORT_GBPS = 128.0, 10.0


def job(arrival: float, model: str, gpus: int, duration: float) -> dict:
    return {"arrival": arrival, "model": model, "gpus": gpus, "duration": duration}


def ring_gigabits(model: str, workers: int) -> float:
    """One ring edge's volume: 2 (w-1)/w x gradient MB, in gigabits."""
    return 2 * (workers - 1) / workers * CATALOG[CATALOG.names.index(model)].gradient_mb * 8e-3


def compute(model: str) -> float:
    return CATALOG[CATALOG.names.index(model)].compute_time_s


def occupy(env: Sced2Env, busy: list[int]) -> None:
    """Start the first waiting jobs (1-GPU fillers) on ``busy[s]`` GPUs of each server s."""
    sim = env.core.sim
    fillers = iter(sim.waiting_jobs().tolist())
    for server, count in enumerate(busy):
        for gpu in range(server * 8, server * 8 + count):
            sim.place(next(fillers), [int(env.core.cluster.gpu_group[gpu])], [gpu])


def test_packing_places_as_002_figure_2_describes() -> None:
    # Four 8-GPU servers with 5, 3, 0 and 6 GPUs busy: 3, 5, 8 and 2 free.
    fillers = [job(0, "Transformer", 1, 10_000) for _ in range(14)]
    targets = [job(1, "VGG16", 4, 100), job(1, "VGG16", 10, 100), job(1, "VGG16", 1, 100)]
    env = Sced2Env(servers=4, skip_forced_holds=False, jobs=fillers + targets)
    env.reset(seed=0)
    env.step(env.config.hold_action)  # time runs to the targets' arrival
    occupy(env, [5, 3, 0, 6])

    def free() -> list[int]:
        return env.core.sim.free_gpus.reshape(4, 2).sum(axis=1).tolist()

    assert free() == [3, 5, 8, 2]
    # 4 GPUs: the server with the fewest free GPUs that can hold them all -> server 1.
    _, _, _, _, info = env.step(0)
    assert info["placed"]["servers"] == [1] and free() == [3, 1, 8, 2]
    # 10 GPUs: no server holds them; the emptiest (2) takes 8, then the tightest server
    # that holds the remaining 2 -> server 3.
    _, _, _, _, info = env.step(0)
    assert info["placed"]["servers"] == [2, 3] and free() == [3, 1, 0, 0]
    # 1 GPU: the tightest server with room -> server 1.
    _, _, _, _, info = env.step(0)
    assert info["placed"]["servers"] == [1] and free() == [3, 0, 0, 0]


def test_effectiveness_of_a_job_alone_by_hand() -> None:
    env = Sced2Env(servers=2, jobs=[job(0, "VGG16", 4, 3600)])
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(0)
    # Packing puts the 4 workers in one 4-GPU group: every ring edge moves over PCIe.
    step = compute("VGG16") + ring_gigabits("VGG16", 4) / PCIE_GBPS
    actual = 3600 * step / compute("VGG16")  # the work is 3600 s of compute-only steps
    assert info["placed"]["step_time"] == pytest.approx(step)
    assert info["placed"]["actual"] == pytest.approx(actual)
    # 002's T_ideal is "measured by profiling": the job's time on its best placement, one
    # group, communication included -- this placement. 0.0731 s of compute and 6.64 Gb over
    # 128 Gbps (0.0519 s): 3600 x 0.1250 / 0.0731 = 6155 s, and a job started at once on
    # its best placement is fully effective (a compute-only T_ideal of 3600 s gave 0.5849).
    assert info["placed"]["ideal"] == pytest.approx(actual) == pytest.approx(6155, abs=1)
    assert reward == pytest.approx(1.0)
    assert terminated  # nothing else to decide: the environment ran to the end
    assert info["episode"]["execution_effectiveness"] == pytest.approx(reward)
    assert info["episode"]["avg_jct"] == pytest.approx(actual)


def test_effectiveness_counts_the_wait_and_spreading_slows_a_job() -> None:
    jobs = [
        job(0, "Transformer", 8, 1000),
        job(0, "DeepSpeech", 1, 500),
        job(10, "VGG16", 4, 3600),
    ]
    env = Sced2Env(servers=1, jobs=jobs)
    env.reset(seed=0)
    _, first, _, _, info = env.step(0)  # the 8-GPU Transformer, across both groups
    transformer = compute("Transformer")
    t1 = 1000 * (transformer + ring_gigabits("Transformer", 8) / PCIE_GBPS) / transformer
    # One whole server is the Transformer's best placement, so T_ideal = t1: E = 1.
    assert info["placed"]["ideal"] == pytest.approx(t1)
    assert first == pytest.approx(1.0)
    # Nothing else fits: the environment holds by itself until the Transformer ends.
    assert info["time"] == pytest.approx(t1)
    _, second, _, _, info = env.step(0)  # DeepSpeech (1 GPU, no communication) waited t1
    assert second == pytest.approx(500 / (t1 + 500))
    assert info["placed"]["wait"] == pytest.approx(t1)
    _, third, terminated, _, info = env.step(0)  # VGG16, arrived at 10 s
    assert info["placed"]["wait"] == pytest.approx(t1 - 10)
    # In one group, its best placement: T_ideal = T_actual = 3600 s of compute over PCIe.
    vgg = 3600 * (compute("VGG16") + ring_gigabits("VGG16", 4) / PCIE_GBPS) / compute("VGG16")
    assert third == pytest.approx(vgg / (t1 - 10 + vgg))
    assert terminated
    episode = info["episode"]
    assert episode["return"] == pytest.approx(first + second + third)
    assert episode["execution_effectiveness"] == pytest.approx((first + second + third) / 3)


def test_a_spread_job_pays_the_server_port_and_matches_the_simulator() -> None:
    fillers = [job(0, "Transformer", 1, 10_000) for _ in range(12)]
    env = Sced2Env(servers=2, skip_forced_holds=False, jobs=[*fillers, job(0, "VGG16", 4, 3600)])
    env.reset(seed=0)
    occupy(env, [6, 6])
    _, reward, _, _, info = env.step(0)
    assert info["placed"]["servers"] == [0, 1]
    step = compute("VGG16") + ring_gigabits("VGG16", 4) / PORT_GBPS
    assert info["placed"]["step_time"] == pytest.approx(step)
    # No wait; T_ideal is the time in one group (ring over PCIe), T_actual over the port:
    # E = best step / this step.
    best = compute("VGG16") + ring_gigabits("VGG16", 4) / PCIE_GBPS
    assert reward == pytest.approx(best / step)
    # The profiled step time is the shared simulator's speed model for the job alone.
    sim = env.core.sim
    job_id = info["placed"]["job"]
    groups, gpus = sim.job_placement(job_id)
    alone = Simulator(sim.cluster, sim.workload, SimulatorConfig(interference=False))
    alone.run_until_decision()
    alone.place(job_id, groups, gpus)
    assert 4 / alone.rate[job_id] == pytest.approx(info["placed"]["step_time"])


def test_profiles_go_from_concentrated_to_scattered() -> None:
    env = Sced2Env(servers=15, jobs=[job(0, "VGG16", 8, 3600), job(0, "DeepSpeech", 1, 60)])
    obs, _ = env.reset(seed=0)
    rows = split_observation(obs["observation"], env.config)["jobs"]
    # 8 GPUs: 8, 4, 2 and 1 per server; only the first shape stays inside a server.
    local = compute("VGG16") + ring_gigabits("VGG16", 8) / PCIE_GBPS
    spread = compute("VGG16") + ring_gigabits("VGG16", 8) / PORT_GBPS
    hours = 3600 / compute("VGG16") / 3600
    np.testing.assert_allclose(
        rows[0, :4], np.array([local, spread, spread, spread]) * hours, rtol=1e-6
    )
    assert rows[0, 4] == pytest.approx(1.0)  # 8 GPUs / M
    np.testing.assert_allclose(rows[1, :4], 60 / 3600, rtol=1e-6)  # 1 GPU: no communication
    assert rows[1, 4] == pytest.approx(1 / 8)
    assert (rows[2:] == 0).all()


def test_time_is_frozen_until_hold_and_the_state_follows() -> None:
    jobs = [
        job(0, "Transformer", 2, 7200),
        job(0, "DeepSpeech", 1, 3600),
        job(1800, "ResNet-50", 1, 600),
    ] + [job(3600 * 10, "VGG16", 1, 60)] * 11
    env = Sced2Env(servers=2, window=10, jobs=jobs)
    obs, info = env.reset(seed=0)
    assert info["time"] == 0.0 and info["waiting"] == 2
    assert obs["action_mask"].tolist() == [1, 1] + [0] * 8 + [1]  # hold: wait for 1800 s
    obs, _, _, _, info = env.step(1)
    assert info["time"] == 0.0  # frozen
    parts = split_observation(obs["observation"], env.config)
    # DeepSpeech (1 GPU) went to the tightest server with room: server 0, GPU 0.
    assert parts["gpu"][0, 0] == pytest.approx(1.0) and parts["gpu"].sum() == pytest.approx(1.0)
    assert parts["jobs"][0, 4] == pytest.approx(2 / 8)  # the Transformer moved up to slot 0
    obs, _, _, _, info = env.step(env.config.hold_action)
    assert info["time"] == pytest.approx(1800)  # the next arrival
    parts = split_observation(obs["observation"], env.config)
    assert parts["gpu"][0, 0] == pytest.approx(0.5)  # half an hour left
    assert parts["jobs"][0, 5] == pytest.approx(0.5)  # the Transformer waited 1800 s
    assert parts["jobs"][1, 5] == pytest.approx(0.0)  # ResNet-50 just arrived
    # 0.5 h left on one GPU of 8 and 7 free: frag = 1 - 0.5^2 / (8 x 0.5^2) on server 0.
    assert info["fragmentation"] == pytest.approx((1 - 1 / 8) / 2)


def test_statistics_sketch_the_jobs_beyond_the_window() -> None:
    jobs = [job(0, "VGG16", 8, 36_000)] + [job(0, "DeepSpeech", g, 1800 * g) for g in (1, 2, 4)]
    env = Sced2Env(servers=1, window=1, jobs=jobs)
    env.reset(seed=0)
    obs, _, _, _, info = env.step(0)  # the VGG16 takes the server; the rest wait 10+ h
    assert info["time"] > 36_000  # nothing fits until it ends: the environment held
    stats = split_observation(obs["observation"], env.config)["statistics"]
    assert stats[0] == pytest.approx(2 / 1)  # 2 jobs beyond a window of 1
    assert stats[1] == pytest.approx((2 + 4) / 2 / 8)
    # Mean T_ideal: the 2- and 4-GPU DeepSpeech in one group, ring over PCIe.
    ideal = [
        duration * (compute("DeepSpeech") + ring_gigabits("DeepSpeech", g) / PCIE_GBPS)
        for g, duration in ((2, 3600), (4, 7200))
    ]
    assert stats[2] == pytest.approx(sum(ideal) / compute("DeepSpeech") / 2 / 3600)
    assert stats[3] == pytest.approx(info["time"] / 3600)


def test_masks_hide_exactly_the_jobs_that_do_not_fit() -> None:
    fillers = [job(0, "Transformer", 1, 10_000) for _ in range(13)]
    demands = [1, 4, 2, 8, 3]
    targets = [job(1, "InceptionV3", gpus, 100) for gpus in demands]
    env = Sced2Env(servers=2, window=7, skip_forced_holds=False, jobs=fillers + targets)
    env.reset(seed=0)
    env.step(env.config.hold_action)
    occupy(env, [8, 5])  # 3 GPUs free
    mask = env.core.action_mask()
    assert mask.tolist() == [1, 0, 1, 0, 1, 0, 0, 1]  # fits: 1, 2, 3 GPUs; empty slots; hold
    # A masked choice is taken as hold, with the flag set.
    _, reward, _, _, info = env.step(1)
    assert info["invalid_action"] and reward == 0.0 and "placed" not in info
    assert info["time"] > 1  # time ran on


def test_forced_holds_are_skipped_unless_asked() -> None:
    jobs = [job(0, "VGG16", 8, 1000), job(0, "DeepSpeech", 1, 100)]
    skipping = Sced2Env(servers=1, jobs=jobs)
    skipping.reset(seed=0)
    _, _, _, _, info = skipping.step(0)
    assert info["time"] > 0 and info["action_mask"][0] == 1
    asking = Sced2Env(servers=1, skip_forced_holds=False, jobs=jobs)
    asking.reset(seed=0)
    _, _, _, _, info = asking.step(0)
    assert info["time"] == 0 and info["action_mask"].tolist() == [0] * 10 + [1]


def test_return_over_jobs_is_the_average_execution_effectiveness(small_env: Sced2Env) -> None:
    small_env.reset(seed=4)
    total, done = 0.0, False
    rng = np.random.default_rng(1)
    while not done:
        valid = np.flatnonzero(small_env.core.action_mask())
        _, reward, terminated, truncated, info = small_env.step(rng.choice(valid))
        total += reward
        done = terminated or truncated
    episode = info["episode"]
    assert terminated and episode["jobs_finished"] == 40
    assert total / 40 == pytest.approx(episode["execution_effectiveness"])
    assert 0 < episode["execution_effectiveness"] <= 1
    assert 0 <= episode["fragmentation"] < 1


def test_hold_is_masked_only_when_it_would_stall() -> None:
    env = Sced2Env(servers=1, jobs=[job(0, "VGG16", 1, 60), job(0, "VGG16", 1, 60)])
    obs, _ = env.reset(seed=0)
    # Nothing runs and nothing is left to arrive: holding could never end.
    assert obs["action_mask"].tolist() == [1, 1] + [0] * 8 + [0]
    _, _, _, _, info = env.step(env.config.hold_action)  # masked: changes nothing
    assert info["invalid_action"] and info["time"] == 0 and info["waiting"] == 2
    obs, _, _, _, _ = env.step(0)
    assert obs["action_mask"].tolist() == [1] + [0] * 9 + [1]  # something runs now
