"""000's baselines (LAS, SRTF, and FIFO) on explicit job sets with hand-derived JCTs."""

from __future__ import annotations

import numpy as np
import pytest

from envs.contention.baselines import (
    CONTENTION_BASELINES,
    RoundScheduler,
    run_contention_baseline,
)
from envs.contention.config import ContentionConfig
from envs.contention.core import contention_cluster, simulator_config
from envs.contention.jobs import parse_jobs
from envs.contention.placement import PlacementOptions
from envs.sim import Simulator

from .conftest import job

# One node of 8 GPUs, three whole-node jobs of 2 h, 1 h and 30 min submitted together
# (GraphSage inside one node: no port traffic, so they run exactly their duration).
ONE_NODE = {"nodes": 1, "gpu_choices": (8,)}
THREE = [job("GNN", 8, 7200), job("GNN", 8, 3600), job("GNN", 8, 1800)]


def finishes(
    policy: str, jobs: list[dict], placement: str = "spread", **params: object
) -> Simulator:
    """The finished simulator of baseline ``policy`` on ``jobs``."""
    config = ContentionConfig(**params)  # type: ignore[arg-type]
    cluster = contention_cluster(config.nodes, config.gpus_per_node, config.link_gbps)
    sim = Simulator(cluster, parse_jobs(jobs, config, cluster), simulator_config(config))
    sim.run(RoundScheduler(policy, PlacementOptions.of(config), placement))
    return sim


@pytest.mark.parametrize(
    ("policy", "finish"),
    [
        ("fifo", [7200, 10800, 12600]),  # in order, no preemption
        ("srtf", [12600, 5400, 1800]),  # shortest remaining first
        # Least attained service: 300 s round-robin slices while all three are equal;
        # C (6 slices) ends at 5400, B (12) at 9000, A at 12600.
        # (17 + 11 preemptions: every slice boundary but the two completions).
        ("las", [12600, 9000, 5400]),
    ],
)
def test_finish_times_by_hand(policy: str, finish: list[float]) -> None:
    sim = finishes(policy, THREE, **ONE_NODE)
    np.testing.assert_allclose(sim.finish_time, finish)
    result = run_contention_baseline(policy, jobs=THREE, **ONE_NODE)
    assert result["avg_jct"] == pytest.approx(np.mean(finish))
    assert result["gpu_utilization"] == pytest.approx(1.0)
    assert result["cs_histogram"]["1-1.01"] == 3 and result["avg_contention"] == 1.0
    assert result["preemptions"] == {"fifo": 0, "srtf": 0, "las": 28}[policy]


def test_srtf_ranks_by_remaining_time_alone_not_by_compute_time() -> None:
    # 000 sizes a job by its time alone (compute + communication). MoE communicates most
    # of its step (000 Table I: comm/comp 13.79), GraphSage little, so the simulator's
    # compute-only estimate calls the 1.5-h MoE job the shorter one.
    jobs = [job("MoE", 8, 5400), job("GNN", 8, 3600)]
    sim = finishes("srtf", jobs, **ONE_NODE)
    assert sim.ideal_duration[0] < sim.ideal_duration[1]
    # SRTF: GNN (1 h left) first, 0-3600; MoE (1.5 h) then, 3600-9000. Ranked by compute
    # time, MoE would run 0-5400 and GNN 5400-9000.
    np.testing.assert_allclose(sim.finish_time, [9000, 3600])
    assert sim.preemptions.sum() == 0


def test_srtf_is_fifo_when_every_job_has_the_same_time_alone() -> None:
    # 000's sets: every job one hour alone, all submitted together. SRTF's keys tie at the
    # start (ties go by arrival, then index: FIFO's order) and a started job then has
    # less left than any waiting one, so nothing is preempted: FIFO's schedule, 1 h each.
    jobs = [job("GNN", 8), job("FSDP", 8), job("MoE", 8)]
    sim = finishes("srtf", jobs, **ONE_NODE)
    # Compute-only keys would differ (GNN's longest), and serve MoE, FSDP, GNN.
    assert sim.ideal_duration[2] < sim.ideal_duration[1] < sim.ideal_duration[0]
    np.testing.assert_allclose(sim.finish_time, [3600, 7200, 10800])
    assert sim.preemptions.sum() == 0
    # The same on generated sets, whose sizing leaves last-bit differences between equal
    # times alone: SRTF's keys are rounded so that those still tie.
    params = {"num_jobs": 24, "gpu_choices": (1, 2, 4, 8), "job_hours": 0.5}
    srtf = run_contention_baseline("srtf", seed=3, num_sets=3, **params)
    fifo = run_contention_baseline("fifo", seed=3, num_sets=3, **params)
    assert srtf["preemptions"] == 0
    assert [s["avg_jct"] for s in srtf["sets"]] == [s["avg_jct"] for s in fifo["sets"]]


def test_las_shares_the_gpus_among_equal_jobs_and_loses_to_fifo() -> None:
    # Why LAS trails FIFO on 000's sets (every job 1 h alone, all at once), in small:
    # three 1-h whole-node jobs. FIFO ends them at 1, 2 and 3 h (avg 2 h). LAS gives
    # 300-s turns while their service is equal: 12 turns each, A B C A B C ..., so A's
    # last turn is the 34th (ends 10200), B's the 35th, C's the 36th: avg 10500 s, 46%
    # above FIFO, with 11 preemptions per job (every turn but its last).
    jobs = [job("GNN", 8), job("GNN", 8), job("GNN", 8)]
    np.testing.assert_allclose(finishes("fifo", jobs, **ONE_NODE).finish_time, [3600, 7200, 10800])
    las = finishes("las", jobs, **ONE_NODE)
    np.testing.assert_allclose(las.finish_time, [10200, 10500, 10800])
    assert las.preemptions.tolist() == [11, 11, 11]


def first_placements(jobs: list[dict], placement: str) -> list[list[int]]:
    """Nodes of each job after the first decision of FIFO with ``placement``."""
    config = ContentionConfig()
    cluster = contention_cluster(4, 8, 40.0)
    sim = Simulator(cluster, parse_jobs(jobs, config, cluster), simulator_config(config))
    sim.run_until_decision()
    RoundScheduler("fifo", PlacementOptions.of(config), placement).schedule(sim)
    server = cluster.gpu_server
    return [np.unique(server[sim.job_placement(j)[1]]).tolist() for j in range(len(jobs))]


def test_spread_follows_000s_reference_placement_and_pack_is_the_opposite() -> None:
    jobs = [job("FSDP", 8), job("MoE", 8), job("IMG", 1)]
    # spread: as many nodes as the shapes allow (2 GPUs on each of 4 nodes), first fit;
    # pack: as few nodes as possible, the fullest that fit.
    assert first_placements(jobs, "spread") == [[0, 1, 2, 3], [0, 1, 2, 3], [0]]
    assert first_placements(jobs, "pack") == [[0], [1], [2]]  # nodes 0 and 1 are full
    result_spread = run_contention_baseline("fifo", jobs=jobs[:2])
    result_pack = run_contention_baseline("fifo", jobs=jobs[:2], placement="pack")
    assert result_spread["avg_contention"] > 1.05  # both rings share every port
    assert result_pack["avg_contention"] == pytest.approx(1.0)
    assert result_pack["avg_jct"] == pytest.approx(3600)
    assert result_spread["avg_jct"] > 3600


def test_run_contention_baseline_summarizes_seeded_sets() -> None:
    params = {"num_jobs": 24, "gpu_choices": (1, 2, 4, 8), "job_hours": 0.5}
    for policy in CONTENTION_BASELINES:
        result = run_contention_baseline(policy, seed=5, num_sets=2, mix="heavy", **params)
        assert result["policy"] == policy and result["num_sets"] == 2
        assert [s["seed"] for s in result["sets"]] == [5, 6]
        assert result["truncated_sets"] == 0
        assert all(s["jobs_finished"] == 24 for s in result["sets"])
        assert result["avg_jct"] == pytest.approx(np.mean([s["avg_jct"] for s in result["sets"]]))
        assert result["p90_jct"] >= result["avg_jct"] * 0.5
        assert sum(result["cs_histogram"].values()) == 48
        assert 0 < result["gpu_utilization"] <= 1 and result["avg_contention"] >= 1
        assert result["preemptive"] == (policy != "fifo")


def test_bad_baseline_arguments_raise() -> None:
    with pytest.raises(ValueError, match="unknown contention baseline 'sjf'"):
        run_contention_baseline("sjf")
    with pytest.raises(ValueError, match="num_sets must be an integer >= 1"):
        run_contention_baseline("las", num_sets=0)
    with pytest.raises(ValueError, match="placement must be one of spread, pack"):
        run_contention_baseline("las", placement="random", num_jobs=4)
    with pytest.raises(ValueError, match="unknown contention parameter"):
        run_contention_baseline("las", round_seconds=60)
