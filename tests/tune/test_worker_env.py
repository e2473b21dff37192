"""Short OpenMP spin waits for podsched's processes and Ray workers (tune.worker_env), a
fixed string hash seed for the workers, and runtime environments that merge with a
submitted job's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ray.runtime_env.runtime_env import _merge_runtime_env

from tune.worker_env import (
    DEFAULT_HASH_SEED,
    DEFAULT_SPIN_COUNT,
    HASH_SEED_VARIABLE,
    JOB_CONFIG_VARIABLE,
    WAIT_VARIABLES,
    bound_spin_waits,
    job_env_vars,
    worker_env_vars,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def nothing_chosen(monkeypatch):
    """No wait setting or hash seed in the environment and no submitted job."""
    for name in (*WAIT_VARIABLES, HASH_SEED_VARIABLE, JOB_CONFIG_VARIABLE):
        monkeypatch.delenv(name, raising=False)


def _submitted_job(monkeypatch, env_vars: dict[str, str]) -> None:
    """This process as the driver of a job whose runtime environment sets ``env_vars``
    (what Ray's job manager puts in the driver's environment)."""
    job = {"runtime_env": {"working_dir": "/srv/podsched", "env_vars": env_vars}}
    monkeypatch.setenv(JOB_CONFIG_VARIABLE, json.dumps(job))
    for name, value in env_vars.items():
        monkeypatch.setenv(name, value)


def test_workers_get_the_short_spin_the_hash_seed_and_the_extra_variables(
    nothing_chosen,
) -> None:
    assert (DEFAULT_SPIN_COUNT, DEFAULT_HASH_SEED) == ("10000", "0")
    assert worker_env_vars({"MLFLOW_TRACKING_URI": "http://m:5000"}) == {
        "GOMP_SPINCOUNT": "10000",
        "PYTHONHASHSEED": "0",
        "MLFLOW_TRACKING_URI": "http://m:5000",
    }


@pytest.mark.parametrize("seed", ["123", "random"])
def test_a_hash_seed_the_user_exported_is_kept(nothing_chosen, monkeypatch, seed) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", seed)
    assert worker_env_vars()["PYTHONHASHSEED"] == seed


@pytest.mark.parametrize(
    "chosen",
    [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "0"}, {"OMP_WAIT_POLICY": "PASSIVE"}],
)
def test_a_wait_setting_the_user_exported_is_kept(nothing_chosen, monkeypatch, chosen) -> None:
    for name, value in chosen.items():
        monkeypatch.setenv(name, value)
    bound_spin_waits()
    assert {name: os.environ.get(name) for name in WAIT_VARIABLES if name in os.environ} == chosen
    assert worker_env_vars() == {**chosen, "PYTHONHASHSEED": "0"}


def test_this_process_spins_briefly_when_nothing_chose(nothing_chosen) -> None:
    bound_spin_waits()
    assert os.environ["GOMP_SPINCOUNT"] == "10000"
    assert "OMP_WAIT_POLICY" not in os.environ


def test_variables_a_submitted_job_sets_are_left_to_it(nothing_chosen, monkeypatch) -> None:
    # README's cluster path: `ray job submit --runtime-env-json
    # '{"env_vars": {"MLFLOW_TRACKING_URI": ...}}'`; train.py then resolves the same URI.
    job_vars = {"MLFLOW_TRACKING_URI": "http://mlflow:5000", "GOMP_SPINCOUNT": "50"}
    _submitted_job(monkeypatch, job_vars)
    assert job_env_vars() == job_vars
    ours = worker_env_vars({"MLFLOW_TRACKING_URI": "http://mlflow:5000", "EXTRA": "1"})
    assert ours == {"PYTHONHASHSEED": "0", "EXTRA": "1"}
    job = json.loads(os.environ[JOB_CONFIG_VARIABLE])["runtime_env"]
    # Ray's own merge (what ray.init does in a job's driver) accepts ours and keeps the
    # job's values; it refuses (None) the same variable from both sides.
    merged = _merge_runtime_env(job, {"env_vars": ours})
    assert merged["env_vars"] == {**job_vars, "PYTHONHASHSEED": "0", "EXTRA": "1"}
    assert _merge_runtime_env(job, {"env_vars": {"MLFLOW_TRACKING_URI": "x"}}) is None


def test_a_job_without_env_vars_gets_the_short_spin(nothing_chosen, monkeypatch) -> None:
    monkeypatch.setenv(JOB_CONFIG_VARIABLE, json.dumps({"runtime_env": {"working_dir": "/w"}}))
    assert job_env_vars() == {}
    assert worker_env_vars() == {"GOMP_SPINCOUNT": "10000", "PYTHONHASHSEED": "0"}


def test_a_local_ray_started_by_the_programs_gives_its_workers_the_short_spin() -> None:
    # A process of its own: Ray starts once per process, and this test's Ray must be the
    # one tune.runs.start_ray starts.
    program = (
        "import os, ray\n"
        "from tune.runs import start_ray\n"
        "start_ray()\n"
        "seen = ray.get(ray.remote(lambda: os.environ.get('GOMP_SPINCOUNT')).remote())\n"
        "print('worker:', seen)\n"
        "print('hash:', ray.get(ray.remote(lambda: hash('scheduler_0')).remote()))\n"
        "ray.shutdown()\n"
    )
    # The driver chose no hash seed (a random one per process), so the workers' hash can
    # only match a process started with PYTHONHASHSEED=0 through the runtime environment.
    expected = subprocess.run(
        [sys.executable, "-c", "print(hash('scheduler_0'))"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
    ).stdout.strip()
    env = {key: value for key, value in os.environ.items() if key not in WAIT_VARIABLES}
    env.pop(JOB_CONFIG_VARIABLE, None)
    env.pop("PYTHONHASHSEED", None)
    # A short session folder: Ray's unix sockets live there (108-byte path limit).
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as session:
        env.update(RAY_ADDRESS="", PYTHONPATH=str(ROOT), RAY_TMPDIR=session)
        result = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=180
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "worker: 10000" in result.stdout.splitlines()
    assert f"hash: {expected}" in result.stdout.splitlines()
