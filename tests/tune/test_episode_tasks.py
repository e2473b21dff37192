"""tune.episode_tasks: a short list of episodes plays in this process, a longer one as Ray
tasks in Ray's workers, and either way the results come back in the order of the calls."""

from __future__ import annotations

import os

import pytest

from tune.episode_tasks import play_episodes


def where_and_what(index: int, square: bool) -> tuple[int, int]:
    """The process that played the call, and a result that depends on its arguments."""
    return os.getpid(), index * index if square else -index


def test_without_ray_every_call_plays_here_in_order() -> None:
    import ray

    assert not ray.is_initialized()
    calls = [(index, index % 2 == 0) for index in range(6)]
    played = play_episodes(where_and_what, calls, local_at_most=0)
    here = os.getpid()
    assert played == [(here, 0), (here, -1), (here, 4), (here, -3), (here, 16), (here, -5)]


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match=r"local_at_most must be >= 0, got -1"):
        play_episodes(where_and_what, [(1, True)], local_at_most=-1)


@pytest.mark.integration
def test_with_ray_up_only_a_longer_list_goes_to_ray_workers(ray_local) -> None:
    calls = [(index, True) for index in range(5)]
    # At the bound: all here.
    here = play_episodes(where_and_what, calls, local_at_most=5)
    assert here == [(os.getpid(), index * index) for index in range(5)]
    # One over it: every call is a task in a worker process, results in call order.
    remote = play_episodes(where_and_what, calls, local_at_most=4)
    assert [result for _, result in remote] == [index * index for index in range(5)]
    assert os.getpid() not in {pid for pid, _ in remote}
