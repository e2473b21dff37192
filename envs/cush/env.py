"""CuSH — ``podsched/CuSH-v0``: two-step job and allocation-policy selection (Domeniconi et al.).

CuSH (paper 004, DRL4KDD'19) schedules 20-job sets of dgemm (compute bound) and daxpy
(network bound) jobs on N nodes of 2 CPUs + 4 GPUs (Sierra) or 2 CPUs + 6 GPUs (Summit).
At every time step the agent repeatedly picks a waiting job and an allocation policy for
it -- depth-first or breadth-first -- or "do nothing", which lets time advance one step.
How a job is placed changes how long it runs: dgemm is faster depth-first, daxpy
breadth-first (004 §3.1). Jobs run on podsched's simulator (:mod:`envs.sim`); the
dynamics live in :mod:`envs.cush.core`, allocation and penalties in :mod:`envs.cush.alloc`,
the parameters in :class:`~envs.cush.config.CuSHConfig`, job sets in :mod:`envs.cush.jobs`.

=====================  ===================================================================
Action space           ``MultiDiscrete([Q + 1, 2])``: ``a[0]`` is the job selector (JSM):
                       0 = do nothing, i = the job in slot i (1..Q); ``a[1]`` the policy
                       selector (PSM) for that job: 0 = depth-first, 1 = breadth-first
                       (read only when ``a[0] >= 1``).
Observation            ``Dict``:
``"image"``            ``Box(0, max_time + 1, (sum_R N S^r, T, Q + 1), float32)``, (768, 5, 6)
                       by default: 004 §3.2's state. Axis 0: the N x 2 CPU columns (node
                       by node), then the N x S^GPU GPU columns; axis 1: time steps
                       now..now+T-1; axis 2: channel 0 the cluster, channel j the job in
                       slot j. Cluster cells are 1 while a running job holds the unit.
                       A slot's job fills its first ``cpus`` CPU and first ``gpus`` GPU
                       columns for ``min(length, T)`` rows (longer jobs are shown as T)
                       with ``1 + waiting time`` in steps (004 codes the waiting time
                       instead of 1s; the +1 keeps a job that just arrived visible).
``"action_mask"``      ``Box(0, 1, (Q + 3,), int8)``: ``[do nothing, slot 1..Q]`` then
                       ``[depth-first, breadth-first]``, the flat per-component layout RLlib
                       uses for ``MultiDiscrete``. A slot is 1 when it holds a job whose
                       GPUs and CPUs are free now; do nothing and both policies are always 1
                       (a job that fits can be placed either way).
``"job_types"``        ``Box(0, 1, (Q, 2), float32)``: one-hot dgemm/daxpy of each slot's
                       job (the PSM's input, 004 §3.3); 0s for an empty slot.
=====================  ===================================================================

**Order of decisions.** The job selector decides first; the policy selector then decides
for the chosen job (an autoregressive policy feeds ``job_types[a[0] - 1]`` to its PSM).
Scheduling a job keeps time frozen: the slot is refilled from the head of the FIFO backlog
and the agent acts again, so any number of jobs can start in one step. "Do nothing" (or a
masked choice: an empty slot or a job that does not fit, taken as do nothing with
``info["invalid_action"] = True``) advances time to the next step at which jobs wait;
arrivals take the lowest empty slot, else join the backlog. No preemption.

**Rewards.** After every action, the local reward of 004 §3.2, ``r_t = -sum_j wt_j / l_j``
over the jobs waiting in the slots and the backlog (waiting time and requested length in
steps). At the end of an episode the global reward ``r_g`` is the average normalized
turnaround time (NTAT = (wait + service) / service, 004 §4.1) and the JSM's return is
004 eq. 1, ``v_t = (sum_{i>=t} gamma^(i-t) r_i) x r_g`` (:func:`envs.cush.core.eq1_returns`
computes it for a trainer; it is not a sum of per-step rewards). ``reward="local"``
(default): the scalar reward is ``r_t``. ``reward="global_scaled"``: the terminating step
also gets ``(r_g - 1) x sum_i r_i``, so the undiscounted episode return is exactly eq. 1's
``v_0`` at gamma = 1. The PSM's reward (004 §3.3: its return is the job's locality
penalty) is ``info["psm_reward"] = -p_j`` (steps) on every step that places a job.
:func:`envs.cush.returns.head_returns` turns a whole episode's infos into each network's
return (eq. 1 for the JSM, ``-p_j`` for the PSM); ``tune/configs/cush.yaml`` trains the two
networks on them as 004's Alg. 1 does (:mod:`tune.reinforce`).

**Info.** Every step: ``time`` (steps), ``local_reward``, ``action_mask``,
``invalid_action``, ``backlog`` (jobs in it); on a placement ``placed`` (job, slot, type,
policy, gpus, cpus, nodes, penalty, service) and ``psm_reward``; on the last step
``episode`` (:meth:`envs.cush.core.CuSHCore.summary`: NTAT, wait, TAT, returns, per-job
records, and 004 Fig. 6's shares ``dgemm_depth_first`` and ``daxpy_breadth_first``)
and, when terminated, ``global_reward``.

**Episode end.** Terminated when every job has finished (004: "the episode runs until the
completion of all the jobs"); truncated when time reaches ``max_time`` steps (1000).

**Arguments.** ``CuSHEnv(config=None, *, jobs=None, render_mode=None, **params)``:
``config`` is a :class:`~envs.cush.config.CuSHConfig` or a mapping of its fields;
``params`` override single fields (``gymnasium.make("podsched/CuSH-v0", cluster="summit",
nodes=16)``). Defaults (004 §4): Sierra, 128 nodes, T = 5, Q = 5, 20 jobs per set, 75%
of lengths in 1..10 steps and the rest 11..20, arrivals in steps 0..9; chosen: half dgemm,
GPU and CPU shares of the cluster uniform in (0, 0.5], penalties of 0.5 (dgemm) and 1.0
(daxpy) x the job's length per 512 GPUs placed against its best policy -- see
:class:`~envs.cush.config.CuSHConfig` and :mod:`envs.cush.alloc`.
Without ``jobs`` every reset draws a new set from the environment's generator; ``jobs``
(or ``reset(options={"jobs": ...})`` for one episode) replays an explicit set ``[{"arrival":
0, "length": 3, "gpus": 4, "cpus": 1, "type": "dgemm"}, ...]`` in arrival order. Bad
configurations, job sets and actions raise ``ValueError`` saying what is wrong.

**Baselines.** ``env.unwrapped.baseline_action("sjf+bf")`` returns 004 §4.1's FCFS, SJF,
DRF or Random choice with depth- (``df``) or breadth-first (``bf``) allocation (FCFS is
004's FIFO queue: it does nothing while the first arrived job does not fit; the others
choose among the jobs that fit; :mod:`envs.cush.baselines`);
:func:`envs.cush.baselines.run_cush_baseline` runs one over many job sets (Table 1).

**Version.** ``v0``: first release.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from gymnasium import spaces

from envs.base import ConfiguredEnv
from envs.cush.baselines import CUSH_BASELINES, baseline_action
from envs.cush.command import COMMAND
from envs.cush.config import ALLOCATION_POLICIES, JOB_TYPES, CuSHConfig
from envs.cush.core import CuSHCore
from envs.cush.jobs import JobSet, generate_job_set, parse_jobs

__all__ = ["ENV_ID", "CuSHConfig", "CuSHEnv"]

ENV_ID = "podsched/CuSH-v0"


def _parse_action(action: object, queue_size: int) -> tuple[int, int]:
    """``(job choice, policy)`` from a length-2 action; ValueError when out of range."""
    try:
        values = np.asarray(action)
        if values.shape != (2,):
            raise TypeError
        choice, policy = (operator.index(v) for v in values.tolist())
    except TypeError:
        raise ValueError(
            f"action must be two integers [job 0..{queue_size}, policy 0..1], got {action!r}"
        ) from None
    if not 0 <= choice <= queue_size or policy not in (0, 1):
        raise ValueError(
            f"action must be [job 0..{queue_size}, policy 0..1] (0 = do nothing; "
            f"policy 0 = depth-first, 1 = breadth-first), got [{choice}, {policy}]"
        )
    return choice, policy


class CuSHEnv(ConfiguredEnv):
    """The CuSH environment; see the module docstring for spaces, rewards and arguments."""

    config_class = CuSHConfig
    label = "CuSH"
    command = COMMAND
    jobs_parser = staticmethod(parse_jobs)
    jobs_generator = staticmethod(generate_job_set)
    baselines = CUSH_BASELINES  # 004 Table 1's eight rows
    ranking_metric = "avg_ntat"
    summary_metrics = (
        "avg_ntat",
        "avg_wait",
        "avg_tat",
        "eq1_return",
        "dgemm_depth_first",
        "daxpy_breadth_first",
    )
    _jobs: JobSet | None

    def _setup(self) -> None:
        queue = self.config.queue_size
        self.action_space = spaces.MultiDiscrete([queue + 1, len(ALLOCATION_POLICIES)])
        self.observation_space = spaces.Dict(
            {
                "image": spaces.Box(
                    0.0,
                    float(self.config.max_time + 1),
                    shape=self.config.image_shape,
                    dtype=np.float32,
                ),
                "action_mask": spaces.Box(0, 1, shape=(queue + 3,), dtype=np.int8),
                "job_types": spaces.Box(0.0, 1.0, shape=(queue, len(JOB_TYPES)), dtype=np.float32),
            }
        )
        self.core = CuSHCore(self.config)

    def _observe(self) -> dict[str, np.ndarray]:
        return {
            "image": self.core.observe_image(),
            "action_mask": self.core.action_mask(),
            "job_types": self.core.job_types(),
        }

    def _info(self, observation: dict[str, np.ndarray]) -> dict[str, Any]:
        return {
            "time": self.core.time,
            "action_mask": observation["action_mask"].copy(),
            "backlog": len(self.core.backlog),
        }

    def step(
        self, action: object
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Schedule a slot's job with a policy, or do nothing; see the module docstring."""
        choice, policy = _parse_action(action, self.config.queue_size)
        core = self.core
        local, terminated, truncated, details = core.step(choice, policy)
        reward = local
        observation = self._observe()
        info: dict[str, Any] = {
            "time": core.time,
            "local_reward": local,
            "action_mask": observation["action_mask"].copy(),
            "invalid_action": details["invalid_action"],
            "backlog": len(core.backlog),
        }
        if "placed" in details:
            info["placed"] = details["placed"]
            info["psm_reward"] = -details["placed"]["penalty"]
        if terminated or truncated:
            summary = core.summary()
            info["episode"] = summary
            if terminated:
                info["global_reward"] = summary["avg_ntat"]
                if self.config.reward == "global_scaled":
                    reward += (summary["avg_ntat"] - 1.0) * summary["local_return"]
        return observation, float(reward), terminated, truncated, info

    def baseline_action(self, policy: str) -> np.ndarray:
        """The action of a 004 §4.1 baseline ("fcfs+df", "sjf+bf", ...) in this state."""
        return baseline_action(self.core, policy, self.np_random)
