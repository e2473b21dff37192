"""RLlib's multi-agent env runner with its sampling counters summed once per sample call.

RLlib 2.60's ``MultiAgentEnvRunner`` logs, for every sub-environment and env step, two
env-step counters and four counters per acting agent (agent and module steps, each for
the iteration and for the lifetime) through its ``MetricsLogger``, about 35 us a call on
these machines: 18 calls per env step of the demo's 4 agents, 18,000 an iteration, about
a tenth of sampling in a profile of the demo (README "Training throughput").
:class:`LeanMultiAgentEnvRunner` adds the same counts up in plain integers while it
samples and logs each counter once, with its total, before the sample call returns: the
metrics RLlib reduces after sampling (and Tune reports) are the same sums, and nothing
reads them while a sample call runs.

It also seeds whole-episode sampling once: see :meth:`LeanMultiAgentEnvRunner._sample`.

:func:`tune.rllib_config.algorithm_config` installs it for the multi-agent environment.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)


class _SampledCounts:
    """What one sample call stepped: env steps, finished episodes, agent and module steps."""

    def __init__(self) -> None:
        self.env_steps = 0
        self.episodes = 0
        self.agent_steps: Counter[str] = Counter()
        self.module_steps: Counter[str] = Counter()


class LeanMultiAgentEnvRunner(MultiAgentEnvRunner):
    """``MultiAgentEnvRunner`` whose per-step sampling counters are logged once per sample
    call with their totals (see the module docstring)."""

    _unlogged: _SampledCounts | None = None
    # Processes that step the sub-environments, this one included (env_runner_class).
    env_processes = 1
    # The environment whose first reset took the runner's seed.
    _seeded_env: Any = None

    def _sample(self, **kwargs: Any) -> Any:
        if kwargs.get("num_episodes") is not None and self._seeded_env is self.env:
            # Whole episodes (batch_mode complete_episodes, which credit: job needs):
            # RLlib resets every sub-environment at each sample call and marks the reset
            # as initial, so each call drew the runner's seeded workloads again -- PPO
            # trained on the same num_envs workloads over and over. Seed only the first.
            self._needs_initial_reset = False
        self._unlogged = _SampledCounts()
        try:
            return super()._sample(**kwargs)
        finally:
            self._seeded_env = self.env
            counts, self._unlogged = self._unlogged, None
            self._log_sampled_counts(counts)

    def _increase_sampled_metrics(self, num_steps: int, next_obs: Any, episode: Any) -> int:
        counts = self._unlogged
        if counts is None:  # called outside a sample call: log at once, as RLlib does
            return super()._increase_sampled_metrics(num_steps, next_obs, episode)
        counts.env_steps += num_steps
        if episode.is_done:
            counts.episodes += 1
        for agent_id in next_obs:
            counts.agent_steps[str(agent_id)] += 1
            counts.module_steps[episode.module_for(agent_id)] += 1
        return num_steps

    def _log_sampled_counts(self, counts: _SampledCounts) -> None:
        """Log each counter RLlib's ``_increase_sampled_metrics`` would have, with its sum
        (only counters that moved: RLlib creates a key when it first logs it)."""
        log = self.metrics.log_value
        if counts.env_steps:
            log(NUM_ENV_STEPS_SAMPLED, counts.env_steps, reduce="sum")
            log(
                NUM_ENV_STEPS_SAMPLED_LIFETIME,
                counts.env_steps,
                reduce="lifetime_sum",
                with_throughput=True,
            )
        if counts.episodes:
            log(NUM_EPISODES, counts.episodes, reduce="sum")
            log(NUM_EPISODES_LIFETIME, counts.episodes, reduce="lifetime_sum")
        for agent_id, steps in counts.agent_steps.items():
            log((NUM_AGENT_STEPS_SAMPLED, agent_id), steps, reduce="sum")
            log((NUM_AGENT_STEPS_SAMPLED_LIFETIME, agent_id), steps, reduce="lifetime_sum")
        for module_id, steps in counts.module_steps.items():
            log((NUM_MODULE_STEPS_SAMPLED, module_id), steps, reduce="sum")
            log((NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), steps, reduce="lifetime_sum")

    def make_env(self) -> None:
        """RLlib's ``make_env``, with the sub-environments stepped by ``env_processes``
        processes (:class:`tune.process_vector_env.ProcessVectorMultiAgentEnv`) where the
        runner's class asks for more than one (:func:`env_runner_class`)."""
        if self.env_processes == 1:
            super().make_env()
            return
        import gymnasium as gym
        from ray.rllib.callbacks.utils import make_callback
        from ray.rllib.env.env_context import EnvContext
        from ray.rllib.utils.pre_checks.env import check_multiagent_environments
        from ray.tune.registry import ENV_CREATOR, _global_registry

        from tune.process_vector_env import ProcessVectorMultiAgentEnv

        if self.env is not None:
            self.env.close()
            self.env = None
        env_context = self.config.env_config
        if not isinstance(env_context, EnvContext):
            env_context = EnvContext(
                env_context,
                worker_index=self.worker_index,
                num_workers=self.config.num_env_runners,
                remote=self.config.remote_worker_envs,
            )
        creator = _global_registry.get(ENV_CREATOR, self.config.env)
        gym.register(
            LOCAL_ENV_ID, entry_point=lambda: creator(env_context), disable_env_checker=True
        )
        self.env = ProcessVectorMultiAgentEnv(
            self.config.env,
            dict(env_context),
            make_local=lambda: gym.make(LOCAL_ENV_ID),
            num_envs=self.config.num_envs_per_env_runner,
            processes=self.env_processes,
        )
        self.num_envs = self.env.num_envs
        if not self.config.disable_env_checking:
            for env in self.env.envs:
                check_multiagent_environments(env.unwrapped)
        self._needs_initial_reset = True
        make_callback(
            "on_environment_created",
            callbacks_objects=self._callbacks,
            callbacks_functions=self.config.callbacks_on_environment_created,
            kwargs=dict(
                env_runner=self,
                metrics_logger=self.metrics,
                env=self.env.unwrapped,
                env_context=env_context,
            ),
        )


def env_runner_class(env_processes: int) -> type[LeanMultiAgentEnvRunner]:
    """The lean runner whose sub-environments ``env_processes`` processes step (1: the
    runner's own process alone, RLlib's vector env)."""
    if env_processes == 1:
        return LeanMultiAgentEnvRunner
    if env_processes not in _RUNNER_CLASSES:
        _RUNNER_CLASSES[env_processes] = type(
            f"LeanMultiAgentEnvRunner{env_processes}Processes",
            (LeanMultiAgentEnvRunner,),
            {"env_processes": env_processes, "__module__": __name__},
        )
    return _RUNNER_CLASSES[env_processes]


LOCAL_ENV_ID = "podsched-multi-agent-env-v0"
_RUNNER_CLASSES: dict[int, type[LeanMultiAgentEnvRunner]] = {}
