"""pod_scheduling_v0 speed: agent-steps per second under random valid actions.

Goals (issue 4): >= 5,000 agent-steps/s at fat-tree k=4 and >= 200 at k=20 (2,000
servers, 20 agents). Also reports the bytes of one agent's observation with the compact
per-partition summary (default) and with every partition's full inner-graph features.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from common import no_arguments, print_table, write_results

from envs.pod.env import PodSchedulingEnv

CASES: list[tuple[str, dict[str, Any], float, float]] = [
    ("fat-tree k=4", {"topology_params": {"k": 4}, "num_jobs": 200}, 5_000.0, 10.0),
    ("fat-tree k=20", {"topology_params": {"k": 20}, "num_jobs": 1_000}, 200.0, 30.0),
]


def agent_steps_per_second(config: dict[str, Any], seconds: float) -> tuple[float, int]:
    """Random masked actions (placing rather than waiting) for about ``seconds``."""
    env = PodSchedulingEnv(**config)
    rng = np.random.default_rng(0)
    observations, _ = env.reset(seed=0)
    agent_steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if not env.agents:
            observations, _ = env.reset(seed=int(rng.integers(1 << 30)))
        actions = {}
        for agent in env.agents:
            valid = np.flatnonzero(observations[agent]["action_mask"])
            actions[agent] = int(rng.choice(valid[:-1])) if len(valid) > 1 else int(valid[-1])
        observations, *_ = env.step(actions)
        agent_steps += len(actions)
    return agent_steps / (time.perf_counter() - start), env.observation_nbytes


def main() -> list[dict]:
    """Measure both scales, print the table, write ``results/pod_env.json``."""
    records = []
    for label, config, goal, seconds in CASES:
        rate, summary_bytes = agent_steps_per_second(config, seconds)
        full_bytes = PodSchedulingEnv(**config, others="full").observation_nbytes
        records.append(
            {
                "case": label,
                "agents": len(PodSchedulingEnv(**config).possible_agents),
                "agent_steps_per_s": round(rate, 1),
                "goal_agent_steps_per_s": goal,
                "meets_goal": rate >= goal,
                "observation_bytes_summary": summary_bytes,
                "observation_bytes_full": full_bytes,
            }
        )
    print_table(
        "pod_scheduling_v0 speed (goals: >= 5,000 agent-steps/s at k=4, >= 200 at k=20)",
        [
            "case",
            "agents",
            "agent-steps/s",
            "goal",
            "obs bytes (summary)",
            "obs bytes (full)",
            "met",
        ],
        [
            [
                r["case"],
                r["agents"],
                f"{r['agent_steps_per_s']:,.0f}",
                f"{r['goal_agent_steps_per_s']:,.0f}",
                f"{r['observation_bytes_summary']:,}",
                f"{r['observation_bytes_full']:,}",
                "yes" if r["meets_goal"] else "NO",
            ]
            for r in records
        ],
    )
    write_results("pod_env", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_pod_env.py", __doc__ or "")
    main()
