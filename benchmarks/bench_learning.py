"""Learned schedulers against the full heuristic table, one setting at a time (issue 12).

How to run: ``python benchmarks/bench_learning.py [demo|contended|paper001 ...]`` (default:
all three; each trains for about 15 minutes on 2 CPUs, then evaluates), or
``python benchmarks/run.py learning``.

What you get: for each setting, ``platform/train.py --config tune/configs/<setting>.yaml
--json`` runs as a subprocess (its wall clock timed); from its JSON, one table per setting:
every learned row and the best heuristic (marked ``*``) plus the heuristics the goal names,
with avg JCT as mean ± 95% Student-t confidence interval over the held-out seeds, p90 JCT,
CS (mean contention), the difference to the best heuristic, and whether the setting's goal
is met, and which trained policy was evaluated (with ``evaluation.validation_seeds``:
every candidate's validation avg JCT); ``benchmarks/results/learning.json``, written after
each setting, with every row of every table (settings not run this time, or whose training
failed, keep their last record there). A training run that exits non-zero but still prints
its JSON result (train.py exits 1 when only the MLflow logging failed) is kept, with a
warning line and its exit status in the record; one without its result stops the benchmark
with one line naming the setting (exit 1). A result without the evaluation (train.py's
``--skip-evaluation``) is one row saying the evaluation was skipped, with the training's
figures and checkpoint (``evaluation_skipped`` in the record). A result the report cannot
make a table of is written all the same, train.py's whole object under ``train_output``
with ``report_error``, said on stderr; the other settings still run, and the benchmark
exits 1 naming the settings whose report failed. ``--help`` lists the settings.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import earlier_records, print_table, selected_names, write_results

from tune.train_output import read_train_output

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "platform" / "train.py"
CONFIGS = ROOT / "tune" / "configs"
STORAGE = ROOT / ".scratch" / "bench_learning"
#: 001's baselines, which the paper001 goal names one by one.
PAPER_BASELINES = ("fifo+tetris", "fifo+load-balancing", "fifo+lif")


@dataclass(frozen=True)
class Setting:
    """A config and the goal its learned row must reach on mean avg JCT.

    ``within``: at most this much worse than the best heuristic (0.03: within 3%).
    ``below_best``: at least this much lower than the best heuristic. ``below_each``: at
    least ``below_each[1]`` lower than each of the heuristics ``below_each[0]``.
    """

    name: str
    goal: str
    within: float | None = None
    below_best: float | None = None
    below_each: tuple[tuple[str, ...], float] | None = None


SETTINGS = {
    setting.name: setting
    for setting in (
        Setting("demo", "learned avg JCT within 3% of the best heuristic", within=0.03),
        Setting("contended", ">= 10% lower avg JCT than the best heuristic", below_best=0.10),
        Setting(
            "paper001",
            ">= 20% lower avg JCT than each of fifo+tetris, fifo+load-balancing, fifo+lif, "
            "and no worse than the best heuristic",
            within=0.0,
            below_each=(PAPER_BASELINES, 0.20),
        ),
    )
}


def goal_jct(setting: Setting, policies: dict[str, dict[str, Any]], best: str) -> float:
    """The largest mean avg JCT (s) a learned row may have and meet ``setting``'s goal,
    from ``policies``' mean avg JCTs (``[name]["metrics"]["avg_jct"]``); NaN when a
    heuristic the goal names has none."""
    references = [
        policies.get(name, {}).get("metrics", {}).get("avg_jct")
        for name in (best, *(setting.below_each[0] if setting.below_each else ()))
    ]
    if any(reference is None or not reference > 0 for reference in references):
        return math.nan
    best_jct, *named = references
    limits = []
    if setting.within is not None:
        limits.append(best_jct * (1 + setting.within))
    if setting.below_best is not None:
        limits.append(best_jct * (1 - setting.below_best))
    if setting.below_each is not None:
        limits += [reference * (1 - setting.below_each[1]) for reference in named]
    return min(limits)


def goal_met(setting: Setting, payload: dict[str, Any]) -> bool | None:
    """Whether the learned summary row meets ``setting``'s goal (None: nothing to judge)."""
    summary = payload.get("summary") or {}
    learned, best = summary.get("learned"), summary.get("best_heuristic")
    policies = payload.get("evaluation") or {}
    if learned is None or best is None:
        return None
    value = policies[learned]["metrics"].get("avg_jct")
    if value is None:
        return None
    return bool(value <= goal_jct(setting, policies, best))  # False against NaN


def train(setting: Setting) -> tuple[dict[str, Any], float, int]:
    """Run train.py on the setting's config; its final JSON object, wall-clock seconds and
    exit status.

    A non-zero exit with the JSON object still on stdout's last line (train.py exits 1 when
    only the MLflow logging failed: ``evaluation_unlogged``) keeps the result, with one
    warning line on stderr; so does an object without the evaluation (``--skip-evaluation``:
    :func:`report` says so). Without the object, RuntimeError naming the setting."""
    command = [
        sys.executable,
        str(TRAIN),
        "--config",
        str(CONFIGS / f"{setting.name}.yaml"),
        "--storage",
        str(STORAGE),
        "--json",
    ]
    print(f"training {setting.name}: {' '.join(command[1:])}", flush=True)
    started = time.perf_counter()
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env={**os.environ}, check=False
    )
    elapsed = time.perf_counter() - started
    payload, problem = read_train_output(result.stdout, result.returncode)
    if payload is None:
        last_error = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        raise RuntimeError(
            f"train.py on {setting.name} exited with status {result.returncode}"
            + (f": {last_error}" if last_error else " without its JSON result")
        )
    if problem:
        print(
            f"bench_learning.py: warning: {setting.name}: {problem}; its result is kept",
            file=sys.stderr,
            flush=True,
        )
    return payload, elapsed, result.returncode


def _hours(seconds: Any) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.3f}"


def _minutes(seconds: Any) -> float | None:
    """Seconds as minutes to 2 places; None when there is no number."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return round(seconds / 60, 2)


def evaluated(payload: dict[str, Any]) -> bool:
    """Whether train.py's object holds the held-out evaluation: not when it ran with
    ``--skip-evaluation`` (``evaluation`` and ``summary`` empty) or left the part out."""
    return bool(payload.get("evaluation"))


def rows_of(setting: Setting, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's rows: learned rows, the best heuristic, and the heuristics of the goal."""
    summary = payload["summary"]
    policies = payload["evaluation"]
    best = summary["best_heuristic"]
    shown = [name for name, entry in policies.items() if entry["kind"] == "learned"]
    shown += [best] if best else []
    if setting.below_each is not None:
        shown += [name for name in setting.below_each[0] if name in policies and name != best]
    rows = []
    for name in shown:
        entry = policies[name]
        paired = (summary.get("paired_to_best") or {}).get(name) or [None, None]
        rows.append(
            {
                "setting": setting.name,
                "policy": name,
                "kind": entry["kind"],
                "best_heuristic": name == best,
                "learned_summary": name == summary["learned"],
                "avg_jct": entry["metrics"].get("avg_jct"),
                "avg_jct_ci95": entry["ci95"].get("avg_jct"),
                "p90_jct": entry["metrics"].get("p90_jct"),
                "p90_jct_ci95": entry["ci95"].get("p90_jct"),
                "avg_contention": entry["metrics"].get("avg_contention"),
                "avg_contention_ci95": entry["ci95"].get("avg_contention"),
                "vs_best": summary["relative_to_best"].get(name),
                "paired_vs_best": paired[0],
                "paired_vs_best_ci95": paired[1],
                "seeds": len(entry["seeds"]),
            }
        )
    return rows


def run_fields(
    setting: Setting, payload: dict[str, Any], wall_s: float, exit_status: int
) -> dict[str, Any]:
    """The fields every record of a setting has, whatever became of its report: the goal,
    the times, the checkpoint and train.py's exit status, and where an evaluation the
    tracking server would not take was kept."""
    return {
        "setting": setting.name,
        "goal": setting.goal,
        "training_minutes": _minutes(payload.get("training_s")),
        "evaluation_minutes": _minutes(payload.get("evaluation_s")),
        "wall_minutes": round(wall_s / 60, 2),
        "checkpoint": payload.get("checkpoint"),
        "train_exit_status": exit_status,
        "evaluation_unlogged": payload.get("evaluation_unlogged"),
    }


def report_unevaluated(
    setting: Setting, payload: dict[str, Any], wall_s: float, exit_status: int = 0
) -> dict[str, Any]:
    """:func:`report` of a result without the evaluation: one row saying it was skipped,
    the training's figures and the trained policy's checkpoint kept; no goal judged."""
    training = _minutes(payload.get("training_s"))
    print_table(
        f"{setting.name}: evaluation skipped, training "
        f"{'?' if training is None else f'{training:.1f}'} min, wall {wall_s / 60:.1f} min"
        f" | goal: {setting.goal} -> ? (nothing evaluated)",
        ["", "policy", "avg JCT h ±95%", "p90 JCT h", "CS", "vs best"],
        [["", "evaluation skipped", "-", "-", "-", "-"]],
    )
    print(f"  trained policy: {payload.get('checkpoint')}")
    return {
        **run_fields(setting, payload, wall_s, exit_status),
        "goal_met": None,
        "evaluation_skipped": True,
        "best_heuristic": None,
        "learned": None,
        "heuristics": None,
        "seeds": [],
        "validation": None,
        "lower_bound": None,
        "rows": [],
    }


def unreported(
    setting: Setting, payload: dict[str, Any], wall_s: float, exit_status: int, error: Exception
) -> dict[str, Any]:
    """The record of a setting whose :func:`report` failed: the error and train.py's whole
    object (``train_output``), so that nothing the training made is lost."""
    return {
        **run_fields(setting, payload, wall_s, exit_status),
        "goal_met": None,
        "report_error": f"{type(error).__name__}: {error}",
        "train_output": payload,
        "rows": [],
    }


def report(
    setting: Setting, payload: dict[str, Any], wall_s: float, exit_status: int = 0
) -> dict[str, Any]:
    """Print the setting's table; return its record for the JSON file (``exit_status``:
    train.py's, recorded with where an unlogged evaluation's files are). A result without
    the evaluation: :func:`report_unevaluated`."""
    if not evaluated(payload):
        return report_unevaluated(setting, payload, wall_s, exit_status)
    rows = rows_of(setting, payload)
    met = goal_met(setting, payload)
    summary = payload["summary"]
    table = []
    for row in rows:
        mark = "*" if row["best_heuristic"] else ">" if row["learned_summary"] else ""
        mean = _hours(row["avg_jct"])
        if row["avg_jct_ci95"] is not None:
            mean += f" ± {_hours(row['avg_jct_ci95'])}"
        vs_best = "-" if row["vs_best"] is None else f"{100 * row['vs_best']:+.1f}%"
        paired = row["paired_vs_best"]
        if paired is not None and math.isfinite(paired):
            half = row["paired_vs_best_ci95"]
            spread = f" ± {100 * half:.1f}" if half is not None and math.isfinite(half) else ""
            vs_best += f" (paired {100 * paired:+.1f}{spread}%)"
        contention = "-" if row["avg_contention"] is None else f"{row['avg_contention']:.3f}"
        table.append([mark, row["policy"], mean, _hours(row["p90_jct"]), contention, vs_best])
    print_table(
        f"{setting.name}: {summary['heuristics']} heuristics, {len(summary['seeds'])} held-out "
        f"seeds, training {payload.get('training_s', 0) / 60:.1f} min, wall {wall_s / 60:.1f} min"
        f" | goal: {setting.goal} -> {'MET' if met else 'not met' if met is False else '?'}",
        ["", "policy", "avg JCT h ±95%", "p90 JCT h", "CS", "vs best"],
        table,
    )
    print("* best heuristic  > learned row of the summary (evaluation.greedy)")
    bound = summary.get("lower_bound")
    if bound:
        print(
            f"  lower bound on avg JCT (no schedule beats it; bench_headroom.py): "
            f"{_hours(bound['avg_jct'])} ± {_hours(bound['ci95'])} h"
        )
    validation = summary.get("validation")
    if validation:
        for label, score in validation.get("clones", {}).items():
            print(f"  clone-seed avg JCT {_hours(score)} h: warm-start {label}")
        for label, score in validation["avg_jct"].items():
            print(f"  validation avg JCT {_hours(score)} h: {label}")
        print(f"  evaluated: {validation['chosen']}")
    # train() already said why a non-zero exit's result was kept; the record keeps it too
    # (run_fields: evaluation_unlogged).
    return {
        **run_fields(setting, payload, wall_s, exit_status),
        "goal_met": met,
        "evaluation_skipped": False,
        "best_heuristic": summary["best_heuristic"],
        "learned": summary["learned"],
        "heuristics": summary["heuristics"],
        "seeds": summary["seeds"],
        "validation": validation,
        "lower_bound": bound,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Train and evaluate the selected settings (argv names them; default all); print one
    table per setting; write ``results/learning.json`` after each setting, so a later
    setting's failure loses none of the earlier ones (nor the last records of the rest).

    A setting whose report fails (a result the table cannot be made of) is recorded all
    the same, with the error and train.py's whole object (:func:`unreported`), said on
    stderr, and the other settings still run; then RuntimeError naming those settings."""
    selected = selected_names(argv, list(SETTINGS), "bench_learning.py", about=__doc__)
    records: list[dict[str, Any]] = []
    unreportable: list[str] = []
    for name in selected:
        setting = SETTINGS[name]
        payload, wall_s, exit_status = train(setting)
        try:
            record = report(setting, payload, wall_s, exit_status)
        except Exception as error:  # whatever the table trips on, the training is kept
            record = unreported(setting, payload, wall_s, exit_status, error)
            unreportable.append(name)
        records.append(record)
        done = [record["setting"] for record in records]
        path = write_results("learning", [*earlier_records("learning", exclude=done), *records])
        if name in unreportable:
            print(
                f"bench_learning.py: error: {name}: the report failed "
                f"({record['report_error']}); train.py's result is kept in {path} "
                f"(train_output of its record)",
                file=sys.stderr,
                flush=True,
            )
    if unreportable:
        raise RuntimeError(
            f"the report of {', '.join(unreportable)} failed; train.py's result is kept in "
            f"{path} (train_output)"
        )
    return records


def cli(argv: list[str]) -> int:
    """:func:`main` as a program: a failed training run is one line on stderr, exit 1."""
    try:
        main(argv)
    except RuntimeError as error:
        print(f"bench_learning.py: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
