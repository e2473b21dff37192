"""RL-TAPS — ``podsched/RLTAPS-v0``: topology-aware preemptive GPU assignment (Ryu et al., 003).

RL-TAPS picks jobs and assigns them GPUs at once, every step, on racks of IBM Power8
Minsky machines (4 GPUs, 2 CPUs, 2 InfiniBand cards each; four racks of two by default, M
= 32 GPUs). One choice per GPU says which job slot it works for, or none. Full preemption:
a job stays in its slot until it finishes; a step that gives it no GPU pauses it, a later
one resumes it on any GPUs, keeping its progress; it may get more GPUs than it asked for.
A job's speed (003 eq. 3) depends on its GPU count, on the racks it spans and on how many
other jobs share the links between its GPUs (eq. 12-15, :mod:`envs.rltaps.speed`), so the
same GPU count placed differently runs at different speeds. The dynamics live in
:mod:`envs.rltaps.core`, the parameters in :class:`~envs.rltaps.config.RLTapsConfig`, the
CNN table and job sequences in :mod:`envs.rltaps.jobs`.

=====================  ===================================================================
Action space           ``MultiDiscrete([N + 1] * M)`` (11 x 32 by default): entry g is the
                       job slot 0..N-1 GPU g works for this step, or N (none). A GPU sent
                       to an empty slot stays idle (``info["invalid_assignments"]``).
Observation            ``Box(0, 1, (rows x columns,), float32)``, 10 x 158 = 1580 values by
                       default: 003 §4.3's image, row-major (row = a time step ahead,
                       calibrated per Appendix A). Columns: **cluster**, M columns, machine
                       after machine: a GPU's column is painted in its job's colour
                       (slot + 1) / N for as many rows as the job needs to finish at its
                       current speed; **job slots**, N blocks of ``max_gpus_request`` (12)
                       columns: a job's ``gpusreq`` columns are 1 for the rows it needs
                       alone on exactly gpusreq GPUs without communication (its remaining
                       FLOPs / (gpusreq d_cell); the last row holds the fraction, so the
                       block's sum x d_cell is exactly what is left); **backlog**,
                       ceil(60 / rows) columns, one cell per backlogged job, row by row.
                       :func:`envs.rltaps.core.split_observation` cuts it into its blocks.
=====================  ===================================================================

**Calibration** (003 Appendix A). One image cell is ``d_cell`` = 5.12e14 FLOPs (vgg-vd-19,
20 GFLOPs x 256 examples x 1000 iterations over 10 rows) and one row, i.e. one step,
lasts ``t_row`` = 48.3 s (that work at the P100's 10.6 TFLOPS, over 10 rows). A job of
``len`` rows and ``gpusreq`` GPUs has ``len x gpusreq x d_cell`` FLOPs to do (eq. 11).

**Reward** (003 eq. 3-6), per step, in units of ``reward_unit_flops`` (the P100's FLOPS):
the sum over running jobs of their speed ``d_m |G| / (tt_m + rt)`` (a job finishing
within the step counts the FLOPs it did / t_row), minus the eq. 5 cost
``d_m gpusreq / (tt_m + sr)`` of every job in a slot or the backlog with no GPU, minus
the eq. 6 cost ``d_m (gpusreq - |G|) / (tt_m + rt)`` of every running job with fewer
GPUs than requested (none for more). ``idle_penalty`` and ``shortfall_penalty`` weigh
the two penalties.

**Info.** Every step: ``time`` (step), ``action_mask`` (int8, M x (N + 1), GPU after GPU:
1 for occupied slots and none; the policy may use it, the environment does not need it),
``speed``, ``idle_penalty``, ``shortfall_penalty`` (the reward's parts), ``busy_gpus``
(GPUs that worked), ``invalid_assignments``, ``finished`` (jobs done this step), and the
state after it: ``running`` (jobs still holding GPUs), ``waiting`` (jobs in slots without
GPUs), ``backlog`` (jobs in the backlog); on the last step ``episode``
(:meth:`envs.rltaps.core.RLTapsCore.summary`: return, mean slowdown (eq. 17, T_max as
the finish of unfinished and dropped jobs), counts, GPU utilization, preemptions).

**Episode end.** Terminated when every job has arrived and finished (or been dropped: a
job that finds the slots and the backlog full); truncated at ``max_steps`` (T_max = 1000).

**Arguments.** ``RLTapsEnv(config=None, *, jobs=None, render_mode=None, **params)``:
``config`` is an :class:`~envs.rltaps.config.RLTapsConfig` or a mapping of its fields;
``params`` override single fields (``gymnasium.make("podsched/RLTAPS-v0", racks=(2, 2),
num_jobs=100)``). Defaults (003 §5.1): racks [2, 2, 2, 2], N = 10 slots, a 60-job
backlog, 10 rows, one job per step for 400 steps (len 1..3 or 6..10, gpusreq 1..7 or
8..12, one of 35 CNNs, mini-batch 32..512). Without ``jobs`` every reset draws a new
sequence from the environment's generator; ``jobs`` (or ``reset(options={"jobs": ...})``
for one episode) replays an explicit list ``[{"arrival": 0, "model": "vgg-vd-19",
"minibatch": 256, "len": 3, "gpus": 4}, ...]`` (:func:`envs.rltaps.jobs.parse_jobs`).
Bad configurations, job lists and actions raise ``ValueError`` saying what is wrong; a
step before ``reset()`` or after the episode's end raises ``RuntimeError`` and changes
nothing.

**Baselines.** :func:`envs.rltaps.baselines.run_rltaps_baseline` runs 003 §5.3's Random,
SJF and Tetris job pickers with DeepRM's left-to-right allocator, without preemption, at
the speeds of the same topology model (``simulate.py rltaps``).

**Version.** ``v0``: first release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from envs.base import ConfiguredEnv, scalar_metrics
from envs.rltaps.baselines import RLTAPS_BASELINES, run_rltaps_baseline
from envs.rltaps.command import COMMAND
from envs.rltaps.config import RLTapsConfig
from envs.rltaps.core import RLTapsCore
from envs.rltaps.jobs import JobSet, generate_jobs, parse_jobs

__all__ = ["ENV_ID", "RLTapsConfig", "RLTapsEnv"]

ENV_ID = "podsched/RLTAPS-v0"


def parse_action(action: object, num_gpus: int, num_choices: int) -> np.ndarray:
    """The action as int64 ``(M,)`` with every entry in ``[0, N]``; ValueError otherwise."""
    values = np.asarray(action)
    if values.shape != (num_gpus,) or values.dtype.kind not in "iu":
        raise ValueError(
            f"action must be {num_gpus} integers (one per GPU) in [0, {num_choices - 1}], got "
            f"shape {values.shape} of {values.dtype}"
        )
    if num_gpus and (values.min() < 0 or values.max() >= num_choices):
        raise ValueError(
            f"every action entry must be in [0, {num_choices - 1}] (0..{num_choices - 2} = a "
            f"job slot, {num_choices - 1} = none), got {values.min()}..{values.max()}"
        )
    return values.astype(np.int64, copy=False)


class RLTapsEnv(ConfiguredEnv):
    """The RL-TAPS environment; see the module docstring for spaces, reward and arguments."""

    config_class = RLTapsConfig
    label = "RL-TAPS"
    command = COMMAND
    jobs_parser = staticmethod(parse_jobs)
    jobs_generator = staticmethod(generate_jobs)
    baselines = RLTAPS_BASELINES
    # They never preempt where the agent must reassign every GPU at every step.
    simulated_baselines = RLTAPS_BASELINES
    ranking_metric = "mean_slowdown"
    summary_metrics = ("mean_slowdown", "jobs_finished", "dropped", "mean_speed", "gpu_utilization")
    # The slowdown (003 eq. 17) takes T_max as the finish time of every unfinished job.
    fair_when_truncated = True

    @classmethod
    def _simulated_episode(cls, policy: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
        """One job sequence under ``policy``, earning the agent's reward."""
        (played,) = run_rltaps_baseline(policy, seed=seed, **config)["sequences"]
        settings = RLTapsConfig.from_dict(config)
        left = played["jobs_finished"] + played["dropped"]
        done = played["jobs_arrived"] == settings.num_jobs and left == settings.num_jobs
        metrics: dict[str, Any] = {
            "episode_return": played["return"],
            "truncated": float(not done and played["steps"] >= settings.max_steps),
        }
        metrics.update(scalar_metrics(played))
        return metrics

    _jobs: JobSet | None

    def _setup(self) -> None:
        config = self.config
        self.action_space = spaces.MultiDiscrete([config.choices_per_gpu] * config.total_gpus)
        self.observation_space = spaces.Box(
            0.0, 1.0, shape=(config.observation_size,), dtype=np.float32
        )
        self.core = RLTapsCore(config)

    def _observe(self) -> np.ndarray:
        return self.core.observe()

    def _info(self, observation: object = None) -> dict[str, Any]:
        core = self.core
        return {
            "time": core.time,
            "action_mask": core.action_mask(),
            "running": int(np.count_nonzero(core.gpu_count)),
            "waiting": len(core.waiting()) - len(core.backlog),
            "backlog": len(core.backlog),
        }

    def step(self, action: object) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Assign every GPU to a slot (or none) and run one step; see the module docstring.
        RuntimeError before ``reset()`` or after the episode's end (nothing changes)."""
        config = self.config
        choice = parse_action(action, config.total_gpus, config.choices_per_gpu)
        core = self.core
        invalid = core.assign(choice)
        busy = int(np.count_nonzero(core.gpu_job >= 0))
        reward, details = core.advance()
        info = self._info()
        info.update(details)
        info["busy_gpus"] = busy
        info["invalid_assignments"] = invalid
        if core.over:
            info["episode"] = core.summary()
        return core.observe(), reward, core.terminated, core.truncated, info
