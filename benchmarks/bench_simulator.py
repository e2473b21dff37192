"""Simulator speed at paper scale (issue 3's goals).

(a) fat-tree k=20 (2,000 servers, 8,000 GPUs), 15 arrivals per 30-minute interval at each
    of the 20 schedulers for 100 intervals (30,000 jobs), ``fifo+packing``, decisions every
    interval as in 001: goal under 60 s on one core.
(b) the whole Philly trace (82,247 jobs) on a 1,024-GPU cluster (128 DGX-1 servers on one
    switch) with ``fifo+packing`` and ``sjf+packing``: goal under 120 s each.

Reports wall time, jobs/s and events/s (an event: an arrival, a completion or a tick),
and beside each case the seconds of a fixed single-threaded Python loop timed just before
it: machines here are shared, and that number tells how loaded this one was.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import no_arguments, print_table, write_results

from envs.schedulers import make_scheduler
from envs.sim import SimulatorConfig
from envs.sim.runner import simulate
from envs.topology import build_cluster
from envs.workload import make_workload, read_philly

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "traces" / "philly.csv"


def reference_loop_seconds() -> float:
    """Seconds of a fixed CPU-bound loop (about 1.4 s on an idle core here)."""
    start = time.perf_counter()
    sum(i * i for i in range(20_000_000))
    return time.perf_counter() - start


def run_case(
    label: str, cluster: Any, workload: Any, policy: str, config: Any, goal_s: float
) -> dict:
    """Time one simulation and summarize it."""
    reference = reference_loop_seconds()
    start = time.perf_counter()
    result = simulate(cluster, workload, make_scheduler(policy), policy, config)
    elapsed = time.perf_counter() - start
    metrics = result.metrics()
    events = result.events
    return {
        "case": label,
        "policy": policy,
        "jobs": len(workload),
        "finished": metrics["jobs_finished"],
        "seconds": round(elapsed, 2),
        "jobs_per_s": round(len(workload) / elapsed, 1),
        "events_per_s": round(events / elapsed, 1),
        "avg_jct_h": round(metrics["avg_jct"] / 3600, 3),
        "goal_s": goal_s,
        "meets_goal": elapsed < goal_s,
        "reference_loop_s": round(reference, 2),
    }


def main() -> list[dict]:
    """Run both cases, print the table, write ``results/simulator.json``."""
    records = []
    fat_tree = build_cluster("fat-tree", k=20)
    uniform = make_workload(
        "uniform", num_jobs=30_000, rng=np.random.default_rng(0), num_schedulers=20
    )
    records.append(
        run_case(
            "fat-tree k=20, 001 uniform x100 intervals",
            fat_tree,
            uniform,
            "fifo+packing",
            SimulatorConfig(interval_s=1800.0),
            60.0,
        )
    )
    philly_cluster = build_cluster("flat", servers=128, server="dgx1")
    philly, _ = read_philly(PHILLY, rng=np.random.default_rng(0))
    for policy in ("fifo+packing", "sjf+packing"):
        records.append(
            run_case("Philly, 1,024 GPUs", philly_cluster, philly, policy, SimulatorConfig(), 120.0)
        )
    print_table(
        "Simulator speed (goals: (a) < 60 s, (b) < 120 s each)",
        [
            "case",
            "policy",
            "jobs",
            "finished",
            "seconds",
            "jobs/s",
            "events/s",
            "avg JCT h",
            "goal met",
            "ref. loop s",
        ],
        [
            [
                r["case"],
                r["policy"],
                r["jobs"],
                r["finished"],
                r["seconds"],
                r["jobs_per_s"],
                r["events_per_s"],
                r["avg_jct_h"],
                "yes" if r["meets_goal"] else "NO",
                r["reference_loop_s"],
            ]
            for r in records
        ],
    )
    write_results("simulator", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_simulator.py", __doc__ or "")
    main()
