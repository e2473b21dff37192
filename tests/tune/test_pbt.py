"""tune.pbt: PBT exploits restore from a copy in the exploiting trial's own folder, and an
interrupted PBT experiment resumes with the values PBT chose and its bookkeeping.

The scheduler runs in real Tune experiments of a tiny trainable whose score is the sum of
its ``rate`` so far, so ranks and values can be worked out by hand; the sweep's own
interrupted-and-resumed PBT run is tests/platform/test_train.py's.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow.fs
import pytest
from ray import tune as ray_tune

from tune.pbt import (
    COPY_PREFIX,
    DurablePBT,
    checkpoint_exists,
    copy_checkpoint,
    copy_mutated_values,
    copy_name,
)


def test_a_copy_replaces_what_was_there_and_a_deleted_checkpoint_does_not_exist(
    tmp_path: Path,
) -> None:
    source = tmp_path / "PPO_b" / "checkpoint_000003"
    (source / "module").mkdir(parents=True)
    (source / "module" / "weights.bin").write_bytes(b"\x01\x02")
    (source / "state.json").write_text("{}")
    destination = tmp_path / "PPO_a" / copy_name("b", ray_tune.Checkpoint(str(source)))
    assert destination.name == f"{COPY_PREFIX}b_checkpoint_000003"
    destination.mkdir(parents=True)
    (destination / "stale.txt").write_text("from an earlier copy")

    copied = copy_checkpoint(
        ray_tune.Checkpoint(str(source)), str(destination), pyarrow.fs.LocalFileSystem()
    )

    assert copied.path == str(destination)
    files = sorted(p.relative_to(destination).as_posix() for p in destination.rglob("*"))
    assert files == ["module", "module/weights.bin", "state.json"]
    assert (destination / "module" / "weights.bin").read_bytes() == b"\x01\x02"
    assert checkpoint_exists(copied)
    assert not checkpoint_exists(ray_tune.Checkpoint(str(tmp_path / "PPO_b" / "checkpoint_000009")))
    assert not checkpoint_exists(None)


def test_the_mutated_values_go_into_the_first_config_nested_keys_too() -> None:
    """Only the keys PBT mutates are written; placeholders and other values stay."""
    first = {"lr": 1e-4, "optimizer": {"eps": 1e-8, "beta": 0.9}, "module": ("__ref_ph", "ab12")}
    current = {"lr": 2e-4, "optimizer": {"eps": 1e-6, "beta": 0.5}, "module": object()}
    mutations = {"lr": [1e-4, 2e-4], "optimizer": {"eps": [1e-8, 1e-6]}}
    copy_mutated_values(mutations, current, first)
    assert first == {
        "lr": 2e-4,
        "optimizer": {"eps": 1e-6, "beta": 0.9},
        "module": ("__ref_ph", "ab12"),
    }


class OwnFolderCheck(ray_tune.Callback):
    """Writes a line to ``log`` every moment a live trial's latest checkpoint -- the one
    it restarts from -- lies outside its own folder or no longer exists (a file: a restored
    experiment runs its own unpickled copy of the callback)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.seen: set[str] = set()

    def on_step_end(self, iteration: int, trials: list, **info) -> None:
        for trial in trials:
            checkpoint = trial.checkpoint
            if checkpoint is None or trial.status == "TERMINATED":
                continue
            problems = []
            if not checkpoint.path.startswith(trial.storage.trial_fs_path + "/"):
                problems.append("foreign")
            if not checkpoint_exists(checkpoint):
                problems.append("missing")
            line = f"{trial.trial_id} {'+'.join(problems)} {checkpoint.path}"
            if problems and line not in self.seen:
                self.seen.add(line)
                with self.log.open("a") as log:
                    log.write(line + "\n")


class CtrlCAfterIteration(ray_tune.Callback):
    """Presses Ctrl-C (SIGINT to this process, as a terminal does) once, when ``trials``
    trials have reported ``iteration``: Tune saves the experiment and returns."""

    def __init__(self, iteration: int, trials: int) -> None:
        self.iteration = iteration
        self.trials = trials
        self.reported: set[str] = set()
        self.pressed = False

    def on_trial_result(self, iteration: int, trials: list, trial, result: dict, **info) -> None:
        if result["training_iteration"] == self.iteration:
            self.reported.add(trial.trial_id)
        if not self.pressed and len(self.reported) == self.trials:
            self.pressed = True
            os.kill(os.getpid(), signal.SIGINT)

    def get_state(self) -> dict:
        return {"pressed": self.pressed}

    def set_state(self, state: dict) -> None:
        self.pressed = state["pressed"]


def accumulate() -> type:
    """A trainable adding ``rate`` to its total each iteration; the total is its score and
    its checkpoint. (Defined in a function so that Ray ships the class itself to its
    workers, which need not import this test module.)"""

    class Accumulate(ray_tune.Trainable):
        def setup(self, config: dict) -> None:
            self.total = 0.0

        def step(self) -> dict:
            self.total += self.config["rate"]
            return {"score": self.total}

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            Path(checkpoint_dir, "total.json").write_text(json.dumps(self.total))

        def load_checkpoint(self, checkpoint_dir: str) -> None:
            self.total = json.loads(Path(checkpoint_dir, "total.json").read_text())

    return Accumulate


def interrupted_and_resumed(
    tmp_path: Path, stop: int, interrupt: CtrlCAfterIteration, tracking: Any = None
) -> tuple[Any, Any, list]:
    """Two trials adding 1.0 ("0_rate=1.0000", the strong) and 0.01 ("1_rate=0.0100", the
    weak) per iteration, taking turns (both CPUs of the test's Ray each, PBT pausing one
    to let the other run), under PBT at every iteration where a clone takes rate 1.0 (the
    only mutation), each trial keeping one checkpoint (what a trial was cloned from is
    deleted at its next save), with a non-primitive value in the config (Tune keeps a
    placeholder for it and rebuilds a restored trial's config from its first sampled one);
    interrupted by ``interrupt``, then Tuner.restore to ``stop``. The results before and
    after, and PBT's own log of exploits (target tag, clone tag, target's iteration,
    clone's iteration, clone's config, new config). Fails if a trial ever waits to restart
    from another trial's folder or a deleted checkpoint. ``tracking``: a further callback
    (MLflow's), restored with the experiment as Tune restores every callback."""
    log = tmp_path / "checkpoints.log"
    param_space = {"rate": ray_tune.grid_search([1.0, 0.01]), "path_type": PurePosixPath}
    scheduler = DurablePBT(
        time_attr="training_iteration",
        perturbation_interval=1,
        quantile_fraction=0.5,
        resample_probability=0.0,
        hyperparam_mutations={"rate": [1.0]},
    )
    one_at_a_time = ray_tune.with_resources(accumulate(), {"cpu": 2})
    first = ray_tune.Tuner(
        one_at_a_time,
        param_space=param_space,
        tune_config=ray_tune.TuneConfig(metric="score", mode="max", scheduler=scheduler),
        run_config=ray_tune.RunConfig(
            name="pbt",
            storage_path=str(tmp_path),
            stop={"training_iteration": stop},
            checkpoint_config=ray_tune.CheckpointConfig(num_to_keep=1, checkpoint_frequency=1),
            callbacks=[OwnFolderCheck(log), interrupt, *([tracking] if tracking else [])],
            verbose=0,
        ),
    ).fit()
    resumed = ray_tune.Tuner.restore(
        str(tmp_path / "pbt"),
        trainable=one_at_a_time,
        param_space=param_space,
        resume_unfinished=True,
    ).fit()
    assert not log.exists(), log.read_text()
    exploits_log = tmp_path / "pbt" / "pbt_global.txt"
    exploits = [json.loads(line) for line in exploits_log.open()] if exploits_log.exists() else []
    return first, resumed, exploits


def rate_sweep(tracking_uri: str) -> Any:
    """MLflow's trial callback for the trainable above as a PBT sweep of
    ``algorithm.extra.rate`` (the key ``rate`` in the trial's config, as RLlib names an
    ``algorithm.extra`` setting), of the tiny experiment's MLflow experiment."""
    from tune.experiment import config_from_dict, load_config
    from tune.mlflow_tracking import MLflowTrialCallback

    tiny = Path(__file__).resolve().parents[1] / "data" / "configs" / "tiny.yaml"
    space = {"algorithm.extra.rate": {"choice": [1.0, 0.01]}}
    experiment = config_from_dict(
        {**load_config(tiny).to_dict(), "sweep": {"space": space, "scheduler": "pbt"}}
    )
    return MLflowTrialCallback(tracking_uri, experiment)


@pytest.mark.integration
def test_a_resumed_pbt_experiment_goes_on_from_the_exploited_copy_with_its_values(
    ray_local, tmp_path: Path, recwarn: pytest.WarningsRecorder, sqlite_uri: str
) -> None:
    """Interrupted once both trials reported iteration 2, resumed to 3. By hand: strong 1
    (alone: nothing to compare), weak 0.01 (the strong one has no PBT checkpoint yet),
    strong 2 (saved as the top trial), weak 0.02: clones the strong trial's total 2 and
    rate 1.0 -- interrupted. Resumed: strong 3 (its final checkpoint deletes the one the
    weak trial was cloned from), weak 2 + 1.0 = 3. Tune's PBT leaves the weak trial
    pointing into the strong trial's folder; a resume that lost the exploit's rate ends it
    at 2.01. MLflow shows each trial's rate per iteration as it trained with it
    (``pbt/algorithm.extra.rate``): the weak trial's 0.01 at iterations 1 and 2 -- the
    result of its iteration 2 triggered the exploit, which PBT had applied to the trial by
    the time MLflow's callback heard that result -- and 1.0 at 3; its param keeps 0.01."""
    first, resumed, exploits = interrupted_and_resumed(
        tmp_path, 3, CtrlCAfterIteration(2, 2), rate_sweep(sqlite_uri)
    )

    assert [result.metrics["training_iteration"] for result in first] == [2, 2]
    assert [result.metrics["score"] for result in first] == pytest.approx([2.0, 0.02], abs=1e-9)
    # The weak trial cloned the strong one before the interruption, taking 1.0.
    assert [[e[0], e[1], e[3], e[5]["rate"]] for e in exploits] == [
        ["1_rate=0.0100", "0_rate=1.0000", 2, 1.0]
    ]
    assert [result.error for result in resumed] == [None, None]
    assert [result.metrics["training_iteration"] for result in resumed] == [3, 3]
    assert [result.config["rate"] for result in resumed] == [1.0, 1.0]
    # Sums of a few whole numbers: exact in floating point, compared within 1e-9 anyway.
    assert [result.metrics["score"] for result in resumed] == pytest.approx([3.0, 3.0], abs=1e-9)
    [copy] = tmp_path.glob(f"pbt/*/{COPY_PREFIX}*")  # what the weak trial restored from
    assert json.loads((copy / "total.json").read_text()) == pytest.approx(2.0, abs=1e-9)
    # Tune's advice to keep more checkpoints for PBT's sake no longer applies: not given.
    assert not [w for w in recwarn if "num_to_keep" in str(w.message)]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(sqlite_uri)
    runs = client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
    schedules = {
        run.data.tags["trial_id"].split("_")[-1]: (
            run.data.params["algorithm.extra.rate"],
            [
                (metric.step, metric.value)
                for metric in client.get_metric_history(run.info.run_id, "pbt/algorithm.extra.rate")
            ],
        )
        for run in runs
    }
    assert schedules == {
        "00000": ("1.0", [(1, 1.0), (2, 1.0), (3, 1.0)]),
        "00001": ("0.01", [(1, 0.01), (2, 0.01), (3, 1.0)]),
    }


@pytest.mark.integration
def test_a_resumed_pbt_experiment_keeps_its_bookkeeping(ray_local, tmp_path: Path) -> None:
    """Interrupted once the strong trial reported iteration 2 (saved as the top trial),
    before the weak one did; resumed to 4. As uninterrupted, the weak trial's next result
    (its iteration 2, 0.02) is ranked against the strong trial's 2 and clones it: PBT kept
    the strong trial's score and checkpoint through the resume. Afresh, PBT would know
    neither and compare that result with nothing, so no clone could come before the weak
    trial's iteration 3. (Which clones follow depends on the order the resumed trials
    run in; their values, 1.0 the only mutation, do not.)"""
    first, resumed, exploits = interrupted_and_resumed(tmp_path, 4, CtrlCAfterIteration(2, 1))

    assert sorted(result.metrics["training_iteration"] for result in first) == [1, 2]
    # PBT's log: target, its iteration before the result that cloned, clone, its iteration.
    assert [exploits[0][0], exploits[0][2], exploits[0][1], exploits[0][3]] == [
        "1_rate=0.0100",
        1,
        "0_rate=1.0000",
        2,
    ]
    assert [result.error for result in resumed] == [None, None]
    assert [result.metrics["training_iteration"] for result in resumed] == [4, 4]
    assert [result.config["rate"] for result in resumed] == [1.0, 1.0]
