"""An :class:`~tune.config.ExperimentConfig` -> an RLlib ``AlgorithmConfig`` (new API stack)."""

from __future__ import annotations

from typing import Any

from tune.experiment import POLICY_GRADIENT, ExperimentConfig
from tune.rllib_envs import register_rllib_env


def agent_ids(experiment: ExperimentConfig) -> list[str]:
    """The environment's agents (one cheap construction to read them)."""
    from envs import make_env

    env = make_env(experiment.environment.name, **experiment.environment.config)
    return list(getattr(env, "possible_agents", ["default_agent"]))


def shared_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """Every agent maps to the one shared module."""
    return "shared"


def own_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """Every agent maps to its own module."""
    return agent_id


def share_observations(*, env: Any, **kwargs: Any) -> None:
    """RLlib's ``on_environment_created``: hand the multi-agent vector env's observations on
    without deep-copying them at every step.

    The copy guards environments that refill their observation arrays in place; ours
    builds new arrays every step and never writes to the constant ones (graph structure)
    it hands out, so the copy only cost time: about a tenth of sampling at k=4 with
    8 environments per runner, more with more agents.
    """
    if hasattr(env, "copy"):
        env.copy = False


def default_config(name: str) -> Any:
    """A fresh RLlib AlgorithmConfig of the named algorithm."""
    if name == "PPO":
        from ray.rllib.algorithms.ppo import PPOConfig

        return PPOConfig()
    if name == "APPO":
        from ray.rllib.algorithms.appo import APPOConfig

        return APPOConfig()
    from ray.rllib.algorithms.dqn import DQNConfig

    return DQNConfig()


def algorithm_class(name: str) -> type:
    """RLlib's Algorithm class of the named algorithm, for Tune.

    Tune is given the class, not the name: looking a name up makes Tune import every
    algorithm RLlib registers, and DreamerV3's module builds a CartPole at import whose
    Gymnasium warnings ("Box low's precision lowered", "The obs returned by the `reset()`
    method is not within the observation space") read as if podsched's environment broke
    its own space."""
    return default_config(name).algo_class


def with_job_credit(config: Any) -> Any:
    """``config`` sampling as ``credit: job`` needs: whole episodes, whose rewards
    :func:`tune.credit.credit_rewards_on_episode_end` replaces by the credited ones.

    The credited rewards arrive at an episode's end and reach back to its start, so a
    batch must hold whole episodes. A sweep whose ``environment.config.credit`` can draw
    ``job`` sets this for every trial (:func:`tune.search.param_space`): the callback
    leaves an episode without credited rewards (``credit: round``) as it is.
    """
    from tune.credit import credit_rewards_on_episode_end

    config = config.env_runners(batch_mode="complete_episodes")
    return config.callbacks(on_episode_end=credit_rewards_on_episode_end)


def algorithm_config(
    experiment: ExperimentConfig, seed: int | None = None, warm_start_path: str | None = None
) -> Any:
    """The RLlib AlgorithmConfig of ``experiment`` (seeded when ``seed`` is given).

    ``warm_start_path``: an RLModule folder (``save_to_path``, see :mod:`tune.imitation`)
    every module starts from; RLlib loads it into the learner's modules when the algorithm
    is built and syncs the weights to the env runners. With ``warm_start.anchor`` > 0 it
    is also the anchor of :class:`tune.anchor.AnchoredPPOTorchLearner` (without a
    warm-start module there is nothing to anchor to, and PPO's own learner is used).
    """
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from envs.registry import MULTI_AGENT_ENVIRONMENTS
    from models.registry import module_class

    env_name = register_rllib_env(experiment.environment.name)
    algorithm = experiment.algorithm
    config = default_config(algorithm.name)
    config = config.environment(env_name, env_config=dict(experiment.environment.config))
    resources = experiment.resources
    config = config.env_runners(
        num_env_runners=resources.num_env_runners,
        num_envs_per_env_runner=resources.num_envs_per_env_runner,
        num_cpus_per_env_runner=resources.num_cpus_per_env_runner,
        # The multi-agent sampler otherwise re-converts finished episodes every step
        # (quadratic; 7x slower measured on these machines, see shared/notes).
        episodes_to_numpy=False,
    )
    if experiment.environment.name in MULTI_AGENT_ENVIRONMENTS:
        from tune.env_runner import env_runner_class

        config = config.callbacks(on_environment_created=share_observations)
        # The sampling counters summed per sample call, the sub-environments stepped by
        # resources.env_processes processes (tune/env_runner.py).
        config = config.env_runners(env_runner_cls=env_runner_class(resources.env_processes))
        # Its actions are Discrete, which unsquashing leaves as they are: without it the
        # module-to-env pipeline skips a deep copy of every step's actions and a pass
        # over them per agent.
        config = config.environment(normalize_actions=False)
    if experiment.environment.config.get("credit") == "job":
        config = with_job_credit(config)
    config = config.learners(
        num_learners=resources.num_learners,
        num_gpus_per_learner=resources.num_gpus_per_learner,
        num_cpus_per_learner=resources.num_cpus_per_learner,
    )
    warm_start = experiment.warm_start
    if warm_start is not None and warm_start.anchor > 0 and warm_start_path is not None:
        from tune.anchor import ANCHOR_COEFF, ANCHOR_PATH, AnchoredPPOTorchLearner

        config = config.learners(
            learner_class=AnchoredPPOTorchLearner,
            learner_config_dict={ANCHOR_PATH: warm_start_path, ANCHOR_COEFF: warm_start.anchor},
        )
    elif algorithm.name == "PPO":
        from tune.ppo_learner import LeanPPOTorchLearner

        config = config.learners(learner_class=LeanPPOTorchLearner)
    training: dict[str, Any] = {
        "lr": algorithm.lr,
        "gamma": algorithm.gamma,
        "train_batch_size": algorithm.train_batch_size,
    }
    if algorithm.name in POLICY_GRADIENT:
        training.update(
            minibatch_size=algorithm.minibatch_size,
            num_epochs=algorithm.num_epochs,
            entropy_coeff=algorithm.entropy_coeff,
            clip_param=algorithm.clip_param,
            lambda_=algorithm.lambda_,
        )
    extra = dict(algorithm.extra)
    learner_config = extra.pop("learner_config_dict", None)
    training.update(extra)
    config = config.training(**training)
    if algorithm.min_env_steps_per_iteration is not None:
        config = config.reporting(
            min_sample_timesteps_per_iteration=algorithm.min_env_steps_per_iteration
        )
    if learner_config is not None:
        # RLlib 2.60 takes it in .learners(); .training() warns it is deprecated.
        config = config.learners(learner_config_dict=learner_config)
        if "reinforce" in learner_config:
            # 003/004's REINFORCE with per-sequence Monte-Carlo baselines replaces PPO's
            # sampler and learner (tune/reinforce.py).
            from tune.reinforce import use_reinforce

            config = use_reinforce(config)
    # Settings go through the algorithm's model_config (which RLlib copies into every
    # module spec), so a Tune search space inside them is resolved per trial.
    config = config.rl_module(model_config=dict(experiment.model.config))
    module = RLModuleSpec(
        module_class=module_class(experiment.model.name), load_state_path=warm_start_path
    )
    if experiment.environment.name in MULTI_AGENT_ENVIRONMENTS:
        if experiment.model.sharing == "shared":
            config = config.multi_agent(policies={"shared"}, policy_mapping_fn=shared_policy)
            specs = {"shared": module}
        else:
            agents = agent_ids(experiment)
            config = config.multi_agent(policies=set(agents), policy_mapping_fn=own_policy)
            specs = dict.fromkeys(agents, module)
        config = config.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    else:
        config = config.rl_module(rl_module_spec=module)
    if seed is not None:
        config = config.debugging(seed=seed)
    return config


def module_ids(experiment: ExperimentConfig) -> list[str]:
    """The RLModule ids a checkpoint of ``experiment`` holds."""
    from envs.registry import MULTI_AGENT_ENVIRONMENTS

    if experiment.environment.name not in MULTI_AGENT_ENVIRONMENTS:
        return ["default_policy"]
    return ["shared"] if experiment.model.sharing == "shared" else agent_ids(experiment)
