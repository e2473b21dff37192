"""CuSH environment steps per second and baseline episode times (no goal is set).

Every step of ``podsched/CuSH-v0`` runs podsched's simulator (a placement, or time to the
next step with jobs waiting) and redraws the (768, 5, 6) image, so it is far slower than
DeepRM's own numpy core. Cases, on the default environment (Sierra, 128 nodes, T = 5,
Q = 5, 20-job sets), STEPS steps each with resets, best of REPEAT:

* "random valid": ``CuSHEnv.step`` with a uniformly random unmasked job choice and a random
  policy (the choice is made from the observation's mask, its time included);
* "random valid, gymnasium.make": the same through the registered id and its wrappers;
* "SJF+BF": ``env.baseline_action("sjf+bf")`` picks every action.

Then every Table 1 baseline runs SETS job sets on Sierra and Summit through
:func:`envs.cush.baselines.run_cush_baseline` (no Gymnasium observation is drawn); the
table gives the time per episode and the averages 004 Table 1 reports.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from common import no_arguments, print_table, write_results

from envs.cush import ENV_ID, CuSHEnv
from envs.cush.baselines import CUSH_BASELINES, run_cush_baseline

STEPS = 5_000
REPEAT = 3
SETS = 10
CLUSTERS = ("sierra", "summit")


def _run(env: gymnasium.Env, choose: Callable[[dict], Any]) -> tuple[float, int]:
    """Seconds for STEPS steps (with resets) and the number of episodes finished."""
    obs, _ = env.reset(seed=0)
    episodes = 0
    start = time.perf_counter()
    for _ in range(STEPS):
        obs, _, terminated, truncated, _ = env.step(choose(obs))
        if terminated or truncated:
            episodes += 1
            obs, _ = env.reset()
    return time.perf_counter() - start, episodes


def measure_steps(label: str, make: Callable[[], gymnasium.Env], policy: str) -> dict[str, Any]:
    """Best-of-REPEAT steps per second of one case."""
    env = make()
    rng = np.random.default_rng(0)
    slots = env.unwrapped.config.queue_size + 1
    if policy == "random":

        def choose(obs: dict) -> list[int]:
            valid = np.flatnonzero(obs["action_mask"][:slots])
            return [int(valid[rng.integers(valid.size)]), int(rng.integers(2))]

    else:
        unwrapped = env.unwrapped

        def choose(obs: dict) -> np.ndarray:
            return unwrapped.baseline_action(policy)

    seconds, episodes = min(_run(env, choose) for _ in range(REPEAT))
    rate = STEPS / seconds
    return {
        "case": label,
        "steps": STEPS,
        "episodes": episodes,
        "seconds": round(seconds, 4),
        "steps_per_s": round(rate),
        "us_per_step": round(1e6 / rate, 2),
    }


def measure_baseline(policy: str, cluster: str) -> dict[str, Any]:
    """Seconds per episode and Table 1's averages of one baseline on one cluster."""
    start = time.perf_counter()
    result = run_cush_baseline(policy, seed=0, num_sets=SETS, cluster=cluster)
    seconds = time.perf_counter() - start
    return {
        "policy": policy,
        "cluster": cluster,
        "sets": SETS,
        "ms_per_episode": round(1e3 * seconds / SETS, 2),
        "steps_per_episode": round(np.mean([s["steps"] for s in result["sets"]]), 1),
        "avg_ntat": round(result["avg_ntat"], 3),
        "avg_wait": round(result["avg_wait"], 3),
        "rewards": round(result["local_return"], 2),
        "avg_penalty": round(result["avg_penalty"], 3),
    }


def main() -> list[dict[str, Any]]:
    """Run the cases, print the tables, write ``results/cush.json``."""
    steps = [
        measure_steps("random valid", CuSHEnv, "random"),
        measure_steps("random valid, gymnasium.make", lambda: gymnasium.make(ENV_ID), "random"),
        measure_steps("SJF+BF", CuSHEnv, "sjf+bf"),
    ]
    print_table(
        "CuSH env steps per second (Sierra, 128 nodes, T = 5, Q = 5)",
        ["case", "steps", "episodes", "seconds", "steps/s", "us/step"],
        [
            [
                r["case"],
                f"{r['steps']:,}",
                r["episodes"],
                f"{r['seconds']:.3f}",
                f"{r['steps_per_s']:,}",
                f"{r['us_per_step']:.1f}",
            ]
            for r in steps
        ],
    )
    baselines = [
        measure_baseline(policy, cluster) for cluster in CLUSTERS for policy in CUSH_BASELINES
    ]
    print_table(
        f"CuSH baselines, {SETS} job sets each (seeds 0..{SETS - 1}; NTAT, wait in steps)",
        ["policy", "cluster", "ms/episode", "steps/episode", "NTAT", "wait", "rewards", "penalty"],
        [
            [
                r["policy"],
                r["cluster"],
                f"{r['ms_per_episode']:.1f}",
                r["steps_per_episode"],
                f"{r['avg_ntat']:.2f}",
                f"{r['avg_wait']:.2f}",
                f"{r['rewards']:.1f}",
                f"{r['avg_penalty']:.2f}",
            ]
            for r in baselines
        ],
    )
    records = [{"kind": "env_steps", **r} for r in steps] + [
        {"kind": "baseline_episodes", **r} for r in baselines
    ]
    write_results("cush", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_cush.py", __doc__ or "")
    main()
