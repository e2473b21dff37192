"""Replays of small explicit job sets with hand-derived outcomes: contention sensitivity
from the simulator's bandwidth sharing (000 eq. 1, Fig. 1), the state of 000 Fig. 2, the
masks, rounds and eq. 2's reward, RL-Hybrid's fallback and CS preemption."""

from __future__ import annotations

import numpy as np
import pytest

from envs.contention import BRANCHES, ContentionEnv
from envs.workload import ModelProfile, get_catalog

from .conftest import job

CATALOG = get_catalog("deepshare")
MODELS = CATALOG.names
PORT_GBPS = 40.0


def profile(model: str) -> ModelProfile:
    return CATALOG[MODELS.index(model)]


def comm_alone(model: str, workers: int, gbps: float = PORT_GBPS) -> float:
    """Seconds of the slowest cross-node pair at ``gbps`` (000 Table I's patterns)."""
    gradient_gb = profile(model).gradient_mb * 8e-3
    if profile(model).collective == "all-to-all":
        return 2 * gradient_gb / workers / gbps  # every pair: 2 G / w
    return 2 * (workers - 1) / workers * gradient_gb / gbps  # one ring edge


def duty(model: str, workers: int = 8, gbps: float = PORT_GBPS) -> float:
    """Share of ``model``'s ideal step spent communicating across the node ports."""
    alone = comm_alone(model, workers, gbps)
    return alone / (profile(model).compute_time_s + alone)


def equal_cs(model: str, workers: int, sharing: int) -> float:
    """CS when ``sharing`` jobs split the node ports equally (003): step now / alone."""
    compute = profile(model).compute_time_s
    alone = comm_alone(model, workers)
    return (compute + sharing * alone) / (compute + alone)


def traffic_cs(model: str, partner_duties: list[float], workers: int = 8, **kw: float) -> float:
    """CS under traffic-aware sharing: the ports give ``1 / (1 + sum of the partners' duty
    cycles)`` of their bandwidth, so ``(comp + comm (1 + sum)) / (comp + comm)``."""
    return 1.0 + duty(model, workers, **kw) * sum(partner_duties)


def co_locate(
    target: str,
    other: str,
    other_nodes: list[int],
    gbps: float = PORT_GBPS,
    other_gpus: int = 8,
    sharing: str = "traffic",
) -> float:
    """CS of an 8-GPU ``target`` on nodes 0 and 1 (4 GPUs each) next to ``other``."""
    env = ContentionEnv(
        link_gbps=gbps, link_sharing=sharing, jobs=[job(target, 8), job(other, other_gpus)]
    )
    env.reset(seed=0)
    env.step(env.action_for(0, [0, 1]))
    _, _, _, _, info = env.step(env.action_for(1, other_nodes))
    assert not info["invalid_action"]
    return info["cs"]["0"]


def test_the_catalog_reproduces_table_1_comm_comp_on_the_reference_placement() -> None:
    # 8 workers over 2 nodes on 40 Gb/s InfiniBand: comm / comp = Table I's ratio.
    for model, ratio in {"GNN": 0.57, "IMG": 2.43, "FSDP": 7.32, "MoE": 13.79}.items():
        assert duty(model) == pytest.approx(ratio / (1 + ratio))


def test_a_pair_sharing_node_ports_matches_the_bandwidth_sharing_formula() -> None:
    env = ContentionEnv(jobs=[job("FSDP", 8), job("MoE", 8)])
    env.reset(seed=0)
    _, _, _, _, info = env.step(env.action_for(0, [0, 1]))
    assert info["placed"]["cs"] == pytest.approx(1.0)  # alone: ideal throughput
    _, _, _, _, info = env.step(env.action_for(1, [0, 1]))
    # Both cross the ports of nodes 0 and 1; each sees 40 / (1 + the other's duty cycle).
    assert info["cs"]["0"] == pytest.approx(traffic_cs("FSDP", [duty("MoE")]))
    assert info["cs"]["1"] == pytest.approx(traffic_cs("MoE", [duty("FSDP")]))
    # 1 + 7.32/8.32 x 13.79/14.79 for both: a pair's CS - 1 is the product of duties.
    assert info["cs"]["0"] == pytest.approx(1.820, abs=1e-3)
    # 003's equal split by job count: half the port each, 1 + duty.
    env = ContentionEnv(link_sharing="equal", jobs=[job("FSDP", 8), job("MoE", 8)])
    env.reset(seed=0)
    env.step(env.action_for(0, [0, 1]))
    _, _, _, _, info = env.step(env.action_for(1, [0, 1]))
    assert info["cs"]["0"] == pytest.approx(equal_cs("FSDP", 8, 2)) == pytest.approx(1.880, 1e-3)
    assert info["cs"]["1"] == pytest.approx(equal_cs("MoE", 8, 2)) == pytest.approx(1.932, 1e-3)
    # Three jobs on the same ports: the partners' duty cycles add up (2-worker partners).
    env = ContentionEnv(jobs=[job("FSDP", 8), job("MoE", 2), job("LM", 2)])
    env.reset(seed=0)
    for index in (0, 1, 2):
        env.step(env.action_for(index, [0, 1]))
    partners = [duty("MoE", 2), duty("LM", 2)]
    assert env.core.sim.contention[0] == pytest.approx(traffic_cs("FSDP", partners))


def test_avg_contention_is_each_jobs_time_weighted_cs() -> None:
    """FSDP and a MoE twice as long share nodes 0 and 1 from t = 0: both run at the pair's
    CS c (1 + the product of their duties) until FSDP ends at F_A; MoE then runs alone
    (CS 1) until F_B. Per job, CS weighted by time: c for FSDP, (c F_A + (F_B - F_A)) / F_B
    for MoE; the episode reports their mean."""
    env = ContentionEnv(jobs=[job("FSDP", 8), job("MoE", 8, 7200)])
    env.reset(seed=0)
    env.step(env.action_for(0, [0, 1]))
    observation, _, terminated, truncated, _ = env.step(env.action_for(1, [0, 1]))
    while not (terminated or truncated):
        wait = int(np.flatnonzero(observation["action_mask"])[-1])
        observation, _, terminated, truncated, info = env.step(wait)
    pair = traffic_cs("FSDP", [duty("MoE")])
    first, last = env.core.sim.finish_time
    assert 0 < first < last
    moe = (pair * first + (last - first)) / last
    assert info["episode"]["avg_contention"] == pytest.approx((pair + moe) / 2, rel=1e-9)


def test_contention_sensitivity_depends_on_the_model_and_the_co_location() -> None:
    # 000 Fig. 1: the more of its step a job communicates, the more a partner costs it.
    cs = {model: co_locate(model, "FSDP", [0, 1]) for model in MODELS}
    for model in MODELS:
        assert cs[model] == pytest.approx(traffic_cs(model, [duty("FSDP")]))
    assert cs["GNN"] < cs["LM"] < cs["IMG"] < cs["FSDP"] < cs["DLRM"] < cs["MoE"]
    # GNN's CS barely varies with the partner; FSDP's and MoE's vary widely.
    spread = {
        model: max(co_locate(model, other, [0, 1]) for other in MODELS)
        - min(co_locate(model, other, [0, 1]) for other in MODELS)
        for model in ("GNN", "FSDP", "MoE")
    }
    assert spread["GNN"] < 0.25 < spread["FSDP"] < spread["MoE"]
    # Where the co-located job runs matters: on other nodes, or inside one node (no
    # traffic on the ports), it costs nothing.
    assert co_locate("FSDP", "MoE", [2, 3]) == pytest.approx(1.0)
    assert co_locate("FSDP", "MoE", [0], other_gpus=4) == pytest.approx(1.0)
    # On 000's 10 Gb Ethernet communication takes 4x longer: more contention.
    slow = co_locate("FSDP", "MoE", [0, 1], gbps=10.0)
    assert slow == pytest.approx(traffic_cs("FSDP", [duty("MoE", gbps=10.0)], gbps=10.0))
    assert slow == pytest.approx(1.950, abs=1e-3) and slow > co_locate("FSDP", "MoE", [0, 1])


def test_co_locating_fsdp_with_moe_hurts_more_than_with_img_or_gnn() -> None:
    # 000 Fig. 1: FSDP next to MoE up to 1.96, next to MobileNetV3 at most 1.35.
    with_moe = co_locate("FSDP", "MoE", [0, 1])
    assert with_moe > co_locate("FSDP", "IMG", [0, 1]) + 0.1
    assert with_moe > co_locate("FSDP", "GNN", [0, 1]) + 0.1
    # Equal sharing by job count cannot tell the partners apart.
    assert co_locate("FSDP", "MoE", [0, 1], sharing="equal") == pytest.approx(
        co_locate("FSDP", "GNN", [0, 1], sharing="equal")
    )


def test_state_encodes_placed_jobs_and_candidate_shapes_as_000_figure_2() -> None:
    jobs = [job("FSDP", 8), job("GNN", 2), job("MoE", 4), job("IMG", 2), job("LM", 32)]
    env = ContentionEnv(gpu_choices=(1, 2, 4, 8, 16, 32), jobs=jobs)
    obs, info = env.reset(seed=0)
    # Candidates: the first job of each demand, in queue order; IMG (2 GPUs) is not one.
    assert info["candidates"] == [0, 1, 2, 4]

    def code(model: str, demand: int) -> float:
        return (MODELS.index(model) * 6 + [1, 2, 4, 8, 16, 32].index(demand) + 1) / 36

    right = obs["state"][:, 8:]
    expected = np.zeros((4, 8), dtype=np.float32)
    # Cell (i, j - 1): j GPUs on each of 2^i nodes.
    for row, column, value in [
        (0, 7, code("FSDP", 8)),
        (1, 3, code("FSDP", 8)),
        (2, 1, code("FSDP", 8)),
        (0, 1, code("GNN", 2)),
        (1, 0, code("GNN", 2)),
        (0, 3, code("MoE", 4)),
        (1, 1, code("MoE", 4)),
        (2, 0, code("MoE", 4)),
        (2, 7, code("LM", 32)),
    ]:
        expected[row, column] = value
    np.testing.assert_allclose(right, expected)
    assert (obs["state"][:, :8] == 0).all()  # nothing placed yet
    obs, _, _, _, _ = env.step(env.action_for(0, [1, 3]))  # FSDP: 4 GPUs on nodes 1 and 3
    left = obs["state"][:, :8]
    np.testing.assert_allclose(left[[1, 3], :4], code("FSDP", 8))
    assert (left[[0, 2]] == 0).all() and (left[[1, 3], 4:] == 0).all()
    assert obs["state"][0, 8 + 1] == pytest.approx(code("GNN", 2))
    # The 2-GPU slot now shows GNN still; IMG becomes a candidate only after GNN starts.
    env.step(env.action_for(1, [0]))
    assert 3 in env.core.candidates().tolist()
    bandwidth = ContentionEnv(profile="bandwidth", jobs=jobs)
    obs, _ = bandwidth.reset(seed=0)
    assert obs["state"][0, 8 + 7] == pytest.approx(2672.40 / 2672.40)  # FSDP, 8 GPUs, 1 node
    assert obs["state"][0, 8 + 1] == pytest.approx(24.63 / 2672.40)  # GNN


def test_an_action_slot_is_a_demand_class_whatever_the_queue_order() -> None:
    # 000 §IV: an action for "job type 1" starts the job encoded in that type's cells. A
    # 4-GPU IMG and an 8-GPU MoE, in either queue order, give the same state and mask, so
    # each action must start the same job: slot 2 (4 GPUs) IMG, slot 3 (8 GPUs) MoE.
    gpus = {"IMG": 4, "MoE": 8}
    states = []
    for order in (("IMG", "MoE"), ("MoE", "IMG")):
        jobs = [job(model, gpus[model]) for model in order]
        ids = {model: order.index(model) for model in order}
        obs, _ = ContentionEnv(jobs=jobs).reset(seed=0)
        states.append(obs["state"])
        # Empty 4 x 8 cluster: 4 GPUs (4, 2 or 1 per node) and 8 GPUs (8, 4 or 2 per node)
        # fit on all 11 subsets; demands 1, 2, 16 and 32 have no candidate.
        assert np.flatnonzero(obs["action_mask"]).tolist() == [*range(22, 44), 66]
        for slot, model in ((2, "IMG"), (3, "MoE")):
            env = ContentionEnv(jobs=jobs)
            env.reset(seed=0)
            assert env.core.slot_jobs().tolist() == [-1, -1, ids["IMG"], ids["MoE"], -1, -1]
            assert env.action_for(ids[model], [0, 1]) == slot * 11 + 4
            _, _, _, _, info = env.step(slot * 11 + 4)  # subset 4: nodes [0, 1]
            placed = info["placed"]
            assert (placed["job"], placed["model"], placed["gpus"]) == (
                ids[model],
                model,
                gpus[model],
            )
            assert placed["nodes"] == [0, 1] and placed["gpus_per_node"] == gpus[model] // 2
        # Slot 0 (1 GPU) has no candidate: masked, taken as "do nothing".
        env = ContentionEnv(jobs=jobs)
        env.reset(seed=0)
        _, _, _, _, info = env.step(0)
        assert info["invalid_action"] and "placed" not in info and info["running"] == 0
    np.testing.assert_array_equal(states[0], states[1])


def test_fewer_candidates_than_demands_mask_the_demands_not_reached() -> None:
    # K = 2: the 8-GPU LM and the 1-GPU GNN are the candidates; the 4-GPU IMG waits behind
    # them, so its slot is masked though it would fit. Slots stay one per demand: 6 x 11 + 1.
    jobs = [job("LM", 8), job("GNN", 1), job("IMG", 4)]
    env = ContentionEnv(candidates=2, jobs=jobs)
    assert env.action_space.n == 67
    obs, info = env.reset(seed=0)
    assert info["candidates"] == [0, 1]
    assert env.core.slot_jobs().tolist() == [1, -1, -1, 0, -1, -1]
    # 1 GPU fits only on one node (4 subsets); 8 GPUs on all 11.
    assert np.flatnonzero(obs["action_mask"]).tolist() == [0, 1, 2, 3, *range(33, 44), 66]
    _, _, _, _, info = env.step(3 * 11 + 10)  # slot 3 (8 GPUs) on all four nodes
    assert info["placed"]["job"] == 0 and info["placed"]["gpus_per_node"] == 2
    assert env.core.slot_jobs().tolist() == [1, -1, 2, -1, -1, -1]  # IMG is reached now


def test_masks_hide_exactly_the_options_that_do_not_fit() -> None:
    jobs = [job("LM", 8), job("LM", 4), job("IMG", 1), job("FSDP", 16), job("DLRM", 2)]
    env = ContentionEnv(gpu_choices=(1, 2, 4, 8, 16), jobs=jobs)
    env.reset(seed=0)
    env.step(env.action_for(0, [0]))  # node 0 full
    env.step(env.action_for(1, [1, 2]))  # nodes 1 and 2: 6 free each; node 3: 8 free
    mask = env.core.action_mask()
    subsets = env.core.options.subsets
    candidates = env.core.candidates().tolist()
    assert candidates == [2, 3, 4]
    # One slot per demand (1, 2, 4, 8, 16 GPUs): IMG, DLRM, none, none, FSDP.
    assert env.core.slot_jobs().tolist() == [2, 4, -1, -1, 3]
    per_slot = mask[:-1].reshape(5, 11)
    free = {0: 0, 1: 6, 2: 6, 3: 8}
    for slot, (gpus, row) in enumerate(zip([1, 2, 4, 8, 16], per_slot, strict=True)):
        waits = slot in (0, 1, 4)
        for subset, allowed in zip(subsets, row, strict=True):
            share, rest = divmod(gpus, len(subset))
            fits = rest == 0 and 0 < share <= 8 and all(free[n] >= share for n in subset)
            assert bool(allowed) == (waits and fits), (slot, subset)
    # No 4- or 8-GPU job waits: their slots are masked though 4 and 8 GPUs would fit.
    assert not per_slot[2:4].any()
    assert mask[-1] == 1  # do nothing is always allowed
    # 16 GPUs fit nowhere: 8 on 2 nodes needs two empty nodes, 4 on 4 nodes needs node 0.
    assert not per_slot[4].any()


def test_a_round_pays_000_equation_2() -> None:
    env = ContentionEnv(jobs=[job("FSDP", 8), job("MoE", 8), job("GNN", 1, arrival=900)])
    env.reset(seed=0)
    _, first, _, _, _ = env.step(env.action_for(0, [0, 1]))
    _, second, _, _, _ = env.step(env.action_for(1, [0, 1]))
    assert first == second == 0.0  # placing steps
    _, reward, _, _, info = env.step(env.config.nothing_action)
    # Nothing waits until the GNN arrives at 900 s (rounds of 300 s with an empty queue
    # bring no decision): 900 s of both jobs at their CS, 16 of 32 GPUs busy.
    assert info["time"] == pytest.approx(900)
    contention = (traffic_cs("FSDP", [duty("MoE")]) + traffic_cs("MoE", [duty("FSDP")])) / 2
    assert info["round"]["contention"] == pytest.approx(contention)
    assert info["round"]["utilization"] == pytest.approx(0.5)
    assert reward == pytest.approx(-0.4 * contention + 0.6 * 0.5)
    degradation = ContentionEnv(
        contention_term="degradation",
        w1=0.7,
        jobs=[job("FSDP", 8), job("MoE", 8), job("GNN", 1, 900)],
    )
    degradation.reset(seed=0)
    degradation.step(degradation.action_for(0, [0, 1]))
    degradation.step(degradation.action_for(1, [0, 1]))
    _, reward, _, _, _ = degradation.step(degradation.config.nothing_action)
    loss = np.mean(
        [1 - 1 / traffic_cs("FSDP", [duty("MoE")]), 1 - 1 / traffic_cs("MoE", [duty("FSDP")])]
    )
    assert reward == pytest.approx(-0.7 * loss + 0.3 * 0.5)


@pytest.mark.parametrize(("branch", "w1"), [("A", 0.3), ("C", 0.5), ("E", 0.7)])
def test_each_branch_weighs_the_round_reward_by_its_w1(branch: str, w1: float) -> None:
    # 000 §VI: branch A..E weighs contention by W1 = 0.3..0.7 and utilization by 1 - W1.
    env = ContentionEnv(
        w1=BRANCHES[branch], jobs=[job("FSDP", 8), job("MoE", 8), job("GNN", 1, 900)]
    )
    env.reset(seed=0)
    env.step(env.action_for(0, [0, 1]))
    env.step(env.action_for(1, [0, 1]))
    _, reward, _, _, _ = env.step(env.config.nothing_action)
    contention = (traffic_cs("FSDP", [duty("MoE")]) + traffic_cs("MoE", [duty("FSDP")])) / 2
    assert reward == pytest.approx(-w1 * contention + (1 - w1) * 0.5)


def test_rl_base_does_nothing_and_rl_hybrid_falls_back_to_greedy() -> None:
    jobs = [job("FSDP", 8), job("IMG", 4), job("GNN", 1, arrival=600)]
    base = ContentionEnv(gpu_choices=(1, 4, 8), jobs=jobs)
    base.reset(seed=0)
    _, _, _, _, info = base.step(base.config.nothing_action)
    assert info["time"] == pytest.approx(300) and info["running"] == 0  # a lost round
    hybrid = ContentionEnv(gpu_choices=(1, 4, 8), mode="hybrid", jobs=jobs)
    hybrid.reset(seed=0)
    _, reward, _, _, info = hybrid.step(hybrid.config.nothing_action)
    # The first candidate (FSDP) spread over as many nodes as its shapes allow: 2 x 4
    # nodes; then the next "do nothing" places IMG (1 GPU on each of 4 nodes).
    assert reward == 0.0 and info["time"] == 0
    assert info["fallback"]["job"] == 0 and info["fallback"]["nodes"] == [0, 1, 2, 3]
    _, _, _, _, info = hybrid.step(hybrid.config.nothing_action)
    assert info["fallback"]["job"] == 1 and info["fallback"]["nodes"] == [0, 1, 2, 3]
    _, _, _, _, info = hybrid.step(hybrid.config.nothing_action)  # nothing left: the round
    assert "fallback" not in info and info["time"] == pytest.approx(600)
    packing = ContentionEnv(
        gpu_choices=(1, 4, 8), mode="hybrid", fallback_placement="pack", jobs=jobs
    )
    packing.reset(seed=0)
    _, _, _, _, info = packing.step(packing.config.nothing_action)
    assert info["fallback"]["nodes"] == [0]


def test_a_masked_action_is_taken_as_do_nothing() -> None:
    env = ContentionEnv(gpu_choices=(1, 8), jobs=[job("LM", 8), job("LM", 8), job("GNN", 1, 900)])
    env.reset(seed=0)
    env.step(env.action_for(0, [0]))  # node 0 is full now
    on_node_0 = env.action_for(1, [0])
    assert env.core.action_mask()[on_node_0] == 0
    _, reward, _, _, info = env.step(on_node_0)
    assert info["invalid_action"] and "placed" not in info
    assert info["time"] == pytest.approx(300)  # the round ran
    assert reward == pytest.approx(-0.4 * 1.0 + 0.6 * 8 / 32)


def test_jobs_above_the_cs_threshold_are_preempted() -> None:
    jobs = [job("DLRM", 8), job("FSDP", 8), job("GNN", 1)]
    # Equal sharing: a pair's CS differ (1 + own duty), so a threshold can split them.
    threshold = (equal_cs("DLRM", 8, 2) + equal_cs("FSDP", 8, 2)) / 2
    env = ContentionEnv(preempt_cs=threshold, link_sharing="equal", jobs=jobs)
    env.reset(seed=0)
    env.step(env.action_for(0, [0, 1]))
    _, _, _, _, info = env.step(env.action_for(1, [0, 1]))
    assert equal_cs("DLRM", 8, 2) > threshold > equal_cs("FSDP", 8, 2)
    assert info["preempted"] == [0]  # DLRM back in the queue, with its progress
    assert info["running"] == 1 and info["cs"] == {"1": pytest.approx(1.0)}
    assert 0 in env.core.candidates().tolist()
    assert env.core.sim.preemptions[0] == 1


def test_an_episode_ends_with_every_job_done_and_a_summary(small_env: ContentionEnv) -> None:
    obs, _ = small_env.reset(seed=2)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        valid = np.flatnonzero(obs["action_mask"])
        obs, reward, terminated, truncated, info = small_env.step(rng.choice(valid))
        total += reward
        done = terminated or truncated
    episode = info["episode"]
    assert terminated and episode["jobs_finished"] == 24
    assert episode["return"] == pytest.approx(total)
    assert sum(episode["cs_histogram"].values()) == 24
    assert set(episode["cs_by_model"]) <= set(MODELS)
    assert episode["avg_contention"] >= 1 and 0 < episode["gpu_utilization"] <= 1
    assert episode["p90_jct"] >= episode["median_jct"]
