"""The hindsight search over static priorities (:mod:`envs.schedulers.priority_search`):
its ordering plays the table's own schedules, it starts from DSIF's, never ends above it,
and what it returns is a schedule the environment plays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envs import make_env
from envs.pod.bounds import pod_jct_lower_bound, pod_priority_search
from envs.pod.heuristic import HeuristicPodPolicy
from envs.schedulers import Scheduler, make_scheduler
from envs.schedulers.priority_search import FixedPriorities, play, search_priorities
from envs.sim import Simulator
from envs.sim.runner import simulate

# The demo's fabric under three times its load: queues form, so order and patience matter.
CONFIG = {
    "topology": "fat-tree",
    "topology_params": {"k": 4},
    "server": "mixed",
    "workload": "poisson",
    "workload_params": {"rate": 10.0},
    "num_jobs": 30,
}


def _inputs(seed: int = 0) -> tuple[Any, Any, Any]:
    env = make_env("pod_scheduling_v0", **CONFIG)
    env.reset(seed=seed, options={"masks_only": True})
    return env.cluster, env.workload, env.sim.config


def _sif_ranks(cluster: Any, workload: Any, config: Any) -> np.ndarray:
    ideal = Simulator(cluster, workload, config).ideal_duration
    return np.argsort(np.argsort(ideal, kind="stable"), kind="stable").astype(float)


@pytest.mark.parametrize(("patient", "heuristic"), [(True, "dsif-patient"), (False, "sif")])
def test_sif_ranks_play_the_table_schedule_job_for_job(patient: bool, heuristic: str) -> None:
    # Every job patient: DSIF's hold at 30 decisions; none: plain SIF.
    cluster, workload, config = _inputs()
    rank = _sif_ranks(cluster, workload, config)
    patience = np.full(len(workload), patient)
    fixed = Scheduler(FixedPriorities(rank, patience), make_scheduler("fifo+packing").placement)
    ours = simulate(cluster, workload, fixed, "fixed", config)
    theirs = simulate(cluster, workload, make_scheduler(f"{heuristic}+packing"), "h", config)
    np.testing.assert_array_equal(ours.jobs["finish"], theirs.jobs["finish"])
    np.testing.assert_array_equal(ours.jobs["first_start"], theirs.jobs["first_start"])


def test_the_search_never_ends_above_its_start_and_returns_what_it_played() -> None:
    cluster, workload, config = _inputs()
    result = search_priorities(cluster, workload, config, "quiet-packing", 40, seed=3)
    start = simulate(
        cluster, workload, make_scheduler("dsif-patient+quiet-packing"), "h", config
    ).metrics()["avg_jct"]
    assert result.start_avg_jct_s == start
    assert result.evaluations == 40
    assert np.all(np.diff(result.best_after) <= 0)
    assert result.avg_jct_s == result.best_after[-1] <= start
    assert sorted(result.rank) == list(range(len(workload)))  # an order of the jobs
    replayed = play(cluster, workload, config, "quiet-packing", result.rank, result.patient)
    assert replayed == result.avg_jct_s
    again = search_priorities(cluster, workload, config, "quiet-packing", 40, seed=3)
    assert again.avg_jct_s == result.avg_jct_s
    np.testing.assert_array_equal(again.rank, result.rank)


def test_the_pod_search_is_a_schedule_the_environment_plays_above_the_bound() -> None:
    # The environment's heuristic driver plays the table's schedules exactly; the found
    # order played through it gives the search's figure, above the lower bound.
    result = pod_priority_search(CONFIG, 1, "packing", 25)
    env = make_env("pod_scheduling_v0", **CONFIG)
    env.reset(seed=1, options={"masks_only": True})
    driver = HeuristicPodPolicy(env, "fifo+packing", seed=1)
    driver.scheduler = Scheduler(
        FixedPriorities(result.rank, result.patient), driver.scheduler.placement
    )
    while env.agents:
        env.step(driver.actions())
    jct = (env.sim.finish_time - env.sim.workload.arrival_time).mean()
    assert jct == pytest.approx(result.avg_jct_s, rel=1e-12)
    assert result.avg_jct_s >= pod_jct_lower_bound(CONFIG, 1).mean_jct_s


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"placement": "nearest"}, "unknown placement 'nearest'; placements: packing"),
        ({"evaluations": -1}, "evaluations must be an integer >= 0; got -1"),
        ({"evaluations": 2.5}, "evaluations must be an integer >= 0; got 2.5"),
        ({"temperature": -0.1}, "temperature must be a finite number >= 0; got -0.1"),
    ],
)
def test_bad_search_settings_are_refused(arguments: dict[str, Any], message: str) -> None:
    cluster, workload, config = _inputs()
    settings = {"placement": "packing", "evaluations": 1, **arguments}
    with pytest.raises(ValueError) as error:
        search_priorities(cluster, workload, config, **settings)
    assert message in str(error.value)


def test_ranks_and_patience_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match=r"got shapes \(3,\) and \(2,\)"):
        FixedPriorities(np.arange(3), np.ones(2, dtype=bool))
