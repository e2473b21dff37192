"""The papers' headline experiments as product configs, and the comparison they produce.

Each paper (``000``..``004``) has one or more :class:`Setting` -- an experiment YAML of
``tune/configs`` plus overrides for a scale: ``small`` (fits this 2-core machine: a short
training budget, fewer held-out seeds) or ``paper`` (the paper's cluster, workload and
budget, for a real cluster). :func:`build_config` turns a setting and a scale into a
validated :class:`~tune.experiment.ExperimentConfig`; ``platform/reproduce.py`` trains and
evaluates it with ``platform/train.py`` and :func:`compare` sets the evaluation next to
the paper's figures (:mod:`tune.paper_figures`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tune.experiment import ExperimentConfig, load_config
from tune.paper_figures import BEST_HEURISTIC, LEARNED, PaperFigure, figures_of

CONFIGS = Path(__file__).resolve().parent / "configs"
SCALES = ("small", "paper")
#: What every small-scale run evaluates on: five held-out workloads.
SMALL_EVALUATION_SEEDS = "evaluation.seeds=[1000, 1001, 1002, 1003, 1004]"
#: 001's baselines, the product's best heuristics (README Results: the patient SAF that
#: paper001.yaml clones, and the patient DSIF with both placements) and 002's DSIF: the
#: rows a small 001 run plays instead of the 162-heuristic table.
SMALL_POD_BASELINES = (
    "evaluation.baselines=[fifo+tetris, fifo+load-balancing, fifo+lif, "
    "saf-patient+locality, dsif-patient+locality, dsif-patient+packing, dsif+packing]"
)
#: Small 000: 12 PPO iterations (about 24,600 steps, ~35 s each on a loaded 2-core machine).
SMALL_CONTENTION = (SMALL_EVALUATION_SEEDS, "stop.training_iteration=12", "checkpoint.frequency=6")
#: The small 001 pipeline: a shorter warm start, 4 PPO iterations, 3 validation seeds.
SMALL_POD = (
    SMALL_EVALUATION_SEEDS,
    SMALL_POD_BASELINES,
    "evaluation.validation_seeds=[2000, 2001, 2002]",
    "warm_start.episodes=20",
    "warm_start.heldout_episodes=2",
    "stop.training_iteration=4",
    "checkpoint.frequency=2",
)
#: 001 §VI-A's learning settings (Adam 1e-5, gamma 0.9), 200 epochs (Fig. 10), every
#: heuristic, 4 env runners; the factorized edge filter keeps k=20 in memory
#: (tune/configs/fattree_k20.yaml).
PAPER_POD = (
    "algorithm.lr=1.0e-5",
    "algorithm.gamma=0.9",
    "stop.training_iteration=200",
    "evaluation.baselines=all",
    "resources.num_env_runners=4",
    "model.config.edge_network=factorized",
    "model.config.edge_rank=8",
)
#: 001's k = 20 fabrics (fat-tree, VL2) at the paper's scale.
PAPER_POD_K20 = (
    *PAPER_POD,
    "environment.config.topology_params={k: 20}",
    "environment.config.num_jobs=3000",
)


@dataclass(frozen=True)
class Setting:
    """One experiment of a paper's reproduction: ``config`` (a file of ``tune/configs``),
    ``overrides`` common to both scales, then ``small`` or ``paper``'s; ``note`` says what
    the setting is, as the paper names it."""

    paper: str
    name: str
    config: str
    note: str
    overrides: tuple[str, ...] = ()
    small: tuple[str, ...] = ()
    paper_scale: tuple[str, ...] = ()
    #: Seconds per interval where the paper reports JCT in scheduling intervals (001).
    interval_s: float | None = None

    def overrides_for(self, scale: str) -> list[str]:
        """Every override of ``scale``, in order."""
        if scale not in SCALES:
            raise ValueError(f"scale {scale!r} is unknown; allowed: {', '.join(SCALES)}")
        return [*self.overrides, *(self.small if scale == "small" else self.paper_scale)]

    @property
    def figures(self) -> tuple[PaperFigure, ...]:
        """The paper's figures this setting measures."""
        return tuple(figure for figure in figures_of(self.paper) if figure.setting == self.name)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "000",
        "rl-base",
        "contention.yaml",
        "000 §V: 4 nodes x 8 GPUs, 256-job sets of the normal mix, RL-base, weight branch B",
        small=SMALL_CONTENTION,
    ),
    Setting(
        "000",
        "rl-hybrid",
        "contention.yaml",
        "000 §V: as rl-base, RL-Hybrid (greedy multiplexing when the policy schedules nothing)",
        overrides=("environment.config.mode=hybrid",),
        small=SMALL_CONTENTION,
    ),
    Setting(
        "001",
        "fat-tree",
        "paper001.yaml",
        "001 §VI-B: fat-tree, uniform 15 jobs per 30-minute interval at every scheduler",
        small=SMALL_POD,
        paper_scale=PAPER_POD_K20,
        interval_s=1800.0,
    ),
    Setting(
        "001",
        "vl2",
        "paper001.yaml",
        "001 §VI-D: VL2, one scheduler per aggregation switch, uniform 15 jobs per interval",
        overrides=("environment.config.topology=vl2",),
        small=(*SMALL_POD, "environment.config.topology_params={k: 4, servers_per_tor: 4}"),
        paper_scale=PAPER_POD_K20,
        interval_s=1800.0,
    ),
    Setting(
        "001",
        "bcube",
        "paper001.yaml",
        "001 §VI-D: BCube, one scheduler per two BCube_1 (small: per BCube_0), uniform 15 "
        "jobs per interval",
        overrides=("environment.config.topology=bcube",),
        small=(
            *SMALL_POD,
            "environment.config.topology_params={n: 4, k: 1, cubes_per_partition: 1}",
        ),
        paper_scale=(
            *PAPER_POD,
            "environment.config.topology_params={n: 6, k: 3}",
            # 8 whole intervals of 15 jobs for each of BCube(6,3)'s 18 schedulers (2,000
            # left the last interval's 110 jobs spread over its first 12 minutes).
            "environment.config.num_jobs=2160",
        ),
        interval_s=1800.0,
    ),
    Setting(
        "002",
        "dqn",
        "sced2_dqn.yaml",
        "002 §IV: 15 servers x 8 GPUs, 1000-job traces, DQN with prioritized replay",
        small=(
            SMALL_EVALUATION_SEEDS,
            # 40 iterations of 1000 env steps (~20 s each on a loaded 2-core machine).
            "stop.training_iteration=40",
            "checkpoint.frequency=20",
            # Learning starts after half a trace instead of five traces; exploration
            # decays over half the budget.
            "algorithm.extra.num_steps_sampled_before_learning_starts=500",
            "algorithm.extra.epsilon=[[0, 1.0], [20000, 0.05]]",
        ),
    ),
    Setting(
        "003",
        "reinforce",
        "rltaps_reinforce.yaml",
        "003 §4.5.2/§5.1: racks [2, 2, 2, 2] of 4-GPU machines, 400-job sequences, REINFORCE "
        "with the per-step mean return of E = 20 episodes of a sequence as baseline",
        # 4 updates of one sequence x 20 episodes (80 episodes).
        small=(SMALL_EVALUATION_SEEDS, "stop.training_iteration=4", "checkpoint.frequency=2"),
        # 003 §5.1: 50 epochs of 200 training sequences, one update per sequence (Alg. 1);
        # the non-streaming set is fixed before training (§5.1.1) and replayed each epoch.
        paper_scale=(
            "stop.training_iteration=10000",
            "checkpoint.frequency=200",
            "algorithm.extra.learner_config_dict.reinforce.training_sequences=200",
        ),
    ),
    Setting(
        "003",
        "ppo",
        "rltaps.yaml",
        "003's environment and network, trained by PPO with a learned critic (not 003's protocol)",
        # 10 iterations of 4000 steps (~60 episodes).
        small=(SMALL_EVALUATION_SEEDS, "stop.training_iteration=10", "checkpoint.frequency=5"),
    ),
    Setting(
        "004",
        "sierra",
        "cush.yaml",
        "004 §3.4/§4: Sierra, 128 nodes of 2 CPUs + 4 GPUs, 20-job dgemm/daxpy sets; each "
        "head trained by REINFORCE on its own return (Alg. 1, M = 24 simulations per set)",
        # 6 updates of 2 job sets x 24 simulations (004: 10 sets per update). The policy
        # selector's step is 30x 004's alpha^2 = 1e-3: its reward (-p_j, a job's own
        # placement penalty) is immediate, and 6 rmsprop steps of 1e-3 leave it where it
        # started (every job breadth-first); at 3e-2 it learns 004 Fig. 6 (dgemm
        # depth-first, daxpy breadth-first). The job selector keeps alpha^1 = 1e-4.
        small=(
            SMALL_EVALUATION_SEEDS,
            "stop.training_iteration=6",
            "checkpoint.frequency=3",
            "algorithm.extra.learner_config_dict.reinforce.sequences_per_update=2",
            "algorithm.extra.learner_config_dict.reinforce.head_lr.policy=0.03",
        ),
        # 004 §4: 5000 epochs of 10 job sets.
        paper_scale=("stop.training_iteration=5000", "checkpoint.frequency=100"),
    ),
    Setting(
        "004",
        "sierra-ppo",
        "cush_ppo.yaml",
        "004's environment and networks, both heads trained by PPO on the local reward (not "
        "004's protocol)",
        # 8 iterations of 2000 steps (~200 job sets).
        small=(SMALL_EVALUATION_SEEDS, "stop.training_iteration=8", "checkpoint.frequency=4"),
    ),
)


def settings_of(paper: str) -> tuple[Setting, ...]:
    """The settings of ``paper``; ValueError naming the papers there are."""
    found = tuple(setting for setting in SETTINGS if setting.paper == paper)
    if not found:
        papers = sorted({setting.paper for setting in SETTINGS})
        raise ValueError(f"paper {paper!r} is unknown; allowed: {', '.join(papers)}")
    return found


def build_config(
    setting: Setting, scale: str, extra: list[str] | None = None, experiment: str | None = None
) -> ExperimentConfig:
    """The validated experiment of ``setting`` at ``scale``, with ``extra`` overrides last;
    its name says paper, setting and scale, and ``experiment`` (when given) is its MLflow
    experiment."""
    overrides = setting.overrides_for(scale)
    overrides.append(f"name=reproduce-{setting.paper}-{setting.name}-{scale}")
    if experiment:
        overrides.append(f"tracking.experiment={experiment}")
    return load_config(CONFIGS / setting.config, [*overrides, *(extra or [])])


def budget(experiment: ExperimentConfig) -> dict[str, Any]:
    """The training budget and seeds of ``experiment``, as the report states them."""
    algorithm = experiment.algorithm
    warm = experiment.warm_start
    # tune/reinforce.py's protocol: an update is B job sequences x E episodes each, whatever
    # train_batch_size says.
    reinforce = (algorithm.extra.get("learner_config_dict") or {}).get("reinforce")
    return {
        "algorithm": algorithm.name if reinforce is None else "REINFORCE",
        "episodes_per_update": None
        if reinforce is None
        else reinforce.get("sequences_per_update", 1) * reinforce.get("episodes_per_sequence", 1),
        "iterations": experiment.stop.criteria().get("training_iteration"),
        "train_batch_size": algorithm.train_batch_size,
        # An iteration samples at least min_env_steps_per_iteration (DQN's 1,000; its
        # train_batch_size is the transitions of one update), else train_batch_size.
        "env_steps_per_iteration": algorithm.min_env_steps_per_iteration
        or algorithm.train_batch_size,
        "training_seeds": list(experiment.seeds),
        "evaluation_seeds": list(experiment.evaluation.seeds),
        "validation_seeds": list(experiment.evaluation.validation_seeds),
        "warm_start": None
        if warm is None
        else {"heuristic": warm.heuristic, "episodes": warm.episodes, "epochs": warm.epochs},
    }


@dataclass
class Comparison:
    """A setting's evaluation next to its paper's figures: ``rows`` (the product's
    metric means of the rows the figures name, by row), ``figures`` (one dict per
    figure: the paper's value and the product's) and the product's row names."""

    rows: dict[str, dict[str, float]] = field(default_factory=dict)
    figures: list[dict[str, Any]] = field(default_factory=list)
    learned: str | None = None
    best_heuristic: str | None = None


def named_rows(payload: dict[str, Any], metrics: set[str]) -> dict[str, dict[str, float]]:
    """train.py's ``--json`` evaluation as {row: {metric: mean}}, with :data:`LEARNED`
    (the learned summary row) and :data:`BEST_HEURISTIC` (per metric, the heuristic with
    the lowest mean: "the best among the baselines") added."""
    evaluation = payload.get("evaluation") or {}
    rows = {policy: dict(entry.get("metrics") or {}) for policy, entry in evaluation.items()}
    learned = (payload.get("summary") or {}).get("learned")
    if learned in rows:
        rows[LEARNED] = rows[learned]
    heuristics = [p for p, entry in evaluation.items() if entry.get("kind") == "heuristic"]
    best: dict[str, float] = {}
    for metric in metrics:
        values = [rows[p][metric] for p in heuristics if rows[p].get(metric) is not None]
        if values:
            best[metric] = min(values)
    rows[BEST_HEURISTIC] = best
    return rows


def compare(
    setting: Setting, payload: dict[str, Any], interval_s: float | None = None
) -> Comparison:
    """Set train.py's ``--json`` result ``payload`` for ``setting`` next to its figures.
    Where the paper reports JCT in intervals (001), ``avg_jct_intervals`` is added: in
    ``interval_s``, the interval the experiment ran with (default the setting's)."""
    interval_s = interval_s or setting.interval_s
    figures = setting.figures
    metrics = {figure.metric for figure in figures}
    rows = named_rows(payload, metrics)
    shown = {figure.policy for figure in figures} | {
        figure.reference for figure in figures if figure.reference
    }
    summary = payload.get("summary") or {}
    best = summary.get("best_heuristic") or _best_by(payload, figures[0].metric if figures else "")
    comparison = Comparison(learned=summary.get("learned"), best_heuristic=best)
    for row in [LEARNED, *sorted(shown - {LEARNED}), best]:
        if row is None or row not in rows or row in comparison.rows:
            continue
        values = {key: value for key, value in rows[row].items() if key in metrics}
        if setting.interval_s and interval_s and rows[row].get("avg_jct") is not None:
            values["avg_jct_intervals"] = rows[row]["avg_jct"] / interval_s
        comparison.rows[row] = values
    for figure in figures:
        measured = figure.measure(rows)
        comparison.figures.append(
            {
                "label": figure.label,
                "source": figure.source,
                "unit": figure.unit,
                "kind": figure.kind,
                "bound": figure.bound,
                "paper": figure.value,
                "product": measured,
                "reached": figure.reached(measured),
                "metric": figure.metric,
                "policy": figure.policy,
                "reference": figure.reference,
            }
        )
    return comparison


def _best_by(payload: dict[str, Any], metric: str) -> str | None:
    """The heuristic with the lowest mean ``metric`` (train.py ranks by avg JCT, which
    some formulations, CuSH among them, do not report)."""
    evaluation = payload.get("evaluation") or {}
    scored = [
        (entry["metrics"][metric], policy)
        for policy, entry in evaluation.items()
        if entry.get("kind") == "heuristic" and (entry.get("metrics") or {}).get(metric) is not None
    ]
    return min(scored)[1] if scored else None


def format_figure(value: float | None, unit: str, bound: str = "=") -> str:
    """A figure as the table prints it: ``>= 24.3%``, ``4.6x``, ``3.33``, ``lower``, ``-``."""
    if value is None:
        return "lower" if bound == "lower" else "-"
    prefix = ">= " if bound == ">=" else ""
    if unit == "%":
        return f"{prefix}{value:.1f}%"
    if unit == "x":
        return f"{prefix}{value:.2f}x"
    return f"{prefix}{value:.2f}"
