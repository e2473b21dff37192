"""Everything a config can get wrong, checked before Ray starts.

:func:`tune.experiment.load_config` checks each section's own fields. What only the
environment, the model or RLlib can judge is checked here, by asking them -- no list of
allowed keys is kept twice:

- ``environment.config``: the environment is built from it (its own config class refuses
  unknown keys and bad values, the topology builder bad sizes);
- ``model.config``: the RLModule is built on that environment's spaces and acts on its
  first observation (its settings class refuses unknown keys; a network that does not fit
  the observations fails there); a key that the model's and the environment's configs
  share (``servers``, ``gpus_per_server``) must hold the same value in both;
- ``evaluation.environment``: the environment validation and evaluation play (its
  overrides over ``environment.config``) is built too, and the module trained on the
  training environment must play it as the evaluation will (fitted to its spaces,
  :func:`tune.evaluation.fit_to_spaces`, then acting on its first observation) -- else a
  misspelt override failed only after training;
- ``algorithm.extra``: every key must be a keyword of the algorithm's ``.training()``
  (PPO's and DQN's differ), and RLlib's own ``validate()`` must accept the whole config;
- ``resources``: one trial's demand (RLlib's resource request) must fit the machine a
  local Ray would start on, or the cluster that was joined (:func:`check_resources`).

Each failure is a :class:`~tune.experiment.ConfigError` whose one-line message names the
key and what is allowed. Settings that run but waste what Ray gave a trial are not failures:
:func:`resource_warnings` returns a line for each, which the programs print.

How to use::

    experiment = load_config(path)
    check_experiment(experiment)                      # env, model, algorithm
    for warning in resource_warnings(experiment):     # runs, but not as likely meant
        print(warning)
    check_resources(experiment, local_resources(), "this machine")
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import inspect
import logging
from collections.abc import Iterator
from typing import Any

from tune.experiment import ConfigError, ExperimentConfig


def check_experiment(experiment: ExperimentConfig) -> None:
    """Raise :class:`ConfigError` for the first nested key that the environment, the model
    or the algorithm refuses."""
    with _quiet_rllib():
        env = build_environment(experiment)
        module = check_model(experiment, env)
        check_evaluation_environment(experiment, module)
        check_algorithm(experiment)


def build_environment(experiment: ExperimentConfig) -> Any:
    """The environment ``environment.config`` describes (ConfigError when it refuses)."""
    from envs import make_env

    section = experiment.environment
    try:
        return make_env(section.name, **section.config)
    except (TypeError, ValueError, KeyError) as error:
        raise ConfigError(f"environment.config ({section.name}): {_text(error)}") from None


def build_evaluation_environment(experiment: ExperimentConfig) -> Any | None:
    """The environment validation and evaluation play: ``environment.config`` with
    ``evaluation.environment``'s overrides on top (merged as :mod:`tune.selection` and
    ``tune.evaluation.comparison.evaluation_env_config`` merge them); None without
    overrides (they play the training environment). ConfigError when it is refused."""
    from envs import make_env

    section, overrides = experiment.environment, experiment.evaluation.environment
    if not overrides:
        return None
    try:
        return make_env(section.name, **{**section.config, **overrides})
    except (TypeError, ValueError, KeyError) as error:
        raise ConfigError(
            f"evaluation.environment {overrides!r} (over environment.config, "
            f"{section.name}): {_text(error)}"
        ) from None


def _environment_settings(env: Any) -> Any:
    """The environment's config dataclass (``env.config``, through Gymnasium's wrappers)."""
    settings = getattr(getattr(env, "unwrapped", env), "config", None)
    return settings if dataclasses.is_dataclass(settings) else None


def _spaces_and_observation(experiment: ExperimentConfig, env: Any) -> tuple[Any, Any, Any]:
    """One agent's observation and action spaces and its first observation (seed 0)."""
    from envs.registry import MULTI_AGENT_ENVIRONMENTS

    if experiment.environment.name in MULTI_AGENT_ENVIRONMENTS:
        agent = env.possible_agents[0]
        observations, _ = env.reset(seed=0)
        return env.observation_space(agent), env.action_space(agent), observations[agent]
    observation, _ = env.reset(seed=0)
    return env.observation_space, env.action_space, observation


def check_model(experiment: ExperimentConfig, env: Any) -> Any:
    """The model's settings are its own and agree with the environment's; it builds on
    the environment's spaces and acts on an observation (ConfigError otherwise). Returns
    the module built, as training would start it."""
    from models.registry import module_class

    model, env_name = experiment.model, experiment.environment.name
    _check_shared_settings(experiment, env, "the environment", "set the same value in both")
    observation_space, action_space, observation = _spaces_and_observation(experiment, env)
    try:
        # Built directly, not through RLModuleSpec.build(), which answers any
        # AttributeError of a module's setup with a misleading deprecation error.
        module = module_class(model.name)(
            observation_space=observation_space,
            action_space=action_space,
            model_config=dict(model.config),
        )
    except ValueError as error:
        # The settings classes refuse unknown keys and bad values with a ValueError.
        raise ConfigError(f"model.config ({model.name}): {_text(error)}") from None
    except Exception as error:
        raise ConfigError(
            f"model.name={model.name!r} does not fit environment {env_name}: building it on "
            f"the environment's spaces failed ({type(error).__name__}: {_text(error)})"
        ) from None
    failure = _act(module, observation)
    if failure:
        raise ConfigError(
            f"model.name={model.name!r} with model.config {model.config} does not fit "
            f"environment {env_name}: acting on its first observation failed ({failure})"
        )
    return module


def check_evaluation_environment(experiment: ExperimentConfig, module: Any) -> None:
    """With ``evaluation.environment`` overrides, the environment they make is built
    (:func:`build_evaluation_environment`) and ``module`` -- the model as
    :func:`check_model` built it on the training environment -- plays it as validation and
    evaluation will: its settings shared with the environment agree, a multi-agent
    module is fitted to its spaces (:func:`tune.evaluation.fit_to_spaces`: a network whose
    weights depend on them cannot be), and it acts on its first observation. ConfigError,
    naming ``evaluation.environment``, otherwise: each failed only after training."""
    from envs.registry import MULTI_AGENT_ENVIRONMENTS

    env = build_evaluation_environment(experiment)
    if env is None:
        return
    where = f"evaluation.environment {experiment.evaluation.environment!r}"
    try:
        _check_shared_settings(
            experiment,
            env,
            "the evaluation environment",
            "the network is trained for model.config: evaluate with the same value",
        )
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
    observation_space, action_space, observation = _spaces_and_observation(experiment, env)
    if experiment.environment.name in MULTI_AGENT_ENVIRONMENTS:
        from tune.evaluation.multi_agent import fit_to_spaces

        try:
            module = fit_to_spaces(module, observation_space, action_space)
        except ValueError as error:
            raise ConfigError(f"{where}: {_text(error)}") from None
    failure = _act(module, observation)
    if failure:
        raise ConfigError(
            f"{where}: model.name={experiment.model.name!r} trained on environment.config "
            f"cannot play the evaluation environment: acting on its first observation "
            f"failed ({failure})"
        )


def _check_shared_settings(experiment: ExperimentConfig, env: Any, which: str, fix: str) -> None:
    """ConfigError when a ``model.config`` key the environment's settings also have holds
    another value there (``which`` names the environment, ``fix`` says what to do)."""
    settings = _environment_settings(env)
    if settings is None:
        return
    for key, value in experiment.model.config.items():
        if hasattr(settings, key) and getattr(settings, key) != value:
            raise ConfigError(
                f"model.config.{key}={value!r} does not fit {which}: "
                f"{experiment.environment.name} has {key}={getattr(settings, key)!r}; {fix}"
            )


def _act(module: Any, observation: Any) -> str | None:
    """``module`` acts on one ``observation``: None, or what failed (one line)."""
    import numpy as np
    import torch
    import tree
    from ray.rllib.core.columns import Columns

    batch = tree.map_structure(lambda value: torch.as_tensor(np.asarray(value)[None]), observation)
    try:
        with torch.no_grad():
            module.forward_inference({Columns.OBS: batch})
    except Exception as error:
        return f"{type(error).__name__}: {_text(error)}"
    return None


def training_keys(config_class: type) -> list[str]:
    """The keywords ``config_class.training()`` takes, through its base classes, without
    the deprecated ones (RLlib marks them with a DEPRECATED_VALUE default)."""
    # Where RLlib 2.60 keeps its marker of deprecated arguments (older releases: under
    # ray.rllib.utils).
    from ray._common.deprecation import DEPRECATED_VALUE

    names: set[str] = set()
    for klass in config_class.__mro__:
        method = klass.__dict__.get("training")
        if method is None:
            continue
        for parameter in inspect.signature(method).parameters.values():
            if parameter.kind is parameter.KEYWORD_ONLY and parameter.default != DEPRECATED_VALUE:
                names.add(parameter.name)
    return sorted(names)


def check_algorithm(experiment: ExperimentConfig) -> None:
    """``algorithm.extra`` names settings of the algorithm's ``.training()`` only, and
    RLlib validates the whole AlgorithmConfig (ConfigError otherwise)."""
    from tune.rllib_config import algorithm_config, default_config

    algorithm = experiment.algorithm
    allowed = training_keys(type(default_config(algorithm.name)))
    for key in algorithm.extra:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"algorithm.extra.{key} is not a {algorithm.name} training setting{hint}; "
                f"allowed: {', '.join(allowed)}"
            )
    try:
        config = algorithm_config(experiment)
        config.validate()
    except Exception as error:
        raise ConfigError(f"algorithm ({algorithm.name}): {_text(error)}") from None


def trial_resources(experiment: ExperimentConfig) -> dict[str, float]:
    """What one trial asks Ray for (RLlib's resource request of the algorithm): CPUs and
    GPUs of its learners and env runners together."""
    from tune.rllib_config import algorithm_config

    with _quiet_rllib():
        config = algorithm_config(experiment)
        request = config.algo_class.default_resource_request(config)
    return {key: float(value) for key, value in request.required_resources.items() if value}


def local_resources() -> dict[str, float]:
    """The CPUs and GPUs a local Ray started here would have (Ray counts the CPUs this
    process may use and the visible CUDA devices)."""
    import os

    import torch

    return {"CPU": float(len(os.sched_getaffinity(0))), "GPU": float(torch.cuda.device_count())}


def check_resources(experiment: ExperimentConfig, available: dict[str, float], where: str) -> None:
    """ConfigError when one trial needs more CPUs or GPUs than ``available`` (``where``
    names it in the message): such a trial would wait for them forever."""
    needed = trial_resources(experiment)
    resources = experiment.resources
    for kind in ("GPU", "CPU"):
        want, have = needed.get(kind, 0.0), available.get(kind, 0.0)
        if want > have:
            raise ConfigError(
                f"resources: one trial needs {want:g} {kind}s ({_demand(resources)}), "
                f"{where} has {have:g}; lower resources.num_gpus_per_learner, num_learners, "
                "num_env_runners or num_cpus_per_* to fit"
            )


def resource_warnings(experiment: ExperimentConfig) -> list[str]:
    """Resource settings that run, but not as their author likely meant (one line each).

    Remote env runners with more ``env_processes`` than ``num_cpus_per_env_runner``: the
    helper processes are not in Ray's request, so a runner's processes share the CPUs Ray
    gave it (or take those of another runner or the learner). On the demo one remote
    runner gave 122.1 env steps/s with a helper and 121.8 without (README "Training
    throughput"): nothing gained, a CPU taken from whatever else the cluster runs.
    """
    resources = experiment.resources
    if resources.num_env_runners and resources.env_processes > resources.num_cpus_per_env_runner:
        return [
            f"resources.env_processes={resources.env_processes} with "
            f"num_env_runners={resources.num_env_runners} of "
            f"num_cpus_per_env_runner={resources.num_cpus_per_env_runner}: each remote runner "
            f"starts {resources.env_processes - 1} helper process(es) on CPUs Ray did not "
            "give it; set env_processes to at most num_cpus_per_env_runner"
        ]
    return []


def _demand(resources: Any) -> str:
    """The resource settings behind a demand, as they read in the config."""
    return ", ".join(
        f"{field.name}={getattr(resources, field.name)}"
        for field in dataclasses.fields(resources)
        if field.name not in NOT_REQUESTED
    )


# Resource settings Ray's request does not count: environments per runner, the helper
# processes that step them (they use the runner's idle time, not a CPU of their own), and
# how many episodes a step plays in the driver (the driver's own CPU, outside any trial).
NOT_REQUESTED = ("num_envs_per_env_runner", "env_processes", "local_episodes")


def _text(error: BaseException) -> str:
    """An exception's message on one line."""
    text = str(error).strip() or type(error).__name__
    return " ".join(text.split())


@contextlib.contextmanager
def _quiet_rllib() -> Iterator[None]:
    """RLlib logs a warning per algorithm when a config is built or validated; a check
    that passes should print nothing, and one that fails only its error line."""
    # Ray sets its loggers' levels when it is first imported ("ray.rllib" to WARNING): a
    # first import inside this block would undo the silence set below.
    import ray  # noqa: F401

    # RLlib's loggers and Ray's deprecation notices (RLlib builds a deprecated
    # RLModuleConfig of every module it checks).
    loggers = [logging.getLogger(name) for name in ("ray.rllib", "ray._common.deprecation")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
