"""The pod environment's held-out evaluation: the full heuristic table, the learned policy
played greedily and sampled, and the statistics of every row (in this process, no Ray)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.pod.env import PodSchedulingEnv
from envs.schedulers import scheduler_names
from envs.sim import SimulationResult
from envs.sim.metrics import concatenate_job_times
from tune.confidence import mean_ci
from tune.evaluation import add_statistics, evaluate, run_episode, summary
from tune.evaluation.single_agent import baseline_names
from tune.experiment import (
    ALL_BASELINES,
    POD_HEURISTICS_EXCLUDED,
    ConfigError,
    config_from_dict,
    pod_heuristic_names,
)

# One scheduler on four servers, a few jobs, a short horizon: an untrained module's greedy
# episode (it sends jobs back to wait) ends at the horizon within seconds.
SMALL = {
    "topology": "flat",
    "topology_params": {"servers": 4},
    "num_jobs": 4,
    "horizon_intervals": 4,
}
POD = "pod_scheduling_v0"


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> dict[str, str]:
    """An untrained shared GNN module saved as a checkpoint (its actions are arbitrary but
    fixed, and its argmax and samples differ)."""
    import torch

    from models.rl_modules import PodGNNModule

    env = PodSchedulingEnv(**SMALL)
    torch.manual_seed(0)
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config={"hidden": 4, "inner_layers": 1, "inter_layers": 1},
    )
    path = tmp_path_factory.mktemp("module") / "shared"
    module.save_to_path(str(path))
    return {"shared": str(path)}


def test_all_means_every_combination_the_driver_runs() -> None:
    experiment = config_from_dict({"evaluation": {"baselines": ALL_BASELINES}})
    names = experiment.evaluation.baselines_for(POD)
    assert names == pod_heuristic_names() == scheduler_names().combinations()
    assert not POD_HEURISTICS_EXCLUDED
    assert {"fifo+packing", "las+lif", "srtf+tetris", "dsif+locality", "random+random"} <= set(
        names
    )
    # A formulation's "all" is every baseline of its paper.
    sced2 = {"environment": {"name": "podsched/SCED2-v0"}, "model": {"name": "deeprm"}}
    experiment = config_from_dict({**sced2, "evaluation": {"baselines": "all"}})
    # (test_evaluation.py spells the SCED2 list out; here: the same as the paper's table.)
    assert experiment.evaluation.baselines_for("podsched/SCED2-v0") == list(
        baseline_names("podsched/SCED2-v0")
    )


def test_bad_baselines_fail_with_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match=r"evaluation.baselines must be a list of names or 'all'"):
        config_from_dict({"evaluation": {"baselines": "everything"}})
    with pytest.raises(ConfigError, match=r"evaluation.baselines must be a list of names or 'all'"):
        config_from_dict({"evaluation": {"baselines": [1, 2]}})
    with pytest.raises(ConfigError, match=r"evaluation.baselines: unknown ordering 'fifo2'"):
        config_from_dict({"evaluation": {"baselines": ["fifo2+packing"]}})
    with pytest.raises(ConfigError, match=r"evaluation.greedy must be true or false"):
        config_from_dict({"evaluation": {"greedy": "yes"}})
    for confidence in (1.0, -0.1, True, "0.95"):
        with pytest.raises(
            ConfigError, match=r"evaluation.selection_confidence must be a probability in \[0, 1\)"
        ):
            config_from_dict({"evaluation": {"selection_confidence": confidence}})
    assert config_from_dict({"evaluation": {}}).evaluation.selection_confidence == 0.95


def test_every_heuristic_of_the_full_table_plays_to_the_end() -> None:
    # The claim behind POD_HEURISTICS_EXCLUDED being empty, on a small episode. Ten times
    # SMALL's horizon: the patient orderings hold jobs past SMALL's four intervals (with
    # lif's spread placements, drf-patient and lrf-patient finished none in four).
    table = evaluate(POD, {**SMALL, "horizon_intervals": 40}, [0], pod_heuristic_names())
    assert list(table) == pod_heuristic_names()
    assert all(entry["metrics"]["jobs_total"] == 4 for entry in table.values())
    assert all(entry["metrics"]["jobs_finished"] == 4 for entry in table.values())


def test_a_heuristic_row_is_the_episode_the_driver_plays_with_advice_on() -> None:
    # run_episode plays heuristic rows on masks-only observations; the driver, which reads
    # the simulator and not the observations, plays the same episode with them in full.
    from envs import make_env
    from envs.pod.heuristic import HeuristicPodPolicy

    config = {
        "topology": "fat-tree",
        "topology_params": {"k": 4},
        "num_jobs": 24,
        "advice": "saf-patient+locality",
    }
    env = make_env(POD, **config)
    env.reset(seed=3)
    driver = HeuristicPodPolicy(env, "fifo+packing", seed=3)
    episode_return, advised_steps = 0.0, 0
    while env.agents:
        observations, rewards, *_ = env.step(driver.actions())
        episode_return += float(sum(rewards.values()))
        advised_steps += sum(int(obs["advice"].any()) for obs in observations.values())
    assert advised_steps > 0  # the advice was computed and seen on this path
    row = run_episode(POD, config, 3, "fifo+packing")
    assert row["jct"] == SimulationResult.from_simulator(env.sim, "fifo+packing").job_times()
    assert row["episode_return"] == episode_return


def same_episode(first: dict, second: dict) -> None:
    """Two plays of one episode took the same actions (the same jobs' times, unfinished
    jobs' times so far included)."""
    assert first["jct"] == second["jct"]
    assert first["episode_return"] == second["episode_return"]


def test_the_learned_policy_plays_greedy_and_sampled_rows(modules) -> None:
    seeds = [3, 4]
    table = add_statistics(evaluate(POD, SMALL, seeds, ["fifo+packing"], modules))
    assert list(table) == ["learned-greedy", "learned-sampled", "fifo+packing"]
    plays = {}
    for row, greedy in (("learned-greedy", True), ("learned-sampled", False)):
        plays[row] = [run_episode(POD, SMALL, seed, "learned", modules, greedy) for seed in seeds]
        same_episode(
            table[row],
            {
                "jct": concatenate_job_times([play["jct"] for play in plays[row]]),
                "episode_return": np.mean([play["episode_return"] for play in plays[row]]),
            },
        )
        assert [episode["episode_return"] for episode in table[row]["episodes"]] == [
            play["episode_return"] for play in plays[row]
        ]
        assert table[row]["seeds"] == seeds and table[row]["kind"] == "learned"
    # The untrained module's argmax and its samples act differently.
    assert table["learned-greedy"]["episode_return"] != table["learned-sampled"]["episode_return"]
    # Statistics over the per-seed episodes, the mean as the table's.
    entry = table["fifo+packing"]
    mean, half_width = mean_ci([episode["avg_jct"] for episode in entry["episodes"]])
    assert entry["metrics"]["avg_jct"] == pytest.approx(mean)
    assert entry["ci95"]["avg_jct"] == pytest.approx(half_width, nan_ok=True)
    assert entry["kind"] == "heuristic"


def test_in_process_evaluation_keeps_the_greedy_mode(modules) -> None:
    # Without Ray, evaluate() used to drop greedy=True and sample anyway.
    greedy = evaluate(POD, SMALL, [3], [], modules, greedy=True)
    assert list(greedy) == ["learned-greedy"]
    argmax = run_episode(POD, SMALL, 3, "learned", modules, greedy=True)
    sampled = run_episode(POD, SMALL, 3, "learned", modules, greedy=False)
    assert argmax["episode_return"] != sampled["episode_return"]
    same_episode(greedy["learned-greedy"], argmax)
    assert list(evaluate(POD, SMALL, [3], [], modules, greedy=False)) == ["learned-sampled"]


def test_one_default_mode_for_the_config_and_for_play(modules) -> None:
    # A config that leaves evaluation.greedy out summarizes the row a bare play acts as.
    assert config_from_dict({}).evaluation.greedy is True
    default = run_episode(POD, SMALL, 3, "learned", modules)
    same_episode(default, run_episode(POD, SMALL, 3, "learned", modules, greedy=True))
    table = {
        "learned-greedy": {"metrics": {"avg_jct": 1.0}, "episodes": []},
        "learned-sampled": {"metrics": {"avg_jct": 2.0}, "episodes": []},
    }
    info = summary(config_from_dict({"environment": {"config": SMALL}}), add_statistics(table))
    assert info["learned"] == "learned-greedy"


def test_summary_names_the_best_heuristic_and_the_learned_row() -> None:
    baselines = ["fifo+tetris", "fifo+packing", "random+random"]
    table = evaluate(POD, SMALL, [3, 4], baselines)
    # Learned rows with known figures: the summary compares, it does not play.
    for row, avg_jct in (("learned-greedy", 1000.0), ("learned-sampled", 2000.0)):
        table[row] = {"metrics": {"avg_jct": avg_jct}, "episodes": []}
    table = add_statistics(table)
    means = {name: table[name]["metrics"]["avg_jct"] for name in baselines}
    best = min(means, key=means.get)
    for greedy, learned in ((False, "learned-sampled"), (True, "learned-greedy")):
        experiment = config_from_dict(
            {
                "environment": {"config": SMALL},
                "evaluation": {"seeds": [3, 4], "baselines": baselines, "greedy": greedy},
            }
        )
        info = summary(experiment, table)
        assert info["best_heuristic"] == best and info["heuristics"] == 3
        assert info["learned"] == learned
        assert info["relative_to_best"][best] == 0.0
        assert info["relative_to_best"][learned] == pytest.approx(
            table[learned]["metrics"]["avg_jct"] / means[best] - 1
        )
        # Rows without per-seed episodes cannot be paired; heuristics on the same seeds are.
        assert all(math.isnan(value) for value in info["paired_to_best"][learned])
        other = next(name for name in baselines if name != best)
        per_seed = [
            (mine["avg_jct"] - theirs["avg_jct"]) / theirs["avg_jct"]
            for mine, theirs in zip(table[other]["episodes"], table[best]["episodes"], strict=True)
        ]
        assert info["paired_to_best"][other][0] == pytest.approx(sum(per_seed) / 2)
        assert best not in info["paired_to_best"]


def test_a_learned_pod_policy_plays_another_topology(tmp_path) -> None:
    """Transfer without retraining: a pod GNN saved for a fat-tree k=4 plays a VL2 cluster
    (other paddings, targets and schedulers) with the same weights, every job finishing."""
    import torch

    from models.rl_modules import PodGNNModule
    from tune.evaluation import fit_to_spaces

    small = {"hidden": 8, "inner_layers": 1, "inter_layers": 1, "head_hidden": 16}
    trained_on = PodSchedulingEnv(num_jobs=6, room_features=True)
    torch.manual_seed(0)
    module = PodGNNModule(
        observation_space=trained_on.observation_space("scheduler_0"),
        action_space=trained_on.action_space("scheduler_0"),
        model_config=small,
    )
    # An untrained network's greedy choice is "wait" at every step for about half of its
    # random initialisations (19 of 40 seeds here), and such a policy finishes no job on
    # any cluster. With waiting scored below every legal placement or forward, every job
    # finishing is what the transferred weights do on VL2, not what the draw did.
    with torch.no_grad():
        module.net.wait_head[-1].bias.fill_(-100.0)
    module.save_to_path(str(tmp_path / "shared"))
    vl2 = {
        "topology": "vl2",
        "topology_params": {"k": 8, "servers_per_tor": 2},
        "num_jobs": 6,
        "room_features": True,
    }
    target = PodSchedulingEnv(**vl2)
    assert target.observation_space("scheduler_0") != trained_on.observation_space("scheduler_0")
    rebuilt = fit_to_spaces(
        module, target.observation_space("scheduler_0"), target.action_space("scheduler_0")
    )
    for name, weight in module.state_dict().items():
        assert torch.equal(weight, rebuilt.state_dict()[name]), name
    episode = run_episode(
        "pod_scheduling_v0", vl2, 7, "learned-greedy", {"shared": str(tmp_path / "shared")}
    )
    assert episode["metrics"]["jobs_finished"] == 6
