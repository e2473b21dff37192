"""The closed-form capacity for identical tasks, on hand-made free resources."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers.capacity import (
    UNBOUNDED,
    one_group_per_socket,
    rows_capacity,
    server_capacity,
    socket_capacity,
)
from envs.topology import build_cluster


def test_capacity_with_several_groups_per_socket():
    """Minsky: 2 sockets x (10 cores, two 1-GPU groups). Server 0 fully free; server 1 has
    one GPU and 7 cores busy on socket 2 (3 cores left)."""
    cluster = build_cluster("flat", servers=2, server="minsky")
    free_gpus = np.array([1, 1, 1, 1, 0, 1, 1, 1])
    free_cores = np.array([10.0, 10.0, 3.0, 10.0])
    # 1 GPU, 4 cores: GPUs allow 2 per socket, cores 2, 2, 0, 2.
    np.testing.assert_array_equal(
        socket_capacity(cluster, free_gpus, free_cores, 1, 4.0), [2, 2, 0, 2]
    )
    np.testing.assert_array_equal(server_capacity(cluster, free_gpus, free_cores, 1, 4.0), [4, 2])
    # 1 GPU, 1 core: GPUs bind (socket 2 has one free GPU and 3 cores).
    np.testing.assert_array_equal(
        socket_capacity(cluster, free_gpus, free_cores, 1, 1.0), [2, 2, 1, 2]
    )
    # 2 GPUs: no group has two.
    assert server_capacity(cluster, free_gpus, free_cores, 2, 1.0).sum() == 0
    # No GPU (a parameter server): cores alone.
    np.testing.assert_array_equal(
        socket_capacity(cluster, free_gpus, free_cores, 0, 3.0), [3, 3, 1, 3]
    )


def test_capacity_with_one_group_per_socket():
    """Power8 (two 2-GPU groups, one per 8-core socket): the fast path agrees."""
    cluster = build_cluster("flat", servers=1, server="power8")
    free_gpus, free_cores = np.array([2, 1]), np.array([3.0, 8.0])
    np.testing.assert_array_equal(socket_capacity(cluster, free_gpus, free_cores, 1, 2.0), [1, 1])
    np.testing.assert_array_equal(socket_capacity(cluster, free_gpus, free_cores, 1, 0.0), [2, 1])
    # A task that needs nothing fits without bound.
    assert socket_capacity(cluster, free_gpus, free_cores, 0, 0.0)[0] == UNBOUNDED


@pytest.mark.parametrize("server", ["minsky", "power8", "dgx1"])
def test_rows_capacity_is_socket_capacity_row_by_row(server):
    """Many states at once (the preemption probe): each row's total equals the one-state
    closed form, for every task kind, with and without several groups per socket."""
    cluster = build_cluster("flat", servers=3, server=server)
    rng = np.random.default_rng(0)
    free_gpus = rng.integers(0, cluster.group_gpus + 1, size=(20, cluster.num_gpu_groups))
    free_cores = rng.integers(0, 9, size=(20, cluster.num_sockets)).astype(np.float64)
    group_socket = None if one_group_per_socket(cluster) else cluster.group_socket
    for gpus, cpus in [(1, 1.0), (1, 4.0), (2, 3.0), (0, 2.0), (1, 0.0)]:
        expected = [
            socket_capacity(cluster, row_gpus, row_cores, gpus, cpus).sum()
            for row_gpus, row_cores in zip(free_gpus, free_cores, strict=True)
        ]
        got = rows_capacity(group_socket, free_gpus, free_cores, gpus, cpus)
        np.testing.assert_array_equal(got, expected)
        # Slack only ever loosens the core bound.
        assert (rows_capacity(group_socket, free_gpus, free_cores, gpus, cpus, 0.5) >= got).all()
