"""SJF, Packer and Random as the reference's other_agents.py: fit-now, strict ">" from slot 0."""

from __future__ import annotations

import numpy as np

from envs.deeprm import DeepRMEnv
from envs.deeprm.baselines import packer_action, random_action, sjf_action
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.core import DeepRMCore


def slots_after_arrivals(jobs: list[tuple[int, list[int]]], book_first: bool = False) -> DeepRMEnv:
    """Jobs (len, res) arriving at t = 1, 2, ...; the first one booked at once if asked.

    With ``book_first`` the first job is booked at t = 1 and the others fill slots 0, 1, ...
    """
    workload = [{"arrival_time": t, "len": n, "res": r} for t, (n, r) in enumerate(jobs, 1)]
    env = DeepRMEnv(jobs=workload)
    env.reset(seed=0)
    env.step(5)
    if book_first:
        env.step(0)
    for _ in range(len(jobs) - 1):
        env.step(5)
    return env


def test_sjf_picks_the_shortest_fitting_job_and_the_lowest_slot_on_ties() -> None:
    env = slots_after_arrivals([(3, [1, 1]), (2, [1, 1]), (2, [1, 1]), (5, [1, 1])])
    assert [int(n) for n in env.core.slot_len] == [3, 2, 2, 5, 0]
    assert sjf_action(env.core) == 1


def test_sjf_only_considers_jobs_that_fit_starting_now() -> None:
    # A [10, 0] x 4 runs 1..5, so at t=4 res 0 is full in row 0.
    # Slot 0: len 1 [1, 1] does not fit now; slots 1, 2: len 2 [0, 3] fit (tie -> 1).
    env = slots_after_arrivals(
        [(4, [10, 0]), (1, [1, 1]), (2, [0, 3]), (2, [0, 3])], book_first=True
    )
    assert [int(n) for n in env.core.slot_len] == [1, 2, 2, 0, 0]
    assert sjf_action(env.core) == 1
    # Even though slot 0's job could be booked at a later offset.
    assert env.core.earliest_offset(env.core.slot_job[0]) == 1


def test_packer_maximises_free_now_dot_demand_and_breaks_ties_to_the_lowest_slot() -> None:
    # All free (10, 10): [2, 3] and [3, 2] both score 50, [5, 5] scores 100.
    env = slots_after_arrivals([(2, [2, 3]), (2, [3, 2]), (1, [5, 5])])
    assert packer_action(env.core) == 2
    env = slots_after_arrivals([(2, [2, 3]), (2, [3, 2])])
    assert packer_action(env.core) == 0


def test_packer_and_sjf_disagree_where_alignment_beats_length() -> None:
    # [6, 0] x 5 booked: row 0 free (4, 10). Short [1, 1] scores 14, long [1, 5] scores 54.
    env = slots_after_arrivals([(5, [6, 0]), (1, [1, 1]), (3, [1, 5])], book_first=True)
    np.testing.assert_array_equal(env.core.avbl[0], [4, 10])
    assert sjf_action(env.core) == 0
    assert packer_action(env.core) == 1


def test_packer_scores_only_the_top_row_but_checks_every_row_for_fit() -> None:
    # [9, 0] x 5 booked at t=1 leaves row 0..3 with res 0 = 1 after one move-on.
    # Slot 0: [1, 9] x 5 fits rows 0..4 (needs only 1 unit of res 0): score 1 + 90 = 91.
    # Slot 1: [2, 1] x 1 needs 2 units of res 0 now: does not fit, whatever its score.
    env = slots_after_arrivals([(5, [9, 0]), (5, [1, 9]), (1, [2, 1])], book_first=True)
    np.testing.assert_array_equal(env.core.avbl[0], [1, 10])
    assert packer_action(env.core) == 0
    assert sjf_action(env.core) == 0


def test_nothing_fits_means_void() -> None:
    env = slots_after_arrivals([(5, [10, 1]), (1, [1, 1]), (2, [3, 3])], book_first=True)
    assert sjf_action(env.core) == 5
    assert packer_action(env.core) == 5
    empty = DeepRMCore(DeepRMConfig())
    assert sjf_action(empty) == 5 and packer_action(empty) == 5


def test_random_is_uniform_over_every_action_including_void() -> None:
    core = DeepRMCore(DeepRMConfig())
    rng = np.random.default_rng(0)
    counts = np.bincount([random_action(core, rng) for _ in range(6000)], minlength=6)
    assert counts.shape == (6,)
    assert (abs(counts - 1000) < 120).all()
