"""platform/train.py, tune/sweep.py and platform/evaluate.py for real: Ray, Tune, MLflow.

Each test runs the programs as a user does (subprocesses), on the tiny experiment of
tests/data/configs/tiny.yaml, with MLflow in a temporary sqlite store or a real
``mlflow server``, and a real ``ray start --head`` for ``ray job submit``. Services are
stopped by their own process ids.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "configs" / "tiny.yaml"
PYTHON = sys.executable
BIN = Path(PYTHON).parent


def run_program(script: str, *args: str, timeout: int = 600, env: dict | None = None):
    return subprocess.run(
        [PYTHON, str(ROOT / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def runs_of(uri: str, experiment: str) -> list:
    mlflow_client = client(uri)
    found = mlflow_client.get_experiment_by_name(experiment)
    assert found is not None, f"no MLflow experiment {experiment!r}"
    return mlflow_client.search_runs([found.experiment_id])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_bad_config_fails_before_ray_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.read_text().replace("lr", "learning_rate") + "\nalgorithm: {lr: 5}\n")
    ray_tmp = tmp_path / "ray"  # where a Ray started by the program would put its session
    result = run_program(
        "platform/train.py",
        *("--config", str(bad), "--storage", str(tmp_path / "results")),
        env={"RAY_TMPDIR": str(ray_tmp), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1 and "algorithm.lr must be in (0, 1), got 5" in result.stderr
    )
    assert "Ray" not in result.stdout + result.stderr
    assert not ray_tmp.exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "environment.config.reward=jtc",
            "environment.config (pod_scheduling_v0): reward='jtc'; allowed: progress, jct, "
            "contention",
        ),
        (
            "algorithm.extra.clip_parm=0.3",
            "algorithm.extra.clip_parm is not a PPO training setting (did you mean clip_param?)",
        ),
        # No machine here has 64 GPUs: the trial would wait for them forever.
        ("resources.num_gpus_per_learner=64", "resources: one trial needs 64 GPUs"),
        # MLflow would refuse it at the first run it logs, after training.
        (
            "tracking.tracking_uri=file:///tmp/podsched-mlruns",
            "tracking.tracking_uri='file:///tmp/podsched-mlruns' is MLflow's file store",
        ),
    ],
    ids=["environment", "algorithm", "resources", "tracking"],
)
def test_nested_config_mistakes_fail_before_ray_starts(
    tmp_path: Path, override: str, expected: str
) -> None:
    ray_tmp = tmp_path / "ray"  # where a Ray started by the program would put its session
    result = run_program(
        "platform/train.py",
        *("--config", str(TINY), "--storage", str(tmp_path / "results"), "--set", override),
        env={"RAY_TMPDIR": str(ray_tmp), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"train.py: error: {expected}")
    assert not ray_tmp.exists() and not (tmp_path / "results").exists()


def test_output_folders_that_cannot_be_made_fail_before_ray(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    ray_tmp = tmp_path / "ray"
    for arguments, environment, expected in (
        (("--storage", str(blocker / "s")), {}, f"--storage {blocker / 's'}: {blocker} is a file"),
        (
            ("--storage", str(tmp_path / "results")),
            {"PODSCHED_RESULTS": str(blocker / "r")},
            f"cannot create the results folder {blocker / 'r'} (Not a directory)",
        ),
    ):
        result = run_program(
            "platform/train.py",
            *("--config", str(TINY), *arguments),
            env={
                "RAY_TMPDIR": str(ray_tmp),
                "RAY_ADDRESS": "",
                "MLFLOW_TRACKING_URI": "",
                **environment,
            },
        )
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1
        assert result.stderr.startswith(f"train.py: error: {expected}")
    assert not ray_tmp.exists()


@pytest.mark.parametrize("script", ["platform/train.py", "platform/evaluate.py", "tune/sweep.py"])
def test_a_mistyped_flag_is_one_line(script: str) -> None:
    result = run_program(script, "--config", str(TINY), "--seeed", "3")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{Path(script).name}: error: unrecognized arguments: --seeed 3"
    ]


def test_resuming_nothing_fails_before_ray_and_the_warm_start(tmp_path: Path) -> None:
    # A mistyped storage folder: no interrupted run there to resume. The demo's warm start
    # would retrain its clone first; the one line comes before it and before Ray.
    ray_tmp = tmp_path / "ray"
    storage = tmp_path / "typo"
    result = run_program(
        "platform/train.py",
        *("--config", "tune/configs/demo.yaml", "--storage", str(storage), "--resume"),
        env={"RAY_TMPDIR": str(ray_tmp), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"train.py: error: --resume: no interrupted experiment at {storage / 'demo'}"
    ]
    assert not ray_tmp.exists() and not storage.exists()  # no clone trained into it


def test_resuming_no_sweep_fails_before_ray_and_mlflow(tmp_path: Path) -> None:
    # The same for a sweep: no parent run is opened (and marked FAILED) in MLflow.
    ray_tmp, storage, store = tmp_path / "ray", tmp_path / "typo", tmp_path / "mlflow.db"
    result = run_program(
        "tune/sweep.py",
        *("--config", "tune/configs/sced2_dqn.yaml", "--storage", str(storage), "--resume"),
        *("--set", f"tracking.tracking_uri=sqlite:///{store}"),
        env={"RAY_TMPDIR": str(ray_tmp), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"sweep.py: error: --resume: no interrupted experiment at {storage / 'sced2-dqn-sweep'}"
    ]
    assert not ray_tmp.exists() and not storage.exists() and not store.exists()


def test_a_resource_warning_comes_before_the_resource_check(tmp_path: Path) -> None:
    # Helper processes beyond each remote runner's CPU: a warning line, then the error of a
    # trial no machine here fits (65 CPUs), so no Ray starts.
    result = run_program(
        "platform/train.py",
        *("--config", str(TINY), "--storage", str(tmp_path / "results")),
        *("--set", "resources.num_env_runners=64", "--set", "resources.num_envs_per_env_runner=2"),
        *("--set", "resources.env_processes=2"),
        env={"RAY_TMPDIR": str(tmp_path / "ray"), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2
    warning, error = result.stderr.splitlines()
    assert warning.startswith(
        "train.py: warning: resources.env_processes=2 with num_env_runners=64"
    )
    assert error.startswith("train.py: error: resources: one trial needs 65 CPUs")
    assert not (tmp_path / "ray").exists()


def test_the_tracking_store_is_checked_before_the_preflight(tmp_path: Path) -> None:
    # Both are wrong: the store is judged first (milliseconds; the preflight imports RLlib
    # and builds the environment and the model).
    result = run_program(
        "platform/train.py",
        *("--config", str(TINY), "--storage", str(tmp_path / "results")),
        *("--set", "tracking.tracking_uri=file:///tmp/podsched-mlruns"),
        *("--set", "environment.config.reward=jtc"),
        env={"RAY_TMPDIR": str(tmp_path / "ray"), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2
    assert "is MLflow's file store" in result.stderr and "reward" not in result.stderr


@pytest.mark.integration
def test_training_logs_runs_params_metrics_and_artifacts(tmp_path: Path, sqlite_uri: str) -> None:
    uri = sqlite_uri
    # Storage as a URI Tune accepts: passed through untouched.
    storage = f"file://{tmp_path / 'results'}"
    result = run_program(
        "platform/train.py",
        *("--config", str(TINY), "--storage", storage, "--json"),
        *("--set", f"tracking.tracking_uri={uri}"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # --json: stdout is the one object; Tune's progress went to stderr meanwhile.
    assert len(result.stdout.splitlines()) == 1
    assert "Trial status:" in result.stderr
    # Tune gets the algorithm's class: naming it made Tune import every RLlib algorithm,
    # and DreamerV3's CartPole printed Gymnasium space warnings that read as podsched's.
    assert "not within the observation space" not in result.stderr
    assert "precision lowered" not in result.stderr
    payload = last_json(result.stdout)
    assert Path(payload["checkpoint"]).is_dir()
    assert Path(payload["checkpoint"]).is_relative_to(tmp_path / "results" / "tiny")
    assert payload["tracking_uri"] == uri and payload["experiment"] == "tiny"
    # The learned policy plays greedily and sampled: two rows.
    assert set(payload["policies"]) == {"learned-greedy", "learned-sampled", "fifo+packing"}
    assert payload["summary"]["best_heuristic"] == "fifo+packing"
    # tiny.yaml leaves evaluation.greedy out: the summary compares the greedy row.
    assert payload["summary"]["learned"] == "learned-greedy"
    assert payload["evaluation"]["fifo+packing"]["per_seed"]["jobs_finished"] == [8]
    assert payload["policies"]["fifo+packing"]["jobs_finished"] == 8
    runs = runs_of(uri, "tiny")
    training = [run for run in runs if run.data.tags.get("stage") != "evaluation"]
    evaluation = {
        run.data.tags["policy"]: run for run in runs if run.data.tags.get("stage") == "evaluation"
    }
    assert len(training) == 1
    assert set(evaluation) == {"learned-greedy", "learned-sampled", "fifo+packing"}
    train_run = training[0]
    assert train_run.data.params["algorithm.train_batch_size"] == "200"
    assert train_run.data.tags["topology"] == "fat-tree"
    history = client(uri).get_metric_history(train_run.info.run_id, "episode_return_mean")
    assert [metric.step for metric in history] == [1, 2]
    # The same metric names for the learned policy and the heuristic: comparable in the UI
    # (the bound's only where it bounds the row, below).
    learned = evaluation["learned-greedy"]
    bound_keys = {"lower_bound_avg_jct", "lower_bound_avg_jct_ci95"}
    assert set(learned.data.metrics) - bound_keys == (
        set(evaluation["fifo+packing"].data.metrics) - bound_keys
    )
    assert {"avg_jct", "avg_jct_ci95"} <= set(evaluation["fifo+packing"].data.metrics)
    assert evaluation["fifo+packing"].data.tags["best_heuristic"] == "true"
    # The workloads' lower bound on avg JCT sits beside the avg JCT of every row that
    # finished its jobs (the heuristic here), below it; a row that left jobs unfinished at
    # the horizon (a policy trained two iterations may) is named and carries no bound.
    summary = payload["summary"]
    bound = summary["lower_bound"]["avg_jct"]
    assert "fifo+packing" not in summary["lower_bound_unbounded"]
    for policy, run in evaluation.items():
        if policy in summary["lower_bound_unbounded"]:
            assert "lower_bound_avg_jct" not in run.data.metrics
            continue
        assert run.data.metrics["lower_bound_avg_jct"] == pytest.approx(bound)
        # A schedule that meets the bound (every job at its first round, free of
        # contention) equals it up to float rounding.
        assert bound <= payload["policies"][policy]["avg_jct"] * (1 + 1e-9)
    # Artifacts next to the MLflow store, not in ./mlruns of the program's folder.
    assert learned.info.artifact_uri.startswith((tmp_path / "mlartifacts" / "tiny").as_uri())
    artifacts = {a.path for a in client(uri).list_artifacts(learned.info.run_id)}
    assert artifacts == {
        "config.yaml",
        "learning_curve.png",
        "jct_cdf.png",
        "evaluation.csv",
        "evaluation.json",
        "checkpoint.txt",
        "policy",
    }
    # The checkpoint evaluated is the kept one with the best declared score
    # (checkpoint.score: episode_return_mean, max); both iterations' were kept.
    [trial] = (tmp_path / "results" / "tiny").glob("PPO_*")
    returns = [
        json.loads(line)["env_runners"]["episode_return_mean"]
        for line in (trial / "result.json").open()
    ]
    best_iteration = max(range(len(returns)), key=lambda i: (returns[i], i))
    assert Path(payload["checkpoint"]).name == f"checkpoint_{best_iteration:06d}"
    # Every evaluation run links the policy, which loads without Ray and acts as the
    # checkpoint's module does.
    policy_uri = f"runs:/{learned.info.run_id}/policy"
    assert {run.data.tags["policy_artifacts"] for run in evaluation.values()} == {policy_uri}
    assert_policy_matches_checkpoint(uri, policy_uri, Path(payload["checkpoint"]), tmp_path)
    # evaluate.py fetches that policy by its URI and plays the held-out workload again:
    # the greedy policy's schedule, so its metrics, are training's evaluation's.
    again = run_program(
        "platform/evaluate.py",
        *("--config", str(TINY), "--checkpoint", policy_uri, "--no-ray", "--json"),
        *("--set", f"tracking.tracking_uri={uri}", "--baselines", "fifo+packing"),
    )
    assert again.returncode == 0, again.stderr[-3000:]
    replayed = last_json(again.stdout)["policies"]
    for policy in ("learned-greedy", "fifo+packing"):
        assert replayed[policy]["avg_jct"] == pytest.approx(payload["policies"][policy]["avg_jct"])


def assert_policy_matches_checkpoint(
    uri: str, policy_uri: str, checkpoint: Path, tmp_path: Path
) -> None:
    """The logged policy, loaded from MLflow with :func:`tune.policy_artifact.load_policy`,
    gives the checkpoint's module's outputs on the same observation; Ray never starts."""
    import mlflow
    import numpy as np
    import torch
    import tree
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    from envs import make_env
    from tune.experiment import load_config
    from tune.policy_artifact import load_policy

    folder = mlflow.artifacts.download_artifacts(
        policy_uri, dst_path=str(tmp_path / "download"), tracking_uri=uri
    )
    modules = load_policy(folder)
    assert list(modules) == ["shared"]
    reference = RLModule.from_checkpoint(
        str(checkpoint / "learner_group" / "learner" / "rl_module" / "shared")
    )
    experiment = load_config(TINY)
    env = make_env(experiment.environment.name, **experiment.environment.config)
    observations, _ = env.reset(seed=5)
    batch = tree.map_structure(
        lambda value: torch.as_tensor(np.asarray(value)[None]),
        observations[env.possible_agents[0]],
    )
    with torch.no_grad():
        loaded = modules["shared"].forward_inference({Columns.OBS: batch})
        expected = reference.forward_inference({Columns.OBS: batch})
    logits = loaded[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(logits, expected[Columns.ACTION_DIST_INPUTS])
    # In a fresh process (this one may hold the suite's Ray), loading starts no Ray.
    check = (
        "import ray; from tune.policy_artifact import load_policy; "
        f"load_policy({folder!r}); assert not ray.is_initialized()"
    )
    fresh = subprocess.run([PYTHON, "-c", check], capture_output=True, text=True, cwd=ROOT)
    assert fresh.returncode == 0, fresh.stderr[-2000:]


@pytest.mark.integration
def test_validation_chooses_among_the_warm_start_and_the_checkpoints(
    tmp_path: Path, sqlite_uri: str
) -> None:
    uri = sqlite_uri
    overrides = [
        f"tracking.tracking_uri={uri}",
        "evaluation.validation_seeds=[300, 301]",
        # Sampled: the tiny untrained policy's argmax may only ever wait (NaN scores).
        "evaluation.greedy=false",
        "warm_start={heuristic: fifo+packing, episodes: 2, heldout_episodes: 1, epochs: 2, "
        "restarts: 2, clone_seeds: [310, 311]}",
    ]
    result = run_program(
        "platform/train.py",
        *("--config", str(TINY), "--storage", str(tmp_path / "results"), "--json"),
        *[arg for override in overrides for arg in ("--set", override)],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    payload = last_json(result.stdout)
    validation = payload["summary"]["validation"]
    scores = validation["avg_jct"]
    # Two clones played their own seeds before PPO (not the validation seeds, where the
    # chosen one is then the incumbent); the one with the lowest avg JCT was copied to
    # where PPO and --resume start from.
    clones = dict(
        re.findall(r"warm start (clone-\d): clone-seed avg JCT ([\d.]+) h", result.stderr)
    )
    assert sorted(clones) == ["clone-0", "clone-1"]
    [chosen_clone] = re.findall(r"warm start (clone-\d): .* \(chosen\)", result.stderr)
    assert float(clones[chosen_clone]) == min(map(float, clones.values()))
    assert sorted(validation["clones"]) == ["clone-0", "clone-1"]
    assert validation["clones"][chosen_clone] / 3600 == pytest.approx(
        float(clones[chosen_clone]), abs=6e-4
    )
    assert validation["clone_seeds"] == [310, 311] and validation["seeds"] == [300, 301]
    clone_dir = tmp_path / "results" / "warm_start" / "tiny-clones" / chosen_clone
    saved_files = [path for path in clone_dir.rglob("*") if path.is_file()]
    assert any(path.name == "module_state.pkl" for path in saved_files)
    for saved in saved_files:
        copied = tmp_path / "results" / "warm_start" / "tiny" / saved.relative_to(clone_dir)
        assert copied.read_bytes() == saved.read_bytes()
    # The warm-start module and both kept checkpoints (iterations 1 and 2) competed.
    assert next(iter(scores)) == "warm start"
    assert sorted(label.rsplit("/", 1)[-1] for label in list(scores)[1:]) == [
        "checkpoint_000000",
        "checkpoint_000001",
    ]
    # The evaluated policy: the warm start unless a checkpoint's per-seed JCT is lower with
    # the default confidence (tune.selection.chosen_index, tested by hand-derived cases).
    assert validation["seeds"] == [300, 301] and validation["selection_confidence"] == 0.95
    from tune.evaluation import finite_mean
    from tune.selection import chosen_index

    per_seed = validation["per_seed_avg_jct"]
    assert list(per_seed) == list(scores)
    for label, values in per_seed.items():
        assert len(values) == 2
        assert scores[label] == pytest.approx(finite_mean(values), nan_ok=True)
    labels = list(per_seed)
    unfinished = validation["unfinished_seeds"]
    assert list(unfinished) == labels and all(set(v) <= {300, 301} for v in unfinished.values())
    best_label = labels[
        chosen_index(
            labels,
            [per_seed[label] for label in labels],
            0.95,
            [bool(unfinished[label]) for label in labels],
        )
    ]
    chosen = Path(validation["chosen"])
    assert payload["checkpoint"] == validation["chosen"] and chosen.is_dir()
    if best_label == "warm start":
        assert chosen == tmp_path / "results" / "warm_start" / "tiny"
    else:
        assert chosen.name == best_label.rsplit("/", 1)[-1]
    # Its (sampled) validation score is reproduced by playing it again on the same seeds.
    from tune.evaluation import evaluate

    module_dir = (
        chosen
        if best_label == "warm start"
        else (chosen / "learner_group" / "learner" / "rl_module" / "shared")
    )
    env_config = {
        "topology": "fat-tree",
        "topology_params": {"k": 4},
        "workload": "poisson",
        "workload_params": {"rate": 2.0},
        "num_jobs": 8,
        "reward": "jct",
        "horizon_intervals": 60,
    }
    again = evaluate(
        "pod_scheduling_v0", env_config, [300, 301], [], {"shared": str(module_dir)}, greedy=False
    )
    assert again["learned-sampled"]["metrics"]["avg_jct"] == pytest.approx(scores[best_label])
    evaluation = [
        run for run in runs_of(uri, "tiny") if run.data.tags.get("policy") == "learned-sampled"
    ]
    artifacts = {a.path for a in client(uri).list_artifacts(evaluation[0].info.run_id)}
    assert "validation.json" in artifacts


@pytest.mark.integration
def test_resume_after_killing_the_driver(tmp_path: Path, sqlite_uri: str) -> None:
    storage = tmp_path / "results"
    args = [
        "--config",
        str(TINY),
        "--storage",
        str(storage),
        "--skip-evaluation",
        "--stop-iters",
        "4",
    ]
    args += ["--set", f"tracking.tracking_uri={sqlite_uri}"]
    driver = subprocess.Popen(
        [PYTHON, str(ROOT / "platform" / "train.py"), *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not list(storage.glob("tiny/*/checkpoint_000001")):
            assert driver.poll() is None, "training ended before it could be interrupted"
            assert time.monotonic() < deadline, "no second checkpoint in time"
            time.sleep(0.5)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and the local Ray it started
        driver.wait()
    checkpoints_before = sorted(p.name for p in storage.glob("tiny/*/checkpoint_*"))
    resumed = run_program("platform/train.py", *args, "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    trial = next(storage.glob("tiny/PPO_*"))
    iterations = [json.loads(line)["training_iteration"] for line in (trial / "result.json").open()]
    assert iterations[-1] == 4
    # Nothing was lost beyond the last checkpoint: the resumed trial continued from it.
    assert set(range(1, 5)) <= set(iterations)
    assert "checkpoint_000001" in checkpoints_before
    runs = runs_of(sqlite_uri, "tiny")
    assert len(runs) == 1  # the resumed trial kept logging into its run
    steps = client(sqlite_uri).get_metric_history(runs[0].info.run_id, "episode_return_mean")
    # Iterations repeated from the last checkpoint are not logged twice.
    assert sorted(metric.step for metric in steps) == [1, 2, 3, 4]
    assert runs[0].info.status == "FINISHED"


def ctrl_c_after_first_checkpoint(
    script: str, args: list[str], experiment_folder: Path, tmp_path: Path
) -> tuple[int, str, str]:
    """Run ``script`` and press Ctrl-C (SIGINT to the driver) once a trial of
    ``experiment_folder`` has its first checkpoint: its exit status, stdout and stderr."""
    # Files, not pipes: nobody reads a pipe while the test waits, and a full one blocks.
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("w") as stdout_file, err.open("w") as stderr_file:
        driver = subprocess.Popen(
            [PYTHON, str(ROOT / script), *args],
            cwd=ROOT,
            stdout=stdout_file,
            stderr=stderr_file,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while not list(experiment_folder.glob("*/checkpoint_000000")):
            assert driver.poll() is None, f"{script} ended before it could be interrupted"
            assert time.monotonic() < deadline, "no first checkpoint in time"
            time.sleep(0.5)
        driver.send_signal(signal.SIGINT)
        driver.wait(timeout=300)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    return driver.returncode, out.read_text(), err.read_text()


@pytest.mark.integration
def test_ctrl_c_ends_the_run_killed_and_evaluates_nothing(tmp_path: Path, sqlite_uri: str) -> None:
    storage, uri = tmp_path / "results", sqlite_uri
    args = ["--config", str(TINY), "--storage", str(storage), "--stop-iters", "3"]
    args += ["--set", f"tracking.tracking_uri={uri}"]
    status, stdout, stderr = ctrl_c_after_first_checkpoint(
        "platform/train.py", [*args, "--json"], storage / "tiny", tmp_path
    )
    assert status == 130, stderr[-3000:]
    assert stdout == ""  # no result object for an unfinished training
    assert "train.py: training interrupted (1 trial(s) unfinished, the earliest at iteration" in (
        stderr
    )
    [run] = runs_of(uri, "tiny")  # the training run only: nothing was evaluated
    assert run.info.status == "KILLED"
    # (A resumed run RUNNING again, then FINISHED: tests/tune/test_mlflow_tracking.py;
    # resuming without duplicate steps: test_resume_after_killing_the_driver.)


def sweep_runs(uri: str, experiment: str, parent_id: str) -> tuple[list, list]:
    """The sweep's parent run(s) and its child (trial) runs."""
    runs = runs_of(uri, experiment)
    parents = [run for run in runs if run.data.tags.get("stage") == "sweep"]
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent_id]
    return parents, children


@pytest.mark.integration
def test_a_dqn_sweep_with_asha_and_optuna(tmp_path: Path, sqlite_uri: str) -> None:
    """The shipped DQN sweep (Optuna's TPE, ASHA) on a tiny budget: 2 trials x 2 iterations."""
    uri = sqlite_uri
    overrides = [
        f"tracking.tracking_uri={uri}",
        "stop.training_iteration=2",
        "sweep.num_samples=2",
        "sweep.scheduler_config.grace_period=1",
        "environment.config.num_jobs=50",
        "algorithm.extra.num_steps_sampled_before_learning_starts=100",
        # One replayed sample per sampled step (one update per 32 sampled steps instead of
        # per 4), in iterations of 250 env steps instead of DQN's 1,000.
        "algorithm.extra.training_intensity=1",
        "algorithm.min_env_steps_per_iteration=250",
    ]
    result = run_program(
        "tune/sweep.py",
        *("--config", str(ROOT / "tune" / "configs" / "sced2_dqn.yaml"), "--json"),
        *("--storage", str(tmp_path / "results")),
        *[arg for override in overrides for arg in ("--set", override)],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    payload = last_json(result.stdout)
    assert payload["status"] == "FINISHED" and len(payload["trials"]) == 2
    for row in payload["trials"]:
        assert row["trial"].startswith("DQN_") and row["error"] is None
        assert 1e-5 <= row["params"]["algorithm.lr"] <= 1e-3
        assert row["params"]["algorithm.gamma"] in (0.95, 0.99)
        assert row["params"]["algorithm.extra.target_network_update_freq"] in (500, 2000, 8000)
    best = max(payload["trials"], key=lambda row: row["metric"])
    assert payload["best_config"] == best["params"]
    assert Path(payload["best_checkpoint"]).is_dir()
    parents, children = sweep_runs(uri, "podsched-sced2", payload["parent_run_id"])
    assert [run.info.status for run in parents] == ["FINISHED"]
    assert (
        parents[0].data.tags["scheduler"] == "asha" and parents[0].data.tags["search"] == "optuna"
    )
    assert parents[0].data.metrics["best_episode_return_mean"] == best["metric"]
    assert sorted(run.info.status for run in children) == ["FINISHED", "FINISHED"]


#: The sweep interrupted and resumed: PBT perturbing at every iteration with one trial of two
#: in each quantile, so that it exploits often (tune/pbt.py). The hardest case of --resume:
#: trials restore from other trials' checkpoints. (The plain resume of a training, FIFO's
#: path, is test_resume_after_killing_the_driver's; a FIFO sweep case took 87 s more.)
RESUMED_SWEEP = (
    "scheduler: pbt, scheduler_config: {perturbation_interval: 1, quantile_fraction: 0.5}"
)


@pytest.mark.integration
def test_a_sweep_interrupted_and_resumed(tmp_path: Path, sqlite_uri: str) -> None:
    """Two trials over PPO's step size on the tiny experiment under PBT, interrupted (Ctrl-C)
    once a trial has its first checkpoint: the parent run ends KILLED and the program says
    how to go on; ``--resume`` finishes every trial (none failed) in the same parent and
    child runs, each iteration logged at most once."""
    uri = sqlite_uri
    sweep = (
        "sweep={space: {algorithm.lr: {loguniform: [1.0e-4, 1.0e-3]}}, num_samples: 2, "
        f"{RESUMED_SWEEP}}}"
    )
    storage = tmp_path / "results"
    args = ["--config", str(TINY), "--storage", str(storage), "--json"]
    args += ["--set", f"tracking.tracking_uri={uri}", "--set", sweep]
    args += ["--set", "stop.training_iteration=3"]
    status, _, stderr = ctrl_c_after_first_checkpoint(
        "tune/sweep.py", args, storage / "tiny-sweep", tmp_path
    )
    assert status == 130, stderr[-3000:]
    assert "continue with --resume" in stderr
    first = tiny_sweep_runs(uri)
    assert [run.info.status for run in first[0]] == ["KILLED"]
    resumed = run_program("tune/sweep.py", *args, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    payload = last_json(resumed.stdout)
    assert payload["status"] == "FINISHED"
    assert payload["parent_run_id"] == first[0][0].info.run_id  # the same parent run
    assert [row["error"] for row in payload["trials"]] == [None, None]
    assert [row["training_iteration"] for row in payload["trials"]] == [3, 3]
    # PBT perturbs a value by 0.8 or 1.2 at each of at most two exploits (iterations 1, 2).
    low, high = 1e-4 * 0.8**2, 1e-3 * 1.2**2
    assert all(low <= row["params"]["algorithm.lr"] <= high for row in payload["trials"])
    # tiny.yaml declares checkpoint.score: the best trial's best-scored kept checkpoint.
    assert payload["best_checkpoint_by"] == "env_runners/episode_return_mean"
    assert Path(payload["best_checkpoint"]).parent.name == payload["best_trial"]
    parents, children = tiny_sweep_runs(uri)
    assert len(parents) == 1 and parents[0].data.tags["scheduler"] == "pbt"
    assert parents[0].info.status == "FINISHED"
    assert sorted(run.info.status for run in children) == ["FINISHED", "FINISHED"]
    for run in children:  # the runs of before the interruption, continued
        steps = [
            m.step for m in client(uri).get_metric_history(run.info.run_id, "time_this_iter_s")
        ]
        # Each step once, up to the stop; a trial that cloned one further ahead goes on from
        # the clone's iteration, so PBT may skip a step.
        assert len(steps) == len(set(steps)) and min(steps) == 1 and max(steps) == 3


def tiny_sweep_runs(uri: str) -> tuple[list, list]:
    """The tiny experiment's sweep parent run(s) and all its trials' runs."""
    runs = runs_of(uri, "tiny")
    parents = [run for run in runs if run.data.tags.get("stage") == "sweep"]
    return parents, [run for run in runs if run.data.tags.get("stage") != "sweep"]


@pytest.mark.integration
def test_training_rides_out_an_mlflow_outage(tmp_path: Path, gated_mlflow) -> None:
    gate, uri = gated_mlflow  # training reaches a real server through the gate
    storage = tmp_path / "results"
    args = ["--config", str(TINY), "--storage", str(storage), "--stop-iters", "4"]
    args += ["--skip-evaluation", "--json", "--set", f"tracking.tracking_uri={uri}"]
    # Files, not pipes: nobody reads a pipe while the test waits, and a full one blocks.
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        driver = subprocess.Popen(
            [PYTHON, str(ROOT / "platform" / "train.py"), *args],
            cwd=ROOT,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )

    def iterations_done() -> int:
        lines = [line for path in storage.glob("tiny/*/result.json") for line in path.open()]
        return max((json.loads(line)["training_iteration"] for line in lines), default=0)

    try:
        deadline = time.monotonic() + 300
        while iterations_done() < 1:
            assert driver.poll() is None and time.monotonic() < deadline, "no first iteration"
            time.sleep(0.2)
        gate.close()  # the outage: the next two iterations go on without MLflow
        before = iterations_done()
        assert before < 3, "training finished before MLflow went down; nothing was tested"
        # Two: the first one's request (and MLflow's own retry) surely met the outage.
        while iterations_done() < before + 2:
            assert driver.poll() is None and time.monotonic() < deadline, "training stopped"
            time.sleep(0.2)
        gate.open()
        driver.wait(timeout=600)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    try:
        log = err.read_text()
        assert driver.returncode == 0, log[-3000:]
        assert f"MLflow: cannot reach {uri}" in log and "reachable again" in log
        assert len(out.read_text().splitlines()) == 1
        [run] = runs_of(uri, "tiny")
        assert run.info.status == "FINISHED"
        steps = client(uri).get_metric_history(run.info.run_id, "episode_return_mean")
        assert sorted(metric.step for metric in steps) == [1, 2, 3, 4]
    finally:
        gate.close()


@pytest.mark.integration
def test_ray_job_submit_on_a_real_head(tmp_path: Path, sqlite_uri: str) -> None:
    dashboard = free_port()
    # A short absolute folder of its own: Ray's unix sockets live there (108-byte limit).
    session_dir = Path(tempfile.mkdtemp(prefix="rayjob-", dir="/tmp"))
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",  # the job's `python` is this venv's
        "RAY_AUTH_MODE": "disabled",  # loopback only; token auth would need a client token
    }
    # Every port chosen free, so this head never collides with another Ray on the machine.
    ports = {
        option: str(free_port())
        for option in (
            "--port",
            "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port",
            "--runtime-env-agent-port",
            "--metrics-export-port",
            "--ray-client-server-port",
        )
    }
    log = tmp_path / "ray-start.log"  # a file, not a pipe: nobody reads a pipe while it runs
    with log.open("w") as log_file:
        # `--block`: this process stays the parent of everything the head starts, and stops
        # it all on SIGTERM; in a session of its own, its process group is the head's.
        head = subprocess.Popen(
            [
                str(BIN / "ray"),
                *("start", "--head", "--block", "--num-cpus", "2"),
                *("--node-ip-address", "127.0.0.1"),
                *(item for pair in ports.items() for item in pair),
                *("--include-dashboard", "true", "--dashboard-host", "127.0.0.1"),
                *("--dashboard-port", str(dashboard), "--temp-dir", str(session_dir)),
                "--disable-usage-stats",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            # No draining on SIGTERM: it waits up to 30 s for a job a failed test left.
            env={**env, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"},
            start_new_session=True,
        )
    started: list = []  # the head's processes, as psutil.Process (safe against pid reuse)
    try:
        # `ray start` writes the head's address into its --temp-dir once every process is
        # up: when `ray start` without --block would return.
        deadline = time.monotonic() + 180
        while not (session_dir / "ray_current_cluster").exists():
            assert not _exited(head.pid), f"ray start exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, (
                f"the head did not start in 180 s:\n{log.read_text()[-3000:]}"
            )
            time.sleep(0.5)
        started += _tree(head.pid)
        uri = sqlite_uri
        # The tracking URI in the job's runtime environment, as README "Running on a
        # cluster" submits it: train.py's own runtime environment must merge with it.
        job_env = {"env_vars": {"MLFLOW_TRACKING_URI": uri}}
        command = [
            str(BIN / "ray"),
            *("job", "submit", "--address", f"http://127.0.0.1:{dashboard}"),
            *("--working-dir", str(ROOT), "--runtime-env-json", json.dumps(job_env), "--"),
            *("python", "platform/train.py", "--config", "tests/data/configs/tiny.yaml"),
            *("--stop-iters", "1", "--storage", str(tmp_path / "results"), "--json"),
        ]
        deadline = time.monotonic() + 120
        while True:
            submit = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
            # The head's job agent comes up a few seconds after `ray start` is done.
            if (
                "No available agent" not in submit.stdout + submit.stderr
                or time.monotonic() > deadline
            ):
                break
            time.sleep(3)
        assert submit.returncode == 0, (submit.stdout + submit.stderr)[-3000:]
        from ray.job_submission import JobStatus, JobSubmissionClient

        jobs = JobSubmissionClient(f"http://127.0.0.1:{dashboard}").list_jobs()
        assert [job.status for job in jobs] == [JobStatus.SUCCEEDED]
        runs = runs_of(uri, "tiny")
        assert {"learned-sampled", "fifo+packing"} <= {run.data.tags.get("policy") for run in runs}
    finally:
        left = _stop_head(head, started)
        shutil.rmtree(session_dir, ignore_errors=True)
    assert not left, f"processes of the head outlived its stop: {left}"


def _exited(pid: int) -> bool:
    """Whether the child ``pid`` has ended, without reaping it: until it is reaped its pid,
    and so its process group's id, cannot be reused by another process."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _tree(pid: int) -> list:
    """The process ``pid`` and its descendants now, as psutil.Process."""
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        process = psutil.Process(pid)
        return [process, *process.children(recursive=True)]
    return []


def _stop_head(head: subprocess.Popen, started: list) -> list[str]:
    """Stop the head that ``ray start --head --block`` (``head``, in a session of its own)
    runs, and every process of it known by pid: ``started`` and its descendants now.
    Returns those still alive afterwards, as "pid name"."""
    import psutil

    ours = {process.pid: process for process in [*started, *_tree(head.pid)]}
    # Its SIGTERM handler stops every process it started (no draining: see the env), exits.
    # (os.kill, not Popen.send_signal, which would reap an exited head.)
    os.kill(head.pid, signal.SIGTERM)
    deadline = time.monotonic() + 90
    while not _exited(head.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    # Whatever is left in its process group (its id is still ours: `ray start` is not
    # reaped yet), then those that left the group: the raylet gives each worker a group
    # of its own, and a job's driver and its watcher have sessions of their own.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.pid, signal.SIGKILL)
    head.wait()
    for process in ours.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()  # psutil checks the process is the same, not a reused pid
    deadline = time.monotonic() + 30
    while True:
        left = []
        for process in ours.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                # A zombie is dead, left for init to reap.
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{process.pid} {process.name()}")
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            ("--set", "model.config.inner_layrs=2"),
            "model.config (pod_gnn): unknown GNNModelConfig key(s) inner_layrs; "
            "allowed: hidden, inner_layers,",
        ),
        # With --mlflow the store is checked before the evaluation plays, not after it.
        (
            ("--mlflow", "--set", "tracking.tracking_uri=./mlruns"),
            "tracking.tracking_uri='./mlruns' is MLflow's file store",
        ),
        # No checkpoint and no heuristic: there is nothing to play.
        (("--baselines", ""), "nothing to evaluate: give --checkpoint, or baselines"),
        # A heuristic named twice would play each seed twice and narrow its interval.
        (
            ("--baselines", "fifo+packing,fifo+packing"),
            "evaluation.baselines repeats fifo+packing",
        ),
    ],
    ids=["model", "tracking", "nothing", "repeated"],
)
def test_evaluate_checks_the_config_before_ray(
    tmp_path: Path, arguments: tuple[str, ...], expected: str
) -> None:
    ray_tmp = tmp_path / "ray"
    result = run_program(
        "platform/evaluate.py",
        *("--config", str(TINY), *arguments, "--json"),
        env={"RAY_TMPDIR": str(ray_tmp), "RAY_ADDRESS": ""},
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"evaluate.py: error: {expected}")
    assert result.stderr.count("\n") == 1 and not ray_tmp.exists()
