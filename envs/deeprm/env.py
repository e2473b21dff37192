"""DeepRM — ``podsched/DeepRM-v0``: multi-resource cluster scheduling as an image (Mao et al.).

DeepRM (HotNets'16) schedules jobs onto one cluster with ``num_res`` resources of
``res_slot`` units each. The agent sees the next ``time_horizon`` (T) steps of the cluster
as an image, the jobs in ``num_nw`` visible slots and how full the backlog is, and books
one job at a time into the future; time advances only when it moves on. This environment
reproduces the reference implementation (``hongzimao/deeprm``) step for step; the dynamics
live in :mod:`envs.deeprm.core` (their own numpy core, because booking jobs into future
rows of an image is not the event-driven simulator of :mod:`envs.sim`).

=====================  ===================================================================
Action space           ``Discrete(num_nw + 1)``: ``a < num_nw`` books slot ``a``'s job;
                       ``a == num_nw`` is void. Void, an empty slot or a job that cannot be
                       booked all mean "move on".
Observation "image"    ``Box(0, 1, (T, num_res * (res_slot + num_nw * max_job_size) +
(default)              backlog_width + 1), float32)``, (20, 124) by default. Per resource:
                       ``res_slot`` canvas columns (booked cells carry the job's colour, a
                       value in (0, 1) from a shuffled palette of ``job_num_cap - 1``), then
                       ``num_nw`` blocks of ``max_job_size`` columns: slot j's job is 1s in
                       rows ``0..len-1``, columns ``0..res-1``. Then ``backlog_width =
                       ceil(backlog_size / T)`` columns filled row by row with one cell per
                       backlogged job, then one column of time since the last arrival /
                       ``max_track_since_new`` (capped at 1).
Observation "compact"  ``Box(0, bounds, ((num_res + 1) * (T + num_nw) + 1,), float32)``, 76
                       by default: jobs still running after k steps (k = 0..T-1); free units
                       per future step for each resource; (len, demands) per slot, 0s when
                       empty; backlog size.
=====================  ===================================================================

**Dynamics.** Time starts at 0 with nothing in the system. Booking slot ``a``'s job puts
it at the earliest offset ``t in 0..T-len-1`` where every resource has room for rows
``t..t+len-1`` (start = now + t, finish = start + len), refills the slot from the backlog
head, keeps time frozen and gives reward 0, so many jobs can be booked in one time step.
Moving on: time += 1, the free-capacity image shifts up a row (new bottom row free), jobs
with ``finish <= now`` leave, then the job arriving at this step (if any) takes the lowest
empty slot, else joins the backlog if it has room, else is dropped (not counted anywhere).

**Reward.** 0 after a booking; after a move-on ``-sum(1/len)`` over every job in the
system: running or booked to start later, in a slot, in the backlog. A job in the system
from its arrival ``e`` to its finish ``f`` is counted at ``f - e`` move-ons, so an
episode that ends "all_done" returns exactly minus the sum of its jobs' slowdowns.

**Episode end.** ``end="all_done"`` (default, as the reference trains): terminated at the
move-on when no arrivals remain (time >= ``simu_len``, or past the last explicit job) and
nothing is running, booked, slotted or backlogged. ``end="no_new_job"``: terminated at the
move-on that reaches ``simu_len`` (the step after the last possible arrival). Truncated
after ``max_episode_steps`` calls to ``step`` (200, the reference's
``episode_max_length``; ``None`` never truncates). ``info`` has ``time`` every step and,
on the last step, ``episode``: the replay summary (``mean_slowdown``, ``max_slowdown``,
``total_reward``, ``steps``, ``final_time``, ``dropped``, ``jobs``).

**Arguments.** ``DeepRMEnv(config=None, *, jobs=None, render_mode=None, **params)``:
``config`` is a :class:`~envs.deeprm.config.DeepRMConfig` or a mapping of its fields;
``params`` override single fields (``gymnasium.make("podsched/DeepRM-v0", num_nw=10,
observation="compact")``). Fields and defaults (the reference's): ``num_res=2``,
``res_slot=10``, ``time_horizon=20``, ``max_job_len=15``, ``max_job_size=10``,
``num_nw=5``, ``backlog_size=60``, ``new_job_rate=0.7``, ``job_small_chance=0.8``,
``simu_len=50``, ``max_track_since_new=10``, ``job_num_cap=40``, ``end="all_done"``,
``observation="image"``, ``max_episode_steps=200``. Without ``jobs`` every reset draws a
new sequence from the environment's generator: at each step 1..simu_len-1 a job arrives
with probability 0.7, lasting 1..3 steps (prob. 0.8) or 10..15, with one random dominant
resource of 5..10 units and 1..2 of the others. ``jobs`` (or ``reset(options={"jobs":
...})`` for one episode) replays an explicit workload ``{"jobs": [{"arrival_time": 3,
"len": 2, "res": [5, 1]}, ...]}``: arrival times >= 1 and strictly increasing. Bad
configurations and workloads raise ``ValueError`` saying what is wrong. ``render_mode
="ansi"`` renders the image as text.

**Baselines.** ``env.unwrapped.baseline_action("sjf" | "packer" | "random")`` returns the
reference's SJF, Packer (Tetris) or Random choice for the current state;
:func:`envs.deeprm.baselines.replay` runs one on a workload.

**Version.** ``v0``: first release, the reference's dynamics with the corrections listed
in :mod:`envs.deeprm.core` (every finished job leaves; reward correctly rounded).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from envs.base import ConfiguredEnv
from envs.deeprm.baselines import POLICIES, get_policy
from envs.deeprm.command import COMMAND
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.core import DeepRMCore
from envs.deeprm.jobs import JobSequence, generate_sequence, parse_jobs

__all__ = ["ENV_ID", "DeepRMConfig", "DeepRMEnv"]

ENV_ID = "podsched/DeepRM-v0"


def compact_bounds(config: DeepRMConfig) -> np.ndarray:
    """Upper bounds of the compact observation, entry by entry."""
    horizon, resources = config.time_horizon, config.num_res
    # A running job holds >= 1 canvas cell in rows 0..T-2 of some resource.
    running = resources * (horizon - 1) * config.res_slot
    slot = [config.max_job_len, *[config.max_job_size] * resources]
    return np.array(
        [running] * horizon
        + [config.res_slot] * (horizon * resources)
        + slot * config.num_nw
        + [config.backlog_size],
        dtype=np.float32,
    )


class DeepRMEnv(ConfiguredEnv):
    """The DeepRM environment; see the module docstring for spaces, reward and arguments."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    config_class = DeepRMConfig
    label = "DeepRM"
    command = COMMAND
    jobs_parser = staticmethod(parse_jobs)
    jobs_generator = staticmethod(generate_sequence)
    baselines = tuple(POLICIES)  # sjf, packer, random (the reference's other_agents.py)
    ranking_metric = "mean_slowdown"
    summary_metrics = ("mean_slowdown", "max_slowdown", "dropped")
    _jobs: JobSequence | None

    def _setup(self) -> None:
        self.action_space = spaces.Discrete(self.config.num_nw + 1)
        if self.config.observation == "image":
            self.observation_space = spaces.Box(
                0.0, 1.0, shape=self.config.image_shape, dtype=np.float32
            )
        else:
            bounds = compact_bounds(self.config)
            self.observation_space = spaces.Box(
                np.zeros_like(bounds), bounds, shape=bounds.shape, dtype=np.float32
            )
        self.core = DeepRMCore(self.config)
        self._observe = (
            self.core.observe_image
            if self.config.observation == "image"
            else self.core.observe_compact
        )

    def _start(self, jobs: JobSequence) -> None:
        # The generator also shuffles the canvas colours, as the reference does.
        self.core.reset(jobs, self.np_random)

    def _info(self, observation: object) -> dict[str, Any]:
        return {"time": self.core.time}

    def step(self, action: object) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Book a slot's job or move on; see the module docstring."""
        reward, terminated, truncated = self.core.step(action)
        info: dict[str, Any] = {"time": self.core.time}
        if terminated or truncated:
            info["episode"] = self.core.result()
        return self._observe(), reward, terminated, truncated, info

    def baseline_action(self, policy: str) -> int:
        """The action of a reference baseline ("sjf", "packer", "random") in this state."""
        return get_policy(policy)(self.core, self.np_random)

    def summary(self) -> dict[str, Any]:
        """The replay summary of the episode so far (see ``envs.deeprm.baselines.replay``)."""
        return self.core.result()

    def render(self) -> str | None:
        """Text view ("ansi"): '#' = 1, 'a'..'z' = canvas colours, '.' = 0, per image row."""
        if self.render_mode != "ansi":
            return None
        image = self.core.image
        palette = "abcdefghijklmnopqrstuvwxyz"
        cap = self.config.job_num_cap
        rows = []
        for row in image[:, :-1]:
            # Colours are k / job_num_cap; k names the job's letter.
            cells = [
                "." if v == 0 else "#" if v == 1 else palette[round(v * cap) % len(palette)]
                for v in row.tolist()
            ]
            rows.append("".join(cells))
        core = self.core
        header = (
            f"time {core.time}  slots {core.slot_len.tolist()}  backlog {len(core.backlog)}  "
            f"since last arrival {core.since_new}  dropped {core.dropped}"
        )
        return "\n".join([header, *rows])
