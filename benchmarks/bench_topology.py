"""Build time and memory of the paper-scale clusters. Goal: each under 2 s and 300 MB.

"build" makes the arrays; "graph" materializes the networkx graph too; "describe" adds the
summary (with the bisection max-flow). Memory is the tracemalloc peak of build + graph.
"routes/s" computes uncached routes between random GPU-group pairs (informational).
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from typing import Any

import numpy as np
from common import best_time, no_arguments, print_table, write_results

from envs.topology import build_cluster, describe_cluster

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("fat-tree k=20", "fat-tree", {"k": 20}),
    ("VL2 k=20", "vl2", {"k": 20}),
    ("BCube(6,3)", "bcube", {"n": 6, "k": 3}),
    ("fat-tree k=20 mixed", "fat-tree", {"k": 20, "server": "mixed"}),
]
GOAL_SECONDS, GOAL_MB = 2.0, 300.0


ROUTE_SAMPLES = 20_000


def _routes_per_second(name: str, params: dict[str, Any]) -> float:
    """Uncached routes computed per second between random GPU-group pairs."""
    cluster = build_cluster(name, **params)
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, cluster.num_gpu_groups, size=(ROUTE_SAMPLES, 2)).tolist()
    start = time.perf_counter()
    for a, b in pairs:
        cluster.route_links(a, b)
    return ROUTE_SAMPLES / (time.perf_counter() - start)


def _build_with_graph(name: str, params: dict[str, Any]) -> None:
    cluster = build_cluster(name, **params)
    cluster.graph  # noqa: B018 -- materialize the cached networkx graph


def measure(label: str, name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Times, memory and route throughput of one cluster."""
    build_s = best_time(lambda: build_cluster(name, **params))
    graph_s = best_time(lambda: _build_with_graph(name, params))
    describe_s = best_time(lambda: describe_cluster(build_cluster(name, **params)))
    tracemalloc.start()
    _build_with_graph(name, params)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    cluster = build_cluster(name, **params)
    return {
        "case": label,
        "servers": cluster.num_servers,
        "gpus": cluster.num_gpus,
        "build_s": round(build_s, 4),
        "build_with_graph_s": round(graph_s, 4),
        "describe_s": round(describe_s, 4),
        "peak_mb": round(peak / 2**20, 1),
        "routes_per_s": round(_routes_per_second(name, params)),
        "goal_s": GOAL_SECONDS,
        "goal_mb": GOAL_MB,
        "meets_goal": graph_s < GOAL_SECONDS and peak / 2**20 < GOAL_MB,
    }


def main() -> list[dict[str, Any]]:
    """Run the cases, print the table, write ``results/topology.json``."""
    records = [measure(label, name, params) for label, name, params in CASES]
    columns = ["case", "servers", "GPUs", "build s", "+graph s", "describe s", "peak MB"]
    print_table(
        f"Topology build (goal: < {GOAL_SECONDS:.0f} s and < {GOAL_MB:.0f} MB each)",
        [*columns, "routes/s", "goal met"],
        [
            [
                r["case"],
                r["servers"],
                r["gpus"],
                f"{r['build_s']:.3f}",
                f"{r['build_with_graph_s']:.3f}",
                f"{r['describe_s']:.3f}",
                f"{r['peak_mb']:.1f}",
                f"{r['routes_per_s']:,}",
                "yes" if r["meets_goal"] else "NO",
            ]
            for r in records
        ],
    )
    write_results("topology", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_topology.py", __doc__ or "")
    main()
