"""When room frees up: the observation features of ``release_features=True``.

The observation shows the GPUs free *now* and, with ``job_times``, how long the jobs of
an agent's N slots have left -- but the slots list the queue first, so on a busy cluster
(a queue of N jobs or more) no running job is shown at all, and nothing tells an agent
whether a server that is full now will have room at the next round. That is what a
scheduler needs to decide between placing a job badly now and holding it for a round
(the ``hold-first`` teacher's choice, :class:`tune.imitation.HoldImprovedPolicy`). These
features state it per placement target:

- the target's own GPUs held by running jobs expected to finish within one scheduling
  interval, over the largest target's GPUs (as the free-GPU column);
- the same count for the target's server, over the largest server's GPUs (as the room
  features' free-GPU column).

"Expected to finish" reads the simulator's remaining time of each running job at its
current speed (:meth:`envs.sim.Simulator.remaining_time`): an estimate, since a job's speed
changes when others start or stop beside it, and what SRTF-style heuristics read too.
GPUs claimed in the current round are not running and never count.
"""

from __future__ import annotations

import numpy as np

from envs.pod.layout import ClusterLayout
from envs.sim import Simulator

RELEASE_FEATURES = 2


class ReleaseFeatures:
    """Computes the release features of every agent's targets at once (module docstring)."""

    def __init__(
        self,
        layout: ClusterLayout,
        target_ids: np.ndarray,
        target_valid: np.ndarray,
        *,
        target_scale: float,
        server_scale: float,
    ) -> None:
        """``target_ids``/``target_valid`` [P, M]: every agent's padded targets (GPU groups
        or servers), and the largest target's and server's GPUs, as
        :class:`~envs.pod.observations.ObservationBuilder` holds them."""
        cluster = layout.cluster
        self._gpu_starts = cluster.group_gpu_offsets[:-1]
        self._group_starts = cluster.server_group_offsets[:-1]
        self._server_scale = server_scale
        self._server_level = layout.level == "server"
        self._target_scale = target_scale
        self._target_ids = target_ids
        self._target_servers = (
            target_ids if self._server_level else cluster.group_server[target_ids]
        )
        self._target_valid = target_valid

    def compute(self, sim: Simulator, horizon_s: float) -> np.ndarray:
        """``[P, M, 2]`` float32: per target, its GPUs and its server's GPUs that running
        jobs are expected to release within ``horizon_s`` seconds, each over its scale."""
        # A free GPU's job -1 reads some remaining time; the mask drops it.
        releasing = (sim.gpu_job >= 0) & (sim.remaining_time(sim.gpu_job) <= horizon_s)
        per_group = np.add.reduceat(releasing.astype(np.float64), self._gpu_starts)
        per_server = np.add.reduceat(per_group, self._group_starts)
        own = per_server if self._server_level else per_group
        features = np.zeros((*self._target_ids.shape, RELEASE_FEATURES), dtype=np.float32)
        features[..., 0] = np.where(
            self._target_valid, own[self._target_ids] / self._target_scale, 0.0
        )
        features[..., 1] = np.where(
            self._target_valid, per_server[self._target_servers] / self._server_scale, 0.0
        )
        return features
