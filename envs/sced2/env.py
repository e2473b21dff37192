"""SCED2 — ``podsched/SCED2-v0``: locality-aware job selection (Luan et al., paper 002).

SCED2 schedules deep-learning training jobs on N = 15 servers of M = 8 GPUs. Jobs differ
in how much they slow down when their GPUs are spread over servers (VGG16 much, Inception3
little) and in size and length (68% ask for one GPU), so packing alone leaves the cluster
fragmented. The agent chooses *which* waiting job to start next -- placement is always
002's packing -- or holds, to keep good locality for jobs that need it. Jobs run on
podsched's simulator (:mod:`envs.sim`) at the speed profiled for their placement
(:mod:`envs.sced2.speed`); the dynamics live in :mod:`envs.sced2.core`, the parameters in
:class:`~envs.sced2.config.Sced2Config`, the traces in :mod:`envs.sced2.jobs`.

=====================  ===================================================================
Action space           ``Discrete(J + 1)``: ``i < J`` starts the i-th of the first J
                       waiting jobs (arrival order) now, by packing; ``J`` is 002's phi,
                       "do not schedule any job" (hold).
Observation            ``Dict``:
``"observation"``      ``Box(0, inf, (NM + (k + 2) J + 4,), float32)``, 184 values by
                       default: 002 Table I's state, flat, in this order --
                       **GPU state** N x M (server-major, GPU ids in order): seconds until
                       the GPU's job finishes (0 if free); **job state** J rows of k + 2:
                       the job's execution time under each of the k profiling placements
                       (concentrated to scattered: its profiled step time x its
                       mini-batches per worker), its GPU demand / M, its waiting time;
                       **statistics** of the waiting jobs beyond the window: their number
                       / J, mean GPU demand / M, mean ideal execution time, mean waiting
                       time. Times are divided by ``time_unit_s`` (hours by default); an
                       empty slot and absent statistics are 0s.
                       :func:`envs.sced2.core.split_observation` cuts it into ``gpu``
                       (N, M), ``jobs`` (J, k + 2) and ``statistics`` (4,).
``"action_mask"``      ``Box(0, 1, (J + 1,), int8)``: slot i is 1 when it holds a job whose
                       GPUs are free now (packing then always places it); hold is 1 unless
                       holding would stall the simulation (nothing runs, nothing is left
                       to arrive).
=====================  ===================================================================

**Order of decisions** (002 §III-C). Time is frozen while the agent picks jobs: a picked
job starts at once and the window refills from the queue; the agent keeps picking until
it holds, and then time runs to the next arrival or completion that leaves jobs waiting.
With ``skip_forced_holds`` (default) the environment holds by itself whenever no visible
job fits, so every step the agent sees has a real choice. A masked choice is taken as hold
(``info["invalid_action"] = True``); if holding is masked too it changes nothing.

**Reward** (002 §III-D). On the step that places job j: its execution effectiveness
``E_j = T_ideal / (T_wait + T_actual)`` -- ideal time (002: "measured by profiling": the
job's time on its best placement, communication included; :mod:`envs.sced2.speed`), time
waited so far, and its actual execution time on the placement, which is exact at
placement because a placed job's speed never changes (profile-driven, exclusive GPUs, no
preemption). A job started at once on its best placement earns 1. 0 on every other step.
The episode's return is the sum of E_j over all jobs, so return / jobs is 002's average
execution effectiveness.

**Info.** Every step: ``time`` (s), ``action_mask``, ``invalid_action``, ``waiting``
(jobs in the queue), ``fragmentation`` (002 eq. 1 averaged over servers, now); on a
placement ``placed`` (job, slot, gpus, servers, step_time, ideal, wait, actual,
effectiveness); on the last step ``episode`` (:meth:`envs.sced2.core.Sced2Core.summary`:
execution effectiveness, JCT, makespan, time-averaged fragmentation, utilization,
relaxed-locality share, return, ...).

**Episode end.** Terminated when every job has finished; truncated after ``step_limit``
steps (``max_steps``, default 20 per job + 100; never reached by a masked policy).

**Arguments.** ``Sced2Env(config=None, *, jobs=None, render_mode=None, **params)``:
``config`` is a :class:`~envs.sced2.config.Sced2Config` or a mapping of its fields;
``params`` override single fields (``gymnasium.make("podsched/SCED2-v0",
workload="sced2-60", num_jobs=200)``). Defaults (002 §III-§IV): 15 x 8 GPUs, J = 10,
k = 4, 1000-job traces of ``make_workload("sced2")`` (68% 1-GPU jobs, mean gap 172 s).
Without ``jobs`` every reset draws a new trace from the environment's generator; ``jobs``
(or ``reset(options={"jobs": ...})`` for one episode) replays a
:class:`~envs.workload.Workload` or a list ``[{"arrival": 0, "model": "VGG16", "gpus": 4,
"duration": 3600}, ...]`` (see :mod:`envs.sced2.jobs`). Bad configurations, traces and
actions raise ``ValueError`` saying what is wrong.

**Baselines.** ``env.unwrapped.baseline_action("sif")`` gives a 002 baseline's choice
among the visible jobs (not DSIF; FIFO "schedules jobs in order", so it holds while the
first visible job does not fit, where the others pass over it);
:func:`envs.sced2.baselines.run_sced2_baseline` runs SIF, DSIF, SAF, LRF, SPF or FIFO with
packing over whole traces (002 Fig. 7-9). DSIF holds jobs back across decisions, which no
per-step action expresses, so the evaluation plays it as a whole-trace simulation of the
episode's jobs (``simulated_baselines``): every one of 002 §IV-A's six baselines is in the
table, and on the default workload DSIF is often the best of them.

**Version.** ``v0``: first release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from envs.base import ConfiguredEnv, scalar_metrics
from envs.sced2.baselines import SCED2_BASELINES, run_trace, window_choice
from envs.sced2.command import COMMAND
from envs.sced2.config import Sced2Config
from envs.sced2.core import Sced2Core
from envs.sced2.jobs import generate_workload, parse_jobs
from envs.workload import Workload

__all__ = ["ENV_ID", "Sced2Config", "Sced2Env"]

ENV_ID = "podsched/SCED2-v0"


class Sced2Env(ConfiguredEnv):
    """The SCED2 environment; see the module docstring for spaces, reward and arguments."""

    config_class = Sced2Config
    label = "SCED2"
    command = COMMAND
    jobs_parser = staticmethod(parse_jobs)
    jobs_generator = staticmethod(generate_workload)
    baselines = SCED2_BASELINES
    # DSIF delays jobs across decisions, which a per-step action cannot express.
    simulated_baselines = ("dsif",)
    summary_metrics = (
        "execution_effectiveness",
        "avg_jct",
        "p90_jct",
        "makespan",
        "fragmentation",
    )

    @classmethod
    def _simulated_episode(cls, policy: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
        """The trace ``reset(seed=seed)`` draws, simulated whole under ``policy``."""
        settings = Sced2Config.from_dict(config)
        trace = run_trace(
            settings, generate_workload(settings, np.random.default_rng(seed)), policy
        )
        # A simulation earns no RL reward, and runs every job to its end.
        metrics: dict[str, Any] = {"episode_return": float("nan"), "truncated": 0.0}
        metrics.update(scalar_metrics(trace))
        return metrics

    _jobs: Workload | None

    def _setup(self) -> None:
        self.action_space = spaces.Discrete(self.config.num_actions)
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(
                    0.0, np.inf, shape=(self.config.observation_size,), dtype=np.float32
                ),
                "action_mask": spaces.Box(0, 1, shape=(self.config.num_actions,), dtype=np.int8),
            }
        )
        self.core = Sced2Core(self.config)

    def _observe(self) -> dict[str, np.ndarray]:
        return {"observation": self.core.observe(), "action_mask": self.core.action_mask()}

    def _info(self, observation: dict[str, np.ndarray]) -> dict[str, Any]:
        core = self.core
        return {
            "time": float(core.sim.now),
            "action_mask": observation["action_mask"].copy(),
            "waiting": len(core.sim.waiting_jobs()),
            "fragmentation": core.fragmentation(),
        }

    def step(
        self, action: object
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Start a visible job by packing, or hold; see the module docstring."""
        count = self.config.num_actions
        return self._step_discrete(action, f"0..{count - 2} = a visible job, {count - 1} = hold")

    def baseline_action(self, policy: str) -> int:
        """A 002 baseline's choice ("sif", "saf", "lrf", "spf", "fifo") among the visible
        jobs that fit now, or hold when none does; FIFO, strict, holds unless the first
        visible job fits (:func:`envs.sced2.baselines.window_choice`)."""
        return window_choice(self.core, policy)
