"""pod_scheduling_v0: PettingZoo API, spaces, masks, conservation, rewards, heuristics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from envs import make_env
from envs.pod.env import PodSchedulingEnv
from envs.pod.heuristic import HeuristicPodPolicy
from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import JobStatus, SimulationResult, SimulatorConfig
from envs.sim.runner import simulate
from envs.workload import DEFAULT_CATALOG, Workload

SETTINGS = {
    "fat-tree": {"topology": "fat-tree", "topology_params": {"k": 4}},
    "vl2": {"topology": "vl2", "topology_params": {"k": 4, "servers_per_tor": 2}},
    "bcube": {"topology": "bcube", "topology_params": {"n": 3, "k": 1}},
    "racks-uneven": {"topology": "racks", "topology_params": {"racks": [3, 1, 2]}},
    "mixed-servers": {"topology": "fat-tree", "topology_params": {"k": 4}, "server": "mixed"},
    "server-level": {"topology": "fat-tree", "topology_params": {"k": 4}, "level": "server"},
    "full-view": {"topology": "fat-tree", "topology_params": {"k": 4}, "others": "full"},
    "shortest-first-with-times": {
        "queue_order": "ideal-time",
        "job_times": True,
        "room_features": True,
    },
}


def random_valid_actions(env: PodSchedulingEnv, observations: dict, rng) -> dict[str, int]:
    """Masked random actions, preferring anything but waiting so jobs get placed."""
    actions = {}
    for agent in env.agents:
        valid = np.flatnonzero(observations[agent]["action_mask"])
        actions[agent] = int(rng.choice(valid[:-1])) if len(valid) > 1 else int(valid[-1])
    return actions


def test_pettingzoo_api_and_seed_tests() -> None:
    parallel_api_test(PodSchedulingEnv(num_jobs=12), num_cycles=300)
    parallel_seed_test(lambda: PodSchedulingEnv(num_jobs=12), num_cycles=150)


def independent_claims(env: PodSchedulingEnv) -> tuple[np.ndarray, np.ndarray]:
    """Claims recomputed from the queues' partial placements, not the round's counters."""
    cluster = env.cluster
    gpus = np.zeros(cluster.num_gpu_groups)
    cores = np.zeros(cluster.num_sockets)
    for queue in env.round.queues:
        for entry in queue:
            for task, group in enumerate(entry.groups):
                gpus[group] += entry.task_gpus[task]
                cores[cluster.group_socket[group]] += entry.task_cpus[task]
    return gpus, cores


def check_masks(env: PodSchedulingEnv, observations: dict) -> None:
    """Local targets: allowed exactly when the target has room for the next task."""
    if env.round is None:
        return
    cluster, sim = env.cluster, env.sim
    claimed_gpus, claimed_cores = independent_claims(env)
    free_gpus = sim.free_gpus - claimed_gpus
    free_cores = sim.free_cores - claimed_cores
    assert (free_gpus >= 0).all() and (free_cores >= -1e-9).all()
    for index, agent in enumerate(env.possible_agents):
        mask = observations[agent]["action_mask"]
        assert mask.dtype == np.int8 and mask[-1] == 1
        head = env.round.head(index)
        layout = env.layout.partitions[index]
        if head is None:
            assert mask[:-1].sum() == 0
            continue
        need_gpus, need_cores = head.task_gpus[head.task], head.task_cpus[head.task]
        room = (free_gpus[layout.groups] >= need_gpus) & (
            free_cores[cluster.group_socket[layout.groups]] >= need_cores - 1e-9
        )
        expected = np.zeros(env.layout.max_targets, dtype=bool)
        np.logical_or.at(expected, layout.group_target, room)
        assert np.array_equal(mask[: env.layout.max_targets].astype(bool), expected)


def check_conservation(env: PodSchedulingEnv, round_jobs: set[int]) -> None:
    """Every job of the round is in exactly one queue, or started, or back to waiting."""
    if env.round is None:
        return
    queued = env.round.jobs_in_queues()
    assert len(queued) == len(set(queued)), "a job is in two queues"
    status = env.sim.status
    for job in round_jobs:
        in_queue = job in queued
        started = status[job] in (JobStatus.RUNNING, JobStatus.FINISHED)
        assert in_queue + started <= 1
        if in_queue:
            assert status[job] == JobStatus.WAITING


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_random_play_stays_in_spaces_with_exact_masks(setting: str) -> None:
    env = PodSchedulingEnv(num_jobs=20, **SETTINGS[setting])
    rng = np.random.default_rng(1)
    observations, _ = env.reset(seed=2)
    total = 0.0
    while env.agents:
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation), (agent, setting)
        check_masks(env, observations)
        round_jobs = set(env.round.jobs_in_queues()) if env.round else set()
        observations, rewards, terminations, truncations, _ = env.step(
            random_valid_actions(env, observations, rng)
        )
        check_conservation(env, round_jobs)
        total += sum(rewards.values())
    assert all(terminations.values()) and not any(truncations.values())
    # Progress rewards add up to one per finished job.
    assert total == pytest.approx(len(env.workload))


def test_spaces_are_built_once() -> None:
    env = PodSchedulingEnv()
    agent = env.possible_agents[0]
    assert env.observation_space(agent) is env.observation_space(agent)
    assert env.action_space(agent) is env.action_space(agent)
    # fat-tree k=4: 8 GPU groups per pod, 3 other schedulers, wait.
    assert env.action_space(agent).n == 8 + 3 + 1


def test_illegal_actions_do_nothing_and_cost_the_penalty() -> None:
    env = PodSchedulingEnv(num_jobs=10, illegal_action_penalty=0.5)
    env.reset(seed=0)
    acting = next(index for index in range(len(env.possible_agents)) if env.round.head(index))
    agent = env.possible_agents[acting]
    queue_before = [entry.job for entry in env.round.queues[acting]]
    head = env.round.head(acting)
    # Everyone else waits (always legal); this agent sends an action outside the space.
    actions = {a: env.builder.num_actions - 1 for a in env.agents}
    actions[agent] = env.builder.num_actions + 3
    _, rewards, _, _, infos = env.step(actions)
    assert infos[agent]["illegal_action"] and rewards[agent] == pytest.approx(-0.5)
    assert [entry.job for entry in env.round.queues[acting]] == queue_before
    assert env.round.head(acting) is head and head.task == 0


def test_an_agent_with_nothing_to_place_pays_for_a_masked_action_too() -> None:
    """An agent whose queue is empty may only wait; any other action is masked out, does
    nothing and costs the penalty, as for an agent with work. Agent 0 sends its jobs back
    until its queue is empty, while the others act, so the round goes on."""
    env = PodSchedulingEnv(num_jobs=10, illegal_action_penalty=0.5)
    observations, _ = env.reset(seed=0)
    wait = env.builder.num_actions - 1
    while env.round.head(0) is not None:
        actions = {a: wait for a in env.agents}
        for agent in env.possible_agents[1:]:
            legal = np.flatnonzero(observations[agent]["action_mask"])
            actions[agent] = int(legal[0])
        observations, *_ = env.step(actions)
    assert env.round is not None and not env.round.finished
    idle = env.possible_agents[0]
    assert env.current_masks()[0].tolist() == [0] * wait + [1]
    _, rewards, _, _, infos = env.step({**dict.fromkeys(env.agents, wait), idle: 0})
    assert infos[idle]["illegal_action"] and rewards[idle] == pytest.approx(-0.5)


def one_server_per_scheduler(forward_limit: int) -> PodSchedulingEnv:
    """Two schedulers of one power8 server each (scheduler_0: GPU groups 0 and 1,
    scheduler_1: groups 2 and 3; 2 GPUs and a socket of 8 cores each) and two jobs of two
    workers of 2 GPUs and 1 core (100 epochs: they run past the next interval), arriving
    together: job 0 at scheduler_0, job 1 at scheduler_1. Device level, so the actions
    are 0 and 1 (place on the scheduler's first or second group), 2 (forward to the other
    scheduler) and 3 (wait)."""
    env = PodSchedulingEnv(
        topology="racks",
        topology_params={"racks": [1, 1]},
        server="power8",
        home="partition",
        forward_limit=forward_limit,
    )
    workload = Workload(
        arrival_time=np.zeros(2),
        model=np.zeros(2, dtype=np.int64),
        num_workers=np.array([2, 2]),
        worker_demand=np.array([[2.0, 1.0], [2.0, 1.0]]),
        epochs=np.full(2, 100.0),
        iterations_per_epoch=np.full(2, 1000),
        catalog_name=DEFAULT_CATALOG,
        partition=np.array([0, 1]),
    )
    env.reset(seed=0, options={"workload": workload})
    return env


@pytest.mark.parametrize("forward_limit", [1, 2])
def test_a_forward_whose_room_the_receiver_takes_in_the_same_step(forward_limit: int) -> None:
    """A forward is judged by the mask of the state the step began in, and the receiver's
    own placement in the same step may take the room that mask saw. Then the job waits at
    the front of the receiver's queue, its claims kept, and the receiver's next mask (of
    the state after the step) offers what is left: forward it on while the limit allows,
    or send it back to wait. Nothing is placed without room, nothing is lost, no penalty."""
    env = one_server_per_scheduler(forward_limit)
    first, second, forward, wait = 0, 1, 2, 3
    observations, *_ = env.step({"scheduler_0": first, "scheduler_1": first})
    # Job 0's first worker holds group 0, job 1's group 2; scheduler_1 has room (group 3)
    # for job 0's second worker, so scheduler_0 may forward it there.
    assert observations["scheduler_0"]["action_mask"].tolist() == [0, 1, 1, 1]
    observations, rewards, _, _, infos = env.step({"scheduler_0": forward, "scheduler_1": second})
    assert not any(info["illegal_action"] for info in infos.values())
    assert rewards == {"scheduler_0": 0.0, "scheduler_1": 0.0}
    # scheduler_1 placed job 1's second worker on group 3 (job 1 started on groups 2, 3);
    # job 0 came after, to the front of its queue, its first worker still on group 0.
    assert env.sim.status.tolist() == [JobStatus.WAITING, JobStatus.RUNNING]
    assert env.placements[1][0].tolist() == [2, 3]
    assert env.round.head(0) is None
    head = env.round.head(1)
    assert (head.job, head.groups, head.placed_by, head.forwards) == (0, [0], [0], 1)
    assert env.round.free_gpus().tolist() == [0, 2, 0, 0]
    assert env.round.free_cores().tolist() == [7.0, 8.0, 7.0, 7.0]
    # No room is left for it at scheduler_1: it may go back to scheduler_0 (which has room,
    # group 1) while its task has a forward left, else only wait.
    back = 1 if forward_limit > 1 else 0
    assert observations["scheduler_1"]["action_mask"].tolist() == [0, 0, back, 1]
    assert observations["scheduler_0"]["action_mask"].tolist() == [0, 0, 0, 1]
    if forward_limit > 1:
        observations, *_ = env.step({"scheduler_0": wait, "scheduler_1": forward})
        assert env.round.head(0).forwards == 2
        assert observations["scheduler_0"]["action_mask"].tolist() == [0, 1, 0, 1]
        _, _, terminations, _, _ = env.step({"scheduler_0": second, "scheduler_1": wait})
        # Placed whole by scheduler_0 on its own server (as job 1 on scheduler_1's), the
        # round ended and both jobs ran alone to the end of the episode, in the same time.
        assert env.shares[0].tolist() == [1.0, 0.0] and env.deferrals.tolist() == [0, 0]
        assert all(terminations.values())
        assert env.sim.first_start[0] == 0.0
        assert env.sim.finish_time[0] == env.sim.finish_time[1]
    else:
        env.step({"scheduler_0": wait, "scheduler_1": wait})
        # Sent back whole: its claim on group 0 released; it waits for the next interval,
        # where it is at the front of its home scheduler's queue again, nothing claimed.
        assert env.deferrals.tolist() == [1, 0]
        assert env.sim.now == env.config.interval_s and env.rounds == 2
        assert env.sim.status.tolist() == [JobStatus.WAITING, JobStatus.RUNNING]
        head = env.round.head(0)
        assert (head.job, head.groups, head.forwards) == (0, [], 0)
        assert env.round.free_gpus().tolist() == [2, 2, 0, 0]


def test_random_unmasked_actions_never_crash() -> None:
    env = PodSchedulingEnv(num_jobs=8, horizon_intervals=30)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    while env.agents:
        env.step({agent: int(rng.integers(env.builder.num_actions)) for agent in env.agents})
    assert env.sim.now <= 30 * env.config.interval_s


@pytest.mark.parametrize(
    ("policy", "queue_order"),
    [
        ("fifo+packing", "arrival"),
        ("sjf+tetris", "arrival"),
        ("las+lif", "arrival"),
        ("srtf+locality", "arrival"),
        ("dsif+locality", "ideal-time"),
        ("fifo+packing", "ideal-time"),
    ],
)
def test_heuristics_match_simulate_run(policy: str, queue_order: str) -> None:
    # The driver follows the heuristic's plan, whatever order the queues are served in.
    env = PodSchedulingEnv(num_jobs=50, queue_order=queue_order)
    env.reset(seed=4)
    driver = HeuristicPodPolicy(env, policy)
    while env.agents:
        _, _, _, _, infos = env.step(driver.actions())
        assert not any(info["illegal_action"] for info in infos.values())
    in_env = SimulationResult.from_simulator(env.sim, policy).metrics()
    # The agents cannot preempt: compare with the scheduler that does not either.
    scheduler = make_scheduler(policy, preemption=PreemptionSettings(enabled=False))
    direct = simulate(
        env.cluster, env.workload, scheduler, policy, SimulatorConfig(interval_s=1800)
    ).metrics()
    assert in_env == direct


@pytest.mark.parametrize(
    ("settings", "policy"),
    [
        ({"level": "server"}, "fifo+packing"),
        ({"level": "server"}, "sjf+tetris"),
        ({"level": "server"}, "dsif+locality"),
        ({"forward_limit": 0}, "fifo+packing"),
    ],
)
def test_the_driver_finishes_where_the_environment_cannot_follow_its_plan(settings, policy):
    """At server level the environment picks the group inside the chosen server (a task
    may fill the group a later task was planned on), and with forward_limit 0 no job may
    go where it was planned in another partition. The driver then takes legal actions
    only, and every job finishes before the horizon (these seeds stalled on the same
    masked-out action, the round never ending)."""
    for seed in (0, 4):
        env = PodSchedulingEnv(num_jobs=40, **settings)
        env.reset(seed=seed)
        driver = HeuristicPodPolicy(env, policy)
        steps = 0
        while env.agents and steps < 5_000:
            _, _, terminations, _, infos = env.step(driver.actions())
            assert not any(info["illegal_action"] for info in infos.values())
            steps += 1
        assert not env.agents and all(terminations.values()), (seed, steps)
        assert (env.sim.status == JobStatus.FINISHED).all()


def test_same_seed_same_trajectory() -> None:
    def trajectory(seed: int) -> list:
        env = PodSchedulingEnv(num_jobs=15)
        observations, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        steps = []
        while env.agents:
            actions = random_valid_actions(env, observations, rng)
            observations, rewards, *_ = env.step(actions)
            steps.append((actions, rewards))
        return steps

    assert trajectory(7) == trajectory(7)
    assert trajectory(7) != trajectory(8)


def test_resets_without_a_seed_continue_the_last_seed_stream() -> None:
    def arrivals(env: PodSchedulingEnv, seed: int | None) -> list[float]:
        env.reset(seed=seed)
        return env.workload.arrival_time.tolist()

    first, second = PodSchedulingEnv(num_jobs=10), PodSchedulingEnv(num_jobs=10)
    # As an RL sampler does: one seeded reset, then resets without a seed.
    run = [arrivals(first, 3), arrivals(first, None), arrivals(first, None)]
    assert [arrivals(second, 3), arrivals(second, None), arrivals(second, None)] == run
    assert run[1] != run[0] and run[2] != run[1]  # fresh workloads, repeated
    # A given seed gives its episode as before, and restarts the stream.
    assert arrivals(first, 3) == run[0] and arrivals(first, None) == run[1]
    assert arrivals(first, 4) != run[0] and arrivals(first, None) != run[1]
    unseeded = PodSchedulingEnv(num_jobs=10)
    assert arrivals(unseeded, None) != arrivals(unseeded, None)


def test_jct_reward_sums_to_minus_total_jct() -> None:
    env = PodSchedulingEnv(num_jobs=12, reward="jct")
    env.reset(seed=1)
    driver = HeuristicPodPolicy(env, "fifo+packing")
    total = 0.0
    while env.agents:
        _, rewards, *_ = env.step(driver.actions())
        total += sum(rewards.values())
    jct = env.sim.finish_time - env.workload.arrival_time
    assert total == pytest.approx(-jct.sum() / env.config.interval_s)


def test_contention_reward_weights() -> None:
    env = PodSchedulingEnv(num_jobs=12, reward="contention", contention_weight=1.0)
    env.reset(seed=1)
    driver = HeuristicPodPolicy(env, "fifo+packing")
    returns = np.zeros(env.cluster.num_partitions)
    while env.agents:
        _, rewards, *_ = env.step(driver.actions())
        returns += list(rewards.values())
    # W1 = 1: only -CS (>= 1 per interval) counts, so every return is at most -1 per interval.
    assert (returns < 0).all()


def test_contention_reward_counts_from_the_round() -> None:
    """The state a round leaves is paid for the time it held: from the round to the next
    decision. With W1 = 1 and nothing running, each agent's mean CS is 1 by definition, so
    a first round where every agent waits pays exactly -(t2 - t1) / interval each, not
    -(t2 - 0) / interval (the stretch from time 0, before the first round)."""
    env = PodSchedulingEnv(num_jobs=12, reward="contention", contention_weight=1.0)
    observations, _ = env.reset(seed=1)
    first_round = env.sim.now
    assert first_round > 0  # otherwise the two readings agree
    paid = dict.fromkeys(env.possible_agents, 0.0)
    while env.sim.now == first_round:  # every agent waits until the round ends
        wait = {agent: len(obs["action_mask"]) - 1 for agent, obs in observations.items()}
        assert all(observations[agent]["action_mask"][action] for agent, action in wait.items())
        observations, rewards, *_ = env.step(wait)
        for agent, reward in rewards.items():
            paid[agent] += reward
    assert not env.sim.running_jobs().size
    held = (env.sim.now - first_round) / env.config.interval_s
    assert paid == pytest.approx(dict.fromkeys(paid, -held), abs=1e-12)


def test_the_last_observation_at_the_horizon_shows_the_backlog() -> None:
    """RLlib bootstraps a truncated episode from its last observation: it must show the
    jobs still waiting (each scheduler's queue length, in units of max_jobs), with
    wait-only masks and no advice."""
    from envs.sim import JobStatus

    env = PodSchedulingEnv(
        num_jobs=60, horizon_intervals=3, advice="dsif+locality", queue_order="ideal-time"
    )
    observations, _ = env.reset(seed=0)
    driver = HeuristicPodPolicy(env, "dsif+locality", seed=0)
    truncations = {}
    while env.agents:
        observations, _, _, truncations, _ = env.step(driver.actions())
    assert all(truncations.values())
    waiting = np.flatnonzero(env.sim.status == JobStatus.WAITING)
    per_home = np.bincount(env.homes[waiting], minlength=env.cluster.num_partitions)
    assert per_home.sum() == len(waiting) > 0
    wait = env.action_space(env.possible_agents[0]).n - 1
    for agent, observation in observations.items():
        summary = observation["schedulers"][: env.cluster.num_partitions]
        assert summary[:, 2] * env.config.max_jobs == pytest.approx(per_home)
        assert (summary[:, 5] == (per_home > 0)).all()
        assert np.flatnonzero(observation["action_mask"]).tolist() == [wait]
        assert not observation["advice"].any()
        assert env.observation_space(agent).contains(observation)


def test_forwarding_limit_and_homes() -> None:
    env = PodSchedulingEnv(num_jobs=10, forward_limit=0)
    observations, _ = env.reset(seed=3)
    first_forward = env.layout.max_targets
    for agent in env.agents:
        assert observations[agent]["action_mask"][first_forward:-1].sum() == 0
    assert set(np.unique(env.homes)) <= set(range(env.cluster.num_partitions))


def test_make_env_and_bad_configs() -> None:
    env = make_env("pod_scheduling_v0", topology="vl2", topology_params={"k": 4})
    assert len(env.possible_agents) == 4
    with pytest.raises(ValueError, match="unknown pod_scheduling_v0 option"):
        make_env("pod_scheduling_v0", topolgy="vl2")
    with pytest.raises(ValueError, match="reward='speed'; allowed: progress, jct, contention"):
        make_env("pod_scheduling_v0", reward="speed")
    with pytest.raises(ValueError, match="queue_order='sjf'; allowed: arrival, ideal-time"):
        make_env("pod_scheduling_v0", queue_order="sjf")
    with pytest.raises(ValueError, match="job_times must be true or false, got 'yes'"):
        make_env("pod_scheduling_v0", job_times="yes")
    with pytest.raises(ValueError, match="unknown environment 'pod_v9'"):
        make_env("pod_v9")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # An infinite penalty times a legal agent's 0 made every reward NaN.
        ("illegal_action_penalty", math.inf, "illegal_action_penalty must be a finite number"),
        ("illegal_action_penalty", math.nan, "illegal_action_penalty must be a finite number"),
        ("illegal_action_penalty", "high", "illegal_action_penalty must be a finite number"),
        ("contention_weight", True, r"contention_weight \(W1\) must be a number in \[0, 1\]"),
        ("contention_weight", "0.5", r"contention_weight \(W1\) must be a number in \[0, 1\]"),
        ("interval_s", True, "interval_s must be a positive number of seconds"),
    ],
)
def test_numbers_that_are_not_finite_numbers_are_refused(field, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        make_env("pod_scheduling_v0", **{field: value})


def test_rllib_registration_builds_a_working_env() -> None:
    from ray.tune.registry import ENV_CREATOR, _global_registry

    from tune.rllib_envs import register_rllib_env

    name = register_rllib_env("pod_scheduling_v0")
    creator = _global_registry.get(ENV_CREATOR, name)
    wrapped = creator({"num_jobs": 6})
    observations, _ = wrapped.reset(seed=0)
    assert set(observations) <= set(wrapped.get_agent_ids())
    actions = {
        agent: int(np.flatnonzero(obs["action_mask"])[-1]) for agent, obs in observations.items()
    }
    wrapped.step(actions)


def test_ideal_time_queues_serve_the_shortest_job_first() -> None:
    env = PodSchedulingEnv(num_jobs=30, queue_order="ideal-time", workload_params={"rate": 6.0})
    env.reset(seed=7)
    sim = env.sim
    longest_queue = 0
    for agent, queue in enumerate(env.round.queues):
        jobs = [entry.job for entry in queue]
        longest_queue = max(longest_queue, len(jobs))
        # Exactly the agent's waiting jobs, by ideal time, ties by arrival (job index).
        mine = [job for job in sim.waiting_jobs().tolist() if env.homes[job] == agent]
        assert jobs == sorted(mine, key=lambda job: (sim.ideal_duration[job], job))
    assert longest_queue >= 2  # the order was actually exercised


def test_job_times_show_remaining_time_and_deferrals() -> None:
    env = PodSchedulingEnv(num_jobs=20, job_times=True, workload_params={"rate": 6.0})
    observations, _ = env.reset(seed=3)
    agent_index = next(i for i in range(len(env.possible_agents)) if env.round.head(i))
    agent = env.possible_agents[agent_index]
    head = env.round.head(agent_index)
    sim, interval = env.sim, env.config.interval_s
    models = env.builder.num_models
    task = observations[agent]["task"]
    # p: is-PS, model one-hot, 6 demands, the job's remaining ideal time, its deferrals.
    assert task.shape == (1 + models + 6 + 1 + 1,)
    assert task[1 + models + 6] == pytest.approx(np.log1p(sim.ideal_duration[head.job] / interval))
    assert task[-1] == 0.0
    # Slot 0 of r is the head job: the same time column.
    assert observations[agent]["jobs_demand"][0, -1] == pytest.approx(task[1 + models + 6])
    # Everyone sends its head job back to wait: one deferral each, shown in the task
    # when such a job heads a queue again.
    heads = [env.round.head(i).job for i in range(len(env.possible_agents)) if env.round.head(i)]
    wait = {a: env.builder.num_actions - 1 for a in env.possible_agents}
    observations, *_ = env.step(wait)
    assert env.deferrals[heads].tolist() == [1] * len(heads)
    assert env.deferrals.sum() == len(heads)
    shown = []
    while env.agents and not shown:
        for index, name in enumerate(env.possible_agents):
            entry = env.round.head(index) if env.round else None
            if entry is not None and env.deferrals[entry.job]:
                shown.append(observations[name]["task"][-1] * 4 == env.deferrals[entry.job])
        observations, *_ = env.step(wait)
    assert shown and all(shown)


MASKS_SETTINGS = {"num_jobs": 30, "advice": "dsif+locality", "room_features": True}


def play_side_by_side(
    seed: int, lean_options: dict | None = None, switch_at: int | None = None
) -> tuple[PodSchedulingEnv, list[set[str]]]:
    """Play ``fifo+packing`` on two identical environments, the lean one reset with
    ``lean_options`` and told ``observe_masks_only()`` before step ``switch_at``; check at
    every step that both show the same masks, choose the same actions and get the same
    rewards. Returns the lean environment and its observation keys per step."""
    full, lean = PodSchedulingEnv(**MASKS_SETTINGS), PodSchedulingEnv(**MASKS_SETTINGS)
    full_obs, _ = full.reset(seed=seed)
    lean_obs, _ = lean.reset(seed=seed, options=lean_options)
    full_driver = HeuristicPodPolicy(full, "fifo+packing", seed=seed)
    lean_driver = HeuristicPodPolicy(lean, "fifo+packing", seed=seed)
    lean_keys = []
    while full.agents:
        if len(lean_keys) == switch_at:
            lean.observe_masks_only()
        lean_keys.append(set(lean_obs["scheduler_0"]))
        for agent in full.possible_agents:
            assert np.array_equal(lean_obs[agent]["action_mask"], full_obs[agent]["action_mask"])
        actions = full_driver.actions()
        assert lean_driver.actions() == actions
        full_obs, full_rewards, *_ = full.step(actions)
        lean_obs, lean_rewards, *_ = lean.step(actions)
        assert lean_rewards == full_rewards
    assert not lean.agents
    assert np.array_equal(lean.sim.finish_time, full.sim.finish_time)
    assert (lean.sim.status == JobStatus.FINISHED).all()
    return lean, lean_keys


def test_a_masks_only_episode_is_the_full_episode_without_features() -> None:
    """``reset(options={"masks_only": True})``: observations hold only the masks, and the
    masks, rewards and schedule are the full episode's, step for step."""
    lean, keys = play_side_by_side(4, lean_options={"masks_only": True})
    assert lean.advisor is None
    assert len(keys) > 10 and all(step == {"action_mask"} for step in keys)


def test_observing_masks_only_mid_episode_keeps_the_episode() -> None:
    """``observe_masks_only()`` after 25 full steps: from the next step on observations
    hold only the masks and no advice is given, and the masks, rewards and schedule stay
    those of an identical episode that keeps observing everything."""
    lean, keys = play_side_by_side(5, switch_at=25)
    assert lean.advisor is None
    assert len(keys) > 40
    assert all("advice" in step for step in keys[:26])
    assert all(step == {"action_mask"} for step in keys[26:])


@pytest.mark.parametrize("reward", ["jct", "contention"])
def test_a_step_before_reset_or_after_the_end_is_refused(reward: str) -> None:
    """Stepping after the end would run the simulation's end again and pay its rewards a
    second time (the contention reward's last stretch, the credited JCTs)."""
    env = PodSchedulingEnv(num_jobs=6, reward=reward, topology_params={"k": 4})
    with pytest.raises(RuntimeError, match=r"the episode is over; call reset\(\) before step\(\)"):
        env.step({})
    env.reset(seed=0)
    driver = HeuristicPodPolicy(env, "fifo+packing")
    while env.agents:
        env.step(driver.actions())
    now = env.sim.now
    with pytest.raises(RuntimeError, match=r"the episode is over; call reset\(\) before step\(\)"):
        env.step({})
    assert env.sim.now == now
