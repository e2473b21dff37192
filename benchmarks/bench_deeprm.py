"""DeepRM environment steps per second. Goal: >= 20,000 steps/s with the image observation.

20,000 steps/s is the reference implementation's speed on these machines (issue 7). Each
case runs the default environment (2 resources, T = 20, 5 slots, generated jobs, "all_done"
end, 200-step cap) for STEPS steps, resetting whenever an episode ends (resets included),
and reports the best of three runs:

* "image, random": ``DeepRMEnv.step`` with uniformly random actions drawn beforehand;
* "image, random, gymnasium.make": the same through the registered id (checker and
  order-enforcing wrappers);
* "image, SJF": the SJF baseline picks every action (its time included);
* "compact, random": the compact observation.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from common import no_arguments, print_table, write_results

from envs.deeprm import ENV_ID, DeepRMEnv

STEPS = 50_000
REPEAT = 3
GOAL_STEPS_PER_S = 20_000


def _run(env: gymnasium.Env, choose: Callable[[int], int]) -> tuple[float, int]:
    """Seconds for STEPS steps (with resets) and the number of episodes finished."""
    env.reset(seed=0)
    episodes = 0
    start = time.perf_counter()
    for index in range(STEPS):
        _, _, terminated, truncated, _ = env.step(choose(index))
        if terminated or truncated:
            episodes += 1
            env.reset()
    return time.perf_counter() - start, episodes


def _cases() -> list[tuple[str, Callable[[], gymnasium.Env], str]]:
    return [
        ("image, random", DeepRMEnv, "random"),
        ("image, random, gymnasium.make", lambda: gymnasium.make(ENV_ID), "random"),
        ("image, SJF", DeepRMEnv, "sjf"),
        ("compact, random", lambda: DeepRMEnv(observation="compact"), "random"),
    ]


def measure(label: str, make: Callable[[], gymnasium.Env], policy: str) -> dict[str, Any]:
    """Best-of-REPEAT steps per second of one case."""
    env = make()
    actions = np.random.default_rng(0).integers(env.action_space.n, size=STEPS).tolist()
    if policy == "random":
        choose: Callable[[int], int] = actions.__getitem__
    else:
        unwrapped = env.unwrapped
        choose = lambda _: unwrapped.baseline_action(policy)  # noqa: E731
    runs = [_run(env, choose) for _ in range(REPEAT)]
    seconds, episodes = min(runs)
    rate = STEPS / seconds
    return {
        "case": label,
        "steps": STEPS,
        "episodes": episodes,
        "seconds": round(seconds, 4),
        "steps_per_s": round(rate),
        "us_per_step": round(1e6 / rate, 2),
        "goal_steps_per_s": GOAL_STEPS_PER_S,
        "meets_goal": rate >= GOAL_STEPS_PER_S,
    }


def main() -> list[dict[str, Any]]:
    """Run the cases, print the table, write ``results/deeprm.json``."""
    records = [measure(label, make, policy) for label, make, policy in _cases()]
    print_table(
        f"DeepRM env steps per second (goal: >= {GOAL_STEPS_PER_S:,} steps/s, the reference's)",
        ["case", "steps", "episodes", "seconds", "steps/s", "us/step", "goal met"],
        [
            [
                r["case"],
                f"{r['steps']:,}",
                r["episodes"],
                f"{r['seconds']:.3f}",
                f"{r['steps_per_s']:,}",
                f"{r['us_per_step']:.1f}",
                "yes" if r["meets_goal"] else "NO",
            ]
            for r in records
        ],
    )
    write_results("deeprm", records)
    return records


if __name__ == "__main__":
    no_arguments(sys.argv[1:], "bench_deeprm.py", __doc__ or "")
    main()
