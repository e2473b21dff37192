"""pod_scheduling_v0 in 001's setting: the interference coefficients it charges, and 001's
uniform arrivals kept exactly per scheduler with ``home: partition``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from envs.pod.config import PodSchedulingConfig
from envs.pod.env import PodSchedulingEnv
from envs.pod.heuristic import HeuristicPodPolicy
from envs.sim import INTERFERENCE_PRESETS, InterferenceCoefficients, SimulationResult

PAPER001 = Path(__file__).resolve().parents[3] / "tune" / "configs" / "paper001.yaml"


def play(env: PodSchedulingEnv, heuristic: str, seed: int) -> dict[str, float]:
    env.reset(seed=seed)
    driver = HeuristicPodPolicy(env, heuristic)
    while env.agents:
        env.step(driver.actions())
    return SimulationResult.from_simulator(env.sim, heuristic).metrics()


def test_the_simulator_charges_the_configured_coefficients() -> None:
    env = PodSchedulingEnv(num_jobs=10, interference_coefficients="paper001-fit")
    env.reset(seed=0)
    assert env.sim.config.coefficients == INTERFERENCE_PRESETS["paper001-fit"]
    given = PodSchedulingEnv(num_jobs=10, interference_coefficients={"a1": 0.2})
    given.reset(seed=0)
    assert given.sim.config.coefficients == InterferenceCoefficients(a1=0.2)
    assert PodSchedulingConfig().coefficients == InterferenceCoefficients()


def test_stronger_interference_slows_a_packing_schedule() -> None:
    """Same workload, same heuristic: the fitted set (a1, b1 x 3.17) costs fifo+tetris more
    time in the system than the default set, and the contention measure says why."""
    settings = {"num_jobs": 40, "workload": "uniform", "workload_params": {"jobs_per_interval": 4}}
    default = play(PodSchedulingEnv(**settings), "fifo+tetris", seed=3)
    fitted = play(
        PodSchedulingEnv(interference_coefficients="paper001-fit", **settings), "fifo+tetris", 3
    )
    assert fitted["jobs_finished"] == default["jobs_finished"] == 40
    assert fitted["avg_jct"] > default["avg_jct"]


def test_bad_coefficients_fail_at_config_time() -> None:
    with pytest.raises(ValueError, match="allowed: default, paper001-fit"):
        PodSchedulingConfig(interference_coefficients="strong")


def test_partition_homes_keep_the_configured_jobs_per_scheduler_and_interval() -> None:
    """001 §VI-B: 15 jobs per interval at every scheduler. With ``home: partition`` each of a
    k=4 fat-tree's 4 schedulers gets exactly 15 per 30-minute interval; with ``uniform``
    homes (drawn at random) the counts vary."""
    settings = {
        "workload": "uniform",
        "workload_params": {"jobs_per_interval": 15},
        "num_jobs": 120,
        "interval_s": 1800.0,
    }

    def counts(home: str, round_s: float = 1800.0, **params: float) -> np.ndarray:
        env = PodSchedulingEnv(
            home=home,
            **{
                **settings,
                "interval_s": round_s,
                "workload_params": {**settings["workload_params"], **params},
            },
        )
        env.reset(seed=5)
        interval = (env.workload.arrival_time // round_s).astype(int)
        table = np.zeros((interval.max() + 1, env.cluster.num_partitions), dtype=int)
        np.add.at(table, (interval, env.homes), 1)
        return table

    assert (counts("partition") == 15).all()
    assert counts("partition").shape == (2, 4)
    assert not (counts("uniform") == 15).all()
    # The rate is per the environment's interval: 15 per 10-minute round, not 15 per 30
    # minutes spread over three rounds (5 each, as it was).
    assert (counts("partition", round_s=600.0) == 15).all()
    # Unless the workload says otherwise: 15 per scheduler per 30 minutes, spread over
    # three 10-minute rounds.
    per_round = counts("partition", 600.0, interval_s=1800.0)
    assert per_round.shape == (6, 4) and (per_round.reshape(2, 3, 4).sum(axis=1) == 15).all()


def test_paper001_config_is_001s_setting() -> None:
    config = yaml.safe_load(PAPER001.read_text())["environment"]["config"]
    assert config["workload"] == "uniform"
    assert config["workload_params"] == {"jobs_per_interval": 15}
    assert config["home"] == "partition"
    assert config["interval_s"] == 1800


def test_the_experiment_yaml_key_reaches_the_environment() -> None:
    """``environment.config.interference_coefficients`` in an experiment YAML: checked with
    the rest of the config before Ray (preflight), a bad name named."""
    from tune.experiment import load_config
    from tune.preflight import check_experiment

    fitted = load_config(PAPER001, ["environment.config.interference_coefficients=paper001-fit"])
    check_experiment(fitted)
    env = PodSchedulingEnv(**fitted.environment.config)
    assert env.config.coefficients == INTERFERENCE_PRESETS["paper001-fit"]
    bad = load_config(PAPER001, ["environment.config.interference_coefficients=strong"])
    with pytest.raises(ValueError, match="allowed: default, paper001-fit"):
        check_experiment(bad)
