"""Experiment configs: one YAML file = one experiment, loaded into validated dataclasses.

Sections (every key optional except where noted; unknown keys fail with their name)::

    name: demo                              # experiment name (MLflow experiment default)
    environment: {name: pod_scheduling_v0, config: {...}}   # env name + its keyword config
    model: {name: pod_gnn, config: {...}, sharing: shared}  # RLModule (models.registry)
    algorithm: {name: PPO, lr: 3.0e-4, gamma: 0.99, train_batch_size: 2000, ...}
    resources: {num_env_runners: 0, num_envs_per_env_runner: 1, num_learners: 0, ...}
    stop: {training_iteration: 20, time_total_s: null}
    checkpoint: {frequency: 1, keep: 3}
    evaluation: {seeds: [1000, 1001], baselines: [fifo+packing, ...], environment: {...}}
    tracking: {tracking_uri: null, experiment: null}
    warm_start: {heuristic: fifo+packing, episodes: 40, epochs: 20, lr: 1.0e-3}  # optional
    sweep: {space: {algorithm.lr: {loguniform: [1.0e-5, 1.0e-3]}}, scheduler: asha}  # optional
    seeds: [0]                              # one Tune trial per seed (a sweep: the first)

``--set a.b=c`` overrides any key (values parsed as YAML scalars/lists; scientific
notation YAML 1.1 reads as text, ``1e-4``, is a number there and in ``algorithm.extra``:
:func:`missed_floats`). A swept key is one key of ``sweep.space``, dots and all:
``--set 'sweep.space.algorithm.lr={loguniform: [1e-5, 1e-3]}'`` (or
``sweep.space.algorithm.lr.loguniform=[1e-5, 1e-3]``) sets its distribution, ``=null``
stops sweeping it (:func:`set_space_entry`). Derived values are properties; validation
raises ConfigError (a ValueError) naming the key and what is allowed, before anything
starts Ray.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ALGORITHMS = ("PPO", "APPO", "DQN")
#: The algorithms that read minibatch_size, num_epochs, entropy_coeff, clip_param, lambda_
#: (DQN learns from its replay buffer, one train_batch_size sample per update).
POLICY_GRADIENT = ("PPO", "APPO")
SHARING = ("shared", "per-agent")
#: The schedulers a multi-agent evaluation compares with when the config names none.
DEFAULT_SCHEDULERS = ("fifo+packing", "fifo+tetris", "fifo+load-balancing", "fifo+lif")
#: How the learned policy acts when nobody says: greedily (the argmax of its masked
#: logits), as it would be deployed, so that an evaluation repeats exactly. The default of
#: ``evaluation.greedy`` and of every play in :mod:`tune.evaluation`; defined here, in the
#: config module that imports no other part of ``tune``, so both can import it.
DEFAULT_GREEDY = True
#: How sure validation must be before a checkpoint replaces the warm start it was trained
#: from (``evaluation.selection_confidence``, :func:`tune.selection.significantly_lower`).
DEFAULT_SELECTION_CONFIDENCE = 0.95
#: ``evaluation.baselines: all``: the full table of heuristics.
ALL_BASELINES = "all"
#: Combinations the pod environment's heuristic driver cannot play. Empty: every one of
#: the 18 orderings x 9 placements ran to the end on the demo, contended and paper001
#: settings. las and srtf run non-preemptively there (the agents cannot preempt); random
#: orderings and placements stay in, seeded by the episode's seed, as the floor any policy
#: should beat.
POD_HEURISTICS_EXCLUDED: frozenset[str] = frozenset()


def pod_heuristic_names() -> list[str]:
    """Every ``ordering+placement`` the pod environment's heuristic driver can play."""
    from envs.schedulers import scheduler_names

    names = scheduler_names().combinations()
    return [name for name in names if name not in POD_HEURISTICS_EXCLUDED]


class ConfigError(ValueError):
    """A bad experiment config: the message names the key and what is allowed."""


def _build(cls: type, data: Any, where: str) -> Any:
    """``cls(**data)`` with unknown keys reported by name and path."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(data).__name__}: {data!r}")
    allowed = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(f'{where}.{key}' for key in unknown)}; "
            f"allowed in {where}: {', '.join(allowed)}"
        )
    try:
        return cls(**data)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{where}: {error}") from None


def _positive_int(where: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where} must be an integer >= {minimum}, got {value!r}")


def _seed_list(where: str, value: Any, repeat_means: str, *, empty: bool = False) -> None:
    """``value`` must be a list of distinct integers >= 0 (non-empty unless ``empty``);
    ``repeat_means`` says what a repeated seed would do."""
    if (
        not isinstance(value, list)
        or (not value and not empty)
        or any(isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 for seed in value)
    ):
        kind = "a list" if empty else "a non-empty list"
        raise ConfigError(f"{where} must be {kind} of integers >= 0, got {value!r}")
    repeated = _repeated(value)
    if repeated:
        raise ConfigError(f"{where} repeats {repeated}: {repeat_means}")


def _repeated(values: list[Any]) -> list[Any]:
    """The values that occur more than once in ``values``, sorted."""
    return sorted({value for value in values if values.count(value) > 1})


def _real(where: str, value: Any, low: float, high: float, *, open_low: bool = False) -> None:
    """``value`` must be a real number in [low, high] (``(low, high]`` if ``open_low``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (low < value if open_low else low <= value)
        or not value <= high
    ):
        bracket = "(" if open_low else "["
        raise ConfigError(f"{where} must be a number in {bracket}{low}, {high}], got {value!r}")


@dataclass(frozen=True)
class EnvironmentSection:
    """The environment by name and its keyword configuration."""

    name: str = "pod_scheduling_v0"
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from envs.registry import environment_names

        known = environment_names()
        if self.name not in known:
            raise ConfigError(f"environment.name={self.name!r}; known: {', '.join(known)}")
        if not isinstance(self.config, dict):
            raise ConfigError(f"environment.config must be a mapping, got {self.config!r}")


@dataclass(frozen=True)
class ModelSection:
    """The RLModule by registry name, its settings, and parameter sharing across agents."""

    name: str = "pod_gnn"
    config: dict[str, Any] = field(default_factory=dict)
    sharing: str = "shared"

    def __post_init__(self) -> None:
        from models.registry import MODULES

        if self.name not in MODULES:
            raise ConfigError(f"model.name={self.name!r}; known: {', '.join(sorted(MODULES))}")
        if self.sharing not in SHARING:
            raise ConfigError(f"model.sharing={self.sharing!r}; allowed: {', '.join(SHARING)}")


@dataclass(frozen=True)
class AlgorithmSection:
    """The RLlib algorithm and its main hyperparameters; ``extra`` goes to ``.training()``.

    ``minibatch_size``, ``num_epochs``, ``entropy_coeff``, ``clip_param`` and ``lambda_``
    apply to PPO and APPO only; DQN's own settings (``replay_buffer_config``, ``epsilon``,
    ``target_network_update_freq``, ...) go in ``extra``. ``min_env_steps_per_iteration``:
    the env steps one training iteration samples at least (RLlib's reporting setting
    ``min_sample_timesteps_per_iteration``); None keeps the algorithm's own (DQN 1,000, PPO
    none beyond its ``train_batch_size``).
    """

    name: str = "PPO"
    lr: float = 3.0e-4
    gamma: float = 0.99
    train_batch_size: int = 2000
    minibatch_size: int = 256
    num_epochs: int = 4
    entropy_coeff: float = 0.01
    clip_param: float = 0.2
    lambda_: float = 0.95
    min_env_steps_per_iteration: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in ALGORITHMS:
            raise ConfigError(f"algorithm.name={self.name!r}; allowed: {', '.join(ALGORITHMS)}")
        if not (isinstance(self.lr, int | float) and 0 < self.lr < 1):
            raise ConfigError(f"algorithm.lr must be in (0, 1), got {self.lr!r}")
        if not (isinstance(self.gamma, int | float) and 0 < self.gamma <= 1):
            raise ConfigError(f"algorithm.gamma must be in (0, 1], got {self.gamma!r}")
        for key in ("train_batch_size", "minibatch_size", "num_epochs"):
            _positive_int(f"algorithm.{key}", getattr(self, key))
        if self.name in POLICY_GRADIENT and self.minibatch_size > self.train_batch_size:
            raise ConfigError(
                f"algorithm.minibatch_size ({self.minibatch_size}) must not exceed "
                f"algorithm.train_batch_size ({self.train_batch_size})"
            )
        _real("algorithm.entropy_coeff", self.entropy_coeff, 0, math.inf)
        _real("algorithm.clip_param", self.clip_param, 0, math.inf, open_low=True)
        _real("algorithm.lambda_", self.lambda_, 0, 1)
        if not isinstance(self.extra, dict):
            raise ConfigError(
                f"algorithm.extra must be a mapping of RLlib training settings, got {self.extra!r}"
            )
        if self.min_env_steps_per_iteration is not None:
            _positive_int("algorithm.min_env_steps_per_iteration", self.min_env_steps_per_iteration)


#: ``resources.local_episodes``'s default: a one-seed evaluation of the learned policy's
#: two rows and a baseline, or a warm start's few recorded episodes, stay in the driver.
LOCAL_EPISODES = 4


@dataclass(frozen=True)
class ResourcesSection:
    """Env runners, environments per runner, learners, CPUs and GPUs."""

    num_env_runners: int = 0
    num_envs_per_env_runner: int = 1
    num_cpus_per_env_runner: int = 1
    num_learners: int = 0
    num_gpus_per_learner: float = 0.0
    # CPUs of each learner -- with num_learners=0, of the trial's own process, which Ray
    # gives that many torch threads (OMP_NUM_THREADS); 1 leaves a 2-core machine's second
    # core idle while the local learner trains.
    num_cpus_per_learner: int = 1
    # Processes that step each env runner's sub-environments at once, the runner's own
    # included (multi-agent environments; tune/process_vector_env.py): 2 puts a 2-core
    # machine's idle core to work while the demo's local runner samples.
    env_processes: int = 1
    # Episodes a step (warm-start recording, validation, evaluation) plays in the driver
    # when it has at most this many; more run as Ray tasks, one CPU each. A fresh Ray
    # worker imports torch and RLlib before its first episode (tune/episode_tasks.py).
    local_episodes: int = LOCAL_EPISODES

    def __post_init__(self) -> None:
        _positive_int("resources.num_env_runners", self.num_env_runners, 0)
        _positive_int("resources.local_episodes", self.local_episodes, 0)
        _positive_int("resources.num_envs_per_env_runner", self.num_envs_per_env_runner)
        _positive_int("resources.env_processes", self.env_processes)
        if self.env_processes > self.num_envs_per_env_runner:
            raise ConfigError(
                f"resources.env_processes ({self.env_processes}) must not exceed "
                f"resources.num_envs_per_env_runner ({self.num_envs_per_env_runner}): "
                "each process steps at least one environment"
            )
        _positive_int("resources.num_cpus_per_env_runner", self.num_cpus_per_env_runner)
        _positive_int("resources.num_learners", self.num_learners, 0)
        _positive_int("resources.num_cpus_per_learner", self.num_cpus_per_learner)
        if not self.num_gpus_per_learner >= 0:
            raise ConfigError(
                f"resources.num_gpus_per_learner must be >= 0, got {self.num_gpus_per_learner}"
            )


@dataclass(frozen=True)
class StopSection:
    """When a trial stops: training iterations and/or wall time."""

    training_iteration: int | None = 20
    time_total_s: float | None = None

    def __post_init__(self) -> None:
        if self.training_iteration is None and self.time_total_s is None:
            raise ConfigError("stop needs training_iteration or time_total_s")
        if self.training_iteration is not None:
            _positive_int("stop.training_iteration", self.training_iteration)
        if self.time_total_s is not None and not (
            isinstance(self.time_total_s, int | float) and 0 < self.time_total_s < math.inf
        ):
            raise ConfigError(f"stop.time_total_s must be > 0 seconds, got {self.time_total_s!r}")

    def criteria(self) -> dict[str, float]:
        """Tune's stop dict."""
        criteria: dict[str, float] = {}
        if self.training_iteration is not None:
            criteria["training_iteration"] = self.training_iteration
        if self.time_total_s is not None:
            criteria["time_total_s"] = self.time_total_s
        return criteria


#: Short names of the training results checkpoints and sweeps are ranked by -> Tune's keys.
RESULT_METRICS = {
    "episode_return_mean": "env_runners/episode_return_mean",
    "episode_len_mean": "env_runners/episode_len_mean",
}


def _result_key(where: str, name: Any) -> str:
    """Tune's result key of a metric name (:data:`RESULT_METRICS`, or a key with '/').
    ``config/...`` keys are refused: they are the trial's own settings, which Tune does not
    rank results by (a sweep ranked by one failed only after every trial had trained)."""
    if (
        not isinstance(name, str)
        or (name not in RESULT_METRICS and "/" not in name)
        or name.startswith("config/")
    ):
        raise ConfigError(
            f"{where}={name!r}; allowed: {', '.join(RESULT_METRICS)} or a Tune result key "
            "with '/' (e.g. env_runners/episode_return_mean), not a config/ setting"
        )
    return RESULT_METRICS.get(name, name)


@dataclass(frozen=True)
class CheckpointSection:
    """Checkpoint every ``frequency`` iterations (and at the end); keep the last ``keep``,
    or with a declared ``score`` (a training result such as ``episode_return_mean``,
    ``order`` max or min: Tune's ``checkpoint_score_attribute``) the ``keep`` best by it,
    and evaluate the best-scored checkpoint of all trials (``evaluation.validation_seeds``,
    when set, choose among the kept ones instead). Retry a failed trial (lost
    node, crashed process) from its last checkpoint up to ``max_failures`` times (Tune's
    FailureConfig; 0: a failure ends the trial)."""

    frequency: int = 1
    keep: int = 3
    max_failures: int = 0
    score: str | None = None
    order: str = "max"

    def __post_init__(self) -> None:
        _positive_int("checkpoint.frequency", self.frequency)
        _positive_int("checkpoint.keep", self.keep)
        _positive_int("checkpoint.max_failures", self.max_failures, 0)
        if self.score is not None:
            _result_key("checkpoint.score", self.score)
        if self.order not in ("max", "min"):
            raise ConfigError(f"checkpoint.order={self.order!r}; allowed: max, min")

    @property
    def score_key(self) -> str | None:
        """Tune's result key of :attr:`score` (None: the latest checkpoints are kept)."""
        return None if self.score is None else _result_key("checkpoint.score", self.score)


@dataclass(frozen=True)
class EvaluationSection:
    """Held-out evaluation: seeds never used in training, heuristics to compare,
    environment overrides (e.g. another workload) for the evaluation episodes, and whether
    the learned policy acts greedily (argmax) instead of sampling its distribution.

    ``baselines``: for the multi-agent environment, simulator schedulers
    (``ordering+placement``); for a single-agent formulation, the names of its own
    baselines (its environment class's ``baselines``,
    :func:`envs.registry.formulation`). ``all``: the full
    table -- every ``ordering+placement`` the pod environment's heuristic driver runs
    (:data:`POD_HEURISTICS_EXCLUDED` lists those it cannot), or every baseline of the
    formulation. Left out: the default four schedulers, or every baseline of the formulation.

    The learned policy is always evaluated both greedily and sampled (rows
    ``learned-greedy`` and ``learned-sampled``); ``greedy`` picks the row that summaries
    compare with the best heuristic (default :data:`DEFAULT_GREEDY`: the greedy one).

    ``validation_seeds``: when given, the policy evaluated is not the last checkpoint but
    the candidate (every kept checkpoint, and the warm-start module) with the lowest mean
    avg JCT on these seeds, played as ``greedy`` says (:mod:`tune.selection`); they must
    differ from the training, warm-start and evaluation seeds.

    ``selection_confidence``: with a warm start, a checkpoint replaces it only when its
    per-seed avg JCT is lower with this one-sided paired confidence (Student-t, Bonferroni
    over the checkpoints compared), so a gain within the validation seeds' noise does not
    choose a policy whose gain will not carry over; 0 picks the lowest mean alone.
    """

    seeds: list[int] = field(default_factory=lambda: [1000, 1001, 1002])
    baselines: list[str] | str | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    greedy: bool = DEFAULT_GREEDY
    validation_seeds: list[int] = field(default_factory=list)
    selection_confidence: float = DEFAULT_SELECTION_CONFIDENCE

    def __post_init__(self) -> None:
        twice = (
            "each seed is one workload, and a repeated one would count twice in the means "
            "and narrow their intervals"
        )
        _seed_list("evaluation.seeds", self.seeds, twice)
        _seed_list("evaluation.validation_seeds", self.validation_seeds, twice, empty=True)
        overlap = sorted(set(self.seeds) & set(self.validation_seeds))
        if overlap:
            raise ConfigError(
                f"evaluation.validation_seeds {overlap} are also evaluation seeds; selecting "
                "on the evaluation seeds would tune on them"
            )
        if isinstance(self.baselines, str):
            if self.baselines != ALL_BASELINES:
                raise ConfigError(
                    f"evaluation.baselines must be a list of names or '{ALL_BASELINES}', "
                    f"got {self.baselines!r}"
                )
        elif self.baselines is not None:
            if not isinstance(self.baselines, list) or not all(
                isinstance(name, str) for name in self.baselines
            ):
                raise ConfigError(
                    f"evaluation.baselines must be a list of names or '{ALL_BASELINES}', "
                    f"got {self.baselines!r}"
                )
            repeated = _repeated(self.baselines)
            if repeated:
                raise ConfigError(
                    f"evaluation.baselines repeats {', '.join(repeated)}: a heuristic named "
                    "twice would play each seed twice and narrow its interval"
                )
        if not isinstance(self.environment, dict):
            # Merged over environment.config only when validation or evaluation plays
            # (after training); its keys are checked against the environment before Ray
            # starts (tune/preflight.py), which needs a mapping to build one from.
            raise ConfigError(
                "evaluation.environment must be a mapping of environment.config overrides "
                "for the held-out episodes (e.g. {num_jobs: 80}; {} for none), got "
                f"{type(self.environment).__name__}: {self.environment!r}"
            )
        if not isinstance(self.greedy, bool):
            raise ConfigError(f"evaluation.greedy must be true or false, got {self.greedy!r}")
        confidence = self.selection_confidence
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not 0 <= confidence < 1
        ):
            raise ConfigError(
                "evaluation.selection_confidence must be a probability in [0, 1) (0: the "
                f"lowest validation mean alone), got {confidence!r}"
            )

    def baselines_for(self, env_name: str) -> list[str]:
        """The baselines to compare on ``env_name``: the configured ones, else its defaults;
        a name the environment does not know raises :class:`ConfigError`."""
        from envs.registry import MULTI_AGENT_ENVIRONMENTS

        if self.baselines is not None and not self.baselines:
            return []

        if env_name in MULTI_AGENT_ENVIRONMENTS:
            from envs.schedulers import split_scheduler_name

            if self.baselines == ALL_BASELINES:
                return pod_heuristic_names()
            names = list(DEFAULT_SCHEDULERS if self.baselines is None else self.baselines)
            for name in names:
                try:
                    split_scheduler_name(name)
                except ValueError as error:
                    raise ConfigError(f"evaluation.baselines: {error}") from None
            return names
        from envs.registry import formulation

        try:
            known = formulation(env_name).baselines
        except ValueError as error:
            raise ConfigError(f"evaluation: {error}") from None
        names = list(known if self.baselines in (None, ALL_BASELINES) else self.baselines)
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigError(
                f"evaluation.baselines: {', '.join(unknown)} not baselines of {env_name}; "
                f"known: {', '.join(known)}"
            )
        return names


#: Learning-rate schedules of the imitation warm start.
LR_SCHEDULES = ("constant", "cosine")
#: Where a clone's 1 - confidence goes (``warm_start.explore``; :mod:`tune.imitation`).
EXPLORE_TARGETS = ("legal", "wait")


@dataclass(frozen=True)
class WarmStartSection:
    """Imitation warm start (:mod:`tune.imitation`): before RL, the actor is trained by
    behaviour cloning of ``heuristic`` (a simulator scheduler, ``ordering+placement``) and
    the critic on the heuristic's discounted returns.

    Trajectories come from ``episodes`` training episodes with seeds ``seeds_from``,
    ``seeds_from + 1``, ...; the next ``heldout_episodes`` seeds are recorded for the
    reported imitation accuracy only. ``epochs`` passes of Adam (``lr``) over minibatches
    of ``minibatch_size`` agent steps; ``restarts`` clones are fitted to the same
    recordings from seeds ``seed``, ``seed + 1``, ... and the one with the lowest avg JCT
    on ``clone_seeds`` is the start (clones of equal accuracy differ by several percent of
    JCT; seeds of their own, so that the validation seeds, on which checkpoints must then
    beat the chosen clone, did not also choose it as the best of several);
    ``lr_schedule`` "constant" keeps ``lr``, "cosine" lowers it along a half cosine to 0
    by the last step (the fit then settles instead of ending wherever the last minibatches
    left it); ``value_weight`` weighs the critic's
    loss (0: the critic keeps its random start); ``seed`` makes the pretraining
    deterministic. ``anchor`` > 0 (PPO only) adds ``anchor * KL(clone || policy)`` to
    PPO's loss, keeping the fine-tuned policy near the clone it started from
    (:mod:`tune.anchor`); 0 is plain PPO. ``confidence`` < 1 fits the actor to put that
    probability on the heuristic's action and the rest evenly on the other legal ones
    (default 1: plain cloning): a clone of an ``advice`` environment otherwise becomes
    deterministic, and PPO, sampling only the advised actions, has nothing to compare.
    ``explore`` says where that 1 - c goes: "legal" (every other legal action alike) or
    "wait" (the wait action alone, where it is legal and not the teacher's: the clone then
    asks one question at every choice -- act as advised now, or hold the task back -- and
    PPO compares the two instead of random placements). ``improve`` "hold" makes the
    teacher the heuristic improved by rollouts at its hold decisions
    (:mod:`envs.pod.rollouts`: where the plan would spread a job that fits in one server,
    the rest of the episode is simulated as planned and with the job held back, and the
    better is played); "hold-first" asks the same at every placement of a job's first
    task (held one round), which is what a patient heuristic, one that never spreads such
    a job, leaves to improve; None (default) clones the heuristic itself. ``decision_weight``
    weighs the rows whose action the rollouts decided in the clone's loss (the others
    weigh 1): a few dozen an episode among thousands of advised ones, they carry what the
    clone must learn beyond the advice.
    """

    heuristic: str = "fifo+packing"
    episodes: int = 40
    heldout_episodes: int = 5
    epochs: int = 20
    lr: float = 1.0e-3
    lr_schedule: str = "constant"
    restarts: int = 1
    clone_seeds: list[int] = field(default_factory=list)
    minibatch_size: int = 256
    value_weight: float = 0.5
    anchor: float = 0.0
    confidence: float = 1.0
    explore: str = "legal"
    improve: str | None = None
    decision_weight: float = 1.0
    seeds_from: int = 100_000
    seed: int = 0

    def __post_init__(self) -> None:
        from envs.schedulers import split_scheduler_name

        if not isinstance(self.heuristic, str):
            raise ConfigError(
                f"warm_start.heuristic must be a scheduler name, got {self.heuristic!r}"
            )
        try:
            split_scheduler_name(self.heuristic)
        except ValueError as error:
            raise ConfigError(f"warm_start.heuristic: {error}") from None
        for key in ("episodes", "heldout_episodes", "epochs", "minibatch_size", "restarts"):
            _positive_int(f"warm_start.{key}", getattr(self, key))
        _seed_list(
            "warm_start.clone_seeds",
            self.clone_seeds,
            "each seed is one workload the clones are compared on",
            empty=True,
        )
        _positive_int("warm_start.seeds_from", self.seeds_from, 0)
        _positive_int("warm_start.seed", self.seed, 0)
        if not (isinstance(self.lr, int | float) and 0 < self.lr < 1):
            raise ConfigError(f"warm_start.lr must be in (0, 1), got {self.lr!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError(
                f"warm_start.lr_schedule={self.lr_schedule!r}; allowed: {', '.join(LR_SCHEDULES)}"
            )
        if isinstance(self.confidence, bool) or not (
            isinstance(self.confidence, int | float) and 0 < self.confidence <= 1
        ):
            raise ConfigError(
                f"warm_start.confidence must be in (0, 1] (the teacher's target "
                f"probability), got {self.confidence!r}"
            )
        from envs.pod.rollouts import IMPROVEMENTS

        if self.improve is not None and self.improve not in IMPROVEMENTS:
            raise ConfigError(
                f"warm_start.improve={self.improve!r}; allowed: {', '.join(IMPROVEMENTS)} "
                "or null (the heuristic itself)"
            )
        if self.explore not in EXPLORE_TARGETS:
            raise ConfigError(
                f"warm_start.explore={self.explore!r}; allowed: {', '.join(EXPLORE_TARGETS)}"
            )
        weight = self.decision_weight
        if isinstance(weight, bool) or not (isinstance(weight, int | float) and weight > 0):
            raise ConfigError(f"warm_start.decision_weight must be a number > 0, got {weight!r}")
        for key in ("value_weight", "anchor"):
            value = getattr(self, key)
            if isinstance(value, bool) or not (isinstance(value, int | float) and value >= 0):
                raise ConfigError(f"warm_start.{key} must be a number >= 0, got {value!r}")

    @property
    def training_seeds(self) -> list[int]:
        """The seeds of the episodes the module is trained on."""
        return list(range(self.seeds_from, self.seeds_from + self.episodes))

    @property
    def heldout_seeds(self) -> list[int]:
        """The seeds of the episodes the imitation accuracy is measured on."""
        start = self.seeds_from + self.episodes
        return list(range(start, start + self.heldout_episodes))


@dataclass(frozen=True)
class TrackingSection:
    """MLflow: tracking URI (default: sqlite in the project folder) and experiment name."""

    tracking_uri: str | None = None
    experiment: str | None = None

    def __post_init__(self) -> None:
        # Checked here, before Ray: MLflow takes a non-string only to fail with a TypeError
        # or AttributeError at its first request -- during training read as an outage, at
        # the end after the evaluation, which was then neither logged nor kept.
        for key, what, unset in (
            (
                "tracking_uri",
                "a URI such as sqlite:///path/mlflow.db or http://host:5000",
                "MLFLOW_TRACKING_URI, else the default sqlite store",
            ),
            ("experiment", "the MLflow experiment's name", "the config's name"),
        ):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                got = f"{type(value).__name__} {value!r}"
                number = isinstance(value, int | float) and not isinstance(value, bool)
                quote = f"; quote it: '{value}'" if number else ""
                raise ConfigError(
                    f"tracking.{key} must be a non-empty string ({what}) or null ({unset}), "
                    f"got {got}{quote}"
                )


#: Tune's distributions a ``sweep.space`` entry may name, and how many arguments each takes
#: (None: a non-empty list of values).
DISTRIBUTIONS: dict[str, int | None] = {
    "uniform": 2,
    "loguniform": 2,
    "quniform": 3,
    "randint": 2,
    "qrandint": 3,
    "choice": None,
    "grid": None,
}
#: Trial schedulers and search algorithms of a sweep.
SWEEP_SCHEDULERS = ("fifo", "asha", "pbt")
SWEEP_SEARCHES = ("random", "optuna")
#: The settings each scheduler takes in ``sweep.scheduler_config``.
SCHEDULER_SETTINGS: dict[str, tuple[str, ...]] = {
    "fifo": (),
    "asha": ("grace_period", "reduction_factor", "brackets"),
    "pbt": ("perturbation_interval", "burn_in_period", "quantile_fraction", "resample_probability"),
}
#: The config sections a sweep may vary (dotted key prefixes).
SWEEPABLE = ("algorithm.", "model.config.", "environment.config.")


#: ``sweep.scheduler_config`` settings: (type, lowest allowed, highest allowed, bounds open).
_SCHEDULER_RANGES: dict[str, tuple[type, float, float, bool]] = {
    "grace_period": (int, 1, math.inf, False),
    "brackets": (int, 1, math.inf, False),
    "reduction_factor": (float, 1, math.inf, True),
    "perturbation_interval": (float, 0, math.inf, True),
    "burn_in_period": (float, 0, math.inf, False),
    "quantile_fraction": (float, 0, 0.5, False),
    "resample_probability": (float, 0, 1, False),
}


def _scheduler_setting(name: str, value: Any) -> None:
    """ConfigError unless ``sweep.scheduler_config.<name>`` is a number Tune's scheduler
    takes (checked before Ray starts: Tune asserts it only when the sweep begins)."""
    kind, low, high, open_bounds = _SCHEDULER_RANGES[name]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        number = number and float(value).is_integer()
    inside = number and (low < value < high if open_bounds else low <= value <= high)
    if not inside:
        what = "an integer" if kind is int else "a number"
        lower, upper = ("(", ")") if open_bounds else ("[", "]")
        raise ConfigError(
            f"sweep.scheduler_config.{name} must be {what} in {lower}{low:g}, {high:g}{upper}, "
            f"got {value!r}"
        )


def _multiple(value: float, step: float) -> bool:
    """Whether ``value`` is a whole multiple of ``step`` (to float rounding)."""
    ratio = value / step
    return abs(ratio - round(ratio)) < 1e-9


def quantized_ints(low: int, high: int, step: float) -> range:
    """The values Tune's ``qrandint(low, high, step)`` draws: the multiples of ``step`` in
    ``[low, high]``, the top excluded for ``step`` 1 (Tune's rule). A range, never a list:
    ``[0, 10**9, 1]`` is a valid space."""
    step_int = int(step)
    first = -(-low // step_int) * step_int
    top = high - 1 if step_int == 1 else high
    return range(first, top + 1, step_int)


@dataclass(frozen=True)
class SweepSection:
    """A Ray Tune sweep (``tune/sweep.py``): ``space`` maps dotted config keys (under
    ``algorithm.``, ``model.config.``, ``environment.config.``) to one Tune distribution
    each -- ``{loguniform: [1.0e-5, 1.0e-3]}``, ``{uniform: [a, b]}``, ``{quniform: [a, b,
    q]}``, ``{randint: [a, b]}`` (b excluded), ``{qrandint: [a, b, q]}``, ``{choice: [...]}``,
    ``{grid: [...]}`` (every value, random search only). ``num_samples`` trials (per grid
    point) are ranked by ``metric`` (``episode_return_mean``, ``episode_len_mean``, or a
    Tune result key such as ``env_runners/episode_return_mean``) in ``mode`` (max, min).
    ``scheduler``: fifo (every trial runs to the stop criterion), asha (stops poor trials
    early; ``scheduler_config``: grace_period, reduction_factor, brackets) or pbt
    (population based training: poor trials continue from good ones' checkpoints with
    perturbed ``algorithm.*`` values; perturbation_interval, burn_in_period,
    quantile_fraction, resample_probability). ``search``: random (Tune's variant
    generator) or optuna (TPE). ``max_concurrent_trials``: None lets Tune run as many as
    the resources allow."""

    space: dict[str, Any] = field(default_factory=dict)
    num_samples: int = 4
    metric: str = "episode_return_mean"
    mode: str = "max"
    scheduler: str = "asha"
    search: str = "random"
    scheduler_config: dict[str, Any] = field(default_factory=dict)
    max_concurrent_trials: int | None = None

    def __post_init__(self) -> None:
        _positive_int("sweep.num_samples", self.num_samples)
        if self.max_concurrent_trials is not None:
            _positive_int("sweep.max_concurrent_trials", self.max_concurrent_trials)
        _result_key("sweep.metric", self.metric)
        for key, value, allowed in (
            ("mode", self.mode, ("max", "min")),
            ("scheduler", self.scheduler, SWEEP_SCHEDULERS),
            ("search", self.search, SWEEP_SEARCHES),
        ):
            if value not in allowed:
                raise ConfigError(f"sweep.{key}={value!r}; allowed: {', '.join(allowed)}")
        if self.scheduler == "pbt" and self.search != "random":
            raise ConfigError(
                "sweep.scheduler=pbt perturbs its own population; it takes search: random, "
                f"got search={self.search!r}"
            )
        if not isinstance(self.scheduler_config, dict):
            raise ConfigError(
                f"sweep.scheduler_config must be a mapping, got {self.scheduler_config!r}"
            )
        allowed = SCHEDULER_SETTINGS[self.scheduler]
        unknown = sorted(set(self.scheduler_config) - set(allowed))
        if unknown:
            raise ConfigError(
                f"sweep.scheduler_config.{unknown[0]} is not a {self.scheduler} setting; "
                f"allowed: {', '.join(allowed) or 'none'}"
            )
        for name, value in self.scheduler_config.items():
            _scheduler_setting(name, value)
        if not isinstance(self.space, dict) or not self.space:
            raise ConfigError(
                "sweep.space must map dotted config keys to distributions, e.g. "
                "{algorithm.lr: {loguniform: [1.0e-5, 1.0e-3]}}"
            )
        for key, spec in self.space.items():
            self._check_entry(str(key), spec)

    def _check_entry(self, key: str, spec: Any) -> None:
        where = f"sweep.space.{key}"
        if not key.startswith(SWEEPABLE) or key in ("algorithm.name", "algorithm.extra"):
            raise ConfigError(
                f"{where}: a sweep varies keys under {', '.join(SWEEPABLE)} (not "
                "algorithm.name); e.g. algorithm.lr, algorithm.extra.vf_loss_coeff, "
                "model.config.hidden, environment.config.reward"
            )
        if not isinstance(spec, dict) or len(spec) != 1:
            raise ConfigError(
                f"{where} must be one distribution, e.g. {{choice: [a, b]}}; allowed: "
                f"{', '.join(DISTRIBUTIONS)}; got {spec!r}"
            )
        ((name, args),) = spec.items()
        if name not in DISTRIBUTIONS:
            raise ConfigError(
                f"{where}: unknown distribution {name!r}; allowed: {', '.join(DISTRIBUTIONS)}"
            )
        arity = DISTRIBUTIONS[name]
        if arity is None:
            if not isinstance(args, list) or not args:
                raise ConfigError(f"{where}: {name} takes a non-empty list of values, got {args!r}")
            if name == "grid" and self.search != "random":
                raise ConfigError(f"{where}: grid needs search: random (Optuna samples)")
            return
        if (
            not isinstance(args, list)
            or len(args) != arity
            or not all(isinstance(arg, int | float) and not isinstance(arg, bool) for arg in args)
        ):
            raise ConfigError(f"{where}: {name} takes {arity} numbers, got {args!r}")
        low, high = args[0], args[1]
        if not low < high:
            raise ConfigError(f"{where}: {name} needs low < high, got {args!r}")
        if name == "loguniform" and low <= 0:
            raise ConfigError(f"{where}: loguniform needs low > 0, got {args!r}")
        if name in ("randint", "qrandint") and not all(isinstance(arg, int) for arg in args):
            raise ConfigError(f"{where}: {name} takes integers, got {args!r}")
        if arity == 3 and not args[2] > 0:
            raise ConfigError(f"{where}: {name}'s step q must be > 0, got {args[2]!r}")
        if name == "quniform" and not all(_multiple(bound, args[2]) for bound in args[:2]):
            # Tune refuses such bounds, but only when the sweep starts.
            raise ConfigError(f"{where}: quniform's bounds must be multiples of q, got {args!r}")
        if name == "qrandint" and not quantized_ints(low, high, args[2]):
            raise ConfigError(
                f"{where}: qrandint draws multiples of q in [low, high]; none lies there: {args!r}"
            )

    @property
    def result_key(self) -> str:
        """The Tune result key of :attr:`metric`."""
        return _result_key("sweep.metric", self.metric)


@dataclass(frozen=True)
class ExperimentConfig:
    """One experiment; see the module docstring."""

    name: str = "experiment"
    environment: EnvironmentSection = field(default_factory=EnvironmentSection)
    model: ModelSection = field(default_factory=ModelSection)
    algorithm: AlgorithmSection = field(default_factory=AlgorithmSection)
    resources: ResourcesSection = field(default_factory=ResourcesSection)
    stop: StopSection = field(default_factory=StopSection)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)
    tracking: TrackingSection = field(default_factory=TrackingSection)
    seeds: list[int] = field(default_factory=lambda: [0])
    warm_start: WarmStartSection | None = None
    sweep: SweepSection | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"name must be a non-empty string, got {self.name!r}")
        _seed_list("seeds", self.seeds, "each seed is one trial; a repeated one trains twice")
        spread = self.trained_seed_spread
        trained = self.trained_seeds
        for key, use in (("seeds", "evaluation"), ("validation_seeds", "validation")):
            overlap = sorted(trained & set(getattr(self.evaluation, key)))
            if overlap:
                raise ConfigError(
                    f"evaluation.{key} {overlap} are also training seeds (trial seeds "
                    f"{self.seeds}: RLlib seeds the first episodes seed + runner index + "
                    f"environment index, up to seed + {spread - 1}); {use} must use "
                    "held-out seeds"
                )
        self.evaluation.baselines_for(self.environment.name)  # a bad name fails before Ray
        self._check_job_credit_horizon()
        if self.warm_start is not None:
            self._check_warm_start(self.warm_start)
            validation = self.evaluation.validation_seeds
            if len(validation) == 1 and self.evaluation.selection_confidence > 0:
                raise ConfigError(
                    "evaluation.validation_seeds has one seed: no checkpoint can be "
                    "significantly better than the warm start on one workload, so the warm "
                    "start would always be evaluated; give two or more seeds, or set "
                    "evaluation.selection_confidence: 0 (the lowest mean)"
                )

    def _check_job_credit_horizon(self) -> None:
        """``credit: job`` charges a job's whole running time to the steps that placed it
        (envs/pod/credit.py). Discounting then makes a placement deferred by k steps look
        ``1 - (gamma * lambda_)**k`` of that cost cheaper than placing now -- a bias toward
        waiting that no real saving pays for (measured on contended: episodes 5x longer and
        the return falling over 48 PPO iterations at gamma 0.99, lambda_ 0.95). Only
        undiscounted returns (gamma 1; lambda_ 1 for PPO/APPO, whose advantages otherwise
        weigh the later placement by lambda_**k through a critic that cannot cancel it)
        compare a deferral with its real cost."""
        credits = {self.environment.config.get("credit", "round")}
        space = self.sweep.space if self.sweep is not None else {}
        choices = space.get("environment.config.credit")
        if isinstance(choices, dict):
            credits |= {value for values in choices.values() for value in values or ()}
        if "job" not in credits:
            return
        horizon = [("gamma", self.algorithm.gamma)]
        if self.algorithm.name in POLICY_GRADIENT:
            horizon.append(("lambda_", self.algorithm.lambda_))
        for key, value in horizon:
            swept = f"algorithm.{key}" in space
            if value != 1 or swept:
                given = f"sweeping algorithm.{key}" if swept else f"algorithm.{key}={value}"
                raise ConfigError(
                    f"environment.config.credit: job charges a job's running time to the "
                    f"steps that placed it, and {given} discounts it: deferring a placement "
                    f"would look cheaper than it is; set algorithm.{key}: 1.0 (not swept), "
                    "or use credit: round"
                )

    def _check_warm_start(self, warm_start: WarmStartSection) -> None:
        from envs.registry import MULTI_AGENT_ENVIRONMENTS

        # The heuristic driver turns simulator schedulers into the per-pod agents' actions.
        if self.environment.name not in MULTI_AGENT_ENVIRONMENTS:
            raise ConfigError(
                f"warm_start needs a multi-agent environment "
                f"({', '.join(MULTI_AGENT_ENVIRONMENTS)}), got {self.environment.name!r}"
            )
        if self.algorithm.name not in POLICY_GRADIENT:
            raise ConfigError(
                f"warm_start trains an actor and a critic; algorithm.name={self.algorithm.name!r} "
                f"has none; allowed: {', '.join(POLICY_GRADIENT)}"
            )
        if warm_start.anchor > 0 and self.algorithm.name != "PPO":
            raise ConfigError(
                f"warm_start.anchor={warm_start.anchor} adds a term to PPO's loss; "
                f"algorithm.name={self.algorithm.name!r}; use PPO or anchor: 0"
            )
        clone_seeds = warm_start.clone_seeds
        if warm_start.restarts > 1 and len(clone_seeds) < 2:
            raise ConfigError(
                f"warm_start.restarts={warm_start.restarts} needs warm_start.clone_seeds (two "
                "or more workloads to choose among the clones on, apart from the validation "
                "seeds, where checkpoints must beat the chosen clone); set them or use "
                "restarts: 1"
            )
        if warm_start.restarts == 1 and clone_seeds:
            raise ConfigError(
                "warm_start.clone_seeds choose among restarts; with restarts: 1 there is one "
                "clone: remove them"
            )
        for seeds, what in (
            (self.evaluation.seeds, "evaluation.seeds"),
            (self.evaluation.validation_seeds, "evaluation.validation_seeds"),
            (self.trained_seeds, "training seeds"),
        ):
            overlap = sorted(set(clone_seeds) & set(seeds))
            if overlap:
                raise ConfigError(
                    f"warm_start.clone_seeds {overlap} are also {what}; the clones are "
                    "compared on workloads of their own"
                )
        recorded = set(warm_start.training_seeds) | set(warm_start.heldout_seeds)
        overlap = sorted(recorded & set(clone_seeds))
        if overlap:
            raise ConfigError(
                f"warm_start.clone_seeds {overlap} are also warm_start seeds; move "
                "warm_start.seeds_from"
            )
        overlap = sorted(recorded & set(self.evaluation.seeds))
        if overlap:
            raise ConfigError(
                f"evaluation.seeds {overlap} are also warm_start seeds (warm_start.seeds_from="
                f"{warm_start.seeds_from}, episodes + heldout_episodes="
                f"{warm_start.episodes + warm_start.heldout_episodes}); move warm_start.seeds_from"
            )
        overlap = sorted(recorded & set(self.evaluation.validation_seeds))
        if overlap:
            raise ConfigError(
                f"evaluation.validation_seeds {overlap} are also warm_start seeds; move "
                "warm_start.seeds_from"
            )

    @property
    def trained_seed_spread(self) -> int:
        """How many workloads past each trial seed training draws first: RLlib seeds a
        runner's first episodes seed + runner index + environment index."""
        return self.resources.num_env_runners + self.resources.num_envs_per_env_runner

    @property
    def trained_seeds(self) -> set[int]:
        """The workloads training draws first (:attr:`trained_seed_spread` per trial seed)."""
        return {seed + offset for seed in self.seeds for offset in range(self.trained_seed_spread)}

    @property
    def experiment_name(self) -> str:
        """The MLflow experiment: tracking.experiment, else the config's name."""
        return self.tracking.experiment or self.name

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what YAML holds)."""
        return asdict(self)

    def flat(self) -> dict[str, Any]:
        """Dotted keys -> values, for MLflow params."""
        return flatten(self.to_dict())


SECTIONS: dict[str, type] = {
    "environment": EnvironmentSection,
    "model": ModelSection,
    "algorithm": AlgorithmSection,
    "resources": ResourcesSection,
    "stop": StopSection,
    "checkpoint": CheckpointSection,
    "evaluation": EvaluationSection,
    "tracking": TrackingSection,
    "warm_start": WarmStartSection,
    "sweep": SweepSection,
}
#: Sections that are off (None) unless the config has them.
OPTIONAL_SECTIONS = frozenset({"warm_start", "sweep"})


def config_from_dict(data: dict[str, Any]) -> ExperimentConfig:
    """Validate plain data into an :class:`ExperimentConfig`."""
    if not isinstance(data, dict):
        raise ConfigError(f"an experiment config must be a mapping, got {type(data).__name__}")
    allowed = ["name", "seeds", *SECTIONS]
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown top-level key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    _check_policy_gradient_keys(data.get("algorithm"))
    sections = {
        key: _build(cls, data.get(key), key)
        for key, cls in SECTIONS.items()
        if key not in OPTIONAL_SECTIONS or data.get(key) is not None
    }
    top = {key: data[key] for key in ("name", "seeds") if key in data}
    try:
        return ExperimentConfig(**top, **sections)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None


#: AlgorithmSection fields that only PPO and APPO read.
POLICY_GRADIENT_KEYS = ("minibatch_size", "num_epochs", "entropy_coeff", "clip_param", "lambda_")


def _check_policy_gradient_keys(algorithm: Any) -> None:
    """A DQN config that sets a PPO/APPO-only field to anything but its default would
    silently ignore it: refuse. (Defaults pass, so a config's own ``to_dict()`` loads.)"""
    if not isinstance(algorithm, dict):
        return
    name = algorithm.get("name", AlgorithmSection.name)
    defaults = AlgorithmSection()
    given = [
        key
        for key in POLICY_GRADIENT_KEYS
        if key in algorithm and algorithm[key] != getattr(defaults, key)
    ]
    if name in ALGORITHMS and name not in POLICY_GRADIENT and given:
        raise ConfigError(
            f"algorithm.{given[0]} applies to {', '.join(POLICY_GRADIENT)} only, not "
            f"algorithm.name={name!r}; remove it (DQN's own settings go in algorithm.extra)"
        )


#: Scientific notation as YAML 1.2, Python and users write it (``1e9``, ``1e-5``,
#: ``1.5e9``, ``.5e3``). PyYAML reads YAML 1.1, whose floats need a dot and a signed
#: exponent (``1.0e+9``): the others stay strings, which RLlib takes as they are and fails
#: on long after the config was accepted (``torch.clamp(x, 0, '1e9')``).
_SCIENTIFIC = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


def missed_floats(value: Any) -> Any:
    """``value`` with every string PyYAML left a string but YAML 1.2 reads as a float
    (scientific notation without YAML 1.1's dot and exponent sign, such as ``1e9``) made
    that float, through nested mappings and lists; everything else unchanged.

    Only these forms: other text stays a string, and so does one that PyYAML reads as a
    number when unquoted (``'1.0e+9'``), which can only have been quoted on purpose.
    """
    if isinstance(value, str):
        if _SCIENTIFIC.fullmatch(value) and isinstance(yaml.safe_load(value), str):
            return float(value)
        return value
    if isinstance(value, dict):
        return {key: missed_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [missed_floats(item) for item in value]
    return value


def _algorithm_extra_floats(data: Any) -> Any:
    """A YAML document with :func:`missed_floats` applied to ``algorithm.extra`` and to
    the sweep's values for ``algorithm.extra.*`` keys: the settings passed to RLlib
    unchecked, where a number left a string fails only during training. (Typed fields
    refuse a string themselves; environment and model configs are checked by their own
    classes before Ray starts.)"""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    algorithm = data.get("algorithm")
    if isinstance(algorithm, dict) and isinstance(algorithm.get("extra"), dict):
        data["algorithm"] = {**algorithm, "extra": missed_floats(algorithm["extra"])}
    sweep = data.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("space"), dict):
        space = {
            key: missed_floats(spec) if str(key).startswith("algorithm.extra.") else spec
            for key, spec in sweep["space"].items()
        }
        data["sweep"] = {**sweep, "space": space}
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``a.b=c`` overrides (values parsed as YAML) to a nested dict copy.

    An unquoted scalar that Python reads as a float is that float (YAML 1.1 reads ``1e-4``,
    without a dot, as a string; users mean the number); a quoted one (``'2024'``) stays a
    string. Inside a mapping or list value, scientific notation PyYAML missed
    (:func:`missed_floats`) is a float.
    """
    result = yaml.safe_load(yaml.safe_dump(data)) or {}
    for override in overrides:
        key, separator, raw = override.partition("=")
        if not separator or not key:
            raise ConfigError(f"--set takes KEY=VALUE with a dotted key, got {override!r}")
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as error:
            problem = str(error).splitlines()[0]
            raise ConfigError(
                f"--set {key}: {raw!r} is not a YAML value ({problem}); quote strings, write "
                "lists as [a, b]"
            ) from None
        if isinstance(value, str) and not raw.lstrip().startswith(("'", '"')):
            with contextlib.suppress(ValueError):
                value = float(value)
        elif isinstance(value, dict | list):
            value = missed_floats(value)
        if key.startswith(SPACE_PREFIX):
            set_space_entry(result, key, value)
        else:
            set_dotted(result, key, value, f"--set {key}")
    return result


#: The ``--set`` prefix of one swept key. The space's keys are dotted config keys
#: themselves (``algorithm.lr``), so what follows the prefix is one key, not a path of
#: sections: split at every dot, ``--set sweep.space.algorithm.lr=...`` made a section
#: ``algorithm`` in the space, refused as a key no sweep varies.
SPACE_PREFIX = "sweep.space."


def set_space_entry(data: dict[str, Any], key: str, value: Any) -> None:
    """Apply ``--set sweep.space.<swept key>=<value>`` (``key`` with the prefix) to the
    config ``data`` in place, making the sweep section and its space when missing:

    - ``sweep.space.algorithm.lr={loguniform: [1e-5, 1e-3]}`` sets the key's distribution,
      replacing the one it had;
    - ``sweep.space.algorithm.lr.loguniform=[1e-5, 1e-3]`` (a distribution's name last, as
      the sweep's parent run in MLflow names its params) is the same;
    - ``sweep.space.algorithm.lr=null`` stops sweeping the key (ConfigError naming the
      swept keys when it is not one of them).

    The entry itself is checked where the config is (:class:`SweepSection`)."""
    label = f"--set {key}"
    entry = key.removeprefix(SPACE_PREFIX)
    sweep = data.get("sweep")
    if sweep is None:  # no sweep section (or sweep: null): this key starts one
        sweep = data["sweep"] = {}
    if not isinstance(sweep, dict):
        raise ConfigError(f"{label}: sweep is not a section")
    space = sweep.get("space")
    if space is None:
        space = sweep["space"] = {}
    if not isinstance(space, dict):
        raise ConfigError(f"{label}: sweep.space is not a mapping of swept keys")
    if value is None:
        if entry not in space:
            raise ConfigError(
                f"{label}=null stops sweeping a key, and sweep.space has no {entry!r}; its "
                f"keys: {', '.join(space) or 'none'}"
            )
        del space[entry]
        return
    swept, _, last = entry.rpartition(".")
    if swept and last in DISTRIBUTIONS and not isinstance(value, dict):
        # A mapping is a whole entry; anything else after a distribution's name is its
        # arguments. A key holds one distribution, so this one replaces what it had.
        entry, value = swept, {last: value}
    space[entry] = value


def set_dotted(data: dict[str, Any], key: str, value: Any, label: str) -> None:
    """Set the dotted ``key`` of the nested dict ``data`` to ``value`` in place, making
    missing sections; ConfigError ``"<label>: <part> is not a section"`` when a part on
    the way is a value."""
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{label}: {part} is not a section")
        node = child
    node[parts[-1]] = value


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read a YAML experiment config, apply overrides, validate."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read config {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config {path} is not a text file (not UTF-8)") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {_yaml_problem(error)}") from None
    data = _algorithm_extra_floats(data or {})
    return config_from_dict(apply_overrides(data, overrides or []))


def _yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's complaint on one line: what it found, and where (line and column)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def flatten(data: dict[str, Any] | None, separator: str = ".", prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> keys joined by ``separator`` (an empty dict stays a value)."""
    flat: dict[str, Any] = {}
    for key, value in (data or {}).items():
        joined = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, separator, f"{joined}{separator}"))
        else:
            flat[joined] = value
    return flat
