"""Which trained policy to evaluate: the candidate with the lowest JCT on validation seeds.

RL training returns are a poor judge of a scheduler: each iteration's episodes draw other
workloads, so the return moves more with the jobs than with the policy, and the last
checkpoint is not the best one. When ``evaluation.validation_seeds`` is set,
``platform/train.py`` plays every candidate -- each checkpoint the trials kept and, with a
``warm_start`` section, the imitation-trained module PPO started from -- on those seeds
(never training, warm-start or evaluation seeds), greedily or sampled as
``evaluation.greedy`` says, and evaluates on the evaluation seeds the one with the lowest
mean average JCT on the validation seeds. Candidates are judged on the same workloads, so
the comparison is paired; ties go to the earlier candidate (the warm start, then
checkpoints by iteration).

The warm start is the incumbent: a checkpoint replaces it only when it is better on the
validation seeds with ``evaluation.selection_confidence`` (one-sided paired Student-t,
Bonferroni over the checkpoints compared; :func:`significantly_lower`). Picking the
lowest of several noisy means favours whichever candidate the few validation workloads
happen to flatter: on five seeds, a checkpoint 0.15% below the clone was chosen once and
came out 1.4% above it on the held-out seeds.

A candidate that leaves a validation job unfinished is flattered: its avg JCT counts such a
job's time so far, a lower bound. So it is chosen only when every candidate did so (then
the rule above decides among them all): a warm start that left one defends nothing (the
lowest mean of the others decides), and a checkpoint that left one never replaces a warm
start that finished everything.

How to use::

    from tune.selection import Candidate, select

    candidates = checkpoint_candidates(checkpoints, ["shared"], warm_start_path)
    selection = select(experiment, candidates)  # selection.chosen.modules -> evaluation

With ``warm_start.restarts`` > 1, :func:`choose_clone` picks the clone PPO starts from the
same way, before training.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tune.experiment import ExperimentConfig

#: The metric candidates are ranked by (lower is better).
SELECTION_METRIC = "avg_jct"
#: The warm-start module's label among the candidates: the incumbent checkpoints must beat.
WARM_START = "warm start"


@dataclass(frozen=True)
class Candidate:
    """A trained policy: a label, the folder it was saved in (an Algorithm checkpoint or
    the warm-start module) and its RLModule folders by module id."""

    label: str
    path: str
    modules: dict[str, str]


class Selection(NamedTuple):
    """What :func:`select` found: the candidate to evaluate, every candidate's mean and
    per-seed :data:`SELECTION_METRIC` by label, and per label the seeds on which it left a
    job unfinished (:func:`left_jobs_unfinished`)."""

    chosen: Candidate
    scores: dict[str, float]
    per_seed: dict[str, list[float]]
    unfinished_seeds: dict[str, list[int]]


def checkpoint_candidates(
    checkpoints: list[str], module_ids: list[str], warm_start_path: str | None
) -> list[Candidate]:
    """The warm-start module (if any), then every checkpoint folder, in iteration order."""
    from tune.evaluation import module_paths

    candidates = []
    if warm_start_path is not None:
        modules = dict.fromkeys(module_ids, warm_start_path)
        candidates.append(Candidate(WARM_START, warm_start_path, modules))
    for checkpoint in sorted(checkpoints, key=lambda path: (Path(path).parent, path)):
        label = f"{Path(checkpoint).parent.name}/{Path(checkpoint).name}"
        candidates.append(Candidate(label, checkpoint, module_paths(checkpoint, module_ids)))
    return candidates


def select(
    experiment: ExperimentConfig, candidates: list[Candidate], seeds: list[int] | None = None
) -> Selection:
    """Every candidate played on ``seeds`` (default ``evaluation.validation_seeds``), and the one
    :func:`chosen_index` picks from their :data:`SELECTION_METRIC` (the lowest mean, or
    the warm start unless a checkpoint is significantly lower).

    Every (candidate, seed) episode is one task, all submitted at once when Ray runs and
    there are more than ``resources.local_episodes`` (else played here one by one), so the
    cores stay busy across candidates.
    """
    from tune.episode_tasks import play_episodes
    from tune.evaluation import finite_mean, learned_rows, run_episode

    if not candidates:
        raise ValueError("no candidate policies to select from")
    evaluation = experiment.evaluation
    seeds = list(evaluation.validation_seeds if seeds is None else seeds)
    if not seeds:
        raise ValueError("no seeds to select on (evaluation.validation_seeds is empty)")
    env_name = experiment.environment.name
    env_config = {**experiment.environment.config, **evaluation.environment}
    (row,) = learned_rows(evaluation.greedy)
    calls = [
        (env_name, env_config, seed, row, candidate.modules)
        for candidate in candidates
        for seed in seeds
    ]
    played = play_episodes(run_episode, calls, experiment.resources.local_episodes)
    by_candidate = [
        played[index * len(seeds) : (index + 1) * len(seeds)] for index in range(len(candidates))
    ]
    per_seed = [
        [float(episode["metrics"][SELECTION_METRIC]) for episode in episodes]
        for episodes in by_candidate
    ]
    unfinished = [
        [
            seed
            for seed, episode in zip(seeds, episodes, strict=True)
            if left_jobs_unfinished(episode["metrics"])
        ]
        for episodes in by_candidate
    ]
    scores = {
        candidate.label: finite_mean(values)
        for candidate, values in zip(candidates, per_seed, strict=True)
    }
    labels = [candidate.label for candidate in candidates]
    best = chosen_index(
        labels,
        per_seed,
        evaluation.selection_confidence,
        unfinished=[bool(seeds_left) for seeds_left in unfinished],
    )
    return Selection(
        candidates[best],
        scores,
        dict(zip(labels, per_seed, strict=True)),
        dict(zip(labels, unfinished, strict=True)),
    )


def chosen_index(
    labels: Sequence[str],
    per_seed: Sequence[Sequence[float]],
    confidence: float,
    unfinished: Sequence[bool] | None = None,
) -> int:
    """The candidate to evaluate, by index, from each candidate's per-seed values (NaN: no
    job arrived) and whether it left a validation job unfinished (``unfinished``, default
    none did). Only candidates that finished every job are eligible, unless none did (then
    all are). Without a warm start first (``labels[0]``), with ``confidence`` 0, or with a
    warm start that is not eligible or has a value that is not finite: the eligible
    candidate with the lowest mean, the earlier of equals, NaN last. With one: the warm
    start, unless eligible checkpoints are :func:`significantly_lower` at ``confidence``
    over all checkpoints (Bonferroni); then the lowest mean of those."""
    from tune.evaluation import finite_mean

    left = list(unfinished) if unfinished is not None else [False] * len(labels)
    if len(left) != len(labels):
        raise ValueError(f"{len(left)} unfinished flags for {len(labels)} candidates")
    eligible = [i for i in range(len(labels)) if not left[i]] or list(range(len(labels)))
    means = [_finite(finite_mean(list(values))) for values in per_seed]
    lowest = min(eligible, key=lambda i: means[i])
    incumbent = per_seed[0]
    defends = 0 in eligible and all(map(math.isfinite, incumbent))
    if labels[0] != WARM_START or confidence == 0 or not defends:
        return lowest
    challengers = range(1, len(labels))
    level = 1.0 - (1.0 - confidence) / max(1, len(challengers))
    better = [
        i
        for i in challengers
        if i in eligible and significantly_lower(per_seed[i], incumbent, level)
    ]
    return min(better, key=lambda i: means[i], default=0)


def significantly_lower(
    challenger: Sequence[float], incumbent: Sequence[float], confidence: float
) -> bool:
    """Whether ``challenger``'s values are lower than ``incumbent``'s on the same seeds with
    one-sided ``confidence``: the upper end of the Student-t bound of the mean paired
    difference is below 0. Never with fewer than two seeds or a non-finite value."""
    from tune.confidence import upper_bound

    differences = [c - i for c, i in zip(challenger, incumbent, strict=True)]
    if not all(map(math.isfinite, differences)):
        return False
    return upper_bound(differences, confidence) < 0  # NaN (under two seeds) is not


def choose_clone(experiment: ExperimentConfig, paths: list[str]) -> tuple[str, dict[str, float]]:
    """The warm-start clone (a saved RLModule folder) with the lowest mean
    :data:`SELECTION_METRIC` on ``warm_start.clone_seeds``, and every clone's score by
    folder. Not on the validation seeds: the chosen clone is the incumbent checkpoints must
    beat there, and the best of several on those very workloads would score better there
    than it is."""
    from tune.rllib_config import module_ids

    if experiment.warm_start is None:
        raise ValueError("no warm_start section: there are no clones to choose among")
    ids = module_ids(experiment)
    candidates = [Candidate(path, path, dict.fromkeys(ids, path)) for path in paths]
    selection = select(experiment, candidates, experiment.warm_start.clone_seeds)
    return selection.chosen.path, selection.scores


def left_jobs_unfinished(metrics: dict[str, Any]) -> bool:
    """Whether an episode's metrics count jobs that did not finish (its ``avg_jct`` then
    counts their time so far: finite, and lower than their whole time would be)."""
    return int(metrics.get("jobs_finished", 0)) < int(metrics.get("jobs_total", 0))


def _finite(value: Any) -> float:
    """NaN (no job arrived) ranks last."""
    return float("inf") if math.isnan(value) else float(value)


def result_value(metrics: dict[str, Any], key: str) -> Any:
    """A training result's value by Tune's ``a/b`` key (nested dicts or a flat key)."""
    if key in metrics:
        return metrics[key]
    node: Any = metrics
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def best_scored_checkpoint(results: Any, key: str, order: str) -> tuple[Any, float]:
    """Of every checkpoint the trials of ``results`` (a Tune ResultGrid) kept, the one
    whose training result ``key`` is highest (``order`` max) or lowest (min), and that
    value; the later checkpoint of equal scores. ValueError when no kept checkpoint
    reported ``key``."""
    scored = []
    for result in results:
        for checkpoint, metrics in result.best_checkpoints or []:
            value = result_value(metrics or {}, key)
            if isinstance(value, int | float) and math.isfinite(value):
                iteration = int((metrics or {}).get("training_iteration", 0))
                scored.append((float(value), iteration, checkpoint))
    if not scored:
        raise ValueError(f"no kept checkpoint reported {key!r}; nothing to rank by")
    sign = 1.0 if order == "max" else -1.0
    value, _, checkpoint = max(scored, key=lambda item: (sign * item[0], item[1]))
    return checkpoint, value


def checkpoint_by_score(results: Any, key: str | None, order: str, latest: Any) -> tuple[Any, str]:
    """The checkpoint to keep and the rule that chose it: the best-scored kept checkpoint
    of ``results`` (Tune Results) by ``key`` (:func:`best_scored_checkpoint`) and ``key``;
    ``latest`` and "latest" without a declared key or when no kept checkpoint reported it
    (a short run whose episodes had not ended: the training is not lost over it)."""
    if key is not None:
        try:
            return best_scored_checkpoint(results, key, order)[0], key
        except ValueError:
            pass
    return latest, "latest"


def trial_checkpoint(result: Any, key: str | None, order: str) -> Any:
    """The checkpoint to keep of one trial (a Tune Result): with a declared score ``key``
    its best-scored kept checkpoint, else (or with none scored) its latest."""
    return checkpoint_by_score([result], key, order, result.checkpoint)[0]
