"""A Ray Tune sweep of an experiment: its ``sweep:`` section as Tune's search space,
scheduler and search algorithm, run as one MLflow parent run with a child run per trial.

The search space is the config's (:class:`tune.experiment.SweepSection`): dotted keys under
``algorithm.``, ``model.config.`` and ``environment.config.`` with one distribution each.
:func:`check_sweep` validates every key before Ray starts by building the experiment at
the edges of its distribution (each choice, both ends of a range, as the type Tune draws)
with the same checks as ``train.py`` (:mod:`tune.preflight`), then at combinations of the
keys' edges (:func:`probe_rows`), so a key the algorithm, the model or the environment
does not take -- PPO's ``entropy_coeff`` under DQN -- or two values no trial can have
together fail before anything runs. :func:`param_space` puts the distributions into the
experiment's RLlib AlgorithmConfig, :func:`tune_config` adds the metric, mode, ASHA or PBT
(whose perturbations stay inside each range, :class:`KeepInRange`) and random or Optuna
search, and :func:`run_sweep` runs it (or resumes it) and reports each trial and the best
one; ``tune/sweep.py`` is the command line. Every trial trains on the first of the
config's training ``seeds``, on purpose (:func:`sweep_seed`); the parent run records it
as ``sweep.seed``, and under PBT each trial run follows the values it trains with as
metrics ``pbt/<swept key>`` (:mod:`tune.mlflow_tracking`).
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import itertools
import json
import math
import numbers
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tune.experiment import (
    ConfigError,
    ExperimentConfig,
    SweepSection,
    config_from_dict,
    quantized_ints,
    set_dotted,
)
from tune.mlflow_retry import RETRY_FOR_S, Deadline
from tune.selection import checkpoint_by_score, result_value

#: AlgorithmSection fields under the names RLlib's config dict uses.
RLLIB_NAMES = {"lambda_": "lambda"}
#: Distributions Tune draws floats from, whatever the type of their bounds.
FLOAT_DISTRIBUTIONS = ("uniform", "loguniform", "quniform")
#: Combinations of the keys' probe values :func:`check_sweep` builds at most; a larger
#: product is covered pairwise. Each build costs 0.05-0.7 s (the environment and the model
#: are built and act; 0.15 s on the demo, 0.6 s on vl2), so 64 keep the check under a
#: minute on the largest shipped environments.
MAX_COMBINATIONS = 64
#: Tune's switch for its check that every result of every trial carries the sweep's metric
#: (``TuneController._validate_result_metrics``), off while a sweep runs
#: (:func:`sweep_checks_the_metric`): an RLlib trial reports its episode metrics only once
#: it has finished an episode.
STRICT_METRIC_SWITCH = "TUNE_DISABLE_STRICT_METRIC_CHECKING"
#: The flat result key of the episodes a trial has finished (RLlib's env runners).
EPISODES_FINISHED = "env_runners/num_episodes_lifetime"


class MetricNotReportedError(ConfigError):
    """A trial's results lack the sweep's metric where they would carry it if it were a
    metric the trial reports (:func:`check_metric_reported`)."""


def sweep_of(experiment: ExperimentConfig) -> SweepSection:
    """The experiment's sweep section; :class:`ConfigError` when it has none."""
    if experiment.sweep is None:
        raise ConfigError(
            f"config {experiment.name!r} has no sweep section; add one, e.g. sweep: "
            "{space: {algorithm.lr: {loguniform: [1.0e-5, 1.0e-3]}}, num_samples: 4}"
        )
    return experiment.sweep


def domain(spec: dict[str, Any]) -> Any:
    """The Tune search domain of one ``sweep.space`` entry."""
    from ray import tune as ray_tune

    ((name, args),) = spec.items()
    if name == "choice":
        return ray_tune.choice(list(args))
    if name == "grid":
        return ray_tune.grid_search(list(args))
    return getattr(ray_tune, name)(*args)


def probe_values(spec: dict[str, Any]) -> list[Any]:
    """The values :func:`check_sweep` builds the experiment with: every listed value; the
    smallest and largest integer a ``randint`` or ``qrandint`` draws; a float range's two
    ends as the floats Tune draws (``uniform: [2, 8]`` draws 2.0 to 8.0, never the integer
    2) and, when both ends are whole numbers, a fractional value Tune can draw between them
    (:func:`_fractional_inside`): a setting that takes integers only refuses it."""
    ((name, args),) = spec.items()
    if name in ("choice", "grid"):
        return list(args)
    if name == "randint":
        return [args[0], args[1] - 1]
    if name == "qrandint":
        drawn = quantized_ints(*args)
        return [drawn[0], drawn[-1]]
    low, high = float(args[0]), float(args[1])
    inside = _fractional_inside(name, low, high, args)
    return [low, high] if inside is None else [low, inside, high]


def _fractional_inside(name: str, low: float, high: float, args: list[float]) -> float | None:
    """A value strictly between the whole-number bounds ``low`` and ``high`` of a float
    distribution that is not a whole number and that the distribution draws; None when
    a bound is fractional (the bound itself is probed) or the distribution draws whole
    numbers only (``quniform`` with a whole step)."""
    if not (low.is_integer() and high.is_integer()):
        return None
    if name == "quniform":
        step = float(args[2])
        # The bounds are multiples of the step: low + step is drawn, and fractional.
        return None if step.is_integer() else round((low + step) / step) * step
    middle = math.sqrt(low * high) if name == "loguniform" else (low + high) / 2
    if not middle.is_integer():
        return middle
    # Less than half-way to the top: inside, and not a whole number either.
    return middle + min(0.5, (high - middle) / 2)


def probe_rows(space: dict[str, dict[str, Any]], limit: int = MAX_COMBINATIONS) -> list[dict]:
    """Combinations of the keys' probe values (:func:`probe_values`), each a dict of every
    key of ``space``: all of them when there are at most ``limit``, else a pairwise set --
    every two values of every two keys together in some row (:func:`pairwise_rows`)."""
    keys = list(space)
    values = [probe_values(space[key]) for key in keys]
    if math.prod(len(each) for each in values) <= limit:
        rows: list[tuple[Any, ...]] = list(itertools.product(*values))
    else:
        rows = [
            tuple(values[position][index] for position, index in enumerate(row))
            for row in pairwise_rows([len(each) for each in values])
        ]
    return [dict(zip(keys, row, strict=True)) for row in rows]


def pairwise_rows(sizes: list[int]) -> list[list[int]]:
    """Rows of value indexes (``sizes[k]`` values for key ``k``) in which every pair of
    values of every two keys appears at least once, built greedily: each row starts from
    the first pair not yet covered and gives each other key the value that covers most
    new pairs. Deterministic; a row per value pair at worst, far fewer as a rule."""
    uncovered = {
        (first, a, second, b)
        for first, second in itertools.combinations(range(len(sizes)), 2)
        for a in range(sizes[first])
        for b in range(sizes[second])
    }
    rows: list[list[int]] = []
    while uncovered:
        first, a, second, b = min(uncovered)
        chosen = {first: a, second: b}
        for key in range(len(sizes)):
            if key not in chosen:
                gains = [
                    sum(_pair(key, value, *other) in uncovered for other in chosen.items())
                    for value in range(sizes[key])
                ]
                chosen[key] = gains.index(max(gains))
        row = [chosen[key] for key in range(len(sizes))]
        uncovered -= {
            (first, row[first], second, row[second])
            for first, second in itertools.combinations(range(len(sizes)), 2)
        }
        rows.append(row)
    return rows


def _pair(key: int, value: int, other: int, index: int) -> tuple[int, int, int, int]:
    """Value ``value`` of key ``key`` with value ``index`` of key ``other``, lower key first
    (as :func:`pairwise_rows` keeps its pairs)."""
    return (key, value, other, index) if key < other else (other, index, key, value)


def mutation(spec: dict[str, Any]) -> Any:
    """PBT's mutation of one ``sweep.space`` entry: a list for ``choice`` and ``grid`` (PBT
    moves to a neighbouring value of a list, but multiplies a sampled domain's value by
    0.8 or 1.2, which turns a choice of [0.9, 0.99] into 1.188), else the domain (whose
    perturbed values :class:`KeepInRange` brings back inside it)."""
    ((name, args),) = spec.items()
    return list(args) if name in ("choice", "grid") else domain(spec)


def within(spec: dict[str, Any], value: Any) -> Any:
    """The value nearest ``value`` that the range ``spec`` draws: clipped to its bounds,
    an integer in the reach of ``randint`` (top excluded) and ``qrandint``, a multiple of
    ``quniform``'s and ``qrandint``'s step. Lists (``choice``, ``grid``) are PBT's to keep."""
    ((name, args),) = spec.items()
    if name in ("choice", "grid"):
        return value
    if name in ("randint", "qrandint"):
        drawn = quantized_ints(*args) if name == "qrandint" else range(args[0], args[1])
        step = int(args[2]) if name == "qrandint" else 1
        nearest = drawn[0] + round((float(value) - drawn[0]) / step) * step
        return int(min(max(nearest, drawn[0]), drawn[-1]))
    low, high = float(args[0]), float(args[1])
    if name == "quniform":
        value = round(float(value) / args[2]) * args[2]
    return min(max(float(value), low), high)


class KeepInRange:
    """PBT's ``custom_explore_fn``: every perturbed range value back inside its range.

    Tune's PBT perturbs a sampled value by multiplying it by 0.8 or 1.2 and never looks at
    the domain's bounds: ``lambda_`` in [0.9, 1.0] reached 2.05 within four perturbations,
    a ``randint`` ``minibatch_size`` in [128, 1000] reached 1261, past the train batch.
    This runs after Tune's perturbation (``_explore``) and applies :func:`within` to each
    swept range, under the names the trial's RLlib config dict uses."""

    def __init__(self, space: dict[str, dict[str, Any]]) -> None:
        self.ranges = {
            _config_dict_key(key): spec
            for key, spec in space.items()
            if next(iter(spec)) not in ("choice", "grid")
        }

    def __call__(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config`` (Tune's perturbed trial config), its swept ranges kept in range."""
        for key, spec in self.ranges.items():
            if key in config:
                config[key] = within(spec, config[key])
        return config


def _with_values(data: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config ``data`` with each dotted key of ``values`` set to its value."""
    result = json.loads(json.dumps(data, default=str))
    for key, value in values.items():
        set_dotted(result, key, value, f"sweep.space.{key}")
    return result


def _same_agents_check(experiment: ExperimentConfig) -> Callable[[ExperimentConfig], None]:
    """What :func:`check_sweep` asks of a probe beyond the preflight: with
    ``model.sharing: per-agent`` in a multi-agent environment, the same agents as the
    experiment's -- every trial gets one module per agent of the config's own environment
    (:func:`tune.rllib_config.algorithm_config`), which a trial playing an environment of
    other agents (another topology size) could not use. Nothing otherwise."""
    from envs.registry import MULTI_AGENT_ENVIRONMENTS
    from tune.rllib_config import agent_ids

    if (
        experiment.environment.name not in MULTI_AGENT_ENVIRONMENTS
        or experiment.model.sharing != "per-agent"
    ):
        return lambda probe: None
    agents = agent_ids(experiment)

    def same_agents(probe: ExperimentConfig) -> None:
        if probe.environment.config == experiment.environment.config:
            return
        drawn = agent_ids(probe)
        if drawn != agents:
            raise ConfigError(
                f"the environment has {len(drawn)} agents ({_span(drawn)}) where "
                f"environment.config has {len(agents)} ({_span(agents)}): with "
                "model.sharing=per-agent every trial trains one module per agent of "
                "environment.config; sweep only keys that keep the agents, or use "
                "model.sharing: shared"
            )

    return same_agents


def _span(agents: list[str]) -> str:
    """``a, b`` or ``first .. last`` of a list of agent ids, for a message."""
    return ", ".join(agents) if len(agents) <= 2 else f"{agents[0]} .. {agents[-1]}"


def _check_probe(
    data: dict[str, Any], values: dict[str, Any], extra: Callable[[ExperimentConfig], None]
) -> None:
    """The experiment ``data`` with ``values`` set is valid (the config's own checks, the
    preflight's and ``extra``); :class:`ConfigError` otherwise."""
    from tune.preflight import check_experiment

    probe = config_from_dict(_with_values(data, values))
    check_experiment(probe)
    extra(probe)


def _float_hint(
    data: dict[str, Any],
    key: str,
    spec: dict[str, Any],
    value: Any,
    extra: Callable[[ExperimentConfig], None],
) -> str:
    """When a float draw ``value`` of ``key`` is refused where the nearest integer is
    taken, what to use instead (the setting takes integers); else nothing."""
    name = next(iter(spec))
    if name not in FLOAT_DISTRIBUTIONS or not isinstance(value, float):
        return ""
    try:
        _check_probe(data, {key: round(value)}, extra)
    except ConfigError:
        return ""
    return (
        f" ({name} draws floats such as {value!r}, which this setting refuses; for an "
        "integer setting use randint, qrandint or choice)"
    )


def check_sweep(experiment: ExperimentConfig) -> None:
    """Every key of the sweep's space, at each probe value (:func:`probe_values`), and
    every combination of the keys' probe values (:func:`probe_rows`) make a valid
    experiment (:func:`tune.preflight.check_experiment`), with the same agents under
    ``model.sharing: per-agent``; PBT varies ``algorithm.*`` keys only; ASHA and PBT need
    ``stop.training_iteration``. ConfigError naming the key(s) and value(s) otherwise."""
    from tune.experiment import AlgorithmSection

    sweep = sweep_of(experiment)
    if experiment.warm_start is not None:
        raise ConfigError(
            "warm_start is not supported by sweep.py (trials would differ from the module "
            "they start from); remove it (--set warm_start=null) or train with "
            "platform/train.py"
        )
    if sweep.scheduler in ("asha", "pbt") and experiment.stop.training_iteration is None:
        raise ConfigError(
            f"sweep.scheduler={sweep.scheduler} schedules by training iteration; set "
            "stop.training_iteration"
        )
    grace = sweep.scheduler_config.get("grace_period")
    if sweep.scheduler == "asha" and grace is not None:
        last = experiment.stop.training_iteration
        if last is not None and grace > last:
            raise ConfigError(
                f"sweep.scheduler_config.grace_period={grace} is past "
                f"stop.training_iteration={last}: ASHA would stop no trial; lower it"
            )
    # Every AlgorithmConfig.training() keyword; min_env_steps_per_iteration is a
    # reporting setting (tune/rllib_config.py), which the sweep does not vary.
    fields = {name for name in AlgorithmSection.__dataclass_fields__} - {
        "name",
        "extra",
        "min_env_steps_per_iteration",
    }
    data = experiment.to_dict()
    data.pop("sweep", None)
    same_agents = _same_agents_check(experiment)
    for key, spec in sweep.space.items():
        parts = key.split(".")
        if parts[0] == "algorithm":
            nested = parts[1] == "extra" and len(parts) != 3
            if (parts[1] != "extra" and (len(parts) != 2 or parts[1] not in fields)) or nested:
                name = experiment.algorithm.name
                raise ConfigError(
                    f"sweep.space.{key}: not an algorithm setting; allowed: algorithm.<one of "
                    f"{', '.join(sorted(fields))}> or algorithm.extra.<a {name} training "
                    "setting>"
                )
        elif sweep.scheduler == "pbt":
            raise ConfigError(
                f"sweep.space.{key}: PBT continues trials from other trials' checkpoints, "
                "which fit one network and one environment; with scheduler: pbt vary "
                "algorithm.* keys only (or use asha/fifo)"
            )
        for value in probe_values(spec):
            try:
                _check_probe(data, {key: value}, same_agents)
            except ConfigError as error:
                hint = _float_hint(data, key, spec, value, same_agents)
                raise ConfigError(f"sweep.space.{key}={value!r}: {error}{hint}") from None
    if len(sweep.space) < 2:
        return
    # Each key passed alone, the others at the config's values; a trial draws them all
    # at once, and two values may not go together (a minibatch larger than the batch).
    for row in probe_rows(sweep.space):
        try:
            _check_probe(data, row, same_agents)
        except ConfigError as error:
            together = ", ".join(f"{key}={value!r}" for key, value in row.items())
            raise ConfigError(
                f"sweep.space: a trial can draw {together} together: {error}; narrow the "
                "ranges or choices so that every combination is valid"
            ) from None


def _rllib_key(key: str) -> str:
    """The AlgorithmConfig ``.training()`` keyword of an ``algorithm.*`` sweep key."""
    return key.split(".")[-1]


def _config_dict_key(key: str) -> str:
    """The name an ``algorithm.*`` sweep key has in a trial's RLlib config dict."""
    name = _rllib_key(key)
    return RLLIB_NAMES.get(name, name)


def sweep_seed(experiment: ExperimentConfig) -> int:
    """The training seed every trial of ``experiment``'s sweep trains on: the first of
    ``seeds``.

    One seed, the same for all, on purpose. Tune's schedulers and searchers judge single
    trials: ASHA stops a trial on its own result, PBT clones one trial's weights into
    another, TPE learns from each trial's score, and the sweep's best is the best trial.
    A trial per seed would have them stop one seed of a configuration and keep another,
    clone weights across seeds, and crown the luckiest seed; one trial cannot train
    several seeds either (it is one RLlib Algorithm). On one seed, every trial plays the
    same workloads from the same start, so trials differ by their values alone (a paired
    comparison); how far the chosen values vary across seeds is then ``train.py``'s to
    measure, which trains one trial per seed of ``seeds``."""
    return experiment.seeds[0]


def seed_warning(experiment: ExperimentConfig) -> str | None:
    """The line that says the sweep trains on one of several training seeds
    (:func:`sweep_seed`), or None when ``seeds`` has one."""
    if len(experiment.seeds) < 2:
        return None
    return (
        f"every trial trains on seed {sweep_seed(experiment)}, the first of seeds "
        f"{experiment.seeds} (trials are compared on one seed); train the chosen values on "
        "every seed with platform/train.py"
    )


def param_space(experiment: ExperimentConfig) -> Any:
    """The experiment's AlgorithmConfig with the sweep's distributions in place of the
    swept values, every trial seeded with :func:`sweep_seed`. A swept
    ``environment.config.credit`` that can draw ``job`` samples whole episodes with the
    credit callback in every trial (:func:`tune.rllib_config.with_job_credit`): the
    config's own credit decides that for a training run, but here a trial may draw
    ``job`` from a config of ``round``."""
    from tune.rllib_config import algorithm_config, with_job_credit

    sweep = sweep_of(experiment)
    config = algorithm_config(experiment, seed=sweep_seed(experiment))
    credit = sweep.space.get("environment.config.credit")
    if credit is not None and "job" in probe_values(credit):
        config = with_job_credit(config)
    training: dict[str, Any] = {}
    sections = copy.deepcopy(
        {"model": experiment.model.config, "environment": experiment.environment.config}
    )
    for key, spec in sweep.space.items():
        parts = key.split(".")
        if parts[0] == "algorithm":
            training[_rllib_key(key)] = domain(spec)
            continue
        node = sections[parts[0]]
        for part in parts[2:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = domain(spec)
    if training:
        config = config.training(**training)
    config = config.rl_module(model_config=sections["model"])
    return config.environment(env_config=sections["environment"])


def tune_config(experiment: ExperimentConfig, num_samples: int | None = None) -> Any:
    """Tune's TuneConfig of the sweep: metric and mode, the scheduler (FIFO, ASHA or PBT
    over training iterations) and the search algorithm (random or Optuna), each judging a
    trial from its first result with the metric on (:class:`tune.pbt.AwaitMetric`)."""
    from ray import tune as ray_tune

    # Each waits for the metric: a trial's first results may have none (tune/pbt.py).
    from tune.pbt import DurablePBT, SweepASHA, SweepFIFO, SweepOptuna

    sweep = sweep_of(experiment)
    settings = dict(sweep.scheduler_config)
    scheduler: Any = SweepFIFO()
    if sweep.scheduler == "asha":
        scheduler = SweepASHA(
            time_attr="training_iteration",
            max_t=int(experiment.stop.training_iteration or 1),
            grace_period=int(settings.get("grace_period", 1)),
            reduction_factor=float(settings.get("reduction_factor", 2)),
            brackets=int(settings.get("brackets", 1)),
        )
    elif sweep.scheduler == "pbt":
        mutations = {_config_dict_key(key): mutation(spec) for key, spec in sweep.space.items()}
        # Tune's PBT, but a trial restores what it exploits from a copy in its own folder:
        # the strong trial's own copy may be deleted before (or long after, on --resume)
        # the weak one restarts (tune/pbt.py).
        scheduler = DurablePBT(
            time_attr="training_iteration",
            perturbation_interval=float(settings.get("perturbation_interval", 2)),
            burn_in_period=float(settings.get("burn_in_period", 0)),
            quantile_fraction=float(settings.get("quantile_fraction", 0.25)),
            resample_probability=float(settings.get("resample_probability", 0.25)),
            hyperparam_mutations=mutations,
            # Tune multiplies a range's value by 0.8 or 1.2 without its bounds.
            custom_explore_fn=KeepInRange(sweep.space),
        )
    search = None
    if sweep.search == "optuna":
        from optuna.samplers import TPESampler

        # TPE draws its first n_startup_trials at random (optuna's default 10, all of an
        # 8-trial sweep): a quarter of the trials here, the rest proposed from the finished.
        startup = max(1, (num_samples or sweep.num_samples) // 4)
        search = SweepOptuna(
            sampler=TPESampler(seed=sweep_seed(experiment), n_startup_trials=startup)
        )
    return ray_tune.TuneConfig(
        metric=sweep.result_key,
        mode=sweep.mode,
        num_samples=num_samples or sweep.num_samples,
        scheduler=scheduler,
        search_alg=search,
        max_concurrent_trials=sweep.max_concurrent_trials,
        # Tune names folders after the sampled values, which with Optuna is every setting
        # of the AlgorithmConfig: keep them short.
        trial_dirname_creator=trial_folder_name,
    )


def trial_folder_name(trial: Any) -> str:
    """``<algorithm>_<trial id>``: a trial's folder name."""
    return f"{trial.trainable_name}_{trial.trial_id}"


def swept_params(config: dict[str, Any], experiment: ExperimentConfig) -> dict[str, Any]:
    """The values a trial's RLlib ``config`` dict holds for each swept key (by the
    sweep's dotted keys)."""
    values: dict[str, Any] = {}
    for key in sweep_of(experiment).space:
        parts = key.split(".")
        if parts[0] == "algorithm":
            node: Any = config.get(_config_dict_key(key), config.get(_rllib_key(key)))
        else:
            section = "_model_config" if parts[0] == "model" else "env_config"
            node = config.get(section, config.get(section.lstrip("_"), {}))
            for part in parts[2:]:
                node = node.get(part) if isinstance(node, dict) else None
        values[key] = node
    return values


def _sweep_file(storage: str, name: str) -> Path:
    """Where a sweep remembers its MLflow parent run (for ``--resume``)."""
    from tune.paths import local_folder

    return local_folder(storage, "sweeps", f"{name}.json")


def _parent_run(
    experiment: ExperimentConfig,
    storage: str,
    tracking_uri: str,
    name: str,
    resume: bool,
    num_samples: int | None = None,
) -> str:
    """The sweep's MLflow parent run: the one this sweep opened before (``resume``), else
    a new one (``num_samples``: the trials asked for, when not the config's; ``sweep.seed``:
    the one training seed of every trial, where the config's ``seeds`` may list more);
    RUNNING either way."""
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import log_run

    remembered = _sweep_file(storage, name)
    client = MlflowClient(tracking_uri=tracking_uri)
    if resume and remembered.is_file():
        parent_id = json.loads(remembered.read_text())["parent_run_id"]
    else:
        sweep = sweep_of(experiment)
        parent_id = log_run(
            tracking_uri,
            experiment.experiment_name,
            name,
            params={
                **experiment.flat(),
                "sweep.num_samples": num_samples or sweep.num_samples,
                "sweep.seed": sweep_seed(experiment),
            },
            tags={
                "stage": "sweep",
                "formulation": experiment.environment.name,
                "scheduler": sweep.scheduler,
                "search": sweep.search,
            },
        )
        remembered.parent.mkdir(parents=True, exist_ok=True)
        remembered.write_text(json.dumps({"parent_run_id": parent_id}))
    client.update_run(parent_id, status="RUNNING")
    return parent_id


def _best_checkpoint(experiment: ExperimentConfig, best: Any) -> tuple[str | None, str]:
    """The best trial's checkpoint folder and how it was chosen: its best kept checkpoint
    by ``checkpoint.score`` when one is declared and reported (the score's key), else its
    latest ("latest"); ``(None, "none")`` without any checkpoint."""
    from tune.runs import checkpoint_folder

    if best is None or not (best.best_checkpoints or best.checkpoint):
        return None, "none"
    settings = experiment.checkpoint
    chosen, rule = checkpoint_by_score([best], settings.score_key, settings.order, best.checkpoint)
    return checkpoint_folder(chosen), rule


def metric_value(result: dict[str, Any], key: str) -> float | None:
    """The sweep's metric ``key`` in the flat Tune ``result`` when the sweep's scheduler and
    search can judge the trial by it -- a finite number -- else None: they pass the result
    over (:class:`tune.pbt.AwaitMetric`).

    RLlib 2.60 reports a training episode's metrics (``env_runners/episode_return_mean``,
    ...) as the mean over the episodes that finished during the iteration: absent until a
    trial has finished its first episode -- a SCED2 episode of 1000 jobs takes about 1,800
    steps, past DQN's first iteration of 1,000 -- and NaN in an iteration that finished
    none (every other one or so of SCED2's). A learner's statistics come once learning
    starts. Ranked on such a result, an ASHA rung, a PBT quantile or TPE would let the
    trial through unjudged or lose it."""
    value = result.get(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value) if math.isfinite(value) else None


def check_metric_reported(result: dict[str, Any], key: str, trial: str = "a trial") -> None:
    """:class:`MetricNotReportedError` when the flat Tune ``result`` has no ``key`` where it
    would if the trial reported it: an ``env_runners/`` metric (a training episode's, which
    RLlib reports from the trial's first finished episode on, NaN when an iteration
    finishes none) still absent after episodes have finished is a misspelt key, as Tune's
    own check said at the first result; the message names the result's keys most like
    it. Other keys may come later (:func:`metric_value`): nothing is said of them."""
    finished = result.get(EPISODES_FINISHED) or 0
    if key in result or not key.startswith("env_runners/") or finished <= 0:
        return
    candidates = [name for name in result if not name.startswith("config/")]
    alike = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6) or sorted(
        name for name in candidates if name.startswith("env_runners/episode_")
    )
    raise MetricNotReportedError(
        f"sweep.metric: trial {trial} finished {int(finished)} episode(s) by iteration "
        f"{result.get('training_iteration')}, but its results have no {key!r} to rank it "
        f"by; keys like it: {', '.join(alike) or 'none'} (or use episode_return_mean, "
        "episode_len_mean)"
    )


def last_metric(result: Any, key: str) -> float | None:
    """The last value of the sweep's metric ``key`` that the trial of the Tune ``result`` (a
    ``ray.tune.Result``) reported as a finite number (:func:`metric_value`): from its whole
    history where Tune kept one (``metrics_dataframe``), else from its last result; None
    when it never reported one. Its last result alone may hold NaN (no episode finished
    in its last iteration)."""
    frame = getattr(result, "metrics_dataframe", None)
    if frame is not None and key in frame:
        for value in reversed(frame[key].tolist()):
            finite = metric_value({key: value}, key)
            if finite is not None:
                return finite
    return metric_value({key: result_value(result.metrics or {}, key)}, key)


def best_result(results: list[Any], key: str, mode: str) -> Any:
    """Of Tune's ``results``, the one whose :func:`last_metric` is highest (``mode`` max)
    or lowest (min), the first of equals; None when none reported the metric."""
    scored = [
        (value, result) for result in results if (value := last_metric(result, key)) is not None
    ]
    if not scored:
        return None
    sign = 1.0 if mode == "max" else -1.0
    return max(scored, key=lambda item: sign * item[0])[1]


@contextlib.contextmanager
def sweep_checks_the_metric() -> Iterator[None]:
    """Tune's check that every result carries the sweep's metric off (in this process,
    where Tune's controller runs) for the duration: the sweep's scheduler checks it
    instead, from a trial's first finished episode on (:func:`check_metric_reported`)."""
    before = os.environ.get(STRICT_METRIC_SWITCH)
    os.environ[STRICT_METRIC_SWITCH] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STRICT_METRIC_SWITCH, None)
        else:
            os.environ[STRICT_METRIC_SWITCH] = before


def config_error_in(error: BaseException) -> ConfigError | None:
    """The :class:`ConfigError` that caused ``error`` (Tune re-raises an error of its
    controller as a TuneError carrying only the traceback's text, the original as its
    context), or None."""
    seen: set[int] = set()
    node: BaseException | None = error
    while node is not None and id(node) not in seen:
        if isinstance(node, ConfigError):
            return node
        seen.add(id(node))
        node = node.__cause__ or node.__context__
    return None


def sweep_name(experiment: ExperimentConfig) -> str:
    """The Tune run (and MLflow parent run) of ``experiment``'s sweep."""
    return f"{experiment.name}-sweep"


def run_sweep(
    experiment: ExperimentConfig,
    storage: str,
    tracking_uri: str,
    *,
    resume: bool = False,
    num_samples: int | None = None,
) -> dict[str, Any]:
    """Run (or with ``resume`` continue) the sweep; Ray must be up. Returns
    :func:`finish_sweep`'s summary. The parent run ends FINISHED, FAILED (an error, or no
    trial reported the metric) or KILLED (interrupted); while MLflow cannot be reached
    that is retried (:func:`close_parent_run`), and a parent run left unupdated is a
    warning, never a lost summary. Trials are judged from their first result with the
    metric on (:func:`sweep_checks_the_metric`); a training-episode metric a trial still
    lacks after finishing episodes raises :class:`MetricNotReportedError`
    (:func:`check_metric_reported`). The best trial is the best by :func:`last_metric`."""
    from tune.runs import make_tuner, restore_tuner

    sweep = sweep_of(experiment)
    name = sweep_name(experiment)
    parent_id = _parent_run(experiment, storage, tracking_uri, name, resume, num_samples)
    try:
        space = param_space(experiment)
        if resume:
            tuner = restore_tuner(experiment, space, storage, name=name)
        else:
            tuner = make_tuner(
                experiment,
                space,
                storage,
                tracking_uri,
                name=name,
                tune_config=tune_config(experiment, num_samples),
                parent_run_id=parent_id,
            )
        with sweep_checks_the_metric():
            results = tuner.fit()
    except BaseException as error:
        # The parent run never stays RUNNING: KILLED on Ctrl-C, FAILED on any error. An
        # MLflow outage here must not hide the error itself.
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        problem = close_parent_run(tracking_uri, parent_id, status, {})
        if problem:
            print(f"sweep.py: warning: {problem}", file=sys.stderr, flush=True)
        refused = config_error_in(error)  # a metric no trial reports: one line, exit 2
        if refused is not None and refused is not error:
            raise refused from None
        raise
    best = best_result(list(results), sweep.result_key, sweep.mode)
    return finish_sweep(experiment, list(results), best, tracking_uri, parent_id)


def finish_sweep(
    experiment: ExperimentConfig,
    results: list[Any],
    best: Any,
    tracking_uri: str,
    parent_id: str,
    deadline: Deadline | None = None,
) -> dict[str, Any]:
    """The sweep's summary of its Tune ``results`` (``best``: the best by the metric,
    :func:`best_result`, None when no trial reported it), then the parent run updated:
    ``best_<metric>`` logged and its end status set, through an MLflow outage until
    ``deadline`` (:func:`close_parent_run`).

    Returns ``trials`` (per trial: name, swept ``params``, last ``training_iteration``,
    ``metric``: the last value of the metric it reported, :func:`last_metric`, ``error``),
    ``metric``, ``mode``, ``status``, ``best_trial``,
    ``best_checkpoint`` (the best trial's best-scored checkpoint, see
    :func:`_best_checkpoint`), ``best_checkpoint_by``, ``best_config``, ``tracking_uri``,
    ``parent_run_id`` and ``parent_run_error``: None, or the one line (also printed on
    stderr) saying the parent run could not be updated. The summary is built before
    MLflow is asked anything: the sweep's results are never lost to it."""
    sweep = sweep_of(experiment)
    rows = []
    for result in results:
        metrics = result.metrics or {}
        rows.append(
            {
                "trial": Path(result.path).name if result.path else "?",
                "params": swept_params(result.config or {}, experiment),
                "training_iteration": metrics.get("training_iteration"),
                "metric": last_metric(result, sweep.result_key),
                "error": str(result.error) if result.error else None,
            }
        )
    reported = any(row["metric"] is not None for row in rows)
    interrupted = any(
        result.error is None and not (result.metrics or {}).get("done") for result in results
    )
    status = "KILLED" if interrupted else "FINISHED" if reported else "FAILED"
    best_checkpoint, chosen_by = _best_checkpoint(experiment, best)
    payload: dict[str, Any] = {
        "trials": rows,
        "metric": sweep.metric,
        "mode": sweep.mode,
        "status": status,
        "best_trial": Path(best.path).name if best is not None and best.path else None,
        "best_checkpoint": best_checkpoint,
        "best_checkpoint_by": chosen_by,
        "best_config": swept_params(best.config or {}, experiment) if best else {},
        "tracking_uri": tracking_uri,
        "parent_run_id": parent_id,
        "parent_run_error": None,
    }
    metrics = {}
    if best is not None:
        value = last_metric(best, sweep.result_key)
        metrics[f"best_{sweep.metric.replace('/', '_')}"] = value
    problem = close_parent_run(tracking_uri, parent_id, status, metrics, deadline)
    if problem:
        problem += "; the sweep's results are in this summary and in Tune's storage"
        print(f"sweep.py: warning: {problem}", file=sys.stderr, flush=True)
        payload["parent_run_error"] = problem
    return payload


def parent_run_deadline(tracking_uri: str, retry_for_s: float = RETRY_FOR_S) -> Deadline:
    """A :class:`tune.mlflow_retry.Deadline` whose outage lines name the sweep's parent run
    (the default wording names the evaluation runs)."""
    return Deadline(
        tracking_uri,
        retry_for_s,
        retried="the sweep's parent run is updated again",
        resumed="updating the parent run",
    )


def close_parent_run(
    tracking_uri: str,
    run_id: str,
    status: str,
    metrics: dict[str, float],
    deadline: Deadline | None = None,
) -> str | None:
    """Log ``metrics`` on the parent run ``run_id`` and end it with ``status``, each
    request tried again through an MLflow outage until ``deadline`` (default: 5 minutes
    from now, as the trials' runs, :data:`tune.mlflow_retry.RETRY_FOR_S`). The end status
    is asked for even when a metric could not be logged. Returns None, or -- the server
    still unreachable, or a request refused -- one line saying what the parent run lacks;
    it never raises for MLflow."""
    from mlflow.tracking import MlflowClient

    from tune.mlflow_retry import outage_errors, retrying

    if deadline is None:
        deadline = parent_run_deadline(tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    lacks: list[str] = []
    failure: BaseException | None = None
    for name, value in metrics.items():
        try:
            retrying(lambda n=name, v=value: client.log_metric(run_id, n, v), deadline)
        except outage_errors() as error:
            lacks.append(f"{name}={value:.6g} not logged")
            failure = error
    try:
        retrying(lambda: client.set_terminated(run_id, status=status), deadline)
    except outage_errors() as error:
        lacks.append(f"not set to {status} (it may still show RUNNING)")
        failure = error
    if failure is None:
        return None
    reason = " ".join(f"{type(failure).__name__}: {failure}".split())
    return f"MLflow parent run {run_id} at {tracking_uri}: {' and '.join(lacks)} ({reason})"
