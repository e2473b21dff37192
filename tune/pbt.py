"""Population based training whose exploits survive checkpoint deletion and ``--resume``.

Tune's :class:`~ray.tune.schedulers.PopulationBasedTraining` exploits by pointing the weak
trial's latest checkpoint at the strong trial's checkpoint *in the strong trial's folder*.
The strong trial keeps training and its checkpoint manager deletes its older checkpoints
(``checkpoint.keep``, by score when one is declared): the checkpoint the weak trial was
told to restore may be gone by the time it restarts -- after its actor has been rebuilt,
and much later after an interrupted sweep is resumed, since the experiment state records
that foreign path until the weak trial saves its own checkpoint. The restore then fails,
the trial ends in ERROR at the iteration it had reached, and the sweep counts it as done.

:class:`DurablePBT` copies the chosen checkpoint into the weak trial's own folder at the
moment of the exploit (``exploited_<strong trial id>_<checkpoint name>``) and points the
trial there, so no other trial's bookkeeping can delete what it restores from. When the
checkpoint PBT recorded for the strong trial is already gone, its latest checkpoint (which
Tune never deletes) is cloned instead; a trial without any is not exploited this round.
A trial keeps its two newest copies (the older of the two covers an experiment state saved
before the newest exploit).

The exploit also changes the trial's hyperparameters (``Trial.set_config``), but Tune keeps
each trial's config as first sampled as well, with placeholders for its non-primitive
values (an RLlib config has classes and functions), and rebuilds the config from that one
when an experiment is restored: a resumed sweep would train the cloned weights with the
hyperparameters of before the exploit. :class:`DurablePBT` writes the perturbed values into
that first config too, so ``--resume`` continues with the values PBT chose.

Tune does not save a scheduler with the experiment: restored, PBT would start its
bookkeeping afresh (every trial due for a perturbation at its first result, only trials
that reported since ranked, no trial cloneable until it is saved again). :class:`DurablePBT`
keeps each trial's bookkeeping on the trial itself (:data:`BOOKKEEPING`: last perturbation,
score, the checkpoint PBT saved for it), which Tune saves in the same experiment snapshot as
the trial's status and checkpoints, and takes it up again when the restored trial is added.
(Asynchronous PBT only, what sweeps use: Tune's synchronous mode also keeps a population-wide
clock, which is left as Tune has it.)

Every scheduler and search of a sweep judges a trial only on results whose metric is a
number (:class:`AwaitMetric`, :class:`SweepOptuna`): RLlib reports
``env_runners/episode_return_mean`` as the mean over the episodes that finished in the
iteration -- absent until the first one has, NaN in an iteration that finished none -- and
a SCED2 episode of 1000 jobs lasts about two iterations. Tune failed the whole sweep on
the first such result (its strict metric check) and its PBT and Optuna search fail on one
too, while ASHA let a trial whose rung fell on a NaN through unjudged and Optuna dropped a
trial that ended on one. Here such a result is passed over: ASHA judges a trial at a rung,
PBT ranks, exploits and perturbs, TPE learns from its next result with a value (its last
one, at the end); :func:`tune.search.check_metric_reported` refuses a training-episode metric
still absent once episodes have finished (a misspelt key) in one line, as Tune's check
did, and :func:`tune.search.run_sweep` turns Tune's own check off while the sweep runs.
"""

from __future__ import annotations

import copy
import logging
import posixpath
import warnings
from typing import Any

from ray.train._internal.session import _FutureTrainingResult, _TrainingResult
from ray.tune import Checkpoint
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, PopulationBasedTraining
from ray.tune.search.optuna import OptunaSearch

from tune.search import check_metric_reported, metric_value

logger = logging.getLogger(__name__)

#: Folder-name prefix of an exploited checkpoint's copy inside the exploiting trial's folder.
COPY_PREFIX = "exploited_"
#: Copies a trial keeps: the newest, and the one an older experiment state may still name.
COPIES_KEPT = 2


def checkpoint_exists(checkpoint: Any) -> bool:
    """Whether ``checkpoint`` (a Checkpoint, or None or a save still in flight: False) is a
    folder still on its storage."""
    import pyarrow.fs
    from ray.train import Checkpoint as AnyCheckpoint  # Tune's Checkpoint subclasses it

    if not isinstance(checkpoint, AnyCheckpoint):
        return False
    info = checkpoint.filesystem.get_file_info(checkpoint.path)
    return info.type == pyarrow.fs.FileType.Directory


def copy_checkpoint(checkpoint: Checkpoint, destination: str, filesystem: Any) -> Checkpoint:
    """A copy of ``checkpoint``'s folder at ``destination`` on ``filesystem`` (any pyarrow
    filesystem Tune's storage uses: local, S3, GCS), replacing what was there."""
    import pyarrow.fs

    if filesystem.get_file_info(destination).type != pyarrow.fs.FileType.NotFound:
        filesystem.delete_dir(destination)
    filesystem.create_dir(destination, recursive=True)
    pyarrow.fs.copy_files(
        checkpoint.path,
        destination,
        source_filesystem=checkpoint.filesystem,
        destination_filesystem=filesystem,
    )
    return Checkpoint(destination, filesystem=filesystem)


#: The trial attribute holding its PBT bookkeeping: Tune saves a trial's attributes with
#: the experiment and sets them again on restore.
BOOKKEEPING = "podsched_pbt_bookkeeping"
#: The result keys a restore reads (Trainable.restore) besides the scheduler's own.
RESTORE_KEYS = ("training_iteration", "time_total_s", "timesteps_total", "episodes_total")

#: Where Tune keeps a trial's config as first sampled (name-mangled ``Trial.__unresolved_config``).
UNRESOLVED_CONFIG = "_Trial__unresolved_config"


def copy_mutated_values(mutations: dict, source: dict, target: dict) -> None:
    """Set every key of ``mutations`` (PBT's ``hyperparam_mutations``, nested dicts for
    nested keys) in ``target`` to its value in ``source``."""
    for key, spec in mutations.items():
        if key not in source:
            continue
        if isinstance(spec, dict) and isinstance(source[key], dict):
            copy_mutated_values(spec, source[key], target.setdefault(key, {}))
        else:
            target[key] = copy.deepcopy(source[key])


def keep_mutations_on_restore(trial: Any, mutations: dict) -> None:
    """Write ``trial``'s current values of the mutated keys into the config Tune rebuilds
    the trial from when an experiment is restored (see the module docstring)."""
    first = getattr(trial, UNRESOLVED_CONFIG)
    if first is trial.config:  # never resolved: the config itself is what is saved
        return
    updated = copy.deepcopy(first)
    copy_mutated_values(mutations, trial.config, updated)
    setattr(trial, UNRESOLVED_CONFIG, updated)
    trial.invalidate_json_state()


def copy_name(donor_trial_id: str, checkpoint: Checkpoint) -> str:
    """``exploited_<donor trial id>_<checkpoint folder name>``."""
    return f"{COPY_PREFIX}{donor_trial_id}_{posixpath.basename(checkpoint.path.rstrip('/'))}"


class AwaitMetric:
    """Mixed into a Tune trial scheduler (before it): the scheduler decides on a result only
    when its metric is a number (:func:`tune.search.metric_value`); before a trial's first
    finished episode, and in an iteration that finished none, the trial goes on (CONTINUE)
    unjudged. A metric the trial will never report raises
    :class:`tune.search.MetricNotReportedError` (:func:`tune.search.check_metric_reported`)."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        """The scheduler's decision on a result with a value; CONTINUE on one without."""
        check_metric_reported(result, self._metric, str(trial))
        if metric_value(result, self._metric) is None:
            return FIFOScheduler.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        """The scheduler's, on a last result with a value (ASHA would record a NaN at a rung,
        where it counts as no result); nothing otherwise, as ASHA does without the metric."""
        if metric_value(result, self._metric) is not None:
            super().on_trial_complete(tune_controller, trial, result)


class SweepFIFO(AwaitMetric, FIFOScheduler):
    """Tune's FIFO scheduler, which judges nothing, checking the metric as every sweep
    scheduler does (:class:`AwaitMetric`)."""


class SweepASHA(AwaitMetric, ASHAScheduler):
    """Tune's ASHA, judging a trial at a rung by its first result with a value at or past
    the rung (:class:`AwaitMetric`; ASHA records it at the highest rung it has passed)."""


class SweepOptuna(OptunaSearch):
    """Tune's Optuna search told only values it can learn from (:func:`tune.search.metric_value`):
    Optuna's ``on_trial_result`` raises KeyError on a result without the metric, and its
    ``on_trial_complete`` refuses a NaN (the trial then stays unfinished in the study, and
    TPE never learns from it). A trial ends with its last value (kept in
    ``_last_values``, saved with the searcher's state); one that never had one ends
    pruned, as Optuna marks a trial without a value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last_values: dict[str, float] = {}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Optuna's, on a result with a value; nothing on one without."""
        value = metric_value(result, self.metric)
        if value is not None:
            self._last_values[trial_id] = value
            super().on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        """Optuna's, with the trial's last value in place of a last result without one."""
        if result is not None and metric_value(result, self.metric) is None:
            result = {key: value for key, value in result.items() if key != self.metric}
            if trial_id in self._last_values:
                result[self.metric] = self._last_values[trial_id]
        self._last_values.pop(trial_id, None)
        super().on_trial_complete(trial_id, result, error)


class DurablePBT(AwaitMetric, PopulationBasedTraining):
    """Tune's PBT, exploiting from a copy of the strong trial's checkpoint made in the weak
    trial's own folder (see the module docstring), ranking and perturbing trials on results
    whose metric is a number (:class:`AwaitMetric`); every setting is PBT's own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Copies made per trial id, oldest first (this driver's only: a resumed sweep
        #: leaves the copies of before in place).
        self._copies: dict[str, list[str]] = {}

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        """PBT's, without its advice to keep more than two checkpoints per trial (exploits
        here restore from copies, which no ``keep`` deletes); a restored trial takes up its
        bookkeeping."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Using `CheckpointConfig.num_to_keep <= 2`")
            super().on_trial_add(tune_controller, trial)
        self._read_bookkeeping(trial)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        """PBT's decision; then every trial's bookkeeping that changed is written on it."""
        decision = super().on_trial_result(tune_controller, trial, result)
        if not self._synch:
            for each in self._trial_state:
                self._write_bookkeeping(each)
        return decision

    def _write_bookkeeping(self, trial: Any) -> None:
        """Put ``trial``'s PBT state on the trial (:data:`BOOKKEEPING`), JSON-friendly: the
        checkpoint PBT saved by its folder name in the trial's folder, a save still in
        flight as ``"saving"``."""
        state = self._trial_state[trial]
        saved = state.last_checkpoint
        if isinstance(saved, _FutureTrainingResult):  # PBT's save: done by now, as a rule
            done = saved.resolve(block=False)
            saved = done.checkpoint if done is not None else saved
        checkpoint: str | None = None
        if isinstance(saved, Checkpoint):
            checkpoint = posixpath.relpath(saved.path, trial.storage.trial_fs_path)
        elif saved is not None:
            checkpoint = "saving"
        keys = (*RESTORE_KEYS, self._time_attr, self._metric)
        last_result = {
            key: value
            for key, value in (state.last_result or {}).items()
            if key in keys and isinstance(value, (int, float))
        }
        bookkeeping = {
            "orig_tag": state.orig_tag,
            "last_score": state.last_score,
            "last_perturbation_time": state.last_perturbation_time,
            "last_train_time": state.last_train_time,
            "last_result": last_result or None,
            "last_checkpoint": checkpoint,
        }
        if getattr(trial, BOOKKEEPING, None) != bookkeeping:
            setattr(trial, BOOKKEEPING, bookkeeping)
            trial.invalidate_json_state()  # saved with the next experiment snapshot

    def _read_bookkeeping(self, trial: Any) -> None:
        """Take up the bookkeeping a restored ``trial`` carries (nothing for a new one)."""
        saved = getattr(trial, BOOKKEEPING, None)
        if not saved or self._synch:
            return
        state = self._trial_state[trial]
        state.orig_tag = saved["orig_tag"]
        state.last_score = saved["last_score"]
        state.last_perturbation_time = saved["last_perturbation_time"]
        state.last_train_time = saved["last_train_time"]
        state.last_result = saved["last_result"]
        # The checkpoint to clone this trial from, with the result Tune registered it
        # with (its iteration is where a clone goes on from): the one PBT saved if Tune
        # registered it before the interruption, else the trial's latest.
        if saved["last_checkpoint"] is not None:
            manager = trial.run_metadata.checkpoint_manager
            registered = {kept.checkpoint.path: kept for kept in manager.best_checkpoint_results}
            recorded = posixpath.join(trial.storage.trial_fs_path, saved["last_checkpoint"])
            chosen = registered.get(recorded) or manager.latest_checkpoint_result
            if chosen is not None:
                state.last_checkpoint, state.last_result = chosen.checkpoint, chosen.metrics

    def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
        """Clone ``trial_to_clone`` into ``trial`` like PBT, from a copy in ``trial``'s folder."""
        source = self._source_checkpoint(trial_to_clone)
        if source is None:
            logger.info(
                "[pbt]: no checkpoint of trial %s is left to clone; trial %s goes on unchanged",
                trial_to_clone,
                trial,
            )
            return
        checkpoint, metrics = source
        storage = trial.storage
        destination = posixpath.join(
            storage.trial_fs_path, copy_name(trial_to_clone.trial_id, checkpoint)
        )
        copied = copy_checkpoint(checkpoint, destination, storage.storage_filesystem)
        super()._exploit(tune_controller, trial, trial_to_clone)
        # PBT pointed the trial at the strong trial's folder: point it at the copy instead.
        # (the private field PBT itself sets)
        trial.run_metadata.checkpoint_manager._latest_checkpoint_result = _TrainingResult(
            checkpoint=copied, metrics=metrics
        )
        # The experiment state caches this trial's metadata; changed in place, it would be
        # saved stale and a resumed sweep would restore the old checkpoint.
        trial.run_metadata.invalidate_cache()
        keep_mutations_on_restore(trial, self._hyperparam_mutations)
        self._forget_old_copies(trial, destination)

    def _source_checkpoint(self, trial_to_clone: Any) -> tuple[Checkpoint, dict] | None:
        """The checkpoint to clone and its training result: the one PBT recorded at the
        strong trial's last perturbation if still there, else the trial's latest."""
        state = self._trial_state[trial_to_clone]
        if checkpoint_exists(state.last_checkpoint):
            return state.last_checkpoint, state.last_result
        latest = trial_to_clone.run_metadata.checkpoint_manager.latest_checkpoint_result
        if latest is not None and checkpoint_exists(latest.checkpoint):
            return latest.checkpoint, latest.metrics
        return None

    def _forget_old_copies(self, trial: Any, newest: str) -> None:
        """Delete ``trial``'s copies beyond the :data:`COPIES_KEPT` newest."""
        copies = [path for path in self._copies.get(trial.trial_id, []) if path != newest]
        copies.append(newest)
        for stale in copies[:-COPIES_KEPT]:
            try:
                trial.storage.storage_filesystem.delete_dir(stale)
            except OSError as error:  # already gone: nothing to free
                logger.debug("could not delete %s: %s", stale, error)
        self._copies[trial.trial_id] = copies[-COPIES_KEPT:]
