"""Training throughput of the demo experiment with 0, 1 and 2 remote env runners.

Env steps and agent steps per second of a PPO iteration on this machine, and the time of
an iteration split into sampling and learning (RLlib's timers). ``episodes_to_numpy`` is
off, as the field notes advise. The first iteration is a warm-up and is not counted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from common import print_table, write_results

from tune.experiment import load_config
from tune.rllib_config import algorithm_config

DEMO = Path(__file__).resolve().parents[1] / "tune" / "configs" / "demo.yaml"
MEASURED_ITERATIONS = 2


def measure(env_runners: int) -> dict:
    """Build the demo's algorithm with ``env_runners`` remote runners and time it."""
    experiment = load_config(DEMO, [f"resources.num_env_runners={env_runners}"])
    algo = algorithm_config(experiment, seed=0).build_algo()
    try:
        algo.train()  # warm-up: env construction, PyG templates, first sync
        env_steps = agent_steps = sampling = learning = 0.0
        start = time.perf_counter()
        for _ in range(MEASURED_ITERATIONS):
            result = algo.train()
            runners = result["env_runners"]
            env_steps += runners.get("num_env_steps_sampled", 0)
            agent_steps += sum(runners.get("num_agent_steps_sampled", {}).values())
            sampling += result["timers"]["env_runner_sampling_timer"]
            learning += result["timers"]["learner_update_timer"]
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
    return {
        "env_runners": env_runners,
        "env_steps_per_s": round(env_steps / elapsed, 1),
        "agent_steps_per_s": round(agent_steps / elapsed, 1),
        "iteration_s": round(elapsed / MEASURED_ITERATIONS, 2),
        "sampling_s": round(sampling / MEASURED_ITERATIONS, 2),
        "learning_s": round(learning / MEASURED_ITERATIONS, 2),
    }


def main() -> list[dict]:
    """Measure 0, 1, 2 env runners; print the table; write ``results/training.json``."""
    import ray

    session = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=session)
    try:
        records = [measure(runners) for runners in (0, 1, 2)]
    finally:
        ray.shutdown()
        shutil.rmtree(session, ignore_errors=True)
    print_table(
        "Demo training throughput (PPO, fat-tree k=4, 4 agents, 2 CPUs)",
        ["env runners", "env steps/s", "agent steps/s", "s/iteration", "sampling s", "learning s"],
        [
            [
                r["env_runners"],
                r["env_steps_per_s"],
                r["agent_steps_per_s"],
                r["iteration_s"],
                r["sampling_s"],
                r["learning_s"],
            ]
            for r in records
        ],
    )
    write_results("training", records)
    return records


if __name__ == "__main__":
    main()
