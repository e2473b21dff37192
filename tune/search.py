"""A Ray Tune sweep of an experiment: its ``sweep:`` section as Tune's search space,
scheduler and search algorithm, run as one MLflow parent run with a child run per trial.

The search space is the config's (:class:`tune.experiment.SweepSection`): dotted keys under
``algorithm.``, ``model.config.`` and ``environment.config.`` with one distribution each.
:func:`check_sweep` validates every key before Ray starts by building the experiment at
the edges of its distribution (each choice, both ends of a range) with the same checks as
``train.py`` (:mod:`tune.preflight`), so a key the algorithm, the model or the environment
does not take -- PPO's ``entropy_coeff`` under DQN -- fails before anything runs.
:func:`param_space` puts the distributions into the experiment's RLlib AlgorithmConfig,
:func:`tune_config` adds the metric, mode, ASHA or PBT and random or Optuna search, and
:func:`run_sweep` runs it (or resumes it) and reports each trial and the best one;
``tune/sweep.py`` is the command line.
"""

from __future__ import annotations

import copy
import json
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
from tune.selection import checkpoint_by_score, result_value

#: AlgorithmSection fields under the names RLlib's config dict uses.
RLLIB_NAMES = {"lambda_": "lambda"}


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
    """The values :func:`check_sweep` builds the experiment with: every listed value, or
    the two ends of a range (the largest integer a ``randint`` draws)."""
    ((name, args),) = spec.items()
    if name in ("choice", "grid"):
        return list(args)
    if name == "randint":
        return [args[0], args[1] - 1]
    if name == "qrandint":
        drawn = quantized_ints(*args)
        return [drawn[0], drawn[-1]]
    return [args[0], args[1]]


def mutation(spec: dict[str, Any]) -> Any:
    """PBT's mutation of one ``sweep.space`` entry: a list for ``choice`` and ``grid`` (PBT
    moves to a neighbouring value of a list, but multiplies a sampled domain's value by
    0.8 or 1.2, which turns a choice of [0.9, 0.99] into 1.188), else the domain."""
    ((name, args),) = spec.items()
    return list(args) if name in ("choice", "grid") else domain(spec)


def _with_value(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of the config ``data`` with the dotted ``key`` set to ``value``."""
    result = json.loads(json.dumps(data, default=str))
    set_dotted(result, key, value, f"sweep.space.{key}")
    return result


def check_sweep(experiment: ExperimentConfig) -> None:
    """Every key of the sweep's space, at each probe value, makes a valid experiment
    (:func:`tune.preflight.check_experiment`); PBT varies ``algorithm.*`` keys only;
    ASHA and PBT need ``stop.training_iteration``. ConfigError naming the key otherwise."""
    from tune.experiment import AlgorithmSection
    from tune.preflight import check_experiment

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
                check_experiment(config_from_dict(_with_value(data, key, value)))
            except ConfigError as error:
                raise ConfigError(f"sweep.space.{key}={value!r}: {error}") from None


def _rllib_key(key: str) -> str:
    """The AlgorithmConfig ``.training()`` keyword of an ``algorithm.*`` sweep key."""
    return key.split(".")[-1]


def param_space(experiment: ExperimentConfig) -> Any:
    """The experiment's AlgorithmConfig with the sweep's distributions in place of the
    swept values (seeded with the first training seed)."""
    from tune.rllib_config import algorithm_config

    sweep = sweep_of(experiment)
    config = algorithm_config(experiment, seed=experiment.seeds[0])
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
    over training iterations) and the search algorithm (random or Optuna)."""
    from ray import tune as ray_tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    from tune.pbt import DurablePBT

    sweep = sweep_of(experiment)
    settings = dict(sweep.scheduler_config)
    scheduler: Any = FIFOScheduler()
    if sweep.scheduler == "asha":
        scheduler = ASHAScheduler(
            time_attr="training_iteration",
            max_t=int(experiment.stop.training_iteration or 1),
            grace_period=int(settings.get("grace_period", 1)),
            reduction_factor=float(settings.get("reduction_factor", 2)),
            brackets=int(settings.get("brackets", 1)),
        )
    elif sweep.scheduler == "pbt":
        mutations = {
            RLLIB_NAMES.get(_rllib_key(key), _rllib_key(key)): mutation(spec)
            for key, spec in sweep.space.items()
        }
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
        )
    search = None
    if sweep.search == "optuna":
        from optuna.samplers import TPESampler
        from ray.tune.search.optuna import OptunaSearch

        # TPE draws its first n_startup_trials at random (optuna's default 10, all of an
        # 8-trial sweep): a quarter of the trials here, the rest proposed from the finished.
        startup = max(1, (num_samples or sweep.num_samples) // 4)
        search = OptunaSearch(
            sampler=TPESampler(seed=experiment.seeds[0], n_startup_trials=startup)
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
            name = _rllib_key(key)
            node: Any = config.get(RLLIB_NAMES.get(name, name), config.get(name))
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
    a new one (``num_samples``: the trials asked for, when not the config's); RUNNING
    either way."""
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
            params={**experiment.flat(), "sweep.num_samples": num_samples or sweep.num_samples},
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
    """Run (or with ``resume`` continue) the sweep; Ray must be up. Returns ``trials``
    (per trial: name, swept ``params``, last ``training_iteration``, final ``metric``
    value, ``error``), ``metric``, ``mode``, ``best_trial``, ``best_checkpoint`` (the best
    trial's best-scored checkpoint, see :func:`_best_checkpoint`), ``best_checkpoint_by``,
    ``best_config``, ``tracking_uri`` and ``parent_run_id``. The parent run ends FINISHED,
    FAILED (an error, or no trial reported the metric) or KILLED (interrupted)."""
    from mlflow.tracking import MlflowClient

    from tune.runs import make_tuner, restore_tuner

    sweep = sweep_of(experiment)
    name = sweep_name(experiment)
    parent_id = _parent_run(experiment, storage, tracking_uri, name, resume, num_samples)
    client = MlflowClient(tracking_uri=tracking_uri)
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
        results = tuner.fit()
    except BaseException as error:
        # The parent run never stays RUNNING: KILLED on Ctrl-C, FAILED on any error.
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
        client.set_terminated(parent_id, status=status)
        raise
    rows = []
    for result in results:
        metrics = result.metrics or {}
        rows.append(
            {
                "trial": Path(result.path).name if result.path else "?",
                "params": swept_params(result.config or {}, experiment),
                "training_iteration": metrics.get("training_iteration"),
                "metric": result_value(metrics, sweep.result_key),
                "error": str(result.error) if result.error else None,
            }
        )
    reported = [row for row in rows if row["metric"] is not None]
    best = results.get_best_result(metric=sweep.result_key, mode=sweep.mode) if reported else None
    if best is not None:
        client.log_metric(
            parent_id,
            f"best_{sweep.metric.replace('/', '_')}",
            result_value(best.metrics, sweep.result_key),
        )
    interrupted = any(
        result.error is None and not (result.metrics or {}).get("done") for result in results
    )
    status = "KILLED" if interrupted else "FINISHED" if reported else "FAILED"
    client.set_terminated(parent_id, status=status)
    best_checkpoint, chosen_by = _best_checkpoint(experiment, best)
    return {
        "trials": rows,
        "metric": sweep.metric,
        "mode": sweep.mode,
        "status": status,
        "best_trial": Path(best.path).name if best is not None and best.path else None,
        "best_checkpoint": best_checkpoint,
        "best_checkpoint_by": chosen_by,
        "best_config": swept_params(best.config, experiment) if best else {},
        "tracking_uri": tracking_uri,
        "parent_run_id": parent_id,
    }
