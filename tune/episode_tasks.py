"""Where a step's episodes are played: in this process, or as Ray tasks.

Warm-start recording, validation and the held-out evaluation each play a list of
independent episodes. With Ray up, a long list is spread over the cluster, one CPU per
episode. A short one is not worth it: each fresh Ray worker imports what its episode needs
before playing it -- for a learned policy torch, torch_geometric and RLlib, about 11 s of
CPU on the 2 GHz 2-core machine, where a demo episode takes 0.1-2 s -- while the driver has
those loaded already. Measured on a one-iteration demo run (1 validation and 3 evaluation
episodes): validation and evaluation took 17 s as Ray tasks and the same episodes played in
the driver 4.5 s. So a step with at most ``resources.local_episodes`` episodes plays them
here; the results are the same either way (an episode depends only on its arguments).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Result = TypeVar("Result")


def play_episodes(
    function: Callable[..., Result],
    calls: Sequence[tuple[Any, ...]],
    local_at_most: int,
) -> list[Result]:
    """``[function(*arguments) for arguments in calls]``, in order: in this process when
    Ray is down or there are at most ``local_at_most`` calls, else as Ray tasks of one CPU
    each, all submitted at once."""
    if local_at_most < 0:
        raise ValueError(f"local_at_most must be >= 0, got {local_at_most}")
    import ray

    if not ray.is_initialized() or len(calls) <= local_at_most:
        return [function(*arguments) for arguments in calls]
    remote = ray.remote(num_cpus=1)(function)
    return ray.get([remote.remote(*arguments) for arguments in calls])
