"""004's allocation policies (§3.1): depth-first and breadth-first over nodes (servers).

- **depth-first** "assign[s] requested resources utilizing as few nodes as possible": the
  lowest-numbered server that holds every remaining task whole takes them (first fit);
  when none does, the server with the most free GPUs is filled as far as it goes, and so
  on -- the fewest servers, greedily. (Plain first fit over the servers in index order,
  its earlier form, could use two where one held the job: 1 free GPU on server 0 and 4 on
  server 1 put a 4-GPU job on both.)
- **breadth-first** "assign[s] requested resources utilizing as many nodes as possible":
  round-robin over the servers with room, in index order, one task per server per round.

Unlike packing (:mod:`.packing`), neither looks for the tightest server (depth-first takes
the first that holds the job, packing the one with the fewest free GPUs): they differ from
it, and from each other, in how a job spreads, which is what 004's dgemm (compute-bound,
faster depth-first) and daxpy (network-bound, faster breadth-first) are sensitive to.
Inside a server a task takes a group already holding the job, else the tightest group.
"""

from __future__ import annotations

import numpy as np

from envs.schedulers.base import Placement
from envs.schedulers.tasks import JobTasks
from envs.schedulers.tentative import ServerRoom, Tentative, fill_server_by_server
from envs.schedulers.view import ClusterView
from envs.sim import Simulator


class DepthFirst(Placement):
    """The fewest servers: the first that holds the rest of the job, else the one with the
    most free GPUs filled, and again."""

    name = "depth-first"

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        room = ServerRoom.for_job(view, tasks)
        if room is None:
            return None
        first = np.arange(len(room.free_gpus))  # the lowest index of those that hold it
        return fill_server_by_server(room, lambda: first, lambda: -room.free_gpus)


class BreadthFirst(Placement):
    """One task per server with room per round, servers in index order."""

    name = "breadth-first"

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        room = ServerRoom.for_job(view, tasks)
        if room is None:
            return None
        attempt = room.attempt
        servers = np.flatnonzero(room.takes_some()).tolist()
        while servers:
            with_room = []
            for server in servers:
                if attempt.complete:
                    return attempt.result()
                if _place_one(attempt, server):
                    with_room.append(server)
            if attempt.complete:
                return attempt.result()
            servers = with_room
        return None


def _place_one(attempt: Tentative, server: int) -> bool:
    """Put the first unplaced task that fits onto ``server``; False if none fits."""
    tried_kinds: set[int] = set()
    for task in attempt.unplaced.tolist():
        kind = 0 if task < attempt.tasks.num_workers else 1
        if kind in tried_kinds:
            continue
        tried_kinds.add(kind)
        group = attempt.best_group_in_server(task, server)
        if group >= 0:
            attempt.assign(task, group)
            return True
    return False
