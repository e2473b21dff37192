"""Run one policy over a workload on a cluster, the way ``simulate.py run`` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from envs.sim.engine import Simulator, SimulatorConfig
from envs.sim.fits import workload_fits
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
    """Drop the jobs the simulator would refuse: more GPUs than the cluster, a task bigger
    than any group or socket, or tasks no placement fits even on the empty cluster
    (:func:`envs.sim.fits.workload_fits`)."""
    kept, dropped = drop_infeasible(
        workload,
        max_gpus_per_job=cluster.num_gpus,
        max_gpus_per_task=float(cluster.group_gpus.max()),
        max_cpus_per_task=float(cluster.socket_cores.max()),
    )
    placeable = workload_fits(cluster, kept)
    if placeable.all():
        return kept, dropped
    return kept.select(placeable), dropped + int((~placeable).sum())
