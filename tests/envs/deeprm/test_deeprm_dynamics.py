"""Hand-derived DeepRM episodes: booking offsets, move-ons, arrivals, drops, rewards, ends.

Defaults throughout unless a test says otherwise: 2 resources of 10 units, T = 20 rows,
5 visible slots, backlog of 60.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from envs.deeprm import DeepRMEnv
from envs.deeprm.baselines import replay
from envs.deeprm.core import RESULT_KEYS

#: The hand-written 5-job workload of both derivations below.
FIVE_JOBS = {
    "jobs": [
        {"arrival_time": 1, "len": 2, "res": [5, 1]},  # J0
        {"arrival_time": 2, "len": 1, "res": [6, 2]},  # J1
        {"arrival_time": 3, "len": 3, "res": [2, 9]},  # J2
        {"arrival_time": 4, "len": 10, "res": [5, 5]},  # J3
        {"arrival_time": 5, "len": 2, "res": [10, 1]},  # J4
    ]
}
VOID = 5


def system(*lengths: int) -> Fraction:
    """The move-on reward with jobs of these lengths in the system: -sum(1/len), exactly."""
    return -sum((Fraction(1, length) for length in lengths), Fraction(0))


def test_sjf_replay_of_five_jobs_matches_the_hand_derivation() -> None:
    # SJF books, among slot jobs that fit *starting now* (rows 0..len-1), the shortest;
    # when none fits it plays void and time moves on. "free" is the top row [res0, res1].
    #  step  time  action                       effect                         reward
    #   1     0    void (no jobs)               t=1, J0 -> slot 0              -1/2
    #   2     1    J0 fits, book at offset 0    J0 runs 1..3, free [5, 9]         0
    #   3     1    void                         t=2, J1 -> slot 0          -(1/2 + 1)
    #   4     2    J1 needs 6 > 5: void         t=3, J0 leaves, J2 -> slot 1 -(1 + 1/3)
    #   5     3    J1 (len 1) < J2 (len 3)      J1 runs 3..4, free [4, 8]         0
    #   6     3    J2 needs 9 > 8: void         t=4, J1 leaves, J3 -> slot 0 -(1/10+1/3)
    #   7     4    J2 (len 3) < J3 (len 10)     J2 runs 4..7, free [8, 1]         0
    #   8     4    J3 needs 5 > 1: void         t=5, J4 -> slot 1    -(1/3+1/10+1/2)
    #   9     5    J4 needs 10 > 8: void        t=6, no more arrivals -(1/3+1/10+1/2)
    #  10     6    void                         t=7, J2 leaves        -(1/10 + 1/2)
    #  11     7    J4 (len 2) < J3              J4 runs 7..9, free [0, 9]          0
    #  12     7    J3 needs 5 > 0: void         t=8                   -(1/10 + 1/2)
    #  13     8    void                         t=9, J4 leaves              -1/10
    #  14     9    J3 fits                      J3 runs 9..19                      0
    # 15-23  9..17 void                         t=10..18                 -1/10 each
    #  24    18    void                         t=19, J3 leaves, all done          0
    # system(*lens) is the move-on reward with jobs of these lengths in the system.
    rewards = [system(2), 0, system(2, 1), system(1, 3), 0, system(10, 3), 0]
    rewards += [system(3, 10, 2), system(3, 10, 2), system(10, 2), 0, system(10, 2)]
    rewards += [system(10), 0, *[system(10)] * 9, system()]
    assert len(rewards) == 24

    env = DeepRMEnv(jobs=FIVE_JOBS)
    env.reset(seed=0)
    got = []
    while True:
        _, reward, terminated, truncated, info = env.step(env.baseline_action("sjf"))
        got.append(reward)
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert got == [float(r) for r in rewards]

    result = replay(FIVE_JOBS, "sjf")
    assert tuple(result) == RESULT_KEYS
    assert result == info["episode"]
    assert result["jobs"] == [
        {"arrival_time": 1, "start": 1, "finish": 3},
        {"arrival_time": 2, "start": 3, "finish": 4},
        {"arrival_time": 3, "start": 4, "finish": 7},
        {"arrival_time": 4, "start": 9, "finish": 19},
        {"arrival_time": 5, "start": 7, "finish": 9},
    ]
    # Slowdowns (finish - arrival) / len: 2/2, 2/1, 4/3, 15/10, 4/2.
    slowdowns = [1, 2, 4 / 3, 1.5, 2]
    assert result["mean_slowdown"] == pytest.approx(sum(slowdowns) / 5)
    assert result["max_slowdown"] == 2
    assert (result["steps"], result["final_time"], result["dropped"]) == (24, 19, 0)
    # Each job is counted at finish - arrival move-ons: the return is -sum of slowdowns.
    assert result["total_reward"] == pytest.approx(float(sum(rewards, Fraction(0))))
    assert result["total_reward"] == pytest.approx(-sum(slowdowns))


def test_chosen_actions_book_at_the_earliest_offset_that_fits() -> None:
    # Same jobs, actions chosen by hand so that jobs are booked into future rows.
    #  action  time  effect                                                   reward
    #  0 (empty)  0  move on: t=1, J0 -> slot 0                               -1/2
    #  0          1  J0 at offset 0: runs 1..3; rows 0-1 free [5, 9]              0
    #  void       1  t=2, J1 -> slot 0; row 0 free [5, 9]                  -(1/2+1)
    #  0          2  J1 [6,2]: row 0 has 5 < 6, row 1 free: offset 1, runs 3..4   0
    #  3 (empty)  2  t=3, J0 leaves; J2 -> slot 0; row 0 free [4, 8]       -(1+1/3)
    #  0          3  J2 [2,9]: row 0 has 8 < 9: offset 1, runs 4..7, rows 1-3 [8,1] 0
    #  void       3  t=4, J1 leaves; J3 -> slot 0; rows 0-2 free [8, 1]  -(1/3+1/10)
    #  0          4  J3 [5,5] len 10: rows 0-2 lack res 1; offset 3, runs 7..17    0
    #  void       4  t=5, J4 -> slot 0; rows 0-1 [8,1], rows 2-11 [5,5]   -(1/3+1/10+1/2)
    #  0          5  J4 [10,1] needs a full res 0: rows 12-13, runs 17..19         0
    #  void x 14  5  t=6..19: J2 leaves at 7, J3 at 17, J4 at 19 (all done)
    env = DeepRMEnv(jobs=FIVE_JOBS)
    env.reset(seed=0)
    actions = [0, 0, VOID, 0, 3, 0, VOID, 0, VOID, 0]
    expected = [system(2), 0, system(2, 1), 0, system(1, 3), 0, system(3, 10), 0]
    expected += [system(3, 10, 2), 0]
    times = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    for action, reward, time in zip(actions, expected, times, strict=True):
        _, got, terminated, _, info = env.step(action)
        assert (got, info["time"], terminated) == (float(reward), time, False)
    # Move-ons to t = 6..19: J2, J3, J4 in the system until 7, 17, 19.
    for time in range(6, 20):
        left = [length for finish, length in ((7, 3), (17, 10), (19, 2)) if finish > time]
        _, got, terminated, _, info = env.step(VOID)
        assert got == float(system(*left))
        assert terminated == (time == 19)
    assert info["episode"]["jobs"] == [
        {"arrival_time": 1, "start": 1, "finish": 3},
        {"arrival_time": 2, "start": 3, "finish": 4},
        {"arrival_time": 3, "start": 4, "finish": 7},
        {"arrival_time": 4, "start": 7, "finish": 17},
        {"arrival_time": 5, "start": 17, "finish": 19},
    ]
    assert info["episode"]["max_slowdown"] == 7.0  # J4: (19 - 5) / 2


def test_several_jobs_are_booked_in_one_time_step_and_slots_refill_from_the_backlog() -> None:
    # num_nw = 1: J0 in the slot, J1 and J2 in the backlog (FIFO).
    jobs = [{"arrival_time": t, "len": 1, "res": [1, 1]} for t in (1, 2, 3)]
    env = DeepRMEnv(jobs=jobs, num_nw=1)
    env.reset(seed=0)
    for _ in range(3):
        env.step(1)  # void
    assert env.core.slot_job == [0] and list(env.core.backlog) == [1, 2]
    for expected_next in (1, 2, -1):
        _, reward, _, _, info = env.step(0)  # book: time stays 3, reward 0
        assert (reward, info["time"]) == (0.0, 3)
        assert env.core.slot_job == [expected_next]
    assert [env.core.job_start[j] for j in range(3)] == [3, 3, 3]


def test_a_job_that_cannot_be_booked_moves_time_on() -> None:
    # J0 [10, 1] x 15 booked at offset 0 fills res 0 in rows 0..14. J1 [10, 1] x 15 could
    # only start at offset 15, but offsets stop at T - len - 1 = 4: choosing it moves on.
    jobs = [
        {"arrival_time": 1, "len": 15, "res": [10, 1]},
        {"arrival_time": 2, "len": 15, "res": [10, 1]},
    ]
    env = DeepRMEnv(jobs=jobs)
    env.reset(seed=0)
    env.step(VOID)  # t=1
    env.step(0)  # J0 runs 1..16
    env.step(VOID)  # t=2, J1 -> slot 0
    assert env.core.earliest_offset(1) == -1
    _, reward, _, _, info = env.step(0)
    assert info["time"] == 3
    assert reward == -(1 / 15 + 1 / 15)
    # At t=12 the free rows are 4..19 and offset 4 (rows 4..18) is the last allowed one.
    while env.core.time < 12:
        env.step(VOID)
    assert env.core.earliest_offset(1) == 4
    env.step(0)
    assert env.core.job_start[1] == 16 and env.core.job_finish[1] == 31


def test_drops_when_slots_and_backlog_are_full() -> None:
    # One slot, a backlog of one: J0 -> slot, J1 -> backlog, J2 dropped (not counted).
    jobs = [{"arrival_time": t, "len": n, "res": [1, 1]} for t, n in ((1, 2), (2, 4), (3, 5))]
    env = DeepRMEnv(jobs=jobs, num_nw=1, backlog_size=1)
    env.reset(seed=0)
    rewards = [env.step(1)[1] for _ in range(3)]
    assert rewards == [-1 / 2, -(1 / 2 + 1 / 4), -(1 / 2 + 1 / 4)]
    assert env.core.dropped == 1 and env.core.job_dropped == [False, False, True]
    # A dropped arrival still resets the time since the last arrival.
    assert env.core.since_new == 0
    while True:
        _, _, terminated, _, info = env.step(env.baseline_action("sjf"))
        if terminated:
            break
    result = info["episode"]
    assert result["dropped"] == 1
    assert [job["arrival_time"] for job in result["jobs"]] == [1, 2]


def test_all_done_waits_for_every_job_but_no_new_job_stops_after_the_last_arrival() -> None:
    # Last arrival at 5, so simu_len = 6: "no_new_job" ends at the move-on reaching t=6
    # whatever is left; "all_done" ends at t=19 under SJF (derivation above).
    ends = {}
    for end in ("all_done", "no_new_job"):
        env = DeepRMEnv(jobs=FIVE_JOBS, end=end)
        env.reset(seed=0)
        while True:
            _, reward, terminated, truncated, info = env.step(env.baseline_action("sjf"))
            if terminated or truncated:
                break
        assert terminated and not truncated
        ends[end] = (info["time"], reward, info["episode"]["steps"])
    assert ends["all_done"] == (19, 0.0, 24)
    assert ends["no_new_job"] == (6, float(system(3, 10, 2)), 9)


def test_an_empty_workload_ends_at_the_first_move_on() -> None:
    env = DeepRMEnv(jobs={"jobs": []})
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(0)
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["episode"]["mean_slowdown"] is None and info["episode"]["jobs"] == []


def test_step_cap_truncates_and_a_finished_episode_refuses_steps() -> None:
    env = DeepRMEnv(max_episode_steps=3)
    env.reset(seed=0)
    outcomes = [env.step(VOID)[2:4] for _ in range(3)]
    assert outcomes == [(False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(VOID)
    env.reset()
    assert env.step(VOID)[3] is False


def test_options_jobs_apply_to_one_episode_only() -> None:
    env = DeepRMEnv()
    env.reset(seed=3, options={"jobs": FIVE_JOBS})
    assert env.core.jobs.arrival_times.tolist() == [1, 2, 3, 4, 5]
    env.reset()
    assert env.core.jobs.simu_len == env.config.simu_len


def test_colours_are_reused_when_the_palette_runs_out() -> None:
    # job_num_cap = 3 gives two colours; a third concurrent job reuses the one freed first.
    jobs = [{"arrival_time": t, "len": n, "res": [1, 0]} for t, n in ((1, 5), (2, 3), (3, 4))]
    env = DeepRMEnv(jobs=jobs, job_num_cap=3)
    env.reset(seed=0)
    for _ in range(3):
        env.step(VOID)
    for slot in range(3):
        env.step(slot)
    canvas = env.core.image[:, :10]
    colours = env.core.colormap
    assert len(colours) == 2
    # J0 (3..8) and J1 (3..6) take colours 0 and 1; J2 (3..7) reuses J1's, which ends first.
    np.testing.assert_array_equal(canvas[:3, 0], np.float32(colours[0]))
    np.testing.assert_array_equal(canvas[:3, 1:3], np.float32(colours[1]))
