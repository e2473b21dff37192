"""The job selector's mask never allows a job the cluster cannot take, and never hides one
it can: checked against the simulator's free GPUs and cores directly."""

from __future__ import annotations

import numpy as np
import pytest

from envs.cush import CuSHEnv


def direct_fits(env: CuSHEnv) -> list[bool]:
    """Per slot, from the simulator's own arrays: a job is there, enough GPUs are free and
    enough sockets have every core free."""
    core = env.core
    sim = core.sim
    free_gpus = int(sim.free_gpus.sum())
    free_sockets = int((sim.free_cores == core.cluster.socket_cores).sum())
    return [
        job >= 0 and core.jobs.gpus[job] <= free_gpus and core.jobs.cpus[job] <= free_sockets
        for job in core.slots
    ]


@pytest.mark.parametrize(("cluster", "nodes"), [("sierra", 8), ("summit", 4), ("sierra", 128)])
def test_mask_matches_the_simulators_free_resources(cluster: str, nodes: int) -> None:
    env = CuSHEnv(cluster=cluster, nodes=nodes)
    rng = np.random.default_rng(0)
    queue = env.config.queue_size
    checked = placed = 0
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            mask = obs["action_mask"]
            assert mask.dtype == np.int8
            assert mask[0] == 1 and mask[-2:].tolist() == [1, 1]
            assert mask[1 : queue + 1].astype(bool).tolist() == direct_fits(env)
            checked += 1
            # Half the time try any slot, so masked choices are exercised too.
            if rng.random() < 0.5:
                choice = int(rng.integers(queue + 1))
            else:
                choice = int(rng.choice(np.flatnonzero(mask[: queue + 1])))
            before = int(env.core.sim.free_gpus.sum())
            obs, _, terminated, truncated, info = env.step([choice, int(rng.integers(2))])
            if choice and mask[choice]:
                placed += 1
                assert info["placed"]["slot"] == choice
                assert int(env.core.sim.free_gpus.sum()) == before - info["placed"]["gpus"]
            else:
                assert "placed" not in info
                assert info["invalid_action"] == bool(choice)
            done = terminated or truncated
        assert terminated
    assert checked > 100 and placed == 6 * env.config.num_jobs


def test_mask_is_in_the_info_too(tiny_env: CuSHEnv) -> None:
    obs, info = tiny_env.reset(seed=0)
    np.testing.assert_array_equal(info["action_mask"], obs["action_mask"])
    obs, _, _, _, info = tiny_env.step([0, 0])
    np.testing.assert_array_equal(info["action_mask"], obs["action_mask"])
