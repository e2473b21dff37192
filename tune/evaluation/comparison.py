"""Held-out evaluation of an experiment: its learned policy next to its baselines.

One entry point for ``platform/train.py`` and ``platform/evaluate.py``, whatever the
environment: the multi-agent ``pod_scheduling_v0`` plays the simulator's schedulers in
parallel over Ray (:mod:`tune.evaluation.multi_agent`); a single-agent formulation plays its
paper's baselines on the same seeded episodes (:mod:`tune.evaluation.single_agent`).

The protocol, whatever the environment: every policy plays one episode per held-out
evaluation seed (never a training seed); the learned policy plays twice, greedily
(``learned-greedy``) and sampled with a per-episode seed (``learned-sampled``); each row
keeps its per-seed metrics and reports their mean with a 95% Student-t confidence interval
(:mod:`tune.confidence`); the best heuristic is the one with the lowest mean of the
environment's ranking metric (:func:`ranking_metric`: avg JCT, or the formulation's paper
headline such as DeepRM's and RL-TAPS' slowdown or CuSH's NTAT), and the learned row of
the summary -- the greedy one if ``evaluation.greedy``, else the sampled one -- is compared
with it as a relative difference. A single-agent formulation that leaves the summary of an
episode cut off by the step cap out of the means (all but RL-TAPS,
:func:`tune.evaluation.single_agent.counted`) averages each row over the seeds it
finished: a row cut off on any seed is not ranked and gets no relative difference (its
mean covers other, easier seeds), the summary names it (``truncated_rows``) with the number
of seeds each row's mean counts (``seeds_counted``), and the table says so.

How to use::

    from tune.evaluation import evaluate_experiment, module_paths, summary
    from tune.rllib_config import module_ids

    table = evaluate_experiment(experiment, module_paths(checkpoint, module_ids(experiment)))
    table["learned-greedy"]["metrics"]["avg_jct"], table["fifo+packing"]["ci95"]["avg_jct"]
    summary(experiment, table)["best_heuristic"]
"""

from __future__ import annotations

import math
from typing import Any

from envs.sim.report import align_rows
from tune.confidence import (
    CI_SUFFIX,
    HEADLINE_METRICS,
    best_heuristic,
    finite_values,
    mean_ci,
    paired_relative_ci,
    relative_difference,
)
from tune.evaluation.common import (
    LEARNED,
    LEARNED_GREEDY,
    LEARNED_SAMPLED,
    is_learned,
    learned_rows,
)
from tune.experiment import ExperimentConfig

#: The metric that ranks the heuristics and compares the learned policy with the best,
#: unless the environment declares its own (:func:`ranking_metric`).
RANKING_METRIC = "avg_jct"


def ranking_metric(environment: str) -> str:
    """The metric (lower is better) that ranks ``environment``'s policies: a single-agent
    formulation's declared ``ranking_metric``, :data:`RANKING_METRIC` for the pod
    environment."""
    from envs.registry import SINGLE_AGENT_ENVIRONMENTS, formulation

    if environment in SINGLE_AGENT_ENVIRONMENTS:
        return formulation(environment).ranking_metric
    return RANKING_METRIC


def evaluate_experiment(
    experiment: ExperimentConfig, modules: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{policy: {"metrics": means, "ci95": half-widths, "episodes": per-seed metrics,
    "seeds", "kind", ...}}`` for the learned policy's two rows (when ``modules``, module
    id -> checkpoint folder, is given) and the configured baselines, on
    ``experiment.evaluation``'s seeds and environment overrides."""
    from envs.registry import MULTI_AGENT_ENVIRONMENTS

    env_name = experiment.environment.name
    env_config = evaluation_env_config(experiment)
    evaluation = experiment.evaluation
    baselines = evaluation.baselines_for(env_name)
    seeds = list(evaluation.seeds)
    if env_name in MULTI_AGENT_ENVIRONMENTS:
        from tune.evaluation.multi_agent import evaluate

        table = evaluate(
            env_name,
            env_config,
            seeds,
            baselines,
            modules,
            local_episodes=experiment.resources.local_episodes,
        )
    else:
        table = _evaluate_single_agent(env_name, env_config, seeds, baselines, modules)
    return add_statistics(table, env_name)


def evaluation_env_config(experiment: ExperimentConfig) -> dict[str, Any]:
    """The environment config the held-out episodes play: the experiment's, with
    ``evaluation.environment``'s overrides (a larger fabric, another workload)."""
    return {**experiment.environment.config, **experiment.evaluation.environment}


def lower_bound(experiment: ExperimentConfig) -> dict[str, Any] | None:
    """The pod environment's mean-JCT lower bound on the held-out workloads
    (:mod:`envs.pod.bounds`: no schedule, learned or heuristic, beats it) as ``{"avg_jct":
    mean over the seeds, "ci95": half-width, "per_seed": [...]}``; None for the
    single-agent formulations, whose metrics it does not bound."""
    if experiment.environment.name != "pod_scheduling_v0":
        return None
    from envs.pod.bounds import pod_jct_lower_bound

    env_config = evaluation_env_config(experiment)
    per_seed = [
        pod_jct_lower_bound(env_config, seed).mean_jct_s for seed in experiment.evaluation.seeds
    ]
    mean, half_width = mean_ci(per_seed)
    return {"avg_jct": mean, "ci95": half_width, "per_seed": per_seed}


def bound_metrics(info: dict[str, Any], policy: str | None = None) -> dict[str, float]:
    """The lower bound of ``info`` (:func:`summary`) as MLflow metrics for the run of row
    ``policy`` (empty without a bound, and for a row whose episodes left jobs unfinished:
    the bound does not bound its avg JCT)."""
    bound = info.get("lower_bound")
    if not bound or policy in info.get("lower_bound_unbounded", []):
        return {}
    metrics = {"lower_bound_avg_jct": bound["avg_jct"]}
    if math.isfinite(bound["ci95"]):
        metrics[f"lower_bound_avg_jct{CI_SUFFIX}"] = bound["ci95"]
    return metrics


def _evaluate_single_agent(
    env_name: str,
    env_config: dict[str, Any],
    seeds: list[int],
    baselines: list[str],
    modules: dict[str, str] | None,
) -> dict[str, dict[str, Any]]:
    """The formulation's table with the learned policy as its greedy and sampled rows."""
    from tune.evaluation.single_agent import evaluate_single_agent

    table: dict[str, dict[str, Any]] = {}
    if modules is not None:
        for row in learned_rows():
            played = evaluate_single_agent(
                env_name,
                env_config,
                seeds,
                modules["default_policy"],
                [],
                greedy=row == LEARNED_GREEDY,
            )
            table[row] = played[LEARNED]
    if baselines:
        table.update(evaluate_single_agent(env_name, env_config, seeds, None, baselines))
    for entry in table.values():
        entry["seeds"] = list(seeds)
    return table


def add_statistics(
    table: dict[str, dict[str, Any]], env_name: str = "pod_scheduling_v0", level: float = 0.95
) -> dict[str, dict[str, Any]]:
    """Add each row's ``kind``, ``ci95`` (``{metric: half-width}`` of the ``level``
    Student-t interval of its mean over seeds, from its ``episodes``) and ``ranking_metric``
    (``env_name``'s :func:`ranking_metric`, whose half-width :func:`ci_metrics` logs);
    returns ``table``.

    The intervals cover the same episodes as the means: for a single-agent formulation the
    summary metrics of truncated episodes are left out
    (:func:`tune.evaluation.single_agent.counted`).
    """
    fair = _fair(env_name)
    ranked_by = ranking_metric(env_name)
    for policy, entry in table.items():
        entry["kind"] = "learned" if is_learned(policy) else "heuristic"
        entry["ranking_metric"] = ranked_by
        half_widths = {}
        for metric, mean in entry["metrics"].items():
            # A mean left undefined (a seed where the metric is: undefined_seeds) has no
            # interval either, though the other seeds' values would give one.
            undefined = mean is None or (isinstance(mean, float) and math.isnan(mean))
            half_widths[metric] = (
                math.nan if undefined else mean_ci(_counted_values(entry, metric, fair), level)[1]
            )
        entry["ci95"] = half_widths
    return table


def _fair(env_name: str) -> bool:
    """Whether ``env_name``'s means count every episode: the pod environment's (its
    metrics count a job unfinished at the horizon with its time so far) and a
    ``fair_when_truncated`` formulation's, not the other single-agent formulations'."""
    from envs.registry import SINGLE_AGENT_ENVIRONMENTS
    from tune.evaluation.single_agent import fair_when_truncated

    return env_name not in SINGLE_AGENT_ENVIRONMENTS or fair_when_truncated(env_name)


def _counted_values(entry: dict[str, Any], metric: str, fair: bool) -> list[Any]:
    """The per-seed values of ``metric`` that a row's mean counts."""
    from tune.evaluation.single_agent import counted

    return [
        episode.get(metric)
        for episode in entry.get("episodes", [])
        if counted(metric, episode, fair)
    ]


def truncated_rows(table: dict[str, dict[str, Any]], env_name: str) -> dict[str, int]:
    """``{policy: episodes cut off by the step cap}`` for the rows of ``table`` with one or
    more, in a single-agent formulation whose means leave those episodes' summaries out
    (empty for ``fair_when_truncated`` formulations and the pod environment, whose means
    count every episode). Such a row's mean covers only the seeds it finished."""
    if _fair(env_name):
        return {}
    cut = {
        policy: sum(1 for episode in entry.get("episodes", []) if episode.get("truncated"))
        for policy, entry in table.items()
    }
    return {policy: count for policy, count in cut.items() if count}


def summary_row(table: dict[str, Any], greedy: bool) -> str | None:
    """The learned row the summary compares: greedy if ``greedy``, else sampled."""
    wanted = LEARNED_GREEDY if greedy else LEARNED_SAMPLED
    return wanted if wanted in table else None


def summary(
    experiment: ExperimentConfig, table: dict[str, dict[str, Any]], metric: str | None = None
) -> dict[str, Any]:
    """Which heuristic was best (lowest mean ``metric``, by default the environment's
    :func:`ranking_metric`), the learned summary row, the relative difference of each
    row's mean ``metric`` to the best heuristic's (negative: lower, i.e. better), the
    paired per-seed difference (:func:`paired_to`), how many seeds each row's mean
    ``metric`` counts (``seeds_counted``), and for the pod environment's avg JCT the
    workloads' :func:`lower_bound` and the rows it does not bound (:func:`_bound_or_reason`).

    ``truncated_rows`` (:func:`truncated_rows`) are the rows cut off by the step cap on some
    seed in a single-agent formulation whose means leave those seeds out: their means
    cover other (easier) seeds than a row that finished every one, so they are not ranked
    (``best_heuristic`` is the lowest of the heuristics that finished every seed; None
    when none did) and their ``relative_to_best`` is NaN. Their ``paired_to_best`` stays:
    it counts only the seeds both rows finished.
    """
    env_name = experiment.environment.name
    metric = metric or ranking_metric(env_name)
    heuristics = [policy for policy, entry in table.items() if entry.get("kind") == "heuristic"]
    cut_off = truncated_rows(table, env_name)
    best = best_heuristic(table, [h for h in heuristics if h not in cut_off], metric)
    reference = table[best]["metrics"][metric] if best is not None else None
    learned = summary_row(table, experiment.evaluation.greedy)
    fair = _fair(env_name)
    return {
        "metric": metric,
        "seeds": list(experiment.evaluation.seeds),
        "heuristics": len(heuristics),
        "best_heuristic": best,
        "learned": learned,
        "relative_to_best": {
            policy: float("nan")
            if policy in cut_off
            else relative_difference(entry["metrics"].get(metric), reference)
            for policy, entry in table.items()
        },
        "paired_to_best": {
            policy: list(paired_to(table, policy, best, metric, env_name))
            for policy in table
            if best is not None and policy != best
        },
        "truncated_rows": cut_off,
        "seeds_counted": {
            policy: len(finite_values(_counted_values(entry, metric, fair)))
            for policy, entry in table.items()
        },
        **_bound_or_reason(experiment, table, metric),
    }


def _bound_or_reason(
    experiment: ExperimentConfig, table: dict[str, dict[str, Any]], metric: str
) -> dict[str, Any]:
    """``lower_bound`` (None where it does not apply, with ``lower_bound_withheld`` saying
    why when it could not be computed) and ``lower_bound_unbounded``: the rows with an
    episode that ended with jobs unfinished at the horizon, whose avg JCT counts those
    jobs' time so far -- which the bound does not bound. The evaluation's results are kept
    whatever happens to the bound."""
    none = {"lower_bound": None, "lower_bound_withheld": None, "lower_bound_unbounded": []}
    if metric != RANKING_METRIC or experiment.environment.name != "pod_scheduling_v0":
        return none
    unbounded = [
        policy
        for policy, entry in table.items()
        if any(
            episode.get("jobs_finished", 0) < episode.get("jobs_total", 0)
            for episode in entry.get("episodes", [])
        )
    ]
    try:
        bound = lower_bound(experiment)
    except (ValueError, RuntimeError) as error:
        return {**none, "lower_bound_withheld": f"not computed: {error}"}
    return {**none, "lower_bound": bound, "lower_bound_unbounded": unbounded}


def paired_to(
    table: dict[str, dict[str, Any]],
    policy: str,
    reference: str,
    metric: str = RANKING_METRIC,
    env_name: str = "pod_scheduling_v0",
) -> tuple[float, float]:
    """Mean relative difference of ``policy``'s ``metric`` to ``reference``'s, seed by seed,
    with its 95% half-width (:func:`tune.confidence.paired_relative_ci`); NaN when the two
    rows were not played on the same seeds. The seeds are those the means count: for a
    single-agent formulation's summary metric, the seeds where neither episode was
    truncated (a truncated episode's summary covers only the jobs booked by then)."""
    from tune.evaluation.single_agent import counted

    mine, theirs = table[policy], table[reference]
    if mine.get("seeds") != theirs.get("seeds"):
        return float("nan"), float("nan")
    episodes, references = mine.get("episodes", []), theirs.get("episodes", [])
    if len(episodes) != len(references):
        return float("nan"), float("nan")
    fair = _fair(env_name)
    pairs = [
        (a, b)
        for a, b in zip(episodes, references, strict=True)
        if counted(metric, a, fair) and counted(metric, b, fair)
    ]
    values = [episode.get(metric) for episode, _ in pairs]
    references = [episode.get(metric) for _, episode in pairs]
    return paired_relative_ci(values, references)


def statistics_table(table: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The table without its bulky per-job lists: per policy ``kind``, ``metrics`` (means),
    ``ci95``, ``seeds`` and ``per_seed`` (``{metric: [value per seed]}``), for JSON."""
    out = {}
    for policy, entry in table.items():
        episodes = entry.get("episodes", [])
        metrics = list(entry["metrics"])
        out[policy] = {
            "kind": entry.get("kind"),
            "metrics": dict(entry["metrics"]),
            "ci95": dict(entry.get("ci95", {})),
            "seeds": list(entry.get("seeds", [])),
            "per_seed": {
                metric: [episode.get(metric) for episode in episodes] for metric in metrics
            },
        }
    return out


def logged_metrics(entry: dict[str, Any], metric: str | None = None) -> dict[str, float]:
    """A row's metrics for its MLflow run: its means and :func:`ci_metrics`, the ranking
    ``metric`` (default: the row's ``ranking_metric``, :func:`add_statistics`) and then the
    headline metrics (avg JCT first), each with its half-width, before the others. MLflow
    keeps a run's metrics in the order they were logged, and its compare view lists them
    in that order and plots the first one: the metric a researcher ranks schedulers by."""
    metric = metric or entry.get("ranking_metric")
    metrics = {**entry["metrics"], **ci_metrics(entry, metric)}
    leading = dict.fromkeys([*([metric] if metric else []), *HEADLINE_METRICS])
    first = [key for name in leading for key in (name, f"{name}{CI_SUFFIX}") if key in metrics]
    rest = [key for key in metrics if key not in first]
    return {key: metrics[key] for key in first + rest}


def ci_metrics(entry: dict[str, Any], metric: str | None = None) -> dict[str, float]:
    """The half-widths of a row's headline metrics and of its ranking ``metric`` (default:
    the row's ``ranking_metric``, :func:`add_statistics`; DeepRM's ``mean_slowdown``,
    CuSH's ``avg_ntat``) as ``<metric>_ci95`` (for MLflow)."""
    metric = metric or entry.get("ranking_metric")
    wanted = {*HEADLINE_METRICS, *([metric] if metric else [])}
    return {
        f"{name}{CI_SUFFIX}": value
        for name, value in entry.get("ci95", {}).items()
        if name in wanted
    }


def format_evaluation(table: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """The comparison as text: one row per policy, mean ± 95% CI of the headline metrics
    that the rows have (JCTs and makespan in hours) and of the ranking metric
    (``info["metric"]``: DeepRM's slowdown, CuSH's NTAT, ...), the relative and the paired
    difference to the best heuristic, and marks for the best heuristic (``*``) and the
    learned summary row (``>``). The legend gives the number of seeds each row's mean of
    the ranking metric counts where it is fewer than the evaluation's, and names the rows
    cut off by the step cap (``info["truncated_rows"]``), which are not compared."""
    shown = [m for m in HEADLINE_METRICS if any(m in e["metrics"] for e in table.values())]
    if info["metric"] not in shown:
        shown.append(info["metric"])
    present = [(m, 3600.0 if m in ("avg_jct", "p90_jct", "makespan") else 1.0) for m in shown]
    titles = {
        "avg_jct": "avg JCT h",
        "p90_jct": "p90 JCT h",
        "makespan": "makespan h",
        "avg_contention": "contention",
    }
    header = [
        "",
        "policy",
        *(titles.get(m, m) + " ±95%" for m, _ in present),
        f"vs best {info['metric']}",
        "paired ±95%",
    ]
    rows = []
    for policy, entry in table.items():
        mark = (
            "*"
            if policy == info.get("best_heuristic")
            else ">"
            if policy == info.get("learned")
            else ""
        )
        cells = [mark, policy]
        for metric, scale in present:
            cells.append(_mean_pm(entry["metrics"].get(metric), entry["ci95"].get(metric), scale))
        relative = info["relative_to_best"].get(policy, float("nan"))
        cells.append("-" if not math.isfinite(relative) else f"{100 * relative:+.1f}%")
        paired = info.get("paired_to_best", {}).get(policy, (float("nan"), float("nan")))
        cells.append(_percent_pm(*paired))
        rows.append(cells)
    seeds = len(info["seeds"])
    fewer = {
        policy: count for policy, count in info.get("seeds_counted", {}).items() if count != seeds
    }
    counts = (
        f" (fewer for {info['metric']}: "
        + ", ".join(f"{policy} n={count}" for policy, count in fewer.items())
        + ")"
        if fewer
        else ""
    )
    legend = (
        f"* best heuristic of {info['heuristics']} ({info['best_heuristic']}); "
        f"> learned summary row ({info['learned']}); ± is the 95% Student-t half-width over "
        f"{seeds} seeds{counts}; paired: the mean per-seed difference to the best heuristic"
    )
    cut_off = info.get("truncated_rows") or {}
    if cut_off:
        legend += (
            "\nnot compared, cut off by the step cap: "
            + ", ".join(
                f"{policy} on {count} of {seeds} seeds" for policy, count in cut_off.items()
            )
            + f" (their mean of {info['metric']} counts only the seeds they finished, other"
            " workloads than the rows that finished every seed: not ranked, no vs best;"
            " paired: over the seeds both rows finished)"
        )
    bound = info.get("lower_bound")
    if bound:
        legend += (
            f"\nlower bound on avg JCT: {_mean_pm(bound['avg_jct'], bound['ci95'], 3600.0)} h"
            " (no schedule that finishes these workloads beats it: envs/sim/bounds.py)"
        )
        if info.get("lower_bound_unbounded"):
            legend += (
                f"\nnot bounded by it: {', '.join(info['lower_bound_unbounded'])} (jobs "
                "unfinished at the horizon count their time so far)"
            )
    elif info.get("lower_bound_withheld"):
        legend += f"\nno lower bound on avg JCT: {info['lower_bound_withheld']}"
    return align_rows(header, rows) + "\n" + legend


def _mean_pm(mean: Any, half_width: Any, scale: float) -> str:
    """``mean ± half-width`` in units of ``scale`` ("-" when missing)."""
    if mean is None or not math.isfinite(float(mean)):
        return "-"
    text = f"{float(mean) / scale:.3f}"
    if half_width is not None and math.isfinite(float(half_width)):
        text += f" ± {float(half_width) / scale:.3f}"
    return text


def _percent_pm(mean: float, half_width: float) -> str:
    """``+m.m ± h.h%`` ("-" when missing)."""
    if not math.isfinite(mean):
        return "-"
    text = f"{100 * mean:+.1f}"
    if math.isfinite(half_width):
        text += f" ± {100 * half_width:.1f}"
    return text + "%"
