"""Training throughput of the per-pod GNN agents, end to end as Tune reports it.

Each case trains PPO through Ray Tune (the path ``platform/train.py`` takes, so the trial
process gets the CPUs -- and torch threads -- its resources ask for) for a warm-up
iteration and ``--iterations`` measured ones, and reads back what Tune recorded per
iteration: env and agent steps per second, sampling and learning seconds (RLlib's
timers), and the env runner's per-step means: environment step, module inference and
connector pipelines (observation batching and tensor conversion). Cases: the demo
experiment (fat-tree k=4, 4 agents) with 0, 1 and 2 remote env runners, and the paper
scale k=20 experiment (20 agents) with a batch that fits this machine.

How to run: ``python benchmarks/bench_training.py [--cases demo-0,k20] [--label before]``.
What you get: a table on stdout and ``benchmarks/results/training.json`` (goal: at least
500 env steps/s on the demo, 4x the 87-121 measured before this benchmark's levers).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import case_list, label_argument, positive_int, print_table, write_results

from tune.cli import OneLineParser
from tune.experiment import load_config
from tune.rllib_config import algorithm_config
from tune.worker_env import worker_env_vars

CONFIGS = Path(__file__).resolve().parents[1] / "tune" / "configs"
GOAL_ENV_STEPS_PER_S = 500.0
# Iterations averaged per case after the warm-up one: an iteration's time moves by 5-10%
# on these shared 2-core machines, so a mean of two said little.
MEASURED_ITERATIONS = 5
# k=20: 20 agents' observations of 184 KB each; 8,000 env steps (the config's batch) would
# hold ~29 GB, so the benchmark samples 200 env steps (4,000 agent steps) per iteration
# in minibatches of 200 agent steps, and the learner gets both cores as in the demo.
CASES: dict[str, tuple[str, list[str]]] = {
    "demo-0": ("demo.yaml", ["resources.num_env_runners=0"]),
    # One remote runner keeps the demo's helper process (the learner waits while it
    # samples); two runners already fill both cores, so each steps its environments alone.
    "demo-1": ("demo.yaml", ["resources.num_env_runners=1"]),
    "demo-2": ("demo.yaml", ["resources.num_env_runners=2", "resources.env_processes=1"]),
    "k20": (
        "fattree_k20.yaml",
        [
            "resources.num_env_runners=0",
            "resources.num_envs_per_env_runner=1",
            "algorithm.train_batch_size=200",
            "algorithm.minibatch_size=200",
            "resources.num_cpus_per_learner=2",
        ],
    ),
}
LEARNING_STATS = ("policy_loss", "mean_kl_loss", "entropy", "vf_loss")
COLUMNS = [
    ("env_runners/num_env_steps_sampled", "env_steps"),
    ("time_this_iter_s", "iteration_s"),
    ("timers/env_runner_sampling_timer", "sampling_s"),
    ("timers/learner_update_timer", "learning_s"),
    ("env_runners/env_step_timer", "env_step_ms"),
    ("env_runners/rlmodule_inference_timer", "inference_ms"),
    ("env_runners/connector_pipeline_timer", "connectors_ms"),
]


def measure(
    case: str, iterations: int, storage: Path, extra: list[str], seed: int = 0
) -> dict[str, Any]:
    """Train ``case`` through Tune for 1 + ``iterations`` iterations; mean of the measured.

    ``extra``: more ``key=value`` overrides for every case (e.g. the same settings as an
    older version, to compare like with like)."""
    from ray import tune as ray_tune

    file_name, overrides = CASES[case]
    overrides = [*overrides, *extra]
    experiment = load_config(CONFIGS / file_name, overrides)
    config = algorithm_config(experiment, seed=seed)
    tuner = ray_tune.Tuner(
        experiment.algorithm.name,
        param_space=config,
        run_config=ray_tune.RunConfig(
            name=f"bench-{case}-{seed}",
            storage_path=str(storage),
            stop={"training_iteration": 1 + iterations},
            verbose=0,
        ),
    )
    [result] = list(tuner.fit())
    if result.error is not None:
        raise RuntimeError(f"{case}: the trial failed: {result.error}")
    first = result.metrics_dataframe.iloc[0]
    # The first iteration's learning statistics: with the same seed and settings they show
    # whether a speed-up changed what PPO computes (equal up to float rounding and noise).
    learning_stats = {
        name: round(float(first[column]), 5)
        for column in first.index
        for name in LEARNING_STATS
        if column.startswith("learners/")
        and column.endswith(f"/{name}")
        and "__all_modules__" not in column
    }
    frame = result.metrics_dataframe.iloc[1:]  # the first iteration builds and warms up
    values = {name: float(frame[column].mean()) for column, name in COLUMNS if column in frame}
    agents = [c for c in frame if c.startswith("env_runners/num_agent_steps_sampled/")]
    agent_steps = float(frame[agents].sum(axis=1).mean()) if agents else float("nan")
    seconds = values["iteration_s"]
    return {
        "case": case,
        "seed": seed,
        "config": file_name,
        "overrides": overrides,
        "env_steps_per_s": round(values["env_steps"] / seconds, 1),
        "agent_steps_per_s": round(agent_steps / seconds, 1),
        "iteration_s": round(seconds, 2),
        "sampling_s": round(values["sampling_s"], 2),
        "learning_s": round(values["learning_s"], 2),
        # The env runner's per-step means (seconds in RLlib's metrics), in milliseconds.
        "env_step_ms": round(1e3 * values.get("env_step_ms", float("nan")), 3),
        "inference_ms": round(1e3 * values.get("inference_ms", float("nan")), 3),
        "connectors_ms": round(1e3 * values.get("connectors_ms", float("nan")), 3),
        "first_iteration": learning_stats,
    }


def seed_list(text: str) -> list[int]:
    """An argparse ``type`` for ``--seeds``: comma-separated non-negative integers, each once."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() and part.isascii() for part in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give comma-separated non-negative integers, such as 0,1,2"
        )
    seeds = [int(part) for part in parts]
    repeated = [seed for index, seed in enumerate(seeds) if seed in seeds[:index]]
    if repeated:
        raise argparse.ArgumentTypeError(
            f"{text!r}: seed {repeated[0]} is named more than once; name each seed once"
        )
    return seeds


def build_parser() -> OneLineParser:
    """The command line of this benchmark."""
    parser = OneLineParser(prog="bench_training.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        default=",".join(CASES),
        help=f"comma-separated cases to run (default all: {', '.join(CASES)})",
    )
    parser.add_argument(
        "--iterations",
        type=positive_int,
        default=MEASURED_ITERATIONS,
        help=f"measured iterations, >= 1 (default {MEASURED_ITERATIONS})",
    )
    parser.add_argument(
        "--label",
        type=label_argument,
        default="after",
        help="a label stored with each record; other than 'after' (the default) it names the "
        "results file, results/training-LABEL.json (letters, digits, '_', '-', '.')",
    )
    parser.add_argument(
        "--seeds",
        type=seed_list,
        default=[0],
        help="comma-separated training seeds, non-negative and each once; each case runs once "
        "per seed (default 0)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key in every case (repeatable)",
    )
    return parser


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The options and the cases; a bad command line is one line and exit 2, before Ray."""
    parser = build_parser()
    args = parser.parse_or_exit([] if argv is None else argv)
    try:
        cases = case_list(args.cases, list(CASES))
    except ValueError as error:
        parser.refuse(error)
    for case in cases:  # a bad --set fails here, not in a trial after Ray started
        file_name, overrides = CASES[case]
        try:
            load_config(CONFIGS / file_name, [*overrides, *args.set])
        except ValueError as error:
            parser.refuse(f"case {case} with --set {args.set}: {error}")
    return args, cases


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Measure the selected cases; print the table; write ``results/training.json``."""
    args, cases = parse(argv)
    import ray

    session = Path(tempfile.mkdtemp(prefix="bench-training-", dir="/tmp"))
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # Four logical CPUs on two cores, so that remote env runners (one CPU each) fit beside
    # the trial process: the cases measure what oversubscribing the two cores gives.
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(session),
        runtime_env={"env_vars": worker_env_vars()},  # the trials' threads as train.py's
    )
    try:
        records = [
            {
                "label": args.label,
                **measure(case, args.iterations, session / "results", args.set, seed),
            }
            for case in cases
            for seed in args.seeds
        ]
    finally:
        ray.shutdown()
        shutil.rmtree(session, ignore_errors=True)
    print_table(
        f"Training throughput through Tune (PPO, 2 CPUs; goal >= {GOAL_ENV_STEPS_PER_S:.0f} "
        "env steps/s on the demo)",
        [
            "case",
            "env steps/s",
            "agent steps/s",
            "s/iter",
            "sampling s",
            "learning s",
            "env ms/step",
            "inference ms/step",
            "connectors ms/step",
        ],
        [
            [
                f"{r['label']}:{r['case']}",
                r["env_steps_per_s"],
                r["agent_steps_per_s"],
                r["iteration_s"],
                r["sampling_s"],
                r["learning_s"],
                r["env_step_ms"],
                r["inference_ms"],
                r["connectors_ms"],
            ]
            for r in records
        ],
    )
    write_results(f"training-{args.label}" if args.label != "after" else "training", records)
    return records


if __name__ == "__main__":
    main(sys.argv[1:])
