"""How much room each learning setting leaves a learned scheduler (issue 12).

How to run: ``python benchmarks/bench_headroom.py [demo|contended|paper001 ...]`` (default:
all three, about 35 minutes on 2 CPUs), or ``python benchmarks/run.py headroom``.

What you get, per setting of ``bench_learning.py`` and on its held-out seeds
(``evaluation.seeds`` of ``tune/configs/<setting>.yaml``), mean avg JCT with its 95%
Student-t interval over the seeds:

- **lower bound**: no schedule of the workload, learned or not, can do better
  (:mod:`envs.sim.bounds`: a linear relaxation that keeps arrivals, decision rounds,
  GPU capacity and each job's contention-free run time, and drops everything else);
- **best heuristic, no contention**: the best of the pod environment's full heuristic
  table under the ``ideal`` performance model, where placement costs nothing;
- **best heuristic**: the best of the same table under the setting's own model (the
  issue's reference);
- **switching**: a clairvoyant planner that, at the start of every round, simulates each
  of the table's best ``SWITCH_AMONG`` heuristics to the end of the episode and plays the
  round's plan of the one that costs least (``envs.pod.rollouts.SwitchingPolicy``): how
  much choosing among the heuristics round by round, with the future known, could win;
- **priority search**: the best schedule of the heuristics' own form -- a static priority
  order over the jobs, DSIF's hold for locality on or off per job, the best heuristic's
  placement -- found by ``SEARCH_EVALUATIONS`` moves of a seeded local search from the
  best heuristic (when its order is fixed in advance, else ``dsif-patient``) with the
  workload known (``envs.schedulers.priority_search``): a schedule
  that exists, so the best possible avg JCT lies between the bound and it;
- **goal**: the largest avg JCT at which a learned row meets the setting's goal.

The goal's distance to the bound and to the contention-free heuristic says where the
learned policy has to win: a goal above the contention-free best needs only better
placement; one below it needs better ordering as well. ``benchmarks/results/headroom.json``
keeps every row (settings not run this time keep their last record).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

from bench_learning import SETTINGS, Setting, goal_jct
from common import earlier_records, print_table, selected_names, write_results

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tune" / "configs"
HOURS = 3600.0
#: How many of the table's best heuristics the switching planner chooses among.
SWITCH_AMONG = 8
#: Schedules the priority search plays per workload (about 0.1 s each on contended's).
SEARCH_EVALUATIONS = 1000
COLUMNS = [
    "setting",
    "lower bound h",
    "best heuristic, no contention h",
    "best heuristic h",
    f"switching among the best {SWITCH_AMONG} h (paired vs best)",
    f"priority search, {SEARCH_EVALUATIONS} schedules h (paired vs best)",
    "goal h",
    "best / bound",
    "goal / bound",
]


def best_of_table(
    env_config: dict[str, Any], seeds: list[int], perf: str
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The full heuristic table on ``seeds`` under ``perf``, and its best row's name."""
    from tune.confidence import best_heuristic
    from tune.evaluation.comparison import add_statistics
    from tune.evaluation.multi_agent import evaluate
    from tune.experiment import pod_heuristic_names

    names = pod_heuristic_names()
    table = evaluate("pod_scheduling_v0", {**env_config, "perf": perf}, seeds, names)
    add_statistics(table)
    best = best_heuristic(table, names)
    if best is None:
        raise RuntimeError(f"no heuristic finished a job (perf: {perf or 'as configured'})")
    return best, table


def switching_avg_jct(env_config: dict[str, Any], seed: int, names: list[str]) -> float:
    """Avg JCT (s) of one episode of :class:`~envs.pod.rollouts.SwitchingPolicy`."""
    from envs import make_env
    from envs.pod.rollouts import SwitchingPolicy
    from envs.sim import SimulationResult

    env = make_env("pod_scheduling_v0", **env_config)
    env.reset(seed=seed, options={"masks_only": True})
    policy = SwitchingPolicy(env, names, seed=seed)
    while env.agents:
        env.step(policy.actions())
    return float(SimulationResult.from_simulator(env.sim, "switching").metrics()["avg_jct"])


def ranked_by_avg_jct(table: dict[str, Any]) -> list[str]:
    """The table's policies by mean avg JCT, lowest first, NaN (no job arrived on any seed)
    last: NaN compares false both ways, and would leave a plain sort's order undefined."""
    means = {name: float(entry["metrics"]["avg_jct"]) for name, entry in table.items()}
    return sorted(means, key=lambda name: (math.isnan(means[name]), means[name]))


def switching_record(
    env_config: dict[str, Any], seeds: list[int], table: dict[str, dict[str, Any]], best: str
) -> dict[str, Any]:
    """The switching planner over the table's best :data:`SWITCH_AMONG` heuristics on
    ``seeds``: mean, interval, and the paired difference to ``best``."""
    from tune.episode_tasks import play_episodes

    names = ranked_by_avg_jct(table)[:SWITCH_AMONG]
    per_seed = play_episodes(switching_avg_jct, [(env_config, s, names) for s in seeds], 0)
    return {**_against_best("switching", per_seed, table, best), "switching_among": names}


def search_record(
    env_config: dict[str, Any], seeds: list[int], table: dict[str, dict[str, Any]], best: str
) -> dict[str, Any]:
    """The hindsight priority search with ``best``'s placement on ``seeds``: mean,
    interval, per seed, and the paired difference to ``best``."""
    from envs.schedulers import split_scheduler_name
    from envs.schedulers.priority_search import static_orderings
    from tune.episode_tasks import play_episodes

    ordering, placement = split_scheduler_name(best)
    # From the best heuristic itself when its order is fixed in advance (then the search
    # never ends above it), else from dsif-patient.
    start = ordering if ordering in static_orderings() else "dsif-patient"
    calls = [(env_config, seed, placement, SEARCH_EVALUATIONS, start) for seed in seeds]
    per_seed = play_episodes(searched_avg_jct, calls, 0)
    return {
        **_against_best("search", per_seed, table, best),
        "search_start": start,
        "search_placement": placement,
        "search_evaluations": SEARCH_EVALUATIONS,
    }


def _against_best(
    prefix: str, per_seed: list[float], table: dict[str, dict[str, Any]], best: str
) -> dict[str, Any]:
    """``per_seed``'s mean and interval, and its paired difference to ``best``'s episodes,
    under keys starting with ``prefix``."""
    from tune.confidence import mean_ci, paired_relative_ci

    mean, half_width = mean_ci(per_seed)
    best_per_seed = [episode["avg_jct"] for episode in table[best]["episodes"]]
    paired, paired_half_width = paired_relative_ci(per_seed, best_per_seed)
    return {
        prefix: mean,
        f"{prefix}_ci95": half_width,
        f"{prefix}_per_seed": per_seed,
        f"{prefix}_vs_best": paired,
        f"{prefix}_vs_best_ci95": paired_half_width,
    }


def searched_avg_jct(
    env_config: dict[str, Any], seed: int, placement: str, evaluations: int, start: str
) -> float:
    """Avg JCT (s) of the best schedule the priority search finds for one workload."""
    from envs.pod.bounds import pod_priority_search

    return pod_priority_search(env_config, seed, placement, evaluations, start=start).avg_jct_s


def measure(setting: Setting) -> dict[str, Any]:
    """The setting's bound, best heuristics and goal (seconds), as one record."""
    from envs.sim import DEFAULT_PERF
    from tune.evaluation import lower_bound
    from tune.evaluation.comparison import evaluation_env_config
    from tune.experiment import load_config

    config = load_config(CONFIGS / f"{setting.name}.yaml", [])
    env_config = evaluation_env_config(config)
    seeds = list(config.evaluation.seeds)
    started = time.perf_counter()
    bound = lower_bound(config)
    if bound is None:
        raise RuntimeError(f"{setting.name}.yaml does not play the pod environment")
    record: dict[str, Any] = {"setting": setting.name, "goal": setting.goal, "seeds": seeds}
    record["lower_bound"], record["lower_bound_ci95"] = bound["avg_jct"], bound["ci95"]
    record["lower_bound_per_seed"] = bound["per_seed"]
    record["lower_bound_wall_s"] = time.perf_counter() - started
    for perf, prefix in (("ideal", "best_ideal"), (None, "best")):
        model = perf or env_config.get("perf", DEFAULT_PERF)
        best, table = best_of_table(env_config, seeds, model)
        record[f"{prefix}_perf"] = model
        record[f"{prefix}_policy"] = best
        record[prefix] = table[best]["metrics"]["avg_jct"]
        record[f"{prefix}_ci95"] = table[best]["ci95"]["avg_jct"]
        record[f"{prefix}_heuristics"] = len(table)
        if perf is None:
            record["goal_jct"] = goal_jct(setting, table, best)
            record.update(switching_record(env_config, seeds, table, best))
            record.update(search_record(env_config, seeds, table, best))
    record["best_over_bound"] = record["best"] / record["lower_bound"]
    record["goal_over_bound"] = record["goal_jct"] / record["lower_bound"]
    record["wall_s"] = time.perf_counter() - started
    return record


def _hours(mean: float, half_width: float | None = None) -> str:
    text = f"{mean / HOURS:.3f}"
    return text if half_width is None else f"{text} ± {half_width / HOURS:.3f}"


def _named(record: dict[str, Any], prefix: str) -> str:
    return f"{_hours(record[prefix], record[prefix + '_ci95'])} ({record[prefix + '_policy']})"


def _paired(record: dict[str, Any], prefix: str) -> str:
    """``prefix``'s mean ± interval, and its paired difference to the best heuristic."""
    paired, half_width = record[f"{prefix}_vs_best"], record[f"{prefix}_vs_best_ci95"]
    hours = _hours(record[prefix], record[f"{prefix}_ci95"])
    return f"{hours} ({100 * paired:+.1f} ± {100 * half_width:.1f}%)"


def row_of(record: dict[str, Any]) -> list[str]:
    """One printed row of a record."""
    return [
        record["setting"],
        _hours(record["lower_bound"], record["lower_bound_ci95"]),
        _named(record, "best_ideal"),
        _named(record, "best"),
        _paired(record, "switching"),
        _paired(record, "search"),
        _hours(record["goal_jct"]),
        f"{record['best_over_bound']:.2f}x",
        f"{record['goal_over_bound']:.2f}x",
    ]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Measure the selected settings (default all), print the table, write the JSON."""
    selected = selected_names(argv, list(SETTINGS), "bench_headroom.py", about=__doc__)
    import ray  # after the selection: --help and a bad name answer at once

    # The tables' episodes run as Ray tasks, one per CPU.
    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        records = [measure(SETTINGS[name]) for name in selected]
    finally:
        ray.shutdown()
    print_table(
        "Headroom: held-out seeds, mean avg JCT ± 95% CI (best heuristics of the full table)",
        COLUMNS,
        [row_of(record) for record in records],
    )
    write_results("headroom", [*earlier_records("headroom", exclude=selected), *records])
    return records


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (RuntimeError, ValueError) as error:  # one line, exit 1
        sys.exit(f"bench_headroom.py: error: {error}")
