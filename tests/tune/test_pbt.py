"""tune.pbt: PBT exploits restore from a copy in the exploiting trial's own folder.

The scheduler runs in a real Tune experiment of a tiny trainable whose score is the sum of
its ``rate`` so far, so ranks and values can be worked out by hand; the sweep's own
interrupted-and-resumed PBT run is tests/platform/test_train.py's.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path, PurePosixPath

import pyarrow.fs
import pytest
from ray import tune as ray_tune

from tune.pbt import COPY_PREFIX, DurablePBT, checkpoint_exists, copy_checkpoint, copy_name


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
    """Presses Ctrl-C (SIGINT to this process, as a terminal does) once, when every trial
    has reported ``iteration``: Tune saves the experiment and returns."""

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.reported: set[str] = set()
        self.pressed = False

    def on_trial_result(self, iteration: int, trials: list, trial, result: dict, **info) -> None:
        if result["training_iteration"] == self.iteration:
            self.reported.add(trial.trial_id)
        if not self.pressed and len(self.reported) == len(trials):
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


@pytest.mark.integration
def test_an_interrupted_pbt_experiment_resumes_with_the_exploited_checkpoint_and_values(
    ray_local, tmp_path: Path, recwarn: pytest.WarningsRecorder
) -> None:
    """Two trials adding 1.0 and 0.01 per iteration, taking turns (one at a time, PBT
    pausing each after every iteration), PBT at every iteration with the weak trial
    cloning the strong one and taking rate 1.0 (the only mutation), each trial keeping one
    checkpoint; Ctrl-C once both reported iteration 2, then Tuner.restore to iteration 3.

    By hand: strong 1 (alone, nothing to compare), weak 0.01 (the strong one has no PBT
    checkpoint yet), strong 2 (saved as the top trial), weak 0.02: clones the strong
    trial's total 2 and rate 1.0 -- interrupted here. Resumed: strong 3 (its final
    checkpoint replaces the one the weak trial cloned), weak 2 + 1.0 = 3. Restoring the
    strong trial's folder (Tune's PBT) fails the weak trial; a resume that lost the
    exploit's rate ends it at 2.01."""
    log = tmp_path / "checkpoints.log"
    param_space = {
        "rate": ray_tune.grid_search([1.0, 0.01]),
        # A non-primitive value: Tune keeps a placeholder for it and rebuilds the trial's
        # config from its first sampled one when the experiment is restored.
        "path_type": PurePosixPath,
    }

    scheduler = DurablePBT(
        time_attr="training_iteration",
        perturbation_interval=1,
        quantile_fraction=0.5,
        resample_probability=0.0,
        hyperparam_mutations={"rate": [1.0]},
    )
    # Both CPUs of the test's Ray per trial: one trial runs at a time.
    one_at_a_time = ray_tune.with_resources(accumulate(), {"cpu": 2})
    first = ray_tune.Tuner(
        one_at_a_time,
        param_space=param_space,
        tune_config=ray_tune.TuneConfig(metric="score", mode="max", scheduler=scheduler),
        run_config=ray_tune.RunConfig(
            name="pbt",
            storage_path=str(tmp_path),
            stop={"training_iteration": 3},
            checkpoint_config=ray_tune.CheckpointConfig(num_to_keep=1, checkpoint_frequency=1),
            callbacks=[OwnFolderCheck(log), CtrlCAfterIteration(2)],
            verbose=0,
        ),
    ).fit()
    assert [result.metrics["training_iteration"] for result in first] == [2, 2]
    # PBT's own log: the weak trial cloned the strong one at its iteration 2, taking 1.0.
    [exploit] = [json.loads(line) for line in (tmp_path / "pbt" / "pbt_global.txt").open()]
    assert [exploit[0], exploit[1], exploit[3], exploit[5]["rate"]] == [
        "1_rate=0.0100",
        "0_rate=1.0000",
        2,
        1.0,
    ]

    assert [result.metrics["score"] for result in first] == pytest.approx([2.0, 0.02], abs=1e-9)
    resumed = ray_tune.Tuner.restore(
        str(tmp_path / "pbt"),
        trainable=one_at_a_time,
        param_space=param_space,
        resume_unfinished=True,
    ).fit()

    assert [result.error for result in resumed] == [None, None]
    assert [result.metrics["training_iteration"] for result in resumed] == [3, 3]
    # No trial ever waited to restart from another trial's folder or a deleted checkpoint.
    assert not log.exists(), log.read_text()
    assert [result.config["rate"] for result in resumed] == [1.0, 1.0]
    # Sums of a few whole numbers: exact in floating point, compared within 1e-9 anyway.
    assert [result.metrics["score"] for result in resumed] == pytest.approx([3.0, 3.0], abs=1e-9)
    [copy] = tmp_path.glob(f"pbt/*/{COPY_PREFIX}*")  # what the weak trial restored from
    # Tune's advice to keep more checkpoints for PBT's sake no longer applies: not given.
    assert not [w for w in recwarn if "num_to_keep" in str(w.message)]
    assert json.loads((copy / "total.json").read_text()) == pytest.approx(2.0, abs=1e-9)
