"""Forward latency of the hierarchical GNN on CPU, and parameter counts.

Goals (issue 5): <= 2 ms for one decision at fat-tree k=4 and <= 50 ms for one decision
of all 20 agents together at k=20. Also a batch of 256 observations at both scales
(a PPO minibatch), and the MLP baseline for comparison. Median of repeated runs, one
thread per process (as an RLlib env runner on these machines).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import numpy as np
import torch
from common import no_arguments, print_table, write_results

from envs.pod.env import PodSchedulingEnv
from models.config import GNNModelConfig
from models.pod_gnn import PodGNN

GOALS_MS = {("fat-tree k=4", 1): 2.0, ("fat-tree k=20", 20): 50.0}


def sample_observations(env: PodSchedulingEnv, count: int) -> list[dict[str, np.ndarray]]:
    """``count`` observations from masked random play."""
    rng = np.random.default_rng(0)
    observations, _ = env.reset(seed=0)
    collected: list[dict[str, np.ndarray]] = []
    while len(collected) < count:
        collected.extend(observations.values())
        actions = {
            a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in observations.items()
        }
        observations, *_ = env.step(actions)
        if not env.agents:
            observations, _ = env.reset(seed=int(rng.integers(1000)))
    return collected[:count]


def latency_ms(net: PodGNN, batch: dict[str, torch.Tensor], repeats: int) -> float:
    with torch.no_grad():
        net(batch)  # warm-up (PyG compiles its propagate templates on first use)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            net(batch)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> list[dict[str, Any]]:
    """Measure every case, print the table, write ``results/models.json``."""
    torch.set_num_threads(1)
    records = []
    for label, topology, edge_network in [
        ("fat-tree k=4", {"topology_params": {"k": 4}}, "full"),
        ("fat-tree k=20", {"topology_params": {"k": 20}, "num_jobs": 400}, "full"),
        ("fat-tree k=20", {"topology_params": {"k": 20}, "num_jobs": 400}, "factorized"),
    ]:
        env = PodSchedulingEnv(**topology)
        space = env.observation_space(env.possible_agents[0])
        agents = len(env.possible_agents)
        observations = sample_observations(env, 256)
        torch.manual_seed(0)
        net = PodGNN(
            space,
            env.action_space(env.possible_agents[0]).n,
            GNNModelConfig(edge_network=edge_network),
        )
        parameters = sum(p.numel() for p in net.parameters())
        for size in (1, agents, 256):
            if size == agents and agents == 1:
                continue
            batch = {
                k: torch.as_tensor(np.stack([o[k] for o in observations[:size]]))
                for k in space.spaces
            }
            milliseconds = latency_ms(
                net, batch, repeats=200 if size == 1 else 30 if size < 256 else 5
            )
            goal = GOALS_MS.get((label, size))
            records.append(
                {
                    "case": label,
                    "edge_network": edge_network,
                    "batch": size,
                    "latency_ms": round(milliseconds, 2),
                    "parameters": parameters,
                    "goal_ms": goal,
                    "meets_goal": None if goal is None else milliseconds <= goal,
                }
            )
    print_table(
        "GNN forward latency, CPU, 1 thread "
        "(goals: 1 decision at k=4 <= 2 ms; 20 agents at k=20 <= 50 ms)",
        ["case", "edge net", "batch", "ms", "params", "goal ms", "met"],
        [
            [
                r["case"],
                r["edge_network"],
                r["batch"],
                r["latency_ms"],
                f"{r['parameters']:,}",
                "-" if r["goal_ms"] is None else r["goal_ms"],
                "-" if r["meets_goal"] is None else ("yes" if r["meets_goal"] else "NO"),
            ]
            for r in records
        ],
    )
    write_results("models", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_models.py", __doc__ or "")
    main()
