"""Held-out evaluation: learned policies next to heuristics, like for like.

``comparison`` (one experiment's table with confidence intervals, its summary and text),
``multi_agent`` (``pod_scheduling_v0``: episodes over Ray), ``single_agent`` (the Gymnasium
formulations and their papers' baselines) and ``common`` (the learned rows, the default
mode, checkpoint module paths). The names other code uses are importable from here.
"""

from tune.evaluation.common import (
    DEFAULT_GREEDY,
    LEARNED,
    LEARNED_GREEDY,
    LEARNED_ROWS,
    LEARNED_SAMPLED,
    finite_mean,
    is_learned,
    learned_rows,
    module_paths,
)
from tune.evaluation.comparison import (
    RANKING_METRIC,
    add_statistics,
    bound_metrics,
    ci_metrics,
    evaluate_experiment,
    format_evaluation,
    logged_metrics,
    lower_bound,
    paired_to,
    ranking_metric,
    statistics_table,
    summary,
    summary_row,
)
from tune.evaluation.multi_agent import evaluate, fit_to_spaces, policy_actions, run_episode

__all__ = [
    "DEFAULT_GREEDY",
    "LEARNED",
    "LEARNED_GREEDY",
    "LEARNED_ROWS",
    "LEARNED_SAMPLED",
    "RANKING_METRIC",
    "add_statistics",
    "bound_metrics",
    "ci_metrics",
    "evaluate",
    "evaluate_experiment",
    "finite_mean",
    "fit_to_spaces",
    "format_evaluation",
    "is_learned",
    "learned_rows",
    "logged_metrics",
    "lower_bound",
    "module_paths",
    "paired_to",
    "policy_actions",
    "ranking_metric",
    "run_episode",
    "statistics_table",
    "summary",
    "summary_row",
]
