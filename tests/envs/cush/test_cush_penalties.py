"""Depth- and breadth-first allocation and 004 §3.1's service-time penalties, by hand.

On 4 Sierra nodes (16 GPUs) with ``penalty_scale_gpus = 16``, a job of 8 GPUs spans
``k_min = 2`` nodes packed and ``k_max = 4`` spread:

=====  =============  ======  =================================  =======
type   policy         nodes   f                                  service
=====  =============  ======  =================================  =======
dgemm  depth-first    2       0.5 x 0 x 8/16 = 0                 10
dgemm  breadth-first  4       0.5 x 1 x 8/16 = 0.25              12.5
daxpy  depth-first    2       1.0 x (1 - 0) x 8/16 = 0.5         15
daxpy  breadth-first  4       1.0 x (1 - 1) x 8/16 = 0           10
=====  =============  ======  =================================  =======
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs.cush import CuSHEnv
from envs.cush.alloc import BREADTH_FIRST, DAXPY, DEPTH_FIRST, DGEMM, node_counts, penalty

SMALL = {"nodes": 4, "penalty_scale_gpus": 16}


def job(arrival: int, length: int, gpus: int, cpus: int, kind: str) -> dict[str, Any]:
    return {"arrival": arrival, "length": length, "gpus": gpus, "cpus": cpus, "type": kind}


@pytest.mark.parametrize(
    ("kind", "policy", "nodes", "service"),
    [
        ("dgemm", 0, 2, 10.0),
        ("dgemm", 1, 4, 12.5),
        ("daxpy", 0, 2, 15.0),
        ("daxpy", 1, 4, 10.0),
    ],
)
def test_service_time_of_one_job_under_each_policy(
    kind: str, policy: int, nodes: int, service: float
) -> None:
    env = CuSHEnv(**SMALL, jobs=[job(0, 10, 8, 2, kind)])
    env.reset(seed=0)
    _, _, _, _, info = env.step([1, policy])
    placed = info["placed"]
    assert placed["nodes"] == nodes
    assert placed["service"] == pytest.approx(service)
    assert placed["penalty"] == pytest.approx(service - 10.0)
    assert info["psm_reward"] == pytest.approx(10.0 - service)  # 004 §3.3: minus p_j
    *_, terminated, _, info = env.step([0, 0])
    assert terminated
    sim = env.core.sim
    assert sim.first_start[0] == 0.0
    assert sim.finish_time[0] == pytest.approx(service)  # st_j = t_j + p_j
    assert sim.run_time[0] == pytest.approx(service)
    assert info["episode"]["jobs"][0]["penalty"] == pytest.approx(service - 10.0)
    assert info["global_reward"] == pytest.approx(1.0)  # no wait: NTAT = 1


def test_a_penalized_job_ends_between_steps_and_frees_its_gpus_for_the_next() -> None:
    # A 5-step, 8-GPU daxpy depth-first runs 5 x 1.5 = 7.5 steps; the 16-GPU job waits.
    env = CuSHEnv(**SMALL, jobs=[job(0, 5, 8, 0, "daxpy"), job(0, 1, 16, 0, "dgemm")])
    obs, _ = env.reset(seed=0)
    _, _, _, _, info = env.step([1, 0])
    assert info["placed"]["service"] == pytest.approx(7.5)
    for time in range(1, 8):
        obs, *_ = env.step([0, 0])
        assert env.core.time == time
        rows = min(5, int(np.ceil(7.5 - time)))
        busy = obs["image"][8:24, :, 0]  # the 16 GPU columns after 8 CPU columns
        assert busy[:8].sum(axis=1).tolist() == [rows] * 8  # node 0 and 1's GPUs
        assert not busy[8:].any()
        assert obs["action_mask"][2] == 0  # 8 GPUs free, the job needs 16
    obs, *_ = env.step([0, 0])
    assert env.core.time == 8 and obs["action_mask"][2] == 1  # freed at 7.5


def test_fragmentation_pushes_depth_first_off_its_ideal_and_it_pays() -> None:
    env = CuSHEnv(**SMALL, jobs=[job(0, 4, 2, 0, "dgemm"), job(0, 4, 12, 0, "dgemm")])
    env.reset(seed=0)
    _, _, _, _, info = env.step([1, BREADTH_FIRST])  # one GPU on node 0 and one on node 1
    assert info["placed"]["nodes"] == 2
    _, _, _, _, info = env.step([2, DEPTH_FIRST])
    # Free GPUs per node 3, 3, 4, 4: 12 GPUs need 4 nodes, 3 would do on an empty
    # cluster, so s = (4 - 3) / (4 - 3) = 1 and f = 0.5 x 1 x 12/16 = 0.375.
    assert info["placed"]["nodes"] == 4
    assert info["placed"]["service"] == pytest.approx(4 * 1.375)


def test_depth_first_uses_the_fewest_nodes_and_best_fits_the_last() -> None:
    free = np.array([4, 3, 4, 1])
    assert node_counts(free, 5, DEPTH_FIRST).tolist() == [4, 0, 0, 1]
    assert node_counts(free, 3, DEPTH_FIRST).tolist() == [0, 3, 0, 0]
    assert node_counts(free, 12, DEPTH_FIRST).tolist() == [4, 3, 4, 1]
    assert node_counts(free, 0, DEPTH_FIRST).tolist() == [0, 0, 0, 0]


def test_breadth_first_water_fills_one_unit_per_node_per_round() -> None:
    free = np.array([4, 3, 4, 1])
    assert node_counts(free, 3, BREADTH_FIRST).tolist() == [1, 1, 1, 0]
    assert node_counts(free, 6, BREADTH_FIRST).tolist() == [2, 1, 2, 1]
    assert node_counts(free, 10, BREADTH_FIRST).tolist() == [3, 3, 3, 1]


def test_cpus_prefer_the_nodes_holding_the_jobs_gpus() -> None:
    free = np.array([2, 2, 2, 2])
    preferred = np.array([False, False, True, False])
    assert node_counts(free, 3, DEPTH_FIRST, preferred).tolist() == [1, 0, 2, 0]
    preferred = np.array([False, True, False, True])
    assert node_counts(free, 2, BREADTH_FIRST, preferred).tolist() == [0, 1, 0, 1]


def test_penalty_fraction_by_hand() -> None:
    # 1 GPU, or 16 GPUs on 4 nodes of 4: no choice of spread, no penalty.
    assert penalty(np.array([1, 0, 0, 0]), DAXPY, 4, 1.0, 16) == 0.0
    assert penalty(np.array([4, 4, 4, 4]), DGEMM, 4, 0.5, 16) == 0.0
    # 6 GPUs: k_min 2, k_max 4; on 3 nodes s = 1/2.
    assert penalty(np.array([2, 2, 2, 0]), DGEMM, 4, 0.5, 16) == pytest.approx(0.5 * 0.5 * 6 / 16)
    assert penalty(np.array([2, 2, 2, 0]), DAXPY, 4, 1.0, 16) == pytest.approx(0.5 * 6 / 16)
    # Summit: 6 GPUs fit one node of 6.
    assert penalty(np.array([6, 0, 0]), DGEMM, 6, 0.5, 16) == 0.0
    assert penalty(np.array([6, 0, 0]), DAXPY, 6, 1.0, 16) == pytest.approx(6 / 16)


def test_summit_depth_first_packs_six_gpus_per_node() -> None:
    env = CuSHEnv(cluster="summit", nodes=3, jobs=[job(0, 2, 12, 1, "dgemm")])
    env.reset(seed=0)
    _, _, _, _, info = env.step([1, DEPTH_FIRST])
    assert info["placed"]["nodes"] == 2 and info["placed"]["penalty"] == 0.0
    _, gpus = env.core.sim.job_placement(0)
    assert gpus.tolist() == list(range(12))  # nodes 0 and 1 whole
