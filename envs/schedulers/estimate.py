"""What a job would take if placed now: the oracle behind 002's SAF ordering.

002's SAF "assume[s] there is an oracle that can tell the scheduler what placement each
job will be assigned and the corresponding mini-batch time". Here the oracle asks the
scheduler's placement for the groups and prices one synchronous step with the
simulator's own speed model, on the cluster as it is now:

    step = compute_time x (1 + S) + communication
    S    = the slowest worker's interference slowdown from the jobs already placed (001 §V)
    communication = the slowest exchanging pair's gigabits over its bottleneck, each link
           shared with the jobs already crossing it plus this one as the simulator's
           ``link_sharing`` says (equally, 003; or by their duty cycles, 000); a pair
           inside one GPU group talks at that group's PCIe bandwidth

    estimate = restart cost (a resumed job) + remaining work / workers x step

It ignores what this job does to the others and what changes later (jobs finishing,
arriving): a snapshot, like the paper's profiled mini-batch time.
"""

from __future__ import annotations

import numpy as np

from envs.schedulers.loads import InterferenceLoads
from envs.sim import Simulator
from envs.sim.communication import communication_pairs, megabytes_to_gigabits


def communication_seconds(sim: Simulator, job: int, groups: np.ndarray) -> float:
    """Seconds of one step's communication for ``job`` placed on ``groups``, now."""
    if not sim.config.communication:
        return 0.0
    num_ps = int(sim.num_ps[job])
    workers = len(groups) - num_ps
    task_a, task_b, megabytes = communication_pairs(
        sim.collective[job], workers, num_ps, float(sim.gradient_mb[job])
    )
    if not len(task_a):
        return 0.0
    cluster = sim.cluster
    routes = [
        cluster.route_links(int(groups[a]), int(groups[b]))
        for a, b in zip(task_a, task_b, strict=True)
    ]
    crossed = (
        np.unique(np.concatenate(routes)) if any(len(r) for r in routes) else np.zeros(0, np.int64)
    )
    # As the simulator shares a link (envs.sim.speed.shared_communication_times): the job
    # sees capacity / (1 + the weights of the jobs already crossing it) -- their count under
    # equal sharing, their duty cycles under traffic sharing.
    share = np.zeros(cluster.num_links)
    share[crossed] = cluster.link_gbps[crossed] / (1.0 + sim.link_load[crossed])
    pcie_gbps = cluster.link_gbps[cluster.group_pcie_link]
    bottleneck = np.array(
        [
            share[route].min() if len(route) else pcie_gbps[groups[a]]
            for route, a in zip(routes, task_a, strict=True)
        ]
    )
    return float((megabytes_to_gigabits(megabytes) / bottleneck).max())


def estimated_duration(
    sim: Simulator, job: int, groups: np.ndarray, loads: InterferenceLoads
) -> float:
    """Seconds ``job`` would need to finish if placed on ``groups`` now (see module doc)."""
    groups = np.asarray(groups, dtype=np.int64)
    workers = len(groups) - int(sim.num_ps[job])
    slowdown = float(loads.worker_slowdowns(job, groups[:workers]).max())
    step = float(sim.compute_time[job]) * (1.0 + slowdown) + communication_seconds(sim, job, groups)
    left = float(sim.work_total[job] - sim.work_done[job])
    restart = 0.0 if np.isnan(sim.first_start[job]) else sim.config.restart_cost_s
    return restart + left / workers * step
