"""Multi-agent environments stepped in a helper process, and their compact transfer.

:class:`tune.process_vector_env.ProcessVectorMultiAgentEnv` steps some of an env runner's
sub-environments here, in a process of their own, while the runner's process steps the
others. This module is what that process runs: it imports numpy and podsched's ``envs``
only (no Ray, no torch), so a spawned helper starts in about a second.

**Why observations travel packed.** A pod observation is a dict of about twenty small
arrays per agent. Pickling each array separately costs a few microseconds: for 8
environments of 4 agents, about 640 arrays and 3 ms a step on each side of the pipe, as
much as the process saves. :func:`pack_observations` stacks each key over every
(environment, agent) pair that has it into one array, so a step sends about twenty
arrays; :func:`unpack_observations` hands out per-agent views of them. The values are
the environment's own, bit for bit, dtype for dtype.

The protocol is one request, one reply, over a ``multiprocessing`` connection on a
socket the runner's process passes as ``python -m tune.env_server FD``:

- ``("build", name, config, count)`` -> ``("ok", None)`` once ``count`` environments are
  built (first, and once)
- ``("reset", seeds, options)`` -> ``("ok", (packed observations, infos))``
- ``("step", actions)`` -> ``("ok", (packed observations, rewards, terminateds,
  truncateds, infos))``, with RLlib's next-step autoreset (an environment whose episode
  ended on the previous step is reset instead of stepped) and its ``"__all__"`` keys
- ``("close",)`` -> ``("ok", None)``, then the process exits

An exception in an environment is answered ``("error", traceback text)`` and the helper
keeps serving, so the runner can raise it with the helper's traceback.
"""

from __future__ import annotations

import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

# One packed observation batch: the agents of each environment, in order, and per key
# either one array stacked over every (environment, agent) pair, in that order, or (for a
# key whose arrays differ in shape or dtype) an object array of them.
PackedObservations = tuple[list[list[str]], dict[str, np.ndarray]]


def pack_observations(observations: list[dict[str, dict[str, np.ndarray]]]) -> PackedObservations:
    """Per environment ``{agent: {key: array}}`` -> one stacked array per key (module doc).

    Every agent must have the same keys (a pod observation does); arrays that differ in
    shape or dtype between agents travel as an object array, so nothing is converted.
    """
    agents = [list(observation) for observation in observations]
    rows = [agent_obs for observation in observations for agent_obs in observation.values()]
    if not rows:
        return agents, {}
    keys = list(rows[0])
    if any(list(row) != keys for row in rows):
        raise ValueError("pack_observations needs the same observation keys for every agent")
    packed = {}
    for key in keys:
        values = [row[key] for row in rows]
        first = values[0]
        if isinstance(first, np.ndarray) and all(
            isinstance(v, np.ndarray) and v.dtype == first.dtype and v.shape == first.shape
            for v in values
        ):
            packed[key] = np.array(values)
        else:
            packed[key] = np.empty(len(values), dtype=object)
            packed[key][:] = values
    return agents, packed


def unpack_observations(packed: PackedObservations) -> list[dict[str, dict[str, Any]]]:
    """The inverse of :func:`pack_observations`: per environment ``{agent: {key: array}}``
    (each array a view of its key's stacked array)."""
    agents, columns = packed
    items = list(columns.items())
    observations: list[dict[str, dict[str, Any]]] = []
    row = 0
    for env_agents in agents:
        observation = {}
        for agent in env_agents:
            observation[agent] = {key: stacked[row] for key, stacked in items}
            row += 1
        observations.append(observation)
    return observations


def all_done(flags: dict[str, bool]) -> dict[str, bool]:
    """``flags`` with RLlib's ``"__all__"`` key: every agent's flag set (as RLlib's
    ``ParallelPettingZooEnv`` computes it)."""
    return {**flags, "__all__": all(flags.values())}


def make_served_env(name: str, config: dict[str, Any]) -> Any:
    """A PettingZoo environment as RLlib's ``ParallelPettingZooEnv`` holds it: built, then
    reset once without a seed (as that wrapper's constructor does), so the helper's
    environments see exactly the calls of the runner's own."""
    from envs import make_env

    environment = make_env(name, **config)
    environment.reset()
    return environment


class ServedEnvironments:
    """The helper's environments and their next-step autoreset state."""

    def __init__(self, name: str, config: dict[str, Any], count: int) -> None:
        self.envs = [make_served_env(name, config) for _ in range(count)]
        self.needs_reset = [False] * count

    def reset(self, seeds: list[int | None], options: dict | None) -> tuple:
        """Reset every environment with its seed: packed observations and infos."""
        observations, infos = [], []
        for env, seed in zip(self.envs, seeds, strict=True):
            observation, info = env.reset(seed=seed, options=options)
            observations.append(observation)
            infos.append(info or {})
        self.needs_reset = [False] * len(self.envs)
        return pack_observations(observations), infos

    def step(self, actions: list[dict[str, Any]]) -> tuple:
        """Step (or, after an episode's end, reset) every environment, as RLlib's
        ``SyncVectorMultiAgentEnv`` does with ``autoreset_mode="next_step"``."""
        observations, rewards, terminateds, truncateds, infos = [], [], [], [], []
        for index, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            if self.needs_reset[index]:
                observation, info = env.reset()
                agents = env.possible_agents
                reward = dict.fromkeys(agents, 0.0)
                terminated = {**dict.fromkeys(agents, False), "__all__": False}
                truncated = {**dict.fromkeys(agents, False), "__all__": False}
                info = info or {}
            else:
                observation, reward, terminated, truncated, info = env.step(action)
                terminated, truncated = all_done(terminated), all_done(truncated)
            self.needs_reset[index] = terminated["__all__"] or truncated.get("__all__", False)
            observations.append(observation)
            rewards.append(reward)
            terminateds.append(terminated)
            truncateds.append(truncated)
            infos.append(info)
        return pack_observations(observations), rewards, terminateds, truncateds, infos


def serve(connection: Any) -> None:
    """The helper's loop: build the environments the first request names, then answer
    requests until "close" (or until the runner's end of the connection goes away)."""
    try:
        _, name, config, count = connection.recv()
        served = ServedEnvironments(name, config, count)
    except (EOFError, OSError):
        return
    except Exception:
        connection.send(("error", traceback.format_exc()))
        return
    connection.send(("ok", None))
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        command = request[0]
        if command == "close":
            connection.send(("ok", None))
            return
        try:
            if command == "reset":
                reply = served.reset(request[1], request[2])
            elif command == "step":
                reply = served.step(request[1])
            else:
                raise ValueError(f"unknown request {command!r}; allowed: reset, step, close")
        except Exception:
            connection.send(("error", traceback.format_exc()))
            continue
        connection.send(("ok", reply))


if __name__ == "__main__":
    # python -m tune.env_server FD: serve over the inherited socket FD.
    serve(Connection(int(sys.argv[1])))
