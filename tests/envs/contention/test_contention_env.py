"""The Gymnasium face of the contention-aware formulation: registration, spaces,
seeding, job sets, errors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from envs.contention import ContentionEnv
from envs.contention.config import ContentionConfig
from envs.contention.core import contention_cluster
from envs.contention.jobs import generate_job_set
from envs.contention.placement import task_groups
from envs.sim import Simulator, SimulatorConfig
from envs.workload import get_catalog


def test_registered_id_makes_the_environment_with_overrides(registered: str) -> None:
    env = gymnasium.make(registered, nodes=8, gpu_choices=(2, 4, 8), mode="hybrid", w1=0.7)
    assert isinstance(env.unwrapped, ContentionEnv)
    # 8 nodes: subsets of 1, 2, 4 and 8 nodes = 8 + 28 + 70 + 1; K = 3 demands.
    assert env.action_space == gymnasium.spaces.Discrete(3 * 107 + 1)
    assert env.observation_space["state"].shape == (8, 16)
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)


def test_default_spaces_follow_000() -> None:
    env = ContentionEnv()
    assert env.observation_space["state"].shape == (4, 16)  # <Nodes, 2 x GPUs per node>
    assert env.observation_space["state"].dtype == np.float32
    # K = 6 candidates (demands 1..32) x 11 node subsets + do nothing.
    assert env.action_space == gymnasium.spaces.Discrete(6 * 11 + 1)
    assert env.observation_space["action_mask"].shape == (67,)
    assert env.config.nothing_action == 66
    assert env.core.options.subsets[:5] == ((0,), (1,), (2,), (3,), (0, 1))
    assert env.core.options.subsets[-1] == (0, 1, 2, 3)
    assert env.config.w1 == 0.4 and env.config.w2 == pytest.approx(0.6)


def test_reset_draws_the_job_set_from_the_env_generator() -> None:
    env = ContentionEnv(mix="heavy")
    env.reset(seed=3)
    config = ContentionConfig(mix="heavy")
    expected = generate_job_set(config, env.core.cluster, np.random.default_rng(3))
    assert env.core.workload == expected


@pytest.mark.parametrize(
    ("mix", "shares"),
    [
        ("normal", (1, 1, 1, 1, 1, 1)),
        ("heavy", (1, 1, 1, 1, 4, 4)),
        ("medium", (1, 1, 4, 4, 1, 1)),
        ("low", (4, 4, 1, 1, 1, 1)),
    ],
)
def test_job_sets_follow_000_section_6(mix: str, shares: tuple[int, ...]) -> None:
    config = ContentionConfig(mix=mix)
    cluster = contention_cluster(4, 8, 40.0)
    jobs = generate_job_set(config, cluster, np.random.default_rng(0))
    assert len(jobs) == 256 and (jobs.arrival_time == 0).all()
    assert set(jobs.num_workers.tolist()) <= {1, 2, 4, 8, 16, 32}
    assert (jobs.worker_demand[:, 1] == 0).all()  # GPUs only
    counts = np.bincount(jobs.model, minlength=6)
    np.testing.assert_allclose(counts / 256, np.array(shares) / sum(shares), atol=1 / 256)
    # Each job runs one hour alone on its most concentrated placement, in the simulator.
    for job in (0, 1, 2, 3):
        alone = Simulator(cluster, jobs.select([job]), SimulatorConfig(interference=False))
        alone.run_until_decision()
        gpus = int(jobs.num_workers[job])
        nodes = tuple(range(max(1, gpus // 8)))
        groups = task_groups(cluster, cluster.group_gpus, nodes, min(gpus, 8))
        alone.place(0, groups)
        assert alone.remaining_time()[0] == pytest.approx(3600.0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nodes": 0}, "nodes must be an integer >= 1"),
        ({"gpus_per_node": 1.5}, "gpus_per_node must be an integer"),
        ({"link_gbps": -1}, "link_gbps must be a finite number > 0"),
        ({"interference": 1}, "interference must be true or false"),
        ({"mix": "extreme"}, "mix must be one of normal, heavy, medium, low"),
        ({"mix": (1, 2)}, "mix weights must be six numbers"),
        ({"num_jobs": 0}, "num_jobs must be an integer >= 1"),
        ({"gpu_choices": (1, 64)}, "a job of 64 GPUs has no placement"),
        ({"gpu_choices": (3, 3)}, "gpu_choices must not repeat"),
        ({"gpu_choices": ()}, "gpu_choices must be integers >= 1"),
        ({"job_hours": 0}, "job_hours must be a finite number > 0"),
        ({"mean_interarrival_s": -5}, "mean_interarrival_s must be a finite number >= 0"),
        ({"round_s": 0}, "round_s must be a finite number > 0"),
        ({"candidates": 7}, "candidates must be at most the number of distinct GPU demands"),
        ({"mode": "greedy"}, "mode must be one of base, hybrid"),
        ({"fallback_placement": "random"}, "fallback_placement must be one of spread, pack"),
        ({"preempt_cs": 0.5}, "preempt_cs must be a number > 1 or None"),
        ({"restart_cost_s": -1}, "restart_cost_s must be a number >= 0"),
        ({"w1": 1.5}, r"w1 must be a number in \[0, 1\]"),
        ({"contention_term": "max"}, "contention_term must be one of cs, degradation"),
        ({"profile": "name"}, "profile must be one of type, bandwidth"),
        ({"horizon_s": 0}, "horizon_s must be a finite number > 0"),
        ({"max_steps": 0}, "max_steps must be an integer >= 1"),
        ({"nodes": 16}, "placement options per job"),
        ({"colour": "red"}, "unknown contention parameter"),
    ],
)
def test_bad_configuration_raises_value_error(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ContentionEnv(**params)


def test_bad_job_sets_and_actions_raise(small_env: ContentionEnv) -> None:
    one = {"arrival": 0, "model": "FSDP", "gpus": 8, "duration": 60}
    with pytest.raises(ValueError, match="GPU demands must be among gpu_choices"):
        ContentionEnv(jobs=[{**one, "gpus": 3}])
    with pytest.raises(ValueError, match="unknown model 'BERT'"):
        ContentionEnv(jobs=[{**one, "model": "BERT"}])
    with pytest.raises(ValueError, match="exactly the keys arrival, model, gpus, duration"):
        ContentionEnv(jobs=[{"model": "FSDP", "gpus": 8}])
    with pytest.raises(ValueError, match="duration > 0"):
        ContentionEnv(jobs=[{**one, "duration": -1}])
    sced2 = generate_job_set(
        ContentionConfig(num_jobs=4), contention_cluster(4, 8, 40.0), np.random.default_rng(0)
    ).replace(catalog_name="sced2")
    with pytest.raises(ValueError, match="deepshare catalog"):
        ContentionEnv(jobs=sced2)
    with pytest.raises(ValueError, match="a contention config must be a mapping"):
        ContentionConfig.from_dict([("nodes", 2)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="render_mode must be None"):
        ContentionEnv(render_mode="human")
    with pytest.raises(ValueError, match="unknown reset option"):
        small_env.reset(options={"trace": []})
    small_env.reset(seed=0)
    for action in (small_env.config.num_actions, -1, 1.5, [0, 1]):
        with pytest.raises(ValueError, match="action must be"):
            small_env.step(action)
    with pytest.raises(ValueError, match="not a placement option"):
        small_env.action_for(int(small_env.core.candidates()[0]), [0, 1, 2])
    with pytest.raises(ValueError, match="is not a candidate now"):
        small_env.action_for(10_000, [0])
    assert get_catalog("deepshare").names == ("GNN", "IMG", "DLRM", "LM", "FSDP", "MoE")
