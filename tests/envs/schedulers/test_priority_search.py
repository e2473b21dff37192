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
from envs.schedulers.priority_search import (
    FixedPriorities,
    PerJobPlacement,
    play,
    search_priorities,
    starting_point,
    static_orderings,
)
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


@pytest.mark.parametrize("ordering", ["dsif-patient", "dsif", "sif", "spf-patient", "fifo"])
def test_each_starting_point_plays_its_heuristic_job_for_job(ordering: str) -> None:
    # Its static order and its hold rule: 30 decisions (patient), DSIF's 3, or none.
    cluster, workload, config = _inputs()
    rank, patient, patience = starting_point(cluster, workload, config, ordering)
    fixed = Scheduler(
        FixedPriorities(rank, patient, patience), make_scheduler("fifo+packing").placement
    )
    ours = simulate(cluster, workload, fixed, "fixed", config)
    theirs = simulate(cluster, workload, make_scheduler(f"{ordering}+packing"), "h", config)
    np.testing.assert_array_equal(ours.jobs["finish"], theirs.jobs["finish"])
    np.testing.assert_array_equal(ours.jobs["first_start"], theirs.jobs["first_start"])


def test_orders_that_change_during_the_run_cannot_start_a_search() -> None:
    cluster, workload, config = _inputs()
    with pytest.raises(ValueError) as error:
        starting_point(cluster, workload, config, "saf-patient")
    assert str(error.value).startswith(
        "the search cannot start from 'saf-patient': its order is not fixed in advance; "
        "orderings it can start from: fifo, sjf, sif, dsif, dsif-patient, lrf, spf,"
    )
    assert "saf" not in static_orderings() and "spf-patient" in static_orderings()
    with pytest.raises(ValueError, match="unknown ordering 'nope'"):
        starting_point(cluster, workload, config, "nope")


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
    replayed = play(
        cluster, workload, config, "quiet-packing", result.rank, result.patient, result.patience
    )
    assert replayed == result.avg_jct_s
    # From another heuristic of fixed order: never above that one.
    other = search_priorities(cluster, workload, config, "packing", 10, start="spf-patient")
    spf = simulate(cluster, workload, make_scheduler("spf-patient+packing"), "h", config)
    assert other.start == "spf-patient" and other.start_avg_jct_s == spf.metrics()["avg_jct"]
    assert other.avg_jct_s <= other.start_avg_jct_s
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
        FixedPriorities(result.rank, result.patient, result.patience), driver.scheduler.placement
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
        ({"also_placements": ("lif", "nearest")}, "unknown placement 'nearest'"),
        (
            {"also_placements": ("lif", "packing")},
            "placements repeat a name: packing, lif, packing; give each once",
        ),
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
    with pytest.raises(ValueError, match="patience must be a positive number of decisions"):
        FixedPriorities(np.arange(2), np.ones(2, dtype=bool), patience=0)


@pytest.mark.parametrize(("index", "name"), [(0, "packing"), (1, "lif")])
def test_a_placement_per_job_plays_the_chosen_placement_job_for_job(index: int, name: str) -> None:
    cluster, workload, config = _inputs()
    rank, patient, patience = starting_point(cluster, workload, config, "dsif-patient")
    ordering = FixedPriorities(rank, patient, patience)
    placements = [make_scheduler(f"fifo+{n}").placement for n in ("packing", "lif")]
    choice = np.full(len(workload), index)
    ours = simulate(
        cluster, workload, Scheduler(ordering, PerJobPlacement(placements, choice)), "x", config
    )
    theirs = simulate(cluster, workload, make_scheduler(f"dsif-patient+{name}"), "h", config)
    np.testing.assert_array_equal(ours.jobs["finish"], theirs.jobs["finish"])
    with pytest.raises(ValueError, match=r"one of the 2 placements \(0 .. 1\)"):
        PerJobPlacement(placements, np.full(len(workload), 2))


def test_a_search_over_placements_too_returns_what_it_played() -> None:
    cluster, workload, config = _inputs()
    names = ("lif", "locality")
    result = search_priorities(
        cluster, workload, config, "packing", 30, seed=1, also_placements=names
    )
    assert result.placements == ("packing", *names)
    assert result.placement_choice is not None
    assert set(result.placement_choice.tolist()) <= {0, 1, 2}
    assert result.avg_jct_s == result.best_after[-1] <= result.start_avg_jct_s
    replayed = play(
        cluster,
        workload,
        config,
        "packing",
        result.rank,
        result.patient,
        result.patience,
        result.placements,
        result.placement_choice,
    )
    assert replayed == result.avg_jct_s
    again = search_priorities(
        cluster, workload, config, "packing", 30, seed=1, also_placements=names
    )
    np.testing.assert_array_equal(again.placement_choice, result.placement_choice)
    # One placement: no choice returned, the search as it always was.
    alone = search_priorities(cluster, workload, config, "packing", 5, seed=1)
    assert alone.placements == ("packing",) and alone.placement_choice is None
