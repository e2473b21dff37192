"""The pod environment's mean-JCT lower bound (:mod:`envs.pod.bounds`) against episodes of
the environment itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs import make_env
from envs.pod.bounds import pod_jct_lower_bound
from envs.pod.heuristic import HeuristicPodPolicy

# A fat-tree k=4 of power8 servers (64 GPUs), as the demo.
CLUSTER = {"topology": "fat-tree", "topology_params": {"k": 4}, "server": "power8"}


def _mean_jct(config: dict[str, Any], seed: int, policy: str) -> float:
    env = make_env("pod_scheduling_v0", **config)
    env.reset(seed=seed, options={"masks_only": True})
    driver = HeuristicPodPolicy(env, policy, seed=seed)
    while env.agents:
        env.step(driver.actions())
    sim = env.sim
    return float((sim.finish_time - sim.workload.arrival_time).mean())


@pytest.mark.parametrize("seed", [0, 1])
def test_with_room_for_every_job_the_bound_is_what_the_environment_gives(seed: int) -> None:
    # Three jobs on 64 GPUs without contention: each starts at the first round after it
    # arrives and runs its ideal time, which is the bound.
    config = {**CLUSTER, "workload": "poisson", "num_jobs": 3, "perf": "ideal"}
    bound = pod_jct_lower_bound(config, seed).mean_jct_s
    assert _mean_jct(config, seed, "fifo+packing") == pytest.approx(bound, rel=1e-6)


@pytest.mark.parametrize("perf", ["ideal", "contention"])
def test_no_policy_beats_the_bound_on_a_contended_cluster(perf: str) -> None:
    config = {
        **CLUSTER,
        "server": "mixed",
        "workload": "poisson",
        "workload_params": {"rate": 10.0},
        "num_jobs": 40,
        "perf": perf,
    }
    for seed in (0, 1):
        bound = pod_jct_lower_bound(config, seed).mean_jct_s
        jcts = [
            _mean_jct(config, seed, policy)
            for policy in ("fifo+packing", "spf+locality", "fifo+load-balancing", "las+tetris")
        ]
        # Every policy, patient or not, spread or packed, stays above the bound.
        assert bound > 0
        assert min(jcts) >= bound
    # A finer grid can only tighten the bound.
    finer = pod_jct_lower_bound(config, 1, slots_per_interval=12).mean_jct_s
    assert finer >= bound - 1e-6 * bound


@pytest.mark.parametrize("slots", [0, -2, 1.5, True])
def test_bad_grid_is_refused(slots: Any) -> None:
    with pytest.raises(ValueError, match="slots_per_interval must be a positive integer"):
        pod_jct_lower_bound({**CLUSTER, "num_jobs": 3}, 0, slots_per_interval=slots)


def test_bound_is_above_each_jobs_own_time() -> None:
    config = {**CLUSTER, "workload": "poisson", "num_jobs": 20}
    env = make_env("pod_scheduling_v0", **config)
    env.reset(seed=3, options={"masks_only": True})
    alone = float(np.mean(env.sim.ideal_duration))
    assert pod_jct_lower_bound(config, 3).mean_jct_s >= alone
