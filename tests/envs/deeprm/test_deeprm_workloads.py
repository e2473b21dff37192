"""Explicit DeepRM workloads: the replay format, its errors, files and replay()."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from envs.deeprm.baselines import replay
from envs.deeprm.config import DeepRMConfig
from envs.deeprm.core import RESULT_KEYS
from envs.deeprm.jobs import generate_sequence, load_jobs_file, parse_jobs

CONFIG = DeepRMConfig()


def job(arrival: int = 1, length: int = 2, res: object = (5, 1)) -> dict:
    return {"arrival_time": arrival, "len": length, "res": list(res)}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"job": []}, r'a DeepRM workload is \{"jobs": \[...\]\}'),
        ({"jobs": [], "name": "x"}, r"remove \['name'\]"),
        ("jobs", "jobs must be a list of job objects, got str"),
        ([3], "job 0 must be an object with keys"),
        ([{"arrival_time": 1, "len": 2}], "job 0: keys must be exactly .*; missing res"),
        ([{**job(), "model": "a"}], "job 0: keys must be exactly .*; unknown model"),
        ([job(arrival=0)], "job 0: arrival_time must be >= 1"),
        ([job(arrival=1.0)], "job 0: arrival_time must be an integer, got 1.0"),
        ([job(arrival=True)], "job 0: arrival_time must be an integer"),
        ([job(3), job(3)], "job 1: arrival_time 3 must be greater than the previous job's 3"),
        ([job(3), job(2)], r"at most one job per time step, in arrival order"),
        ([job(length=0)], "job 0: len must be in 1..max_job_len=15, got 0"),
        ([job(length=16)], "job 0: len must be in 1..max_job_len=15, got 16"),
        ([job(res=(5,))], "job 0: res must list num_res=2 demands, got 1"),
        ([job(res=(11, 1))], r"job 0: each res must be in 0..max_job_size=10, got \[11, 1\]"),
        ([job(res=(-1, 1))], "job 0: each res must be in 0..max_job_size=10"),
        ([job(res=(0, 0))], "job 0: res must demand at least one unit"),
        ([{**job(), "res": "51"}], "job 0: res must be a list of 2 integers"),
        ([job(1), job(2, res=(1, 2.5))], "job 1: res must be an integer, got 2.5"),
    ],
)
def test_bad_workloads_say_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_jobs(data, CONFIG)
    with pytest.raises(ValueError, match=message):
        replay(data, "sjf")


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    with pytest.raises(ValueError, match=r"broken\.json: not valid JSON"):
        load_jobs_file(broken, CONFIG)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"jobs": [job(arrival=0)]}))
    with pytest.raises(ValueError, match=r"wrong\.json: job 0: arrival_time must be >= 1"):
        load_jobs_file(wrong, CONFIG)


def test_files_and_sequences_round_trip(tmp_path: Path) -> None:
    generated = generate_sequence(CONFIG, np.random.default_rng(4))
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(generated.to_dict()))
    loaded = load_jobs_file(path, CONFIG)
    np.testing.assert_array_equal(loaded.arrival_times, generated.arrival_times)
    np.testing.assert_array_equal(loaded.lengths, generated.lengths)
    np.testing.assert_array_equal(loaded.sizes, generated.sizes)
    assert loaded.simu_len == int(generated.arrival_times[-1]) + 1
    # A JobSequence keeps its own simu_len (the no_new_job end depends on it).
    assert parse_jobs(generated, CONFIG).simu_len == CONFIG.simu_len


@pytest.mark.parametrize("policy", ["sjf", "packer", "random"])
def test_replay_finishes_every_job_and_the_return_is_minus_the_slowdowns(policy: str) -> None:
    jobs = generate_sequence(DeepRMConfig(simu_len=200), np.random.default_rng(1)).to_dict()
    result = replay(jobs, policy, seed=3)
    assert tuple(result) == RESULT_KEYS
    assert result == replay(jobs, policy, seed=3)
    arrivals = [j["arrival_time"] for j in result["jobs"]]
    assert arrivals == sorted(arrivals)
    assert set(arrivals) <= {j["arrival_time"] for j in jobs["jobs"]}
    assert len(result["jobs"]) + result["dropped"] == len(jobs["jobs"])
    lengths = {j["arrival_time"]: j["len"] for j in jobs["jobs"]}
    slowdowns = [
        (j["finish"] - j["arrival_time"]) / lengths[j["arrival_time"]] for j in result["jobs"]
    ]
    assert all(j["start"] >= j["arrival_time"] for j in result["jobs"])
    assert all(j["finish"] <= result["final_time"] for j in result["jobs"])
    assert result["mean_slowdown"] == pytest.approx(np.mean(slowdowns))
    assert result["max_slowdown"] == max(slowdowns)
    assert result["total_reward"] == pytest.approx(-sum(slowdowns))
    json.dumps(result)


def test_replay_num_nw_and_config_fields() -> None:
    jobs = [job(t, 1, (1, 1)) for t in range(1, 4)]
    always_void = lambda core, rng: core.config.num_nw  # noqa: E731
    result = replay(jobs, always_void, num_nw=1, backlog_size=1, max_steps=10)
    # Always void: J0 slot, J1 backlog, J2 dropped; truncated after 10 steps.
    assert result["dropped"] == 1
    assert result["steps"] == 10 and result["final_time"] == 10
    assert result["jobs"] == [
        {"arrival_time": 1, "start": None, "finish": None},
        {"arrival_time": 2, "start": None, "finish": None},
    ]
    assert result["mean_slowdown"] is None
    with pytest.raises(ValueError, match="num_nw must be an integer >= 1"):
        replay(jobs, "sjf", num_nw=0)
    with pytest.raises(ValueError, match=r"unknown DeepRM parameter\(s\) slots"):
        replay(jobs, "sjf", slots=3)
