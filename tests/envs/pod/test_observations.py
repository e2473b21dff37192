"""pod_scheduling_v0 observations: the vectorized builder equals a plain per-agent recount.

The builder fills every agent's node features, edge features and job tables with a few
array operations over all agents at once; this reference walks agent by agent, slot by
slot and edge by edge, from the environment's own state, and must agree exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from envs.pod.env import PodSchedulingEnv

SETTINGS = {
    "fat-tree": {"topology": "fat-tree", "topology_params": {"k": 4}},
    "server-level": {"topology": "fat-tree", "topology_params": {"k": 4}, "level": "server"},
    "vl2-full-view": {
        "topology": "vl2",
        "topology_params": {"k": 4, "servers_per_tor": 2},
        "others": "full",
    },
    "mixed-busy": {
        "topology": "fat-tree",
        "topology_params": {"k": 4},
        "server": "mixed",
        "workload_params": {"rate": 10.0},
        "job_times": True,
    },
}


def reference(env: PodSchedulingEnv, agent: int) -> dict[str, np.ndarray]:
    """One agent's node features, edge attributes and job tables, recounted plainly."""
    builder, layout, sim, round_ = env.builder, env.layout, env.sim, env.round
    part = layout.partitions[agent]
    free_gpus = round_.free_gpus() if round_ is not None else sim.free_gpus
    free_cores = round_.free_cores() if round_ is not None else sim.free_cores
    features = np.zeros((layout.max_nodes, builder.node_feature_size), dtype=np.float32)
    cluster = env.cluster
    for index, target in enumerate(part.targets.tolist()):
        if layout.level == "device":
            gpus, cores = free_gpus[target], free_cores[cluster.group_socket[target]]
        else:
            groups = range(
                cluster.server_group_offsets[target], cluster.server_group_offsets[target + 1]
            )
            sockets = range(
                cluster.server_socket_offsets[target], cluster.server_socket_offsets[target + 1]
            )
            gpus = sum(free_gpus[g] for g in groups)
            cores = sum(free_cores[c] for c in sockets)
        features[index, 0] = gpus / builder.gpu_scale
        features[index, 1] = cores / builder.core_scale
    slots = builder._job_slots(agent, round_, env.running_in)
    for slot, (job, claimed) in enumerate(slots):
        if claimed:
            groups, workers = list(claimed), int(sim.num_workers[job])
        elif job in env.placements:
            groups, workers = env.placements[job][0].tolist(), env.placements[job][1]
        else:
            continue
        for task, group in enumerate(groups):
            if builder.group_partition[group] == agent:
                column = builder.slot_column + 2 * slot + (1 if task >= workers else 0)
                features[builder.group_target[group], column] += 1.0
    graph = part.graph
    edge_attr = np.zeros((layout.max_edges, 3), dtype=np.float32)
    # An edge of the view merges parallel links: their bandwidths add up (over the
    # fabric's fastest link), its tier is theirs (over the deepest tier).
    fastest = np.float32(cluster.link_gbps.max())
    deepest = np.float32(max(len(cluster.link_tier_names) - 1, 1))
    for edge in range(graph.view.num_edges):
        links = graph.view.edge_link_ids[
            graph.view.edge_link_offsets[edge] : graph.view.edge_link_offsets[edge + 1]
        ]
        edge_attr[edge] = (
            np.float32(sum(float(cluster.link_gbps[link]) for link in links)) / fastest,
            sim.link_jobs[links].mean(),
            np.float32(cluster.link_tier[links[0]]) / deepest,
        )
    models = np.zeros((env.config.max_jobs, builder.num_models), dtype=np.float32)
    demand = np.zeros((env.config.max_jobs, builder.demand_size), dtype=np.float32)
    for slot, (job, _) in enumerate(slots):
        models[slot, sim.workload.model[job]] = 1.0
        # Task counts over 8, GPUs over the largest target's, cores over the largest
        # target's; workers first, then parameter servers.
        demand[slot, :6] = (
            sim.num_workers[job] / 8,
            sim.worker_gpus[job] / builder.gpu_scale,
            sim.worker_cpus[job] / builder.core_scale,
            sim.num_ps[job] / 8,
            sim.ps_gpus[job] / builder.gpu_scale,
            sim.ps_cpus[job] / builder.core_scale,
        )
        if builder.time_columns:
            done_s = sim.work_done[job] * sim.compute_time[job] / sim.num_workers[job]
            remaining = max(sim.ideal_duration[job] - done_s, 0.0)
            demand[slot, 6] = np.log1p(remaining / env.config.interval_s)
    return {
        "node_features": features,
        "edge_attr": edge_attr,
        "jobs_model": models,
        "jobs_demand": demand,
    }


@pytest.mark.parametrize(("level", "gpus", "cores"), [("device", 2, 8), ("server", 4, 16)])
def test_feature_scales_are_the_largest_targets_room(level: str, gpus: int, cores: int) -> None:
    """Power8 servers hold 2 GPU groups of 2 GPUs and 2 sockets of 8 cores: a device
    target (a group and its socket) holds at most 2 GPUs and 8 cores, a server 4 and 16.
    The fat-tree's fastest link is the 300 Gb/s QPI of tier 4 (of server-edge 0,
    edge-aggregation 1, aggregation-core 2, PCIe 3, QPI 4): a pod's inner graph has
    server-edge links of 10 Gb/s, PCIe of 128 and QPI of 300, and its two 20 Gb/s uplinks
    from an edge switch merge into one edge of 40 (the pod's aggregation switches are one
    node of the view)."""
    env = PodSchedulingEnv(num_jobs=4, level=level)
    assert (env.builder.gpu_scale, env.builder.core_scale) == (gpus, cores)
    if level == "device":
        graph = env.layout.partitions[0].graph
        pairs = {tuple(row) for row in graph.edge_attr_static[: graph.view.num_edges].tolist()}
        expected = {(10 / 300, 0.0), (40 / 300, 0.25), (128 / 300, 0.75), (1.0, 1.0)}
        assert len(pairs) == len(expected)
        for bandwidth, tier in expected:
            assert any(abs(b - bandwidth) < 1e-7 and t == tier for b, t in pairs), (bandwidth, tier)


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_observations_equal_a_per_agent_recount(setting: str) -> None:
    env = PodSchedulingEnv(num_jobs=24, **SETTINGS[setting])
    rng = np.random.default_rng(3)
    checked = 0
    for seed in (0, 1):
        observations, _ = env.reset(seed=seed)
        while env.agents:
            for index, agent in enumerate(env.possible_agents):
                expected = reference(env, index)
                for key, value in expected.items():
                    # The load is a mean of integers, float32 on both sides; the rest are
                    # counts and fractions computed the same way: equal to the bit.
                    np.testing.assert_array_equal(observations[agent][key], value, err_msg=key)
                if env.config.others == "full":
                    np.testing.assert_array_equal(
                        observations[agent]["partitions"][index], expected["node_features"]
                    )
                checked += 1
            actions = {}
            for agent in env.agents:
                valid = np.flatnonzero(observations[agent]["action_mask"])
                actions[agent] = int(rng.choice(valid[:-1])) if len(valid) > 1 else int(valid[-1])
            observations, *_ = env.step(actions)
    assert checked > 100  # the walk went through many rounds, placements and completions


def test_room_features_state_where_the_whole_job_fits() -> None:
    """On a fat-tree k=4 of power8 servers (2 groups x 2 GPUs, 2 sockets x 8 cores), at
    every step of an episode: each target shows its server's free GPUs net of the round's
    claims (over 4) and whether they cover all the job's remaining tasks; each forward
    target shows whether any of its servers does, the fewest free GPUs of those (1 if
    none) and its most free GPUs; each target also counts the job's placed tasks on its
    server (over 8). Cores are checked too (they bind for CPU-heavy jobs)."""
    env = PodSchedulingEnv(num_jobs=20, room_features=True, workload_params={"rate": 8.0})
    space = env.observation_space("scheduler_0")
    assert space["node_features"].shape[1] == env.builder.slot_column + 2 * env.config.max_jobs
    rng = np.random.default_rng(0)
    observations, _ = env.reset(seed=0)
    offsets = env.cluster.server_group_offsets[:-1], env.cluster.server_socket_offsets[:-1]
    seen_full = seen_partial = seen_placed = 0
    while env.agents:
        for index, agent in enumerate(env.possible_agents):
            observation = observations[agent]
            assert space.contains(observation)
            columns = observation["node_features"][: env.layout.max_targets, 2:5]
            forward = observation["forward_room"]
            head = env.round.head(index) if env.round is not None else None
            if head is None:
                assert not columns.any() and not forward.any()
                continue
            gpus = np.add.reduceat(env.round.free_gpus(), offsets[0])
            cores = np.add.reduceat(env.round.free_cores(), offsets[1])
            fits = (gpus >= head.task_gpus[head.task :].sum()) & (
                cores >= head.task_cpus[head.task :].sum() - 1e-9
            )
            servers = env.cluster.group_server[env.layout.partitions[index].targets]
            np.testing.assert_allclose(columns[:, 0], gpus[servers] / 4.0)
            np.testing.assert_array_equal(columns[:, 1], fits[servers])
            placed = np.bincount(env.cluster.group_server[head.groups], minlength=len(gpus))
            np.testing.assert_allclose(columns[:, 2], placed[servers] / 8.0)
            seen_placed += bool(placed[servers].any())
            for slot, partition in enumerate(env.builder.forward_targets[index]):
                own = env.cluster.partition_servers(int(partition))
                assert forward[slot, 0] == fits[own].any()
                tightest = gpus[own][fits[own]].min() / 4.0 if fits[own].any() else 1.0
                assert forward[slot, 1] == pytest.approx(tightest)
                assert forward[slot, 2] == pytest.approx(gpus[own].max() / 4.0)
                seen_full += bool(fits[own].all())
                seen_partial += bool(fits[own].any() and not fits[own].all())
        actions = {}
        for agent in env.agents:
            valid = np.flatnonzero(observations[agent]["action_mask"])
            actions[agent] = int(rng.choice(valid[:-1])) if len(valid) > 1 else int(valid[-1])
        observations, *_ = env.step(actions)
    # Empty and partly busy partitions were seen, and jobs half placed on a target's server.
    assert seen_full and seen_partial and seen_placed


@pytest.mark.parametrize("level", ["device", "server"])
def test_release_features_count_the_gpus_freed_within_one_interval(level: str) -> None:
    """On a busy fat-tree k=4 of power8 servers (2 groups x 2 GPUs each), at every step:
    each target shows the GPUs that running jobs expected to finish within one interval
    hold on it (over 2 per group, or 4 per server) and on its server (over 4), recounted
    job by job from the jobs' placements and remaining times; room features stay in their
    columns before them; padded targets show 0."""
    env = PodSchedulingEnv(
        num_jobs=30,
        room_features=True,
        release_features=True,
        level=level,
        workload_params={"rate": 8.0},
    )
    builder = env.builder
    assert builder.release_column == 2 + 3 and builder.slot_column == 2 + 3 + 2
    space = env.observation_space("scheduler_0")
    assert space["node_features"].shape[1] == builder.slot_column + 2 * env.config.max_jobs
    cluster = env.cluster
    rng = np.random.default_rng(1)
    observations, _ = env.reset(seed=1)
    seen_soon = seen_later = 0
    while env.agents:
        sim = env.sim
        per_group = np.zeros(cluster.num_gpu_groups)
        for job in sim.running_jobs():
            left = float(sim.remaining_time(np.array([job]))[0])
            groups = cluster.gpu_group[np.flatnonzero(sim.gpu_job == job)]
            if left <= env.config.interval_s:
                np.add.at(per_group, groups, 1.0)
                seen_soon += 1
            else:
                seen_later += 1
        per_server = np.add.reduceat(per_group, cluster.server_group_offsets[:-1])
        for index, agent in enumerate(env.possible_agents):
            observation = observations[agent]
            assert space.contains(observation)
            columns = observation["node_features"][:, 5:7]
            part = env.layout.partitions[index]
            count = len(part.targets)
            if level == "device":
                own, servers = per_group[part.targets] / 2.0, cluster.group_server[part.targets]
            else:
                own, servers = per_server[part.targets] / 4.0, part.targets
            np.testing.assert_allclose(columns[:count, 0], own)
            np.testing.assert_allclose(columns[:count, 1], per_server[servers] / 4.0)
            assert not columns[count:].any()
        actions = {}
        for agent in env.agents:
            valid = np.flatnonzero(observations[agent]["action_mask"])
            actions[agent] = int(rng.choice(valid[:-1])) if len(valid) > 1 else int(valid[-1])
        observations, *_ = env.step(actions)
    # Jobs finishing within the interval and jobs running longer were both seen.
    assert seen_soon > 10 and seen_later > 10
