"""RLlib's multi-agent vector env with part of its sub-environments in helper processes.

RLlib 2.60 steps a multi-agent env runner's sub-environments one after the other in the
runner's process (``SyncVectorMultiAgentEnv``; it has no asynchronous mode for
multi-agent environments). With the demo's settings -- the env runner and the learner in
one process on a 2-core machine -- one core then sits idle while the environments step,
which is more than half of sampling. :class:`ProcessVectorMultiAgentEnv` splits the
sub-environments into ``processes`` contiguous chunks: the runner's process steps the
first, and one helper process each (:mod:`tune.env_server`) steps the others, at the same
time.

It is the same vector env, call for call: every sub-environment gets the very resets
(with the very seeds), actions and next-step autoresets that ``SyncVectorMultiAgentEnv``
would give it, and returns what it returns (a test compares both on whole episodes).
Which process steps an environment changes nothing it computes. ``envs`` holds one local
environment per sub-environment, as RLlib expects (it reads spaces and agent ids from
them); those of the helpers' chunks are never stepped.

Each helper is a program of its own (``python -m tune.env_server``, over a socket pair):
not forked, since the runner may be a Ray worker with threads of its own, and not
multiprocessing's spawn, which would run the runner's main module again. Helpers are
closed with the env; a helper that exits is reported with its exit code, an exception in
a helper's environment with the helper's traceback.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from copy import deepcopy
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv

from tune.env_server import step_or_reset, unpack_observations

# Seconds a closing helper gets to exit on its own before it is terminated.
CLOSE_TIMEOUT_S = 10.0


def chunk_bounds(num_envs: int, processes: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of each process's sub-environments: contiguous, sizes differing by
    at most one, the larger chunks first (the runner's own process takes the first)."""
    if not 1 <= processes <= num_envs:
        raise ValueError(
            f"processes must be between 1 and the number of environments ({num_envs}), "
            f"got {processes}"
        )
    size, larger = divmod(num_envs, processes)
    bounds, start = [], 0
    for index in range(processes):
        stop = start + size + (1 if index < larger else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


class _Helper:
    """One helper process (``python -m tune.env_server``) and the runner's end of its socket."""

    def __init__(self, name: str, config: dict[str, Any], start: int, stop: int) -> None:
        self.start, self.stop = start, stop
        ours, theirs = socket.socketpair()
        # The helper imports what this process imports (the project as Ray's working_dir
        # ships it, say), and nothing of this process's main module: a separate program,
        # not multiprocessing's spawn, which would run an unguarded script again.
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tune.env_server", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=environment,
            )
        finally:
            theirs.close()
        self.connection = Connection(ours.detach())
        try:
            self.send(("build", name, config, stop - start))
            self.receive()  # the helper's environments are built
        except BaseException:
            # Not yet among the vector env's helpers, so its close() would miss this one:
            # reap it here (an exited helper would stay a zombie, a live one wait forever).
            self.close()
            raise

    def send(self, request: tuple) -> None:
        """Send one request (see :mod:`tune.env_server`)."""
        try:
            self.connection.send(request)
        except OSError as error:
            raise self._gone() from error

    def receive(self) -> Any:
        """The reply to the last request; raises with the helper's traceback on an error."""
        try:
            status, payload = self.connection.recv()
        except (EOFError, OSError) as error:
            raise self._gone() from error
        if status == "error":
            raise RuntimeError(
                f"sub-environments {self.start}-{self.stop - 1} (helper process "
                f"{self.process.pid}) failed:\n{payload}"
            )
        return payload

    def _gone(self) -> RuntimeError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1.0)
        return RuntimeError(
            f"the helper process stepping sub-environments {self.start}-{self.stop - 1} "
            f"exited (exit code {self.process.returncode})"
        )

    def close(self) -> None:
        """Ask the helper to exit; terminate it if it does not in time."""
        if self.process.poll() is None:
            with contextlib.suppress(EOFError, OSError):
                self.connection.send(("close",))
                if self.connection.poll(CLOSE_TIMEOUT_S):
                    self.connection.recv()
            try:
                self.process.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                self.process.wait()
        self.connection.close()


class ProcessVectorMultiAgentEnv(SyncVectorMultiAgentEnv):
    """``num_envs`` copies of a registered multi-agent environment, stepped by
    ``processes`` processes at once (see the module docstring).

    Args:
        name: the environment's name in :mod:`envs` (``pod_scheduling_v0``).
        config: its keyword configuration (the experiment's ``environment.config``).
        make_local: builds one environment as RLlib wraps it (``ParallelPettingZooEnv``).
        num_envs: sub-environments.
        processes: processes that step them, the runner's own included (1: none spawned).
    """

    def __init__(
        self,
        name: str,
        config: dict[str, Any],
        make_local: Callable[[], Any],
        num_envs: int,
        processes: int,
    ) -> None:
        bounds = chunk_bounds(num_envs, processes)
        # RLlib's own vector env builds the local environments, spaces and buffers.
        super().__init__(env_fns=[make_local] * num_envs)
        self._local = range(*bounds[0])
        self._helpers: list[_Helper] = []
        try:
            for start, stop in bounds[1:]:
                self._helpers.append(_Helper(name, dict(config), start, stop))
        except BaseException:
            self.close()
            raise
        self._autoreset_local = np.zeros(num_envs, dtype=bool)

    @property
    def processes(self) -> int:
        """Processes stepping the sub-environments, the runner's own included."""
        return 1 + len(self._helpers)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict | None = None
    ) -> tuple[list[dict], list[dict]]:
        """Reset every sub-environment (``seed``: one for all, ``seed + i`` for the i-th,
        or one per sub-environment, as ``SyncVectorMultiAgentEnv`` reads it)."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + index for index in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(
                    f"reset got {len(seeds)} seeds for {self.num_envs} sub-environments"
                )
        for helper in self._helpers:
            helper.send(("reset", seeds[helper.start : helper.stop], options))
        try:
            for index in self._local:
                self._observations[index], self._infos[index] = self.envs[index].reset(
                    seed=seeds[index], options=options
                )
        finally:
            replies = self._receive_all()
        self._autoreset_local[:] = False
        for helper, (packed, infos) in zip(self._helpers, replies, strict=True):
            self._observations[helper.start : helper.stop] = unpack_observations(packed)
            self._infos[helper.start : helper.stop] = infos
        return (deepcopy(self._observations) if self.copy else self._observations), self._infos

    def step(self, actions: list[dict[str, Any]]) -> tuple:
        """Step every sub-environment (after an episode's end: reset it instead)."""
        for helper in self._helpers:
            helper.send(("step", actions[helper.start : helper.stop]))
        try:
            for index in self._local:
                self._step_local(index, actions[index])
        finally:
            replies = self._receive_all()
        for helper, reply in zip(self._helpers, replies, strict=True):
            packed, rewards, terminations, truncations, infos = reply
            span = slice(helper.start, helper.stop)
            self._observations[span] = unpack_observations(packed)
            self._rewards[span] = rewards
            self._terminations[span] = terminations
            self._truncations[span] = truncations
            self._infos[span] = infos
        return (
            deepcopy(self._observations) if self.copy else self._observations,
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            np.copy(self._infos),
        )

    def _receive_all(self) -> list[Any]:
        """Every helper's reply to the request just sent. All are read before the first
        error is raised (a local failure may be in flight too), so that no helper's next
        request is answered with this one's reply."""
        replies, errors = [], []
        for helper in self._helpers:
            try:
                replies.append(helper.receive())
            except RuntimeError as error:
                errors.append(error)
        if errors:
            raise errors[0]
        return replies

    def _step_local(self, index: int, action: dict[str, Any]) -> None:
        """One of the runner's own sub-environments takes its turn (as a helper's do)."""
        (
            self._observations[index],
            self._rewards[index],
            self._terminations[index],
            self._truncations[index],
            self._infos[index],
            self._autoreset_local[index],
        ) = step_or_reset(self.envs[index], action, self._autoreset_local[index])

    def close_extras(self, **kwargs: Any) -> None:
        """Close the helper processes and the local environments."""
        for helper in getattr(self, "_helpers", []):
            helper.close()
        self._helpers = []
        super().close_extras(**kwargs)
