"""Choosing the trained policy on validation seeds (tune/selection.py), in-process."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from envs.pod.env import PodSchedulingEnv
from tune.evaluation import evaluate
from tune.experiment import config_from_dict
from tune.selection import (
    WARM_START,
    Candidate,
    checkpoint_candidates,
    chosen_index,
    select,
    significantly_lower,
)

ENV = {
    "topology": "racks",
    "topology_params": {"racks": [2, 2]},
    "num_jobs": 6,
    "reward": "jct",
    "horizon_intervals": 10,
}
SMALL = {"hidden": 8, "inner_layers": 1, "inter_layers": 1, "encoder_hidden": 16, "head_hidden": 16}


def saved_module(folder: Path, seed: int) -> str:
    """A randomly initialised pod GNN for ENV, saved as a module folder."""
    import torch

    from models.rl_modules import PodGNNModule

    torch.manual_seed(seed)
    env = PodSchedulingEnv(**ENV)
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config=SMALL,
    )
    module.save_to_path(str(folder))
    return str(folder)


def experiment(greedy: bool) -> object:
    return config_from_dict(
        {
            "environment": {"config": ENV},
            "model": {"config": SMALL},
            "evaluation": {"validation_seeds": [21, 22], "greedy": greedy},
        }
    )


@pytest.mark.parametrize("greedy", [True, False])
def test_the_lowest_validation_jct_wins_and_ties_go_to_the_first(tmp_path, greedy) -> None:
    first = saved_module(tmp_path / "a", seed=1)
    second = saved_module(tmp_path / "b", seed=2)
    candidates = [
        Candidate("a", first, {"shared": first}),
        Candidate("b", second, {"shared": second}),
        Candidate("a again", first, {"shared": first}),
    ]
    chosen, scores, per_seed, unfinished = select(experiment(greedy), candidates)
    # Each score is the candidate's mean avg JCT over the validation seeds, as evaluate()
    # reports it for the same mode.
    for candidate in candidates:
        table = evaluate("pod_scheduling_v0", ENV, [21, 22], [], candidate.modules, greedy=greedy)
        (row,) = table.values()
        # NaN when no job finished (an untrained greedy policy may only ever wait).
        assert scores[candidate.label] == pytest.approx(row["metrics"]["avg_jct"], nan_ok=True)
        assert per_seed[candidate.label] == pytest.approx(
            [episode["avg_jct"] for episode in row["episodes"]], nan_ok=True
        )
        assert unfinished[candidate.label] == [
            seed
            for seed, episode in zip([21, 22], row["episodes"], strict=True)
            if episode["jobs_finished"] < episode["jobs_total"]
        ]
    assert scores["a"] == pytest.approx(scores["a again"], nan_ok=True)
    # Those that finished every job first (all if none did); NaN ranks last; equal scores
    # go to the earlier candidate.
    ranked = {label: math.inf if math.isnan(v) else v for label, v in scores.items()}
    eligible = [label for label in ("a", "b") if not unfinished[label]] or ["a", "b"]
    expected = min(eligible, key=lambda label: ranked[label])
    assert chosen.label == expected and chosen.modules == {"shared": chosen.path}


def test_a_paired_gain_counts_when_its_one_sided_bound_is_below_zero() -> None:
    # Differences -1, -2, -3: mean -2, sample sd 1, standard error 1/sqrt(3) = 0.577.
    # One-sided Student-t quantiles with 2 degrees of freedom: 2.920 (0.95), 6.965 (0.99),
    # so the bounds are -2 + 1.686 = -0.31 (below 0) and -2 + 4.021 = 2.02 (above).
    incumbent = [10.0, 10.0, 10.0]
    challenger = [9.0, 8.0, 7.0]
    assert significantly_lower(challenger, incumbent, 0.95)
    assert not significantly_lower(challenger, incumbent, 0.99)
    # Higher, equal, one seed, or a seed where no job finished: never.
    assert not significantly_lower(incumbent, challenger, 0.5)
    assert not significantly_lower(incumbent, incumbent, 0.5)
    assert not significantly_lower([1.0], [10.0], 0.5)
    assert not significantly_lower([1.0, math.nan], [10.0, 10.0], 0.5)
    # Equal differences (no spread) count when they are gains.
    assert significantly_lower([9.0, 9.0], [10.0, 10.0], 0.999)


def test_the_warm_start_stays_unless_a_checkpoint_is_significantly_better() -> None:
    warm = [10.0, 10.0, 10.0]
    # The lowest mean (8.33), from one lucky seed: differences -5, 0, 0, whose bound
    # (mean -1.67, standard error 1.67, quantile 4.30 at 1 - 0.05 / 2) is far above 0.
    lucky = [5.0, 10.0, 10.0]
    # Higher mean (9.0) but lower on every seed: differences -1, -0.9, -1.1, standard
    # error 0.058, bound -1 + 4.30 x 0.058 = -0.75.
    steady = [9.0, 9.1, 8.9]
    labels = [WARM_START, "lucky", "steady"]
    assert chosen_index(labels, [warm, lucky, steady], 0.95) == 2
    assert chosen_index(labels[:2], [warm, lucky], 0.95) == 0
    # Confidence 0, or no warm start first: the lowest mean.
    assert chosen_index(labels, [warm, lucky, steady], 0.0) == 1
    assert chosen_index(["a", "lucky", "steady"], [warm, lucky, steady], 0.95) == 1
    # A warm start that left a job unfinished defends nothing: the JCT metrics count such
    # a job's time so far (finite), so select() says so; NaN (no job arrived) too.
    assert chosen_index(labels, [warm, lucky, steady], 0.95, [True, False, False]) == 1
    # Flattered the same way, a checkpoint never replaces a warm start that finished
    # everything (steady is significantly lower, but left a job), nor is it the lowest
    # mean among the others (lucky's 8.33 is skipped for steady's 9.0).
    assert chosen_index(labels, [warm, lucky, steady], 0.95, [False, False, True]) == 0
    assert chosen_index(labels, [warm, lucky, steady], 0.0, [False, True, False]) == 2
    assert chosen_index(labels, [warm, lucky, steady], 0.95, [True, True, False]) == 2
    # When every candidate left one, all compete again under the usual rule.
    assert chosen_index(labels, [warm, lucky, steady], 0.95, [True] * 3) == 2
    assert chosen_index(labels[:2], [warm, lucky], 0.95, [True] * 2) == 0
    with pytest.raises(ValueError, match="2 unfinished flags for 3 candidates"):
        chosen_index(labels, [warm, lucky, steady], 0.95, [True, False])
    assert chosen_index(labels, [[10.0, math.nan, 10.0], lucky, steady], 0.95) == 1
    # Among significant checkpoints the lowest mean wins, the earlier of equals.
    better = [8.0, 8.1, 7.9]
    assert chosen_index([*labels, "better"], [warm, lucky, steady, better], 0.95) == 3
    assert chosen_index([*labels, "same"], [warm, lucky, steady, steady], 0.95) == 2


def test_candidates_list_the_warm_start_then_checkpoints_in_order(tmp_path) -> None:
    for name in ("checkpoint_000001", "checkpoint_000000"):
        (tmp_path / "trial" / name / "learner_group" / "learner" / "rl_module" / "shared").mkdir(
            parents=True
        )
    checkpoints = [str(tmp_path / "trial" / n) for n in ("checkpoint_000001", "checkpoint_000000")]
    candidates = checkpoint_candidates(checkpoints, ["shared"], str(tmp_path / "warm"))
    assert [c.label for c in candidates] == [
        "warm start",
        "trial/checkpoint_000000",
        "trial/checkpoint_000001",
    ]
    assert candidates[0].modules == {"shared": str(tmp_path / "warm")}
    assert (
        candidates[1]
        .modules["shared"]
        .endswith("checkpoint_000000/learner_group/learner/rl_module/shared")
    )


def test_nothing_to_select_is_an_error() -> None:
    with pytest.raises(ValueError, match="no candidate policies"):
        select(experiment(True), [])
    empty = config_from_dict({"environment": {"config": ENV}})
    with pytest.raises(ValueError, match="validation_seeds is empty"):
        select(empty, [Candidate("x", "x", {"shared": "x"})])


def tune_result(folder: Path, *kept: tuple[str, float, int]) -> Any:
    """A trial's ``ray.tune.Result`` as Tune's ResultGrid builds it: every kept checkpoint
    (a ``ray.tune.Checkpoint`` of the folder ``folder / label``, as RLlib's Trainable saves
    it) with the training result it was saved with, in the order kept; the last is the
    latest (``Result.checkpoint``, the same object)."""
    from ray import tune as ray_tune

    best_checkpoints = []
    for name, score, iteration in kept:
        (folder / name).mkdir(parents=True)
        metrics = {"env_runners": {"episode_return_mean": score}, "training_iteration": iteration}
        best_checkpoints.append((ray_tune.Checkpoint.from_directory(folder / name), metrics))
    latest, metrics = best_checkpoints[-1]
    return ray_tune.Result(
        metrics=metrics,
        checkpoint=latest,
        error=None,
        path=str(folder / Path(kept[0][0]).parent),
        best_checkpoints=best_checkpoints,
    )


def label(checkpoint: Any, folder: Path) -> str:
    """A checkpoint's folder relative to ``folder`` (``tune_result``'s label)."""
    return Path(checkpoint.path).relative_to(folder).as_posix()


def test_the_best_scored_checkpoint_of_all_trials(tmp_path: Path) -> None:
    from tune.selection import best_scored_checkpoint

    results = [
        tune_result(tmp_path, ("a/1", -3.0, 1), ("a/2", -1.5, 2)),
        tune_result(tmp_path, ("b/1", float("nan"), 1), ("b/2", -1.5, 3), ("b/3", -4.0, 4)),
    ]
    key = "env_runners/episode_return_mean"

    def best(order: str) -> tuple[str, float]:
        checkpoint, value = best_scored_checkpoint(results, key, order)
        # The very object Tune kept, not a copy.
        assert any(checkpoint is kept for r in results for kept, _ in r.best_checkpoints)
        return label(checkpoint, tmp_path), value

    # -1.5 twice: the later iteration (b/2, iteration 3) wins; NaN never does.
    assert best("max") == ("b/2", -1.5)
    assert best("min") == ("b/3", -4.0)
    with pytest.raises(ValueError, match=r"no kept checkpoint reported 'env_runners/x'"):
        best_scored_checkpoint(results, "env_runners/x", "max")


def test_checkpoints_are_kept_by_the_declared_score(tmp_path: Path) -> None:
    from tune.experiment import ConfigError
    from tune.rllib_config import algorithm_config
    from tune.runs import make_tuner

    experiment = config_from_dict({"checkpoint": {"score": "episode_len_mean", "order": "min"}})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tuner = make_tuner(experiment, algorithm_config(experiment), str(tmp_path), uri)
    checkpoints = tuner._local_tuner._run_config.checkpoint_config
    assert checkpoints.checkpoint_score_attribute == "env_runners/episode_len_mean"
    assert checkpoints.checkpoint_score_order == "min"
    assert config_from_dict({}).checkpoint.score_key is None  # the latest are kept
    declared = config_from_dict({"checkpoint": {"score": "episode_return_mean"}})
    assert declared.checkpoint.score_key == "env_runners/episode_return_mean"
    with pytest.raises(ConfigError, match=r"checkpoint.score='reward'; allowed: episode_return"):
        config_from_dict({"checkpoint": {"score": "reward"}})


def test_a_trial_keeps_its_best_scored_checkpoint_or_its_latest(tmp_path: Path) -> None:
    from tune.selection import trial_checkpoint

    key = "env_runners/episode_return_mean"
    result = tune_result(tmp_path, ("t/1", -2.0, 1), ("t/2", -0.5, 2), ("t/3", -1.0, 3))
    assert label(trial_checkpoint(result, key, "max"), tmp_path) == "t/2"
    assert label(trial_checkpoint(result, key, "min"), tmp_path) == "t/1"
    latest = trial_checkpoint(result, None, "max")  # no declared score
    assert label(latest, tmp_path) == "t/3" and latest is result.checkpoint


def test_an_episode_with_jobs_unfinished_is_told_apart_by_its_counts() -> None:
    """The selection cannot tell an unfinished job from the avg JCT (censored: finite), so
    it reads the episode's job counts (SimulationResult.metrics)."""
    import numpy as np

    from envs.sim.metrics import SimulationResult
    from tune.selection import left_jobs_unfinished

    def metrics(finish: list[float]) -> dict:
        count = len(finish)
        jobs = {
            key: np.zeros(count) for key in ("arrival", "first_start", "preemptions", "job_id")
        } | {
            key: np.ones(count)
            for key in (
                "ideal_duration",
                "run_time",
                "gpus",
                "contention",
                "gpu_seconds",
                "servers",
            )
        }
        jobs["finish"] = np.array(finish)
        timeline = {
            key: np.zeros(1)
            for key in ("time", "busy_gpus", "queue_length", "running", "fragmentation")
        }
        timeline["mean_contention"] = np.zeros(1)
        return SimulationResult("p", jobs, timeline, 4, 100.0).metrics()

    unfinished = metrics([10.0, 20.0, math.nan])  # the horizon (100 s) cut the third job
    assert math.isfinite(unfinished["avg_jct"]) and unfinished["avg_jct"] == pytest.approx(130 / 3)
    assert left_jobs_unfinished(unfinished)
    assert not left_jobs_unfinished(metrics([10.0, 20.0, 30.0]))


def test_clones_are_scored_on_their_own_seeds_not_the_validation_seeds(tmp_path) -> None:
    """choose_clone plays each clone on warm_start.clone_seeds: every score is the clone's
    mean avg JCT there, as evaluate() reports it, and the chosen clone the lowest."""
    from tune.selection import choose_clone

    clones = [saved_module(tmp_path / "a", seed=1), saved_module(tmp_path / "b", seed=2)]
    config = config_from_dict(
        {
            "environment": {"config": ENV},
            "model": {"config": SMALL},
            "evaluation": {"validation_seeds": [21, 22], "greedy": True},
            "warm_start": {"restarts": 2, "clone_seeds": [23, 24], "seeds_from": 100000},
        }
    )
    chosen, scores = choose_clone(config, clones)

    def mean_jct(path: str, seeds: list[int]) -> float:
        (row,) = evaluate(
            "pod_scheduling_v0", ENV, seeds, [], {"shared": path}, greedy=True
        ).values()
        return row["metrics"]["avg_jct"]

    on_clone_seeds = {path: mean_jct(path, [23, 24]) for path in clones}
    assert scores == pytest.approx(on_clone_seeds, nan_ok=True)
    ranked = {p: math.inf if math.isnan(v) else v for p, v in on_clone_seeds.items()}
    assert chosen == min(clones, key=lambda path: ranked[path])
    # Other workloads than the validation seeds': the scores there differ.
    assert any(
        mean_jct(path, [21, 22]) != pytest.approx(on_clone_seeds[path], nan_ok=True)
        for path in clones
    )
