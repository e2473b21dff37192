"""002's packing placement (§II-B, Fig. 2): few servers, each as full as possible.

"The algorithm first tries to find the server with the fewest free GPUs that can satisfy
the job's GPU demand if possible. If there is no such server, the algorithm chooses the
server with the most amount of free GPUs, and then the remaining GPU requirement will be
satisfied by the above logic again." Here a server "can satisfy" the remaining demand
when it can hold every remaining task whole: GPUs from one group per task and cores from
that group's socket, as the simulator requires. Ties go to the lower server index.
Inside a server tasks go to a group already holding the job, else the tightest-fitting
group (:meth:`~envs.schedulers.tentative.Tentative.best_group_in_server`).

**quiet-packing**: the same servers, but inside a server a task goes to a group already
holding the job, else to the group whose socket has the most free cores and whose PCIe
switch the most free GPUs: the fewest neighbours to interfere with (001 §V: a socket's
CPU load and a switch's PCIe load slow every task on them). On a two-socket server two
one-GPU jobs then sit on different sockets, where packing stacks them on one; the price
is a group split that a later task needing the whole group may find taken.
"""

from __future__ import annotations

import numpy as np

from envs.schedulers.base import Placement
from envs.schedulers.tasks import CORE_TOLERANCE, JobTasks
from envs.schedulers.tentative import ServerRoom, Tentative, fill_server_by_server
from envs.schedulers.view import ClusterView
from envs.sim import Simulator

_NONE = int(np.iinfo(np.int64).max)
"""Tightness of a server that cannot hold the rest of the job."""


def pack(attempt: Tentative, allowed: np.ndarray | None = None) -> np.ndarray | None:
    """Run 002's packing rule on ``attempt``, using only servers where ``allowed`` is True."""
    if len(attempt.tasks.kinds) == 1:
        return _pack_alike(attempt, allowed)
    return _pack_any(attempt, allowed)


def _pack_any(attempt: Tentative, allowed: np.ndarray | None) -> np.ndarray | None:
    """:func:`pack` for any job, workers and parameter servers alike or not: the fewest
    free GPUs among the servers that hold the rest, else the most that take some."""
    room = ServerRoom(attempt, allowed)
    if not room.could_ever_fit():
        return None
    return fill_server_by_server(room, lambda: room.free_gpus, lambda: -room.free_gpus)


def _pack_alike(attempt: Tentative, allowed: np.ndarray | None) -> np.ndarray | None:
    """:func:`pack` for a job whose tasks are all alike (no parameter servers).

    The same steps on the same numbers, without :class:`~.tentative.ServerRoom`'s
    bookkeeping for two kinds: a server fills a prefix of the unplaced tasks (once one
    task does not fit, no identical one does), so the unplaced tasks stay a suffix.
    """
    kind = attempt.tasks.kinds[0]
    free_gpus, free_cores = attempt.server_free()
    capacity = attempt.server_capacity(kind)
    if int((capacity if allowed is None else capacity[allowed]).sum()) < kind.count:
        return None
    todo = attempt.unplaced
    while True:
        left = len(todo)
        if not left:
            return attempt.result()
        holds = (
            (free_gpus >= kind.gpus * left)
            & (free_cores >= kind.cpus * left - CORE_TOLERANCE)
            & (capacity >= left)
        )
        if allowed is not None:
            holds &= allowed
        # Fewest free GPUs first (argmin: ties to the lower index), confirmed by filling.
        tightness = np.where(holds, free_gpus, _NONE)
        while tightness.size and tightness.min() < _NONE:
            server = int(tightness.argmin())
            saved = attempt.checkpoint()
            if attempt.fill_server(server, todo) == left:
                return attempt.result()
            attempt.restore(saved)
            tightness[server] = _NONE
        takes_some = capacity > 0
        if allowed is not None:
            takes_some &= allowed
        if not takes_some.any():
            return None
        server = int(np.where(takes_some, free_gpus, -1).argmax())
        placed = attempt.fill_server(server, todo)
        if placed == 0:
            return None
        todo = todo[placed:]
        free_gpus[server], free_cores[server], (capacity[server],) = attempt.server_room(
            server, (kind,)
        )


def pack_one(attempt: Tentative) -> np.ndarray | None:
    """:func:`pack` for a job of one task, without the per-server bookkeeping: the server
    with the fewest free GPUs among those with a group the task fits, then its group."""
    fits = attempt.fitting_groups(0)
    if not fits.any():
        return None
    free_gpus, _ = attempt.server_free()
    servers = attempt.cluster.group_server[fits]
    server = int(servers[free_gpus[servers].argmin()])  # groups ascend: ties to lower
    attempt.assign(0, attempt.best_group_in_server(0, server))
    return attempt.result()


class Packing(Placement):
    """002 Fig. 2: the tightest server that holds the rest, else the emptiest takes a share."""

    name = "packing"
    #: How a task picks its group inside a server (:class:`Tentative`'s ``spread``).
    spread_in_server = False

    def choose(self, sim: Simulator, tasks: JobTasks, view: ClusterView) -> np.ndarray | None:
        attempt = Tentative.on(view, tasks, self.spread_in_server)
        return pack_one(attempt) if tasks.count == 1 else pack(attempt)


class QuietPacking(Packing):
    """Packing's servers; inside each, the group with the fewest neighbours (see module)."""

    name = "quiet-packing"
    spread_in_server = True
