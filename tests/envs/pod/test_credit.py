"""Per-job credit of the jct reward: each job's time in the system on the steps that
decided it, the paid total unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from envs.pod.credit import JobCredit
from envs.pod.env import PodSchedulingEnv
from envs.pod.heuristic import HeuristicPodPolicy

INTERVAL = 1800.0


def test_running_waiting_and_unseen_jobs_land_where_their_decisions_were() -> None:
    """Two agents, three jobs, homes [1, 1, 0], two rounds worked out by hand."""
    credit = JobCredit(num_agents=2)
    homes = np.array([1, 1, 0])
    # Round 1, step 0: agent 0 places job 0 (it starts), agent 1 works on job 1.
    credit.record(0, 0)
    credit.started(0)
    credit.record(1, 1)
    credit.close_step(np.zeros(2))
    # Step 1: agent 1 sends job 1 back to wait; the stretch runs: job 0 ran a full
    # interval, job 1 waited half of one, job 2 arrived and waited a quarter. The jct
    # reward pays each home agent its jobs' time: agent 1 -1.5, agent 0 -0.25.
    credit.record(1, 1)
    credit.settle_stretch(np.array([1.0, 0.5, 0.25]) * INTERVAL, homes, INTERVAL)
    credit.close_step(np.array([-0.25, -1.5]))
    # Round 2, step 2: agent 1 places job 1 (it starts); the stretch: job 0 ran a full
    # interval again, job 1 ran a half, job 2 waited a full one (nobody worked on it).
    credit.record(1, 1)
    credit.started(1)
    credit.settle_stretch(np.array([1.0, 0.5, 1.0]) * INTERVAL, homes, INTERVAL)
    credit.close_step(np.array([-1.0, -1.5]))

    expected = np.array(
        [
            # job 0's two intervals on its placement; job 1's wait split over its 2 steps
            [-2.0, -0.25],
            # job 2's quarter stays at home (agent 0); agent 1's -1.5 moved away
            [-0.25, -0.25],
            # job 2's interval stays home; job 1's running half on its placing step
            [-1.0, -0.5],
        ]
    )
    credited = credit.credited_rewards()
    assert np.allclose(credited, expected, rtol=0, atol=1e-12)
    assert credited.sum() == pytest.approx(-0.25 - 1.5 - 1.0 - 1.5, abs=1e-12)


def _play(env: PodSchedulingEnv, seed: int) -> tuple[np.ndarray, dict]:
    """dsif+locality on one episode: the paid rewards [steps, agents] and the last infos."""
    env.reset(seed=seed)
    driver = HeuristicPodPolicy(env, "dsif+locality", seed=seed)
    paid, infos = [], {}
    while env.agents:
        _, rewards, _, _, infos = env.step(driver.actions())
        paid.append([rewards[agent] for agent in env.possible_agents])
    return np.asarray(paid), infos


@pytest.mark.parametrize("seed", [0, 1])
def test_credit_moves_reward_between_steps_without_changing_the_total(seed: int) -> None:
    fields = {"num_jobs": 12, "reward": "jct", "queue_order": "ideal-time"}
    paid, infos = _play(PodSchedulingEnv(**fields, credit="job"), seed)
    credited = np.stack([infos[agent]["credited_rewards"] for agent in sorted(infos)], axis=1)
    assert credited.shape == paid.shape
    # The episode's total is every job's time in the system from its arrival: -sum(JCT)/interval.
    assert credited.sum() == pytest.approx(paid.sum(), rel=1e-12)
    # Paid: only round ends carry the jct reward; credited: the placement steps do.
    assert np.count_nonzero(credited) > 2 * np.count_nonzero(paid)
    assert (credited <= 1e-12).all()  # time in the system is a cost wherever it lands
    # The same episode with round credit pays the same and carries no credited rewards.
    round_paid, round_infos = _play(PodSchedulingEnv(**fields), seed)
    assert np.array_equal(round_paid, paid)
    assert all("credited_rewards" not in info for info in round_infos.values())


def test_job_credit_needs_the_jct_reward() -> None:
    with pytest.raises(ValueError, match=r"credit='job'.*needs reward='jct'.*progress"):
        PodSchedulingEnv(credit="job")
    with pytest.raises(ValueError, match="credit='episode'; allowed: round, job"):
        PodSchedulingEnv(reward="jct", credit="episode")


def test_time_before_the_first_round_stays_with_the_home_scheduler(monkeypatch) -> None:
    """The first stretch runs from t=0 to the second round, but nothing was decided about
    a job before the first round (t1): only its time from t1 on moves to the steps that
    decided it, as for a job that arrives between later rounds. The costs settled at the
    first round's end are each job's time in [max(arrival, t1), min(finish, t2)]."""
    settled: list[np.ndarray] = []
    settle = JobCredit.settle_stretch

    def recorded(self, cost, homes, interval_s):
        settled.append(np.array(cost))
        return settle(self, cost, homes, interval_s)

    monkeypatch.setattr(JobCredit, "settle_stretch", recorded)
    env = PodSchedulingEnv(num_jobs=12, reward="jct", credit="job")
    env.reset(seed=0)
    first_round = env.sim.now
    arrival = env.workload.arrival_time
    assert first_round == INTERVAL and (arrival < first_round).sum() == 12
    driver = HeuristicPodPolicy(env, "fifo+packing", seed=0)
    while not settled:
        env.step(driver.actions())
    second_round = env.sim.now
    finish = np.where(np.isnan(env.sim.finish_time), second_round, env.sim.finish_time)
    expected = np.clip(np.minimum(finish, second_round) - np.maximum(arrival, first_round), 0, None)
    np.testing.assert_allclose(settled[0], expected, rtol=0, atol=1e-9)
