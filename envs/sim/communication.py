"""Who talks to whom in one synchronous iteration, and how many bytes (001 §VI-A, 000, 003).

A job's tasks are its workers (first) and parameter servers. Per collective pattern:

- ``ps`` -- every worker pushes its gradient shard to every PS and pulls it back:
  pairs (worker, PS), ``2 x G / num_ps`` MB each.
- ``allreduce`` and ``reduce-scatter+all-gather`` -- a ring over the workers in task
  order: pairs (w_i, w_{i+1}), each edge carrying ``2 (w-1)/w x G`` MB (the bandwidth-optimal
  ring volume; FSDP's sharded collectives move the same volume per collective, and its
  larger per-iteration size is in the model profile).
- ``all-to-all`` -- every pair of workers, ``2 x G / w`` MB each (MoE expert routing).

A job with parameter servers always uses the ``ps`` pattern, whatever its profile says.
Transfers of one iteration run concurrently, so the iteration's communication time is the
slowest pair's, ``MB x 8 / 1000 / bottleneck Gbps`` (001: "per worker pair communication
time is calculated by dividing the transmitted gradient size by the bottleneck bandwidth").
"""

from __future__ import annotations

import numpy as np

COLLECTIVES = ("ps", "allreduce", "reduce-scatter+all-gather", "all-to-all")


def communication_pairs(
    collective: str, num_workers: int, num_ps: int, gradient_mb: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(task_a, task_b, megabytes)`` of the pairs that exchange data each iteration.

    Task indices count workers ``0..w-1`` then parameter servers ``w..w+ps-1``.
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")
    workers = np.arange(num_workers)
    if num_ps > 0:
        task_a = np.repeat(workers, num_ps)
        task_b = np.tile(num_workers + np.arange(num_ps), num_workers)
        volume = np.full(len(task_a), 2.0 * gradient_mb / num_ps)
    elif num_workers < 2 or gradient_mb == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    elif collective == "all-to-all":
        task_a, task_b = np.triu_indices(num_workers, k=1)
        volume = np.full(len(task_a), 2.0 * gradient_mb / num_workers)
    else:
        # A ring of two is one pair; longer rings close on themselves.
        task_a = workers if num_workers > 2 else workers[:1]
        task_b = (task_a + 1) % num_workers
        volume = np.full(len(task_a), 2.0 * (num_workers - 1) / num_workers * gradient_mb)
    return task_a.astype(np.int64), task_b.astype(np.int64), volume


def megabytes_to_gigabits(megabytes: np.ndarray | float) -> np.ndarray | float:
    """MB (10^6 bytes) to Gb (10^9 bits)."""
    return megabytes * 8.0 / 1000.0
