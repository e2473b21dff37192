"""Run one policy over a workload on a cluster, the way ``simulate.py run`` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from envs.sim.engine import Simulator, SimulatorConfig
from envs.sim.metrics import SimulationResult
from envs.topology import Cluster
from envs.workload import Workload, drop_infeasible


class Policy(Protocol):
    """Anything that places jobs when the simulator asks."""

    def schedule(self, sim: Simulator) -> None:
        """Place (or preempt) jobs at a decision point."""


def simulate(
    cluster: Cluster,
    workload: Workload,
    policy: Policy,
    name: str,
    config: SimulatorConfig | None = None,
    on_decision: Callable[[Simulator], None] | None = None,
) -> SimulationResult:
    """Run ``policy`` to the end (or the horizon) and collect the result."""
    sim = Simulator(cluster, workload, config)
    while sim.run_until_decision():
        policy.schedule(sim)
        if on_decision is not None:
            on_decision(sim)
    return SimulationResult.from_simulator(sim, name)


def drop_jobs_that_never_fit(cluster: Cluster, workload: Workload) -> tuple[Workload, int]:
    """Drop jobs needing more GPUs than the cluster, or a task bigger than any group/socket."""
    return drop_infeasible(
        workload,
        max_gpus_per_job=cluster.num_gpus,
        max_gpus_per_task=float(cluster.group_gpus.max()),
        max_cpus_per_task=float(cluster.socket_cores.max()),
    )
