"""Jobs whose tasks no placement fits, even on the empty cluster (envs.sim.fits).

The cluster of most cases: ``flat``, one server of 4 GPUs, which is two sockets of 8 cores,
each with one GPU group of 2 GPUs. A task takes its GPUs from one group and its cores from
that group's socket, so a socket holds at most ``min(2 // gpus, 8 // cores)`` workers.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.sim import Simulator
from envs.sim.fits import tasks_fit
from envs.sim.runner import drop_jobs_that_never_fit
from envs.topology import build_cluster
from envs.workload import InfeasibleJobError

from .conftest import exact_workload

ONE_SERVER = build_cluster("flat", servers=1, gpus_per_server=4)


def fits(workers, gpus, cpus, servers=0, server_gpus=0, server_cpus=0.0, cluster=ONE_SERVER):
    """Whether one job of this shape fits ``cluster``."""
    answer = tasks_fit(
        cluster,
        *(np.array([value]) for value in (workers, gpus, cpus, servers, server_gpus, server_cpus)),
    )
    return bool(answer[0])


def test_the_layout_is_as_the_cases_assume():
    assert ONE_SERVER.group_gpus.tolist() == [2, 2]
    assert ONE_SERVER.group_socket.tolist() == [0, 1]
    assert ONE_SERVER.socket_cores.tolist() == [8.0, 8.0]


@pytest.mark.parametrize(
    ("workers", "gpus", "cpus", "expected"),
    [
        (4, 1, 4, True),  # 2 per socket by GPUs and by cores
        (4, 1, 5, False),  # 8 // 5 = 1 per socket: 2 in all
        (2, 1, 5, True),
        (2, 2, 1, True),  # one 2-GPU worker per group
        (4, 0, 4, True),  # no GPUs: cores alone, 2 per socket
        (5, 0, 4, False),
        (16, 0, 1, True),
        (17, 0, 1, False),
    ],
)
def test_workers_alone(workers, gpus, cpus, expected):
    assert fits(workers, gpus, cpus) is expected


@pytest.mark.parametrize(
    ("workers", "servers", "server_gpus", "server_cpus", "expected"),
    [
        # Servers of 7 cores: one per socket, leaving 1 core there for one worker.
        (1, 2, 0, 7.0, True),
        (2, 2, 0, 7.0, True),
        (3, 2, 0, 7.0, False),
        (1, 3, 0, 7.0, False),
        # A server of 2 GPUs takes a whole group: its socket holds no 1-GPU worker.
        (2, 1, 2, 1.0, True),
        (3, 1, 2, 1.0, False),
        (0, 2, 2, 1.0, True),
    ],
)
def test_workers_beside_parameter_servers(workers, servers, server_gpus, server_cpus, expected):
    assert fits(workers, 1, 1.0, servers, server_gpus, server_cpus) is expected


def test_gpus_that_fit_in_total_but_not_group_by_group():
    """One server of 6 GPUs: two sockets of 8 cores, one group of 3 GPUs each. Three
    workers of 2 GPUs need 6 GPUs and no more than a group each, yet a group holds one."""
    cluster = build_cluster("flat", servers=1, gpus_per_server=6)
    assert cluster.group_gpus.tolist() == [3, 3] and cluster.num_sockets == 2
    assert fits(2, 2, 1.0, cluster=cluster)
    assert not fits(3, 2, 1.0, cluster=cluster)


def test_sockets_of_one_layout_add_up():
    """16 dgx1 servers: 32 sockets of 16 cores, each with one group of 4 GPUs. Workers of
    1 GPU and 10 cores: one per socket, 32 in all."""
    cluster = build_cluster("flat", servers=16, server="dgx1")
    assert cluster.num_sockets == 32 and set(cluster.socket_cores.tolist()) == {16.0}
    assert np.bincount(cluster.group_socket).tolist() == [1] * 32
    assert set(cluster.group_gpus.tolist()) == {4}
    assert fits(32, 1, 10.0, cluster=cluster)
    assert not fits(33, 1, 10.0, cluster=cluster)


def test_the_simulator_refuses_such_a_job_and_the_runner_drops_it():
    """Job 1: 4 workers of 1 GPU and 5 cores, within the cluster's 4 GPUs and 16 cores and
    each socket's 8, but a socket holds one such worker: 2 in all."""
    workload = exact_workload([0.0, 1.0, 2.0], [0, 0, 0], [1, 4, 1], cpus_per_worker=5.0)
    with pytest.raises(InfeasibleJobError, match=r"job 1 .* no placement fits even on the empty"):
        Simulator(ONE_SERVER, workload)
    kept, dropped = drop_jobs_that_never_fit(ONE_SERVER, workload)
    assert dropped == 1
    assert kept.arrival_time.tolist() == [0.0, 2.0]
    Simulator(ONE_SERVER, kept)  # accepted
