"""The preemption pass's screen (:mod:`envs.schedulers.room_screen`): the released states
it builds equal a recount, its answers are those of the plans' own compact-room test,
and skipping the candidates it rules out changes no schedule."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers.room_screen import Demands, may_have_compact_room, released_rows
from envs.schedulers.tasks import JobTasks
from envs.sim import Simulator
from envs.topology import build_cluster
from envs.workload import make_workload

from .conftest import preemptive_schedule, record_answers


@pytest.mark.parametrize("seed", range(4))
def test_released_rows_equal_a_recount_per_candidate(seed):
    """Row r: the free resources plus every task of a victim ranked after candidate r,
    as releasing those victims one task at a time gives them."""
    rng = np.random.default_rng(seed)
    cluster = build_cluster("flat", servers=4, server="dgx1")
    free_gpus = rng.integers(0, 3, cluster.num_gpu_groups)
    free_cores = rng.choice([0.0, 0.5, 1.0, 3.0], cluster.num_sockets)
    # Distinct joint ranks, shuffled between victims and candidates.
    ranks = rng.permutation(40)
    victim_rank, candidate_rank = ranks[:25], np.sort(ranks[25:])
    tasks = rng.integers(1, 4, len(victim_rank))
    task_victim = np.repeat(np.arange(len(victim_rank)), tasks)
    task_group = rng.integers(0, cluster.num_gpu_groups, len(task_victim))
    task_gpus = rng.integers(1, 3, len(task_victim))
    task_cpus = rng.choice([0.5, 1.0, 2.0], len(task_victim))
    gpus, cores = released_rows(
        cluster,
        free_gpus,
        free_cores,
        victim_rank,
        task_victim,
        task_group,
        task_gpus,
        task_cpus,
        candidate_rank,
    )
    for row, rank in enumerate(candidate_rank.tolist()):
        mine = victim_rank[task_victim] > rank
        want_gpus, want_cores = free_gpus.copy(), free_cores.copy()
        np.add.at(want_gpus, task_group[mine], task_gpus[mine])
        np.add.at(want_cores, cluster.group_socket[task_group[mine]], task_cpus[mine])
        assert gpus[row].tolist() == want_gpus.tolist()
        np.testing.assert_allclose(cores[row], want_cores, rtol=0, atol=1e-9)


@pytest.mark.parametrize("servers", [1, 2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_the_screen_answers_as_the_plans_compact_room_test(seed, servers):
    """On random states, for jobs of alike tasks spanning ``servers`` servers alone, the
    screen says "may hold" exactly where the plans' compact-room test on that many
    servers does (states in whole and half cores, far from the slack of either)."""
    from envs.schedulers import preemption

    rng = np.random.default_rng(seed)
    cluster = build_cluster("flat", servers=6, server="dgx1")  # one GPU group per socket
    workload = make_workload("deepshare", num_jobs=40, rng=rng, gpu_choices=(1, 2, 4, 8))
    sim = Simulator(cluster, workload)
    jobs = np.flatnonzero(sim.num_ps == 0)
    gpus = rng.integers(0, cluster.group_gpus + 1, (len(jobs), cluster.num_gpu_groups))
    cores = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0, 4.0], (len(jobs), cluster.num_sockets))
    count, task_cpus = sim.num_workers[jobs], sim.worker_cpus[jobs]
    wide = np.full(len(jobs), servers)
    demands = Demands(sim.worker_gpus[jobs], task_cpus, count, count * task_cpus, wide)
    screened = may_have_compact_room(cluster, gpus, cores, demands)
    planned = [
        bool(preemption._compact_rooms(sim, JobTasks.of(sim, job), servers, g[None], c[None])[0])
        for job, g, c in zip(jobs.tolist(), gpus, cores, strict=True)
    ]
    assert screened.tolist() == planned
    assert 0 < sum(planned) < len(planned), "every answer alike: the states test nothing"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["las+packing", "srtf+packing", "gittins+packing"])
def test_the_screen_changes_no_schedule(seed, policy, monkeypatch):
    """With the screen answering "may act" everywhere, every candidate takes the plan's
    own path, and every job starts, is preempted and finishes at the same times."""
    from envs.schedulers import preemption

    cluster = build_cluster("flat", servers=4, server="dgx1")  # 4 servers x 8 GPUs
    workload = {"num_jobs": 80, "gpu_choices": (1, 2, 4, 8, 16), "mean_interarrival_s": 60.0}
    answers = record_answers(monkeypatch, preemption.Preemptor, "_screen")
    screened = preemptive_schedule(cluster, policy, seed, **workload)
    assert sum(int((~answer).sum()) for answer in answers), (
        "the screen never ruled a candidate out: this workload tests nothing"
    )
    monkeypatch.setattr(
        preemption.Preemptor,
        "_screen",
        lambda self, sim, view, candidates, *rest: np.ones(len(candidates), bool),
    )
    assert preemptive_schedule(cluster, policy, seed, **workload) == screened
