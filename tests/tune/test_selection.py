"""Choosing the trained policy on validation seeds (tune/selection.py), in-process."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from envs.pod.env import PodSchedulingEnv
from tune.evaluation import evaluate
from tune.experiment import config_from_dict
from tune.selection import Candidate, checkpoint_candidates, select

ENV = {
    "topology": "racks",
    "topology_params": {"racks": [2, 2]},
    "num_jobs": 6,
    "reward": "jct",
    "horizon_intervals": 30,
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
    chosen, scores = select(experiment(greedy), candidates)
    # Each score is the candidate's mean avg JCT over the validation seeds, as evaluate()
    # reports it for the same mode.
    for candidate in candidates:
        table = evaluate("pod_scheduling_v0", ENV, [21, 22], [], candidate.modules, greedy=greedy)
        (row,) = table.values()
        # NaN when no job finished (an untrained greedy policy may only ever wait).
        assert scores[candidate.label] == pytest.approx(row["metrics"]["avg_jct"], nan_ok=True)
    assert scores["a"] == pytest.approx(scores["a again"], nan_ok=True)
    # NaN ranks last; equal scores go to the earlier candidate.
    ranked = {label: math.inf if math.isnan(v) else v for label, v in scores.items()}
    expected = "a" if ranked["a"] <= ranked["b"] else "b"
    assert chosen.label == expected and chosen.modules == {"shared": chosen.path}


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
