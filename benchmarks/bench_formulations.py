"""Steps per second of the part-2 formulations and their baselines' episode times (no goal
is set): RL-TAPS (003), SCED2 (002) and the contention-aware environment (000).

Each environment takes STEPS steps (with resets), best of REPEAT, choosing uniformly among
the actions its mask allows (RL-TAPS: per GPU among the slots its mask row allows), with
the choice's time included. Then each paper's baselines run one episode on seed 0 through
their ``run_*_baseline`` functions (no Gymnasium observation is drawn). All on the papers'
default clusters: RL-TAPS 4 racks of 2 Minsky machines (32 GPUs), SCED2 15 x 8 GPUs (its
baselines with arrival gaps scaled by 0.4), contention-aware 4 x 8 GPUs with 256-job sets.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import no_arguments, print_table, write_results

from envs.contention import ContentionEnv
from envs.contention.baselines import CONTENTION_BASELINES, run_contention_baseline
from envs.rltaps import RLTapsEnv
from envs.rltaps.baselines import RLTAPS_BASELINES, run_rltaps_baseline
from envs.sced2 import Sced2Env
from envs.sced2.baselines import SCED2_BASELINES, run_sced2_baseline

STEPS = 3_000
REPEAT = 3


def _masked_choice(rng: np.random.Generator) -> Callable[[Any, dict], Any]:
    """A uniformly random allowed action from a Dict observation's ``action_mask``."""

    def choose(obs: Any, info: dict) -> int:
        valid = np.flatnonzero(obs["action_mask"])
        return int(valid[rng.integers(valid.size)])

    return choose


def _per_gpu_choice(rng: np.random.Generator) -> Callable[[Any, dict], Any]:
    """RL-TAPS: for every GPU a uniformly random choice among its allowed ones (the mask
    is flat, GPU after GPU, N + 1 choices each)."""
    slots_and_none = RLTapsEnv().config.num_slots + 1

    def choose(obs: Any, info: dict) -> np.ndarray:
        choices = info["action_mask"].astype(bool)
        mask = choices.reshape(-1, slots_and_none)
        scores = np.where(mask, rng.random(mask.shape), -1.0)
        return scores.argmax(axis=1)

    return choose


CASES: dict[str, tuple[Callable[[], Any], Callable[[np.random.Generator], Callable]]] = {
    "RL-TAPS": (RLTapsEnv, _per_gpu_choice),
    "SCED2": (Sced2Env, _masked_choice),
    "contention-aware": (ContentionEnv, _masked_choice),
}


def measure_steps(name: str) -> dict[str, Any]:
    """Best-of-REPEAT steps per second of one environment under random allowed actions."""
    make, policy = CASES[name]
    env = make()
    best = np.inf
    episodes = 0
    for _ in range(REPEAT):
        choose = policy(np.random.default_rng(0))
        obs, info = env.reset(seed=0)
        episodes = 0
        start = time.perf_counter()
        for _ in range(STEPS):
            obs, _, terminated, truncated, info = env.step(choose(obs, info))
            if terminated or truncated:
                episodes += 1
                obs, info = env.reset()
        best = min(best, time.perf_counter() - start)
    return {
        "formulation": name,
        "steps": STEPS,
        "episodes": episodes,
        "seconds": round(best, 4),
        "steps_per_s": round(STEPS / best),
        "us_per_step": round(1e6 * best / STEPS, 1),
    }


def measure_baselines() -> list[dict[str, Any]]:
    """Seconds per seed-0 episode of every paper baseline, with its headline metric."""
    runs: list[tuple[str, str, Callable[[], dict], str]] = [
        *(
            ("RL-TAPS", policy, lambda p=policy: run_rltaps_baseline(p, seed=0), "mean_slowdown")
            for policy in RLTAPS_BASELINES
        ),
        *(
            # At 002's mean gap the cluster is 41% busy and the six tie; 0.4 separates them.
            ("SCED2", policy, lambda p=policy: run_sced2_baseline(p, interval_scale=0.4), "avg_jct")
            for policy in SCED2_BASELINES
        ),
        *(
            ("contention-aware", p, lambda p=p: run_contention_baseline(p, seed=0), "avg_jct")
            for p in CONTENTION_BASELINES
        ),
    ]
    records = []
    for formulation, policy, run, metric in runs:
        start = time.perf_counter()
        result = run()
        records.append(
            {
                "formulation": formulation,
                "policy": policy,
                "seconds": round(time.perf_counter() - start, 3),
                "metric": metric,
                "value": result[metric],
            }
        )
    return records


def main() -> list[dict[str, Any]]:
    """Run the cases, print the tables, write ``results/formulations.json``."""
    steps = [measure_steps(name) for name in CASES]
    print_table(
        "Part-2 formulations: env steps per second, random allowed actions",
        ["formulation", "steps", "episodes", "seconds", "steps/s", "us/step"],
        [
            [
                r["formulation"],
                f"{r['steps']:,}",
                r["episodes"],
                f"{r['seconds']:.3f}",
                f"{r['steps_per_s']:,}",
                f"{r['us_per_step']:.1f}",
            ]
            for r in steps
        ],
    )
    baselines = measure_baselines()
    print_table(
        "Part-2 baselines: one seed-0 episode each",
        ["formulation", "policy", "seconds", "metric", "value"],
        [
            [r["formulation"], r["policy"], f"{r['seconds']:.2f}", r["metric"], f"{r['value']:.4g}"]
            for r in baselines
        ],
    )
    records = [{"kind": "env_steps", **r} for r in steps] + [
        {"kind": "baseline_episode", **r} for r in baselines
    ]
    write_results("formulations", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_formulations.py", __doc__ or "")
    main()
