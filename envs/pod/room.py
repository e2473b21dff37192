"""Room for the job being placed: the observation features of ``room_features=True``.

001's observation shows each target's free GPUs and cores, and the other schedulers only
as summaries. Whether a *job* fits a server whole -- all its remaining tasks -- takes
several message-passing hops to infer from that, and which other partition could hold it
cannot be inferred at all. These features state it directly, per agent, for the job at
the head of its queue (all zero for an agent with nothing to place):

- per placement target: the free GPUs of the target's server (net of this round's
  claims, over the largest server's GPUs), whether that server has the GPUs and cores
  for every remaining task of the job together, and how many of the job's tasks placed
  so far are on that server (over 8, as task counts elsewhere) -- the job's locality,
  which the per-node task counts show only for the node itself, not for its server;
- per forward target (another scheduler): whether any of its servers has that room, the
  fewest free GPUs among those that do (1 when none does) and the most free GPUs of any
  of its servers.

"Has the room" is a necessary condition (summed GPUs and cores), the one packing-style
placements test first; the masks still decide what is legal.
"""

from __future__ import annotations

import numpy as np

from envs.pod.decisions import CORE_TOLERANCE, DecisionRound
from envs.pod.layout import ClusterLayout

TARGET_ROOM_FEATURES = 3
TASK_COUNT_SCALE = 8.0
FORWARD_ROOM_FEATURES = 3


class RoomFeatures:
    """Computes the room features of every agent at once (see the module docstring)."""

    def __init__(
        self,
        layout: ClusterLayout,
        forward_targets: list[np.ndarray],
        target_ids: np.ndarray,
        target_valid: np.ndarray,
    ) -> None:
        """``target_ids``/``target_valid`` [P, M]: every agent's padded targets (GPU groups
        or servers), as :class:`~envs.pod.observations.ObservationBuilder` holds them."""
        cluster = layout.cluster
        self.num_agents = cluster.num_partitions
        self.max_targets = layout.max_targets
        self._group_offsets = cluster.server_group_offsets[:-1]
        self._socket_offsets = cluster.server_socket_offsets[:-1]
        self._server_starts = cluster.partition_server_offsets[:-1]
        self._group_server = cluster.group_server
        self._gpu_scale = float(cluster.server_gpus.max())
        # The server of every agent's targets, padded like the targets.
        self._target_servers = (
            target_ids if layout.level == "server" else cluster.group_server[target_ids]
        )
        self._target_valid = target_valid
        self._forward_targets = np.stack(forward_targets) if self.num_agents > 1 else None

    def compute(
        self, round_: DecisionRound | None, free_gpus: np.ndarray, free_cores: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(targets [P, M, 3], forwards [P, P-1, 3])``, float32."""
        targets = np.zeros((self.num_agents, self.max_targets, TARGET_ROOM_FEATURES), np.float32)
        forwards = np.zeros(
            (self.num_agents, max(self.num_agents - 1, 0), FORWARD_ROOM_FEATURES), np.float32
        )
        needed_gpus = np.zeros(self.num_agents)
        needed_cores = np.zeros(self.num_agents)
        placing = np.zeros(self.num_agents, dtype=bool)
        placed_agents: list[int] = []
        placed_groups: list[int] = []
        if round_ is not None:
            for agent in range(self.num_agents):
                head = round_.head(agent)
                if head is not None:
                    placing[agent] = True
                    needed_gpus[agent] = head.task_gpus[head.task :].sum()
                    needed_cores[agent] = head.task_cpus[head.task :].sum()
                    placed_agents.extend([agent] * len(head.groups))
                    placed_groups.extend(head.groups)
        if not placing.any():
            return targets, forwards
        server_gpus = np.add.reduceat(free_gpus, self._group_offsets).astype(np.float64)
        server_cores = np.add.reduceat(free_cores, self._socket_offsets)
        holds = (server_gpus[None, :] >= needed_gpus[:, None]) & (
            server_cores[None, :] >= needed_cores[:, None] - CORE_TOLERANCE
        )
        holds &= placing[:, None]
        free = server_gpus / self._gpu_scale
        targets[..., 0] = np.where(self._target_valid, free[self._target_servers], 0.0)
        targets[..., 1] = np.take_along_axis(holds, self._target_servers, axis=1) & (
            self._target_valid
        )
        if placed_groups:
            placed = np.zeros((self.num_agents, len(server_gpus)), dtype=np.float32)
            np.add.at(placed, (placed_agents, self._group_server[placed_groups]), 1.0)
            targets[..., 2] = np.take_along_axis(placed, self._target_servers, axis=1) * (
                self._target_valid / TASK_COUNT_SCALE
            )
        targets[~placing] = 0.0
        if self._forward_targets is not None:
            tightest = np.minimum.reduceat(
                np.where(holds, free, np.inf), self._server_starts, axis=1
            )
            most = np.maximum.reduceat(free, self._server_starts)  # [P] partitions
            chosen = np.take_along_axis(tightest, self._forward_targets, axis=1)
            forwards[..., 0] = np.isfinite(chosen)
            forwards[..., 1] = np.where(np.isfinite(chosen), chosen, 1.0)
            forwards[..., 2] = most[self._forward_targets]
            forwards[~placing] = 0.0
        return targets, forwards
