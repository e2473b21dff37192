"""Training throughput of two checkouts, alternated, in one process each (A/B).

A single Tune run's throughput spreads by about 10% on this machine (258-294 env steps/s
for the same code), more than one lever buys; RLlib's timers are moving averages that
include the first, warming iteration. This benchmark measures what a lever changed: it
runs PPO from two source trees (``--baseline``, e.g. ``git worktree add /tmp/base HEAD~1``,
and this checkout) alternately, ``--runs`` times each, every run in a fresh process with
that tree first on ``sys.path``, the env runner and the learner in the process (no Tune).
Each run builds the algorithm, trains one warm-up iteration, then times ``--iterations``
calls of ``algo.train()`` and, inside them, every call of the learner's update. A tree
whose programs set torch's thread waits (``tune.worker_env``) gets them in its runs too.

How to run: ``python benchmarks/ab_training.py --baseline /tmp/base
[--config tune/configs/demo.yaml] [--runs 5] [--iterations 6] [--set KEY=VALUE ...]``.
What you get: per run and per tree (mean and range) env steps/s, seconds per iteration,
learning seconds and everything else (sampling, connectors, metrics) per iteration, on
stdout; ``benchmarks/results/training-ab.json`` with every run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import print_table, write_results

ROOT = Path(__file__).resolve().parents[1]
MARKER = "AB-RESULT "
TREES = ("baseline", "this checkout")
SUMMARY_KEYS = ("env_steps_per_s", "iteration_s", "learning_s", "other_s")

# Runs in the child process: ``sys.argv[1:]`` are the result line's marker, the source tree,
# the config file (relative to the tree), the iterations and the overrides.
CHILD = """
import json, sys, time
marker, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
# The tree's own thread settings, before torch loads, as its train.py makes them. Only
# from the tree's own file: the project's editable install would otherwise serve a module
# the older tree lacks from this checkout.
import os
if os.path.exists(f"{root}/tune/worker_env.py"):
    from tune.worker_env import bound_spin_waits
    bound_spin_waits()
import ray
from tune.experiment import load_config
from tune.rllib_config import algorithm_config
config, iterations, overrides = sys.argv[3], int(sys.argv[4]), sys.argv[5:]
experiment = load_config(f"{root}/{config}", overrides)
ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
algo = algorithm_config(experiment, seed=0).build_algo()
group, update, learning = algo.learner_group, algo.learner_group.update, []
def timed(*args, **kwargs):
    start = time.perf_counter()
    result = update(*args, **kwargs)
    learning.append(time.perf_counter() - start)
    return result
group.update = timed
algo.train()
del learning[:]
walls, steps = [], 0
for _ in range(iterations):
    start = time.perf_counter()
    result = algo.train()
    walls.append(time.perf_counter() - start)
    steps += int(result["env_runners"]["num_env_steps_sampled"])
print(marker + json.dumps({"walls": walls, "learning": learning, "env_steps": steps}))
algo.stop()
ray.shutdown()
"""


def run_once(tree: Path, config: str, iterations: int, overrides: list[str]) -> dict[str, Any]:
    """One measured run of ``tree``'s code: per-iteration means."""
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, MARKER, str(tree), config, str(iterations), *overrides],
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_DEDUP_LOGS": "0"},
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith(MARKER)]
    if completed.returncode != 0 or not lines:
        tail = completed.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"ab_training: the run of {tree} failed: {' | '.join(tail)}")
    measured = json.loads(lines[-1][len(MARKER) :])
    wall, learning = sum(measured["walls"]), sum(measured["learning"])
    return {
        "env_steps_per_s": round(measured["env_steps"] / wall, 1),
        "iteration_s": round(wall / iterations, 3),
        "learning_s": round(learning / iterations, 3),
        "other_s": round((wall - learning) / iterations, 3),
    }


def summarize(records: list[dict[str, Any]]) -> list[list[Any]]:
    """Per tree: the number of runs, then "mean (min-max)" of each summary figure."""
    rows = []
    for label in TREES:
        mine = [record for record in records if record["tree"] == label]
        cells = []
        for key in SUMMARY_KEYS:
            values = [record[key] for record in mine]
            mean = sum(values) / len(values)
            cells.append(f"{mean:.3g} ({min(values):.3g}-{max(values):.3g})")
        rows.append([label, len(mine), *cells])
    return rows


def build_parser() -> argparse.ArgumentParser:
    """The command line of this benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, required=True, help="source tree of the code to compare with"
    )
    parser.add_argument(
        "--config",
        default="tune/configs/demo.yaml",
        help="experiment YAML, relative to each tree (default tune/configs/demo.yaml)",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs of each tree (alternated)")
    parser.add_argument("--iterations", type=int, default=6, help="measured iterations a run")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key in both trees (repeatable; num_env_runners=0 is preset)",
    )
    return parser


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Alternate the two trees; print the table; write ``results/training-ab.json``."""
    args = build_parser().parse_args(argv)
    baseline = args.baseline.resolve()
    for tree in (baseline, ROOT):
        if not (tree / args.config).is_file():
            raise SystemExit(f"ab_training: {tree} has no {args.config}")
    if args.runs < 1 or args.iterations < 1:
        raise SystemExit("ab_training: --runs and --iterations must be at least 1")
    records = []
    for run in range(args.runs):
        for label, tree in zip(TREES, (baseline, ROOT), strict=True):
            record = {"tree": label, "path": str(tree), "run": run}
            overrides = ["resources.num_env_runners=0", *args.set]
            record.update(run_once(tree, args.config, args.iterations, overrides))
            print(f"{label} run {run}: {record['env_steps_per_s']} env steps/s", flush=True)
            records.append(record)
    print_table(
        f"A/B training throughput, {args.config} (mean (range) of per-run means)",
        ["tree", "runs", "env steps/s", "s/iter", "learning s/iter", "other s/iter"],
        summarize(records),
    )
    write_results("training-ab", records)
    return records


if __name__ == "__main__":
    main(sys.argv[1:])
