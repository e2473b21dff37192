"""Per-agent rewards of one stretch of simulated time (between two decision rounds).

- ``progress`` (001 §IV-C): each job's progress in the stretch, as a fraction of its work
  (epochs done / epochs to do), shared equally by its tasks; an agent earns the shares of
  the tasks it placed. Summed over an episode it is the work done, and schedulers that
  finish jobs sooner collect it sooner (with discounting, average JCT falls).
- ``jct``: minus the time each of the agent's home jobs spent in the system during the
  stretch, in intervals, so the episode return is -sum(JCT) / interval.
- ``contention`` (000 eq. 2): -W1 * mean CS of the running jobs the agent placed tasks of
  + W2 * the busy fraction of its partition's GPUs, W2 = 1 - W1, taken right after the
  round's placements and counted once per interval it held: from the round to the next
  decision (the first stretch's time before its round, with nothing placed, counts none).
"""

from __future__ import annotations

import numpy as np

from envs.sim import JobStatus, Simulator


def progress_rewards(sim: Simulator, work_before: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Per agent: sum over jobs of (work done in the stretch / total work) x its share."""
    fraction = (sim.work_done - work_before) / sim.work_total
    return fraction @ shares


def time_in_system(sim: Simulator, start: float, until: float | None = None) -> np.ndarray:
    """Per job: seconds it spent in the system in ``[start, until]`` (default: now)."""
    until = sim.now if until is None else until
    arrival = sim.workload.arrival_time
    end = np.where(np.isnan(sim.finish_time), until, np.minimum(sim.finish_time, until))
    return np.clip(end - np.maximum(arrival, start), 0.0, None)


def jct_rewards(
    present: np.ndarray, homes: np.ndarray, num_agents: int, interval_s: float
) -> np.ndarray:
    """Per agent: minus its home jobs' time in the system (``present``, seconds per job, see
    :func:`time_in_system`), in intervals."""
    return -np.bincount(homes, weights=present, minlength=num_agents) / interval_s


def contention_rewards(
    sim: Simulator,
    shares: np.ndarray,
    partition_gpus: list[np.ndarray],
    weight: float,
    intervals: float,
) -> np.ndarray:
    """Per agent: (-W1 * mean CS of its running jobs + W2 * busy GPU fraction) x intervals."""
    running = sim.status == JobStatus.RUNNING
    mine = (shares > 0) & running[:, None]
    contention = sim.contention
    num_agents = shares.shape[1]
    mean_cs = np.array(
        [contention[mine[:, a]].mean() if mine[:, a].any() else 1.0 for a in range(num_agents)]
    )
    busy = np.array([(sim.gpu_job[gpus] >= 0).mean() for gpus in partition_gpus])
    return (-weight * mean_cs + (1.0 - weight) * busy) * intervals
