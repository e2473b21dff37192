"""Differential test: the fast core against a slow, literal model of the issue's DeepRM text.

The model below keeps one Python object per job and lists of lists for the cluster, and
follows the issue's sentences one by one (book at the earliest offset 0..T-len-1, move on,
departures, one arrival, reward, ends, image and compact layouts, baselines). Thousands of
random, SJF and Packer steps must give identical observations, rewards and ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from envs.deeprm import DeepRMEnv
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.jobs import JobSequence


@dataclass
class Job:
    arrival: int
    length: int
    res: list[int]
    start: int = -1
    finish: int = -1


class SpecModel:
    """DeepRM exactly as the issue words it, written for clarity, not speed."""

    def __init__(self, config: DeepRMConfig, jobs: JobSequence, colormap: np.ndarray) -> None:
        self.c = config
        self.todo = {
            int(t): Job(int(t), int(n), [int(x) for x in r])
            for t, n, r in zip(jobs.arrival_times, jobs.lengths, jobs.sizes, strict=True)
        }
        self.simu_len = jobs.simu_len
        self.colormap = [float(x) for x in colormap]
        self.now = 0
        self.free = [[config.res_slot] * config.num_res for _ in range(config.time_horizon)]
        self.canvas = [
            [[0.0] * config.res_slot for _ in range(config.time_horizon)]
            for _ in range(config.num_res)
        ]
        self.slots: list[Job | None] = [None] * config.num_nw
        self.backlog: list[Job] = []
        self.running: list[Job] = []
        self.since_new = 0

    def fits(self, job: Job, offset: int) -> bool:
        rows = range(offset, offset + job.length)
        return all(self.free[t][r] >= job.res[r] for t in rows for r in range(self.c.num_res))

    def step(self, action: int) -> tuple[Fraction, bool]:
        job = self.slots[action] if action < self.c.num_nw else None
        if job is not None:
            for offset in range(self.c.time_horizon - job.length):
                if self.fits(job, offset):
                    self.book(job, offset)
                    self.slots[action] = self.backlog.pop(0) if self.backlog else None
                    return Fraction(0), False
        return self.move_on()

    def book(self, job: Job, offset: int) -> None:
        for t in range(offset, offset + job.length):
            for r in range(self.c.num_res):
                self.free[t][r] -= job.res[r]
        job.start = self.now + offset
        job.finish = job.start + job.length
        self.running.append(job)
        used = {v for plane in self.canvas for row in plane for v in row}
        colour = next(c for c in self.colormap if c not in used)
        for r in range(self.c.num_res):
            for t in range(offset, offset + job.length):
                row = self.canvas[r][t]
                empty = [i for i, v in enumerate(row) if v == 0]
                for i in empty[: job.res[r]]:
                    row[i] = colour

    def move_on(self) -> tuple[Fraction, bool]:
        self.now += 1
        self.free = [*self.free[1:], [self.c.res_slot] * self.c.num_res]
        self.canvas = [[*plane[1:], [0.0] * self.c.res_slot] for plane in self.canvas]
        self.running = [job for job in self.running if job.finish > self.now]
        self.since_new = min(self.since_new + 1, self.c.max_track_since_new)
        no_more = self.now >= self.simu_len
        waiting = any(self.slots) or self.backlog
        if self.c.end == "no_new_job":
            ended = no_more
        else:
            ended = no_more and not self.running and not waiting
        if not ended and self.now in self.todo:
            job = self.todo[self.now]
            self.since_new = 0
            if None in self.slots:
                self.slots[self.slots.index(None)] = job
            elif len(self.backlog) < self.c.backlog_size:
                self.backlog.append(job)
        in_system = self.running + [j for j in self.slots if j] + self.backlog
        return -sum((Fraction(1, j.length) for j in in_system), Fraction(0)), ended

    def image(self) -> np.ndarray:
        c = self.c
        width = math.ceil(c.backlog_size / c.time_horizon)
        columns = []
        for r in range(c.num_res):
            columns.append(np.array(self.canvas[r]))
            for job in self.slots:
                block = np.zeros((c.time_horizon, c.max_job_size))
                if job is not None:
                    block[: job.length, : job.res[r]] = 1
                columns.append(block)
        backlog = np.zeros(c.time_horizon * width)
        backlog[: len(self.backlog)] = 1
        columns.append(backlog.reshape(c.time_horizon, width))
        columns.append(np.full((c.time_horizon, 1), self.since_new / c.max_track_since_new))
        return np.concatenate(columns, axis=1).astype(np.float32)

    def compact(self) -> np.ndarray:
        c = self.c
        horizon = range(c.time_horizon)
        left = [sum(job.finish - self.now > k for job in self.running) for k in horizon]
        free = [self.free[t][r] for r in range(c.num_res) for t in range(c.time_horizon)]
        slots = []
        for job in self.slots:
            slots += [0] * (c.num_res + 1) if job is None else [job.length, *job.res]
        return np.array([*left, *free, *slots, len(self.backlog)], dtype=np.float32)

    def fit_now(self) -> list[bool]:
        return [job is not None and self.fits(job, 0) for job in self.slots]

    def sjf(self) -> int:
        best, action = 0.0, self.c.num_nw
        for i, job in enumerate(self.slots):
            if job is not None and self.fits(job, 0) and 1 / job.length > best:
                best, action = 1 / job.length, i
        return action

    def packer(self) -> int:
        best, action = 0, self.c.num_nw
        for i, job in enumerate(self.slots):
            if job is not None and self.fits(job, 0):
                score = sum(self.free[0][r] * job.res[r] for r in range(self.c.num_res))
                if score > best:
                    best, action = score, i
        return action


CASES = [
    {},
    {"end": "no_new_job"},
    {"num_nw": 2, "backlog_size": 4, "new_job_rate": 0.9},
    {"num_nw": 1, "backlog_size": 0, "simu_len": 80},
    {"num_res": 3, "time_horizon": 16, "max_job_len": 10, "backlog_size": 50},
    {"observation": "compact", "simu_len": 120},
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: ",".join(map(str, case)) or "defaults")
@pytest.mark.parametrize("chooser", ["random", "sjf", "packer", "mixed"])
def test_core_matches_the_literal_model(case: dict, chooser: str) -> None:
    env = DeepRMEnv(max_episode_steps=400, **case)
    rng = np.random.default_rng(5)
    for episode in range(4):
        obs, _ = env.reset(seed=100 + episode)
        core = env.core
        model = SpecModel(env.config, core.jobs, core.colormap)
        observe = model.image if env.config.observation == "image" else model.compact
        np.testing.assert_array_equal(obs, observe())
        for _ in range(400):
            expected = {"sjf": model.sjf(), "packer": model.packer()}
            assert env.baseline_action("sjf") == expected["sjf"]
            assert env.baseline_action("packer") == expected["packer"]
            pick = chooser if chooser != "mixed" else ("sjf", "random")[int(rng.random() < 0.3)]
            if pick == "random":
                action = int(rng.integers(env.config.num_nw + 1))
            else:
                action = expected[pick]
            obs, reward, terminated, truncated, _ = env.step(action)
            want_reward, want_end = model.step(action)
            assert reward == float(want_reward)
            assert terminated == want_end
            np.testing.assert_array_equal(obs, observe())
            np.testing.assert_array_equal(core.avbl, np.array(model.free))
            if terminated or truncated:
                break
