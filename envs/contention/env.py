"""Contention-aware — ``podsched/Contention-v0``: RL-base and RL-Hybrid (Ryu & Eo, paper 000).

Distributed training jobs with very different communication (000 Table I: GraphSage,
MobileNetV3, DLRM, Transformer-XL, GPT-2 with FSDP, GPT-2 MoE) share the node ports of a
4 x 8-GPU cluster; a job slows down when its traffic shares a port with another job's,
by its contention sensitivity CS = ideal / contended throughput (000 eq. 1). The agent
decides, round by round, which candidate job to start on which nodes -- or nothing -- and
is rewarded for low contention and high utilization (000 eq. 2). Jobs run on podsched's
simulator (:mod:`envs.sim`) with its bandwidth-sharing model; the dynamics live in
:mod:`envs.contention.core`, the options in :mod:`envs.contention.placement`, the
parameters in :class:`~envs.contention.config.ContentionConfig`, the job sets in
:mod:`envs.contention.jobs`.

=====================  ===================================================================
Action space           ``Discrete(D x S + 1)``, 67 by default: action ``c x S + s`` starts
                       the candidate whose GPU demand d is the c-th of the D demands
                       (``gpu_choices``, ascending) -- the job the state's right half
                       shows in d's cells -- on node subset s, its GPUs split evenly (d /
                       |s| per node); the last action is "do nothing". Slots follow the
                       demand, not the queue order, so an action means the same job
                       whenever the state and mask are the same. The S node subsets are
                       all subsets of 1, 2, 4, ... nodes, by size then lexicographically
                       (4 nodes: [0] [1] [2] [3] [0,1] [0,2] ... [2,3] [0,1,2,3], S = 11).
                       ``env.unwrapped.core.options.subsets`` lists them,
                       ``core.slot_jobs()`` the job of each slot (-1: none).
Observation            ``Dict``:
``"state"``            ``Box(0, 1, (nodes, 2 x GPUs per node), float32)``: 000 Fig. 2.
                       Left half: cell (n, g) holds the profile of the job on GPU g of node
                       n (0 if free). Right half: cell (i, j - 1) holds the profile of the
                       candidate that can run as j GPUs on each of 2^i nodes (one cell per
                       shape; candidates have distinct demands, so cells never collide).
                       A profile is the job's (model, demand) class ``1 .. 6 x D`` / (6 x
                       D) (``profile="type"``, as 000's code numbers them) or its model's
                       Table I bandwidth / the largest (``profile="bandwidth"``).
``"action_mask"``      ``Box(0, 1, (D x S + 1,), int8)``: 1 where a candidate of the slot's
                       demand waits, the demand splits evenly into at most M GPUs per
                       node of the subset, and every node there has them free; "do
                       nothing" is always 1.
=====================  ===================================================================

**Candidates** (000 §IV). The K candidates are the first jobs from the head of the queue
(arrival order; a preempted job keeps its place) with GPU demands not seen yet; K
defaults to the number D of demand classes (``gpu_choices``: 1, 2, 4, 8, 16, 32), and a
smaller K leaves the slots of the demands it does not reach masked. ``info["candidates"]``
lists them in queue order, the order RL-Hybrid's fallback tries them in.

**Order of decisions.** Time is frozen while the agent starts jobs; "do nothing" runs the
simulator to the next round (``round_s``, 300 s) at which jobs wait. RL-base
(``mode="base"``) follows the policy. RL-Hybrid (``mode="hybrid"``) turns a "do nothing"
into the greedy fallback while it can place something: the first candidate that the
``fallback_placement`` rule (``spread``: 000's reference placement) fits is started and
the agent is asked again (``info["fallback"]``); only when nothing fits does the round
end. A masked action is taken as "do nothing" (``info["invalid_action"] = True``).
Optional 000 §V-C preemption: jobs whose CS exceeds ``preempt_cs`` go back to the queue
after every placement and at every round.

**Reward** (000 eq. 2). On the step that ends a round: ``-W1 x CS + W2 x Util`` over the
time just simulated -- CS the mean of the time-averaged CS of the jobs that ran (1 if
none; or the mean throughput loss 1 - 1/CS with ``contention_term="degradation"``), Util
the busy share of GPU time; ``W2 = 1 - W1``, ``w1`` 0.4 (branch B; ``BRANCHES`` A-E =
0.3 .. 0.7). 0 on placing steps.

**Info.** Every step: ``time`` (s), ``action_mask``, ``invalid_action``, ``waiting``,
``running``, ``candidates`` (job ids, queue order), ``cs`` (current CS of every running
job, keyed by the job id as a string); on a placement ``placed`` (job, model, gpus,
nodes, gpus_per_node, its CS now); on a fallback ``fallback`` (same keys); on a round end
``round`` (contention, utilization, seconds, preempted); ``preempted`` (job ids) when
``preempt_cs`` preempts; on the last step ``episode``
(:meth:`envs.contention.core.ContentionCore.summary`: avg / p90 JCT, utilization, the CS
distribution, return, rounds, fallbacks, ...).

**Episode end.** Terminated when every job has finished; truncated at ``horizon_s`` of
simulated time (30 days) or after ``step_limit`` steps (100 per job).

**Arguments.** ``ContentionEnv(config=None, *, jobs=None, render_mode=None, **params)``:
``config`` is a :class:`~envs.contention.config.ContentionConfig` or a mapping of its
fields; ``params`` override single fields (``gymnasium.make("podsched/Contention-v0",
mix="heavy", mode="hybrid", w1=0.6)``). Defaults (000 §IV-§VI): 4 nodes x 8 GPUs on 40
Gbps ports, 256-job sets of the normal mix, demands 1..32, one hour each alone, all
submitted at once. Without ``jobs`` every reset draws a new set from the environment's
generator; ``jobs`` (or ``reset(options={"jobs": ...})`` for one episode) replays a
deepshare :class:`~envs.workload.Workload` or a list ``[{"arrival": 0, "model": "FSDP",
"gpus": 8, "duration": 3600}, ...]`` (:mod:`envs.contention.jobs`). Bad configurations,
job sets and actions raise ``ValueError`` saying what is wrong.

**Baselines.** :func:`envs.contention.baselines.run_contention_baseline` runs LAS, SRTF
or FIFO over job sets (avg and p90 JCT, utilization, CS distribution).

**Version.** ``v0``: first release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from envs.base import ConfiguredEnv, scalar_metrics
from envs.contention.baselines import CONTENTION_BASELINES, run_contention_baseline
from envs.contention.command import COMMAND
from envs.contention.config import BRANCHES, ContentionConfig
from envs.contention.core import ContentionCore
from envs.contention.jobs import generate_job_set, parse_jobs
from envs.workload import Workload

__all__ = ["BRANCHES", "ENV_ID", "ContentionConfig", "ContentionEnv"]

ENV_ID = "podsched/Contention-v0"


class ContentionEnv(ConfiguredEnv):
    """000's environment; see the module docstring for spaces, reward and arguments."""

    config_class = ContentionConfig
    label = "contention"
    command = COMMAND
    baselines = CONTENTION_BASELINES
    # LAS, SRTF and FIFO preempt and decide outside the agent's action space.
    simulated_baselines = CONTENTION_BASELINES
    summary_metrics = ("avg_jct", "p90_jct", "gpu_utilization", "avg_contention", "p90_contention")

    @classmethod
    def _simulated_episode(cls, policy: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
        """One job set under ``policy``; it earns no RL reward (``episode_return`` NaN)."""
        (played,) = run_contention_baseline(policy, seed=seed, num_sets=1, **config)["sets"]
        metrics = {"episode_return": float("nan"), "truncated": float(bool(played["truncated"]))}
        metrics.update(scalar_metrics(played))
        return metrics

    _jobs: Workload | None

    def _parse_jobs(self, jobs: object) -> Workload:
        return parse_jobs(jobs, self.config, self.core.cluster)

    def _generate_jobs(self) -> Workload:
        return generate_job_set(self.config, self.core.cluster, self.np_random)

    def _setup(self) -> None:
        self.core = ContentionCore(self.config)
        self.action_space = spaces.Discrete(self.config.num_actions)
        self.observation_space = spaces.Dict(
            {
                "state": spaces.Box(0.0, 1.0, shape=self.config.state_shape, dtype=np.float32),
                "action_mask": spaces.Box(0, 1, shape=(self.config.num_actions,), dtype=np.int8),
            }
        )

    def _observe(self) -> dict[str, np.ndarray]:
        return {"state": self.core.observe(), "action_mask": self.core.action_mask()}

    def _info(self, observation: dict[str, np.ndarray]) -> dict[str, Any]:
        sim = self.core.sim
        running = sim.running_jobs()
        return {
            "time": float(sim.now),
            "action_mask": observation["action_mask"].copy(),
            "waiting": len(sim.waiting_jobs()),
            "running": len(running),
            "candidates": self.core.candidates().tolist() if not self.core.over else [],
            # String keys: Gymnasium's vector wrappers (as RLlib uses them) merge info dicts
            # and refuse any other key type.
            "cs": {str(job): float(sim.contention[job]) for job in running.tolist()},
        }

    def step(
        self, action: object
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Start a candidate on a node subset, or do nothing; see the module docstring."""
        return self._step_discrete(action, f"{self.config.num_actions - 1} = do nothing")

    def action_for(self, job: int, nodes: list[int] | tuple[int, ...]) -> int:
        """The action that starts candidate ``job`` on ``nodes``: its demand class's slot,
        then the subset (ValueError if ``job`` is not a candidate now or ``nodes`` is not
        an option)."""
        core = self.core
        candidates = core.candidates().tolist() if not core.over else []
        if job not in candidates:
            raise ValueError(f"job {job} is not a candidate now; candidates: {candidates}")
        subsets = self.core.options.subsets
        key = tuple(sorted(int(n) for n in nodes))
        if key not in subsets:
            raise ValueError(
                f"nodes {list(nodes)} are not a placement option: give 1, 2, 4, ... distinct "
                f"node ids in [0, {self.config.nodes})"
            )
        return int(core.demand_class[job]) * len(subsets) + subsets.index(key)
