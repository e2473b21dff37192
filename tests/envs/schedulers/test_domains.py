"""Locality levels of each topology, and the level two servers first share."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import best_level, locality_levels
from envs.topology import build_cluster


@pytest.mark.parametrize(
    ("topology", "params", "names", "domains"),
    [
        # 16 servers, 2 per edge switch, 4 per pod; pods are the partitions.
        ("fat-tree", {"k": 4}, ("server", "edge", "aggregation", "core"), (16, 8, 4, 1)),
        # d_a = d_i = 8: 16 ToRs of 2 servers, 8 partitions of 2 ToRs, 4 aggregation pairs.
        (
            "vl2",
            {"k": 8, "servers_per_tor": 2},
            ("server", "tor", "partition", "aggregation", "intermediate"),
            (32, 16, 8, 4, 1),
        ),
        # BCube(4, 1): BCube_0 cells of 4 servers, partitions of two cells, all at level 1.
        ("bcube", {"n": 4, "k": 1}, ("server", "level0", "partition", "level1"), (16, 4, 2, 1)),
        # One ToR per rack (= partition), one director.
        ("racks", {}, ("server", "tor", "director"), (8, 4, 1)),
        ("flat", {"servers": 3, "gpus_per_server": 4}, ("server", "switch"), (3, 1)),
    ],
)
def test_levels_of_each_topology(topology, params, names, domains):
    levels = locality_levels(build_cluster(topology, **params))
    assert levels.names == names
    assert levels.num_domains == domains
    # Every level nests in the next.
    for finer, coarser in zip(levels.server_domain[:-1], levels.server_domain[1:], strict=True):
        for domain in np.unique(finer):
            assert len(np.unique(coarser[finer == domain])) == 1


def test_span_level_is_the_lowest_common_switch():
    levels = locality_levels(build_cluster("fat-tree", k=4))
    assert levels.span_level(np.array([5])) == 0
    assert levels.span_level(np.array([0, 1])) == 1  # one edge switch
    assert levels.span_level(np.array([0, 2, 3])) == 2  # one pod
    assert levels.span_level(np.array([0, 4])) == 3  # through the core


def test_levels_are_cached_per_cluster():
    cluster = build_cluster("fat-tree", k=4)
    assert locality_levels(cluster) is locality_levels(cluster)


def test_best_level_on_the_empty_cluster(setup_sim, job_spec):
    # Power8 servers hold 4 one-GPU tasks, an edge 8, a pod 16.
    cluster = build_cluster("fat-tree", k=4)
    specs = [job_spec(workers=count) for count in (1, 4, 5, 8, 16, 17)]
    sim = setup_sim(cluster, specs).sim
    assert [best_level(sim, job) for job in range(6)] == [0, 0, 1, 1, 2, 3]
