"""What every single-agent formulation declares for the rest of the product: its baselines,
which run as whole simulations, its summary metrics, ``run_baselines`` with one signature,
and its baselines command (``platform/paper_baselines.py``)."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pytest

from envs.base import ConfiguredEnv
from envs.command import (
    BaselineCommand,
    CommandOption,
    forward_options,
    jobs_file_option,
    name_options_as_typed,
    titled_report,
)
from envs.registry import SINGLE_AGENT_ENVIRONMENTS, formulation, formulation_ids

#: A quick config per formulation.
SMALL: dict[str, dict[str, Any]] = {
    "podsched/DeepRM-v0": {},
    "podsched/CuSH-v0": {"nodes": 16},
    "podsched/SCED2-v0": {"servers": 3, "num_jobs": 30, "interval_scale": 0.2},
    "podsched/Contention-v0": {"num_jobs": 16, "job_hours": 0.5},
    "podsched/RLTAPS-v0": {
        "racks": (1, 1),
        "max_gpus_request": 6,
        "small_gpus": (1, 3),
        "large_gpus": (4, 6),
        "num_jobs": 20,
        "max_steps": 200,
    },
}


def test_every_formulation_has_a_short_name_and_a_small_config() -> None:
    assert set(formulation_ids().values()) == set(SINGLE_AGENT_ENVIRONMENTS) == set(SMALL)
    assert formulation("deeprm") is formulation("podsched/DeepRM-v0")
    with pytest.raises(ValueError, match="no single-agent baselines for environment"):
        formulation("pod_scheduling_v0")


@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_the_contract(env_id: str) -> None:
    environment = formulation(env_id)
    assert issubclass(environment, ConfiguredEnv)
    assert environment.baselines and set(environment.simulated_baselines) <= set(
        environment.baselines
    )
    assert isinstance(environment.command, BaselineCommand)
    # One signature: tune/ calls every formulation the same way.
    assert inspect.signature(environment.run_baselines) == inspect.signature(
        ConfiguredEnv.run_baselines
    )
    played = environment.run_baselines([3, 4], environment.baselines[:1], SMALL[env_id])
    (episodes,) = played.values()
    assert len(episodes) == 2
    for episode in episodes:
        assert {"episode_return", "truncated", *environment.summary_metrics} <= set(episode)
        assert episode["truncated"] in (0.0, 1.0)
    # Same seeds, same episodes.
    again = environment.run_baselines([3, 4], environment.baselines[:1], SMALL[env_id])
    assert _same(again, played)
    with pytest.raises(ValueError, match="unknown baseline"):
        environment.run_baselines([3], ["no-such-baseline"], SMALL[env_id])


def _same(first: Any, second: Any) -> bool:
    """Equal, with NaN equal to NaN."""
    if isinstance(first, dict):
        return first.keys() == second.keys() and all(_same(first[k], second[k]) for k in first)
    if isinstance(first, list):
        return len(first) == len(second) and all(map(_same, first, second))
    if isinstance(first, float) and math.isnan(first):
        return isinstance(second, float) and math.isnan(second)
    return first == second


@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_every_config_reads_a_mapping_and_names_unknown_keys(env_id: str) -> None:
    config_class = formulation(env_id).config_class
    config = config_class.from_dict(SMALL[env_id])
    assert config == config_class(**SMALL[env_id])
    assert config.with_overrides() == config
    with pytest.raises(ValueError, match=rf"unknown {config_class.label} parameter\(s\) bogus"):
        config_class.from_dict({"bogus": 1})
    with pytest.raises(ValueError, match=rf"unknown {config_class.label} parameter\(s\) bogus"):
        config.with_overrides(bogus=1)
    with pytest.raises(ValueError, match=rf"^an? {config_class.label} config must be a mapping"):
        config_class.from_dict([("bogus", 1)])


@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_stepping_an_ended_episode_says_to_reset(env_id: str) -> None:
    env = formulation(env_id)(SMALL[env_id])
    env.reset(seed=0)
    env.action_space.seed(0)
    ended = False
    for _ in range(100_000):
        *_, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            ended = True
            break
    assert ended
    with pytest.raises(RuntimeError, match=r"the episode is over; call reset\(\) before step\(\)"):
        env.step(env.action_space.sample())


def test_a_command_forwards_its_options_and_reports_a_titled_summary(tmp_path) -> None:
    calls = []

    def runner(policy: str, **params: Any) -> dict[str, Any]:
        calls.append((policy, params))
        return {"avg_jct": 12.345678, "jobs": 3}

    run = forward_options(runner, "seed", optional=("nodes", "queue"))
    jobs = tmp_path / "jobs.json"
    jobs.write_text('[{"arrival": 0}]')
    options = {"policy": "sjf", "seed": 4, "nodes": None, "queue": 2, "jobs_file": jobs}
    summary = run(options)
    # Optional options left out keep the runner's defaults; the jobs file is read as JSON.
    assert calls == [("sjf", {"seed": 4, "queue": 2, "jobs": [{"arrival": 0}]})]
    run({**options, "jobs_file": None})
    assert calls[-1][1]["jobs"] is None
    report = titled_report("{policy} from seed {seed}:", ("avg_jct", "missing", "jobs"))
    assert report(summary, options).splitlines() == [
        "sjf from seed 4:",
        f"  {'avg_jct':<26}12.35",
        f"  {'jobs':<26}3",
    ]


OPTIONS = (
    CommandOption("--num-jobs", "jobs", 10, type=int),
    CommandOption("--nodes", "nodes", 4, type=int),
    CommandOption("--queue-size", "Q", type=int),
    CommandOption("--num-nw", "slots", 5, type=int),
    jobs_file_option(),
)


@pytest.mark.parametrize(
    ("message", "typed"),
    [
        (
            "num_jobs must be at most 10,000,000 (more would not fit in memory), got 100,000,000",
            "--num-jobs must be at most 10,000,000 (more would not fit in memory), got 100,000,000",
        ),
        ("nodes must be an integer >= 1, got 0", "--nodes must be an integer >= 1, got 0"),
        (
            "the image would have 9 x 9 cells; lower queue_size or the number of nodes",
            "the image would have 9 x 9 cells; lower --queue-size or the number of nodes",
        ),
        # A plain word inside a sentence is English; a flag keeps its spelling; a longer
        # key that only starts with an option's name is another key.
        ("CuSH needs nodes of one size", "CuSH needs nodes of one size"),
        ("--num-nw must be >= 1, got 0", "--num-nw must be >= 1, got 0"),
        ("num_jobs_total must be >= 1", "num_jobs_total must be >= 1"),
    ],
)
def test_an_option_is_named_as_typed(message: str, typed: str) -> None:
    assert name_options_as_typed(message, OPTIONS) == typed


def test_a_command_names_the_option_or_the_jobs_file_of_an_error(tmp_path) -> None:
    """``sced2 --num-jobs 100000000`` said "num_jobs must be at most ...", a name the user
    never typed; with ``--jobs-file`` every error, ``--nodes 0``'s too, was put on the file."""
    problem: list[Exception] = []

    def summarize(options: dict[str, Any]) -> dict[str, Any]:
        raise problem[0]

    command = BaselineCommand("test", summarize, lambda summary, options: "", OPTIONS)
    jobs = tmp_path / "jobs.json"
    given = {"jobs_file": None}
    for error, with_file, message in (
        (ValueError("num_jobs must be at most 10"), False, "--num-jobs must be at most 10"),
        (ValueError("nodes must be >= 1, got 0"), True, "--nodes must be >= 1, got 0"),
        (ValueError("--num-nw must be >= 1"), True, "--num-nw must be >= 1"),
        (ValueError("job 0: gpus must be >= 1"), True, f"{jobs}: job 0: gpus must be >= 1"),
        (ValueError(f"{jobs}: not a JSON job list"), True, f"{jobs}: not a JSON job list"),
        (ValueError("job 0: gpus must be >= 1"), False, "job 0: gpus must be >= 1"),
        (KeyError("arrival"), True, f"{jobs}: 'arrival'"),
    ):
        problem[:] = [error]
        with pytest.raises(ValueError) as raised:
            command.run({**given, "jobs_file": jobs if with_file else None})
        assert str(raised.value) == message
    problem[:] = [KeyError("arrival")]
    with pytest.raises(KeyError):  # no jobs file: a bug, not a bad file
        command.run(given)
