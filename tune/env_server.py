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


class RLlibView:
    """A PettingZoo parallel environment answering as RLlib's ``ParallelPettingZooEnv``
    wraps it (which this process cannot import without Ray): reset once without a seed when
    built, infos ``{}`` for none, and the ``"__all__"`` flags (every agent's flag set)."""

    def __init__(self, environment: Any) -> None:
        self.par_env = environment
        self.possible_agents = environment.possible_agents
        environment.reset()

    @property
    def unwrapped(self) -> RLlibView:
        """Itself, as RLlib's wrapper is the innermost environment RLlib sees."""
        return self

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        """The environment's reset, infos ``{}`` for none."""
        observation, info = self.par_env.reset(seed=seed, options=options)
        return observation, info or {}

    def step(self, actions: dict[str, Any]) -> tuple:
        """The environment's step, its flags with ``"__all__"``."""
        observation, reward, terminated, truncated, info = self.par_env.step(actions)
        terminated = {**terminated, "__all__": all(terminated.values())}
        truncated = {**truncated, "__all__": all(truncated.values())}
        return observation, reward, terminated, truncated, info


def step_or_reset(env: Any, action: dict[str, Any], ended: bool) -> tuple:
    """One sub-environment's turn as RLlib's ``SyncVectorMultiAgentEnv`` takes it with
    ``autoreset_mode="next_step"``: reset (zero rewards, no flags) when its episode ended
    on the previous step, else step. Returns the five results and whether it ended now.
    Both sides of the pipe step their environments with it."""
    if ended:
        observation, info = env.reset()
        agents = env.unwrapped.possible_agents
        reward = dict.fromkeys(agents, 0.0)
        terminated = {**dict.fromkeys(agents, False), "__all__": False}
        truncated = {**dict.fromkeys(agents, False), "__all__": False}
    else:
        observation, reward, terminated, truncated, info = env.step(action)
    ended = terminated["__all__"] or truncated.get("__all__", False)
    return observation, reward, terminated, truncated, info, ended


class ServedEnvironments:
    """The helper's environments and which of them ended their episode last step."""

    def __init__(self, name: str, config: dict[str, Any], count: int) -> None:
        from envs import make_env

        self.envs = [RLlibView(make_env(name, **config)) for _ in range(count)]
        self.ended = [False] * count

    def reset(self, seeds: list[int | None], options: dict | None) -> tuple:
        """Reset every environment with its seed: packed observations and infos."""
        observations, infos = [], []
        for env, seed in zip(self.envs, seeds, strict=True):
            observation, info = env.reset(seed=seed, options=options)
            observations.append(observation)
            infos.append(info)
        self.ended = [False] * len(self.envs)
        return pack_observations(observations), infos

    def step(self, actions: list[dict[str, Any]]) -> tuple:
        """Step (or, after an episode's end, reset) every environment: packed observations,
        then per environment rewards, terminateds, truncateds and infos."""
        columns: list[list[Any]] = [[], [], [], [], []]
        for index, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            *results, self.ended[index] = step_or_reset(env, action, self.ended[index])
            for column, result in zip(columns, results, strict=True):
                column.append(result)
        observations, *rest = columns
        return (pack_observations(observations), *rest)


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
