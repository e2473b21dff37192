"""What a simulation run produced: per-job records, the cluster timeline, and the metrics.

Metric names (all times in seconds; computed over finished jobs unless noted):

=========================  ================================================================
avg_jct, median_jct,       job completion time, finish - arrival, over every job that
p90_jct, p99_jct           arrived: a job unfinished when the run ended (truncated) counts
                           with its time in the system so far, a lower bound of its JCT,
                           so a policy cannot look better by leaving jobs unfinished
                           (identical to finished-only when every job finished)
makespan                   last finish - first arrival; with a job unfinished when the run
                           ended (truncated), the end of the run - first arrival instead, a
                           lower bound of the makespan like avg JCT's (``jobs_finished <
                           jobs_total`` flags both); NaN only when no job arrived
avg_wait                   time not running: JCT - run time (queueing, preempted time),
                           over every job that arrived like avg JCT: an unfinished job
                           counts the time it spent not running so far, a lower bound
avg_slowdown               JCT / ideal duration (interference- and communication-free,
                           requested workers), over every job that arrived like avg JCT
                           (an unfinished job: time so far / ideal, a lower bound)
avg_ntat                   normalized turnaround time, JCT / service (run) time (004 §4.1),
                           finished jobs only: an unfinished job's ratio so far bounds it in
                           neither direction (CuSH's global reward is this mean)
execution_effectiveness    mean of T_ideal / (T_wait + T_actual) (002 eq. 2), finished jobs
                           only: so far it would be an upper bound, flattering a policy
                           that leaves jobs unfinished (``jobs_finished < jobs_total``
                           flags such a run)
gpu_utilization            busy GPUs / all GPUs, time-weighted over [0, end]
fragmentation              002 eq. 1 averaged over servers, time-weighted over [0, end]
gpu_seconds                GPU-seconds consumed: busy GPUs integrated over [0, end], every
                           job (a GPU counts while its job holds it: running, or restoring
                           a checkpoint after a resume); the sum of the jobs' gpu_seconds
ideal_gpu_seconds          GPU-seconds the finished jobs ask for: sum of GPUs (requested
                           workers and parameter servers) x ideal duration
gpu_time_inflation         GPU-seconds the finished jobs consumed / ideal_gpu_seconds; 1
                           when every job ran at its ideal speed (``perf="ideal"``) with no
                           restart cost, above 1 when contention or restarts cost GPU time
avg_contention,            per job that ran, finished or not: its contention sensitivity CS
p90_contention             (000 eq. 1) time-averaged over its running time up to its finish
                           or the end of the run; mean and 90th percentile over those jobs.
                           A job that never ran had no placement and so no CS (its waiting
                           counts in JCT); NaN only when no job ran
avg_queue_length,          waiting jobs, time-weighted mean and maximum
max_queue_length
jobs_finished, jobs_total  counts; preemptions: total preemptions
=========================  ================================================================
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from envs.sim.engine import _RELATIVE_TIME_TOLERANCE, Simulator
from envs.sim.report import json_safe

JOB_FIELDS = (
    "arrival",
    "first_start",
    "finish",
    "ideal_duration",
    "run_time",
    "gpus",
    "contention",
    "preemptions",
    "gpu_seconds",
    "servers",
)

# The columns of :func:`write_per_job_csv`, one row per job and policy.
JOBS_CSV_COLUMNS = (
    "policy",
    "job",
    "job_id",
    "arrival",
    "first_start",
    "finish",
    "gpus",
    "servers",
    "preemptions",
    "gpu_seconds",
    "ideal_gpu_seconds",
)


class JobTimes(TypedDict):
    """The completion times of the jobs that arrived before a run ended, in job order.

    ``seconds``: a finished job's JCT (finish - arrival); an unfinished one's time in the
    system so far (end of the run - arrival), a lower bound of its JCT (right-censored),
    which ``unfinished`` marks. A plain dict (JSON and pickle as is); a JCT CDF counts an
    unfinished job among all jobs but never as completed (``platform/result_plots.py``).
    """

    seconds: list[float]
    unfinished: list[bool]


def concatenate_job_times(parts: Sequence[JobTimes]) -> JobTimes:
    """The :class:`JobTimes` of several runs as one, in the order given."""
    return {
        "seconds": [value for part in parts for value in part["seconds"]],
        "unfinished": [flag for part in parts for flag in part["unfinished"]],
    }


@dataclass(frozen=True)
class SimulationResult:
    """Per-job arrays (``JOB_FIELDS``; NaN finish for unfinished jobs; ``gpu_seconds`` the
    GPU-seconds the job held GPUs for; ``servers`` the most servers one of its placements
    spanned; plus ``job_id``, the workload's provenance ids), the timeline arrays
    (``time``, ``busy_gpus``, ``queue_length``, ``running``, ``fragmentation``,
    ``mean_contention``), the cluster's GPU count, the time the run ended and the number of
    events (arrivals, completions, ticks) processed."""

    policy: str
    jobs: dict[str, np.ndarray]
    timeline: dict[str, np.ndarray]
    total_gpus: int
    end_time: float
    events: int = 0

    @staticmethod
    def from_simulator(sim: Simulator, policy: str) -> SimulationResult:
        """Collect a finished (or truncated) simulation."""
        with np.errstate(invalid="ignore", divide="ignore"):
            contention = np.where(sim.run_time > 0, sim.cs_seconds / sim.run_time, np.nan)
        jobs = {
            "arrival": sim.workload.arrival_time.copy(),
            "first_start": sim.first_start.copy(),
            "finish": sim.finish_time.copy(),
            "ideal_duration": sim.ideal_duration.copy(),
            "run_time": sim.run_time.copy(),
            "gpus": (sim.num_workers * sim.worker_gpus + sim.num_ps * sim.ps_gpus).astype(float),
            "contention": contention,
            "preemptions": sim.preemptions.astype(float),
            "gpu_seconds": sim.attained_gpu_seconds.copy(),
            "servers": sim.servers_spanned.astype(float),
            "job_id": sim.workload.job_id.copy(),
        }
        return SimulationResult(
            policy, jobs, sim.timeline.arrays(), sim.cluster.num_gpus, float(sim.now), sim.events
        )

    def _times_so_far(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per job: whether it arrived before the run ended, whether it finished, and its
        JCT, or for an unfinished job its time in the system when the run ended."""
        jobs = self.jobs
        finished = np.isfinite(jobs["finish"])
        arrived = jobs["arrival"] <= self.end_time
        ended = np.where(finished, jobs["finish"], self.end_time)
        return arrived, finished, ended - jobs["arrival"]

    def job_times(self) -> JobTimes:
        """The :class:`JobTimes` of the jobs that arrived: JCT, or time so far if unfinished
        (the values avg JCT averages)."""
        arrived, finished, so_far = self._times_so_far()
        return {
            "seconds": so_far[arrived].tolist(),
            "unfinished": (~finished[arrived]).tolist(),
        }

    def metrics(self) -> dict[str, float | int]:
        """The metrics of the module docstring, as plain floats and ints."""
        jobs = self.jobs
        arrived, finished, so_far = self._times_so_far()
        censored_jct = so_far[arrived]
        # Wait and slowdown only grow while a job is unfinished: its values so far bound
        # them from below, as its time so far bounds its JCT.
        censored_wait = censored_jct - jobs["run_time"][arrived]
        # A wait cannot be negative, but a job that never waited can come out a few ulps
        # below zero (-1.8e-12 s): its run time is summed event by event, its JCT is one
        # subtraction. Their mean then printed as "wait h -0.00". Only rounding is cleared,
        # within the engine's time tolerance; a larger negative (a bug) stays visible.
        tolerance = _RELATIVE_TIME_TOLERANCE * max(1.0, self.end_time)
        censored_wait[(censored_wait < 0) & (censored_wait >= -tolerance)] = 0.0
        censored_slowdown = censored_jct / jobs["ideal_duration"][arrived]
        jct = so_far[finished]
        run_time = jobs["run_time"][finished]
        ideal = jobs["ideal_duration"][finished]
        # Every job that ran (run time > 0), its CS averaged up to its finish or the end.
        contention = jobs["contention"][np.isfinite(jobs["contention"])]
        timeline = self.timeline
        weights = np.diff(np.append(timeline["time"], self.end_time))

        def weighted(values: np.ndarray) -> float:
            total = weights.sum()
            return float((values * weights).sum() / total) if total > 0 else 0.0

        def stat(values: np.ndarray, function: Any) -> float:
            return float(function(values)) if len(values) else float("nan")

        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "jobs_total": len(finished),
                "jobs_finished": int(finished.sum()),
                "avg_jct": stat(censored_jct, np.mean),
                "median_jct": stat(censored_jct, np.median),
                "p90_jct": stat(censored_jct, lambda v: np.percentile(v, 90)),
                "p99_jct": stat(censored_jct, lambda v: np.percentile(v, 99)),
                "makespan": self._makespan(arrived, finished),
                "avg_wait": stat(censored_wait, np.mean),
                "avg_slowdown": stat(censored_slowdown, np.mean),
                "avg_ntat": stat(jct / run_time, np.mean),
                "execution_effectiveness": stat(ideal / jct, np.mean),
                "gpu_utilization": weighted(timeline["busy_gpus"]) / self.total_gpus,
                "fragmentation": weighted(timeline["fragmentation"]),
                "avg_contention": stat(contention, np.mean),
                "p90_contention": stat(contention, lambda v: np.percentile(v, 90)),
                "avg_queue_length": weighted(timeline["queue_length"]),
                "max_queue_length": int(timeline["queue_length"].max())
                if len(timeline["queue_length"])
                else 0,
                "preemptions": int(jobs["preemptions"].sum()),
                **self._gpu_time(finished, weights),
            }

    def _makespan(self, arrived: np.ndarray, finished: np.ndarray) -> float:
        """Last finish - first arrival; the end of the run - first arrival (a lower bound)
        when a job was unfinished; NaN when no job arrived."""
        if not arrived.any():
            return float("nan")
        last = float(self.jobs["finish"].max()) if finished.all() else self.end_time
        return last - float(self.jobs["arrival"].min())

    def _gpu_time(self, finished: np.ndarray, weights: np.ndarray) -> dict[str, float]:
        """``gpu_seconds``, ``ideal_gpu_seconds`` and ``gpu_time_inflation`` (docstring)."""
        jobs = self.jobs
        ideal = float((jobs["gpus"] * jobs["ideal_duration"])[finished].sum())
        consumed_by_finished = float(jobs["gpu_seconds"][finished].sum())
        return {
            "gpu_seconds": float((self.timeline["busy_gpus"] * weights).sum()),
            "ideal_gpu_seconds": ideal,
            "gpu_time_inflation": consumed_by_finished / ideal if ideal > 0 else float("nan"),
        }

    def to_json(self) -> dict[str, Any]:
        """Metrics and the per-job records as a JSON-able dict (NaN as null)."""
        return {
            "policy": self.policy,
            "metrics": json_safe(self.metrics()),
            "jobs": {name: json_safe(values.tolist()) for name, values in self.jobs.items()},
        }

    def write_json(self, path: Path) -> None:
        """Write :meth:`to_json` to ``path``."""
        Path(path).write_text(json.dumps(self.to_json()))

    def write_jobs_csv(self, path: Path) -> None:
        """One row per job: index, the job fields and its JCT."""
        with Path(path).open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["job", *JOB_FIELDS, "jct"])
            jct = self.jobs["finish"] - self.jobs["arrival"]
            for job in range(len(jct)):
                writer.writerow(
                    [
                        job,
                        *(_csv_value(self.jobs[name][job]) for name in JOB_FIELDS),
                        _csv_value(jct[job]),
                    ]
                )


def write_per_job_csv(results: Sequence[SimulationResult], path: Path | str) -> None:
    """Write one row per job and policy of ``results`` to ``path`` (:data:`JOBS_CSV_COLUMNS`).

    Columns: ``policy`` (the result's name, telling apart the runs of one file), ``job``
    (the job's index in the simulated workload), ``job_id`` (its id in the workload: the
    position in the generator or trace file), ``arrival``, ``first_start`` (empty if it
    never started), ``finish`` (empty if unfinished when the run ended), ``gpus``
    (requested, workers and parameter servers), ``servers`` (the most servers one of its
    placements spanned, a resume included; 0 if it never ran), ``preemptions``,
    ``gpu_seconds`` (GPU-seconds it held GPUs for, so far if unfinished) and
    ``ideal_gpu_seconds`` (GPUs x ideal duration). Times in seconds; the file is written
    whole, so a spreadsheet can sum ``gpu_seconds`` per policy into the ``gpu_seconds``
    metric.
    """
    with Path(path).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(JOBS_CSV_COLUMNS)
        for result in results:
            jobs = result.jobs
            ideal_gpu_seconds = jobs["gpus"] * jobs["ideal_duration"]
            counts = {
                name: jobs[name].astype(np.int64) for name in ("gpus", "servers", "preemptions")
            }
            for job in range(len(jobs["arrival"])):
                writer.writerow(
                    [
                        result.policy,
                        job,
                        int(jobs["job_id"][job]),
                        _csv_value(jobs["arrival"][job]),
                        _csv_value(jobs["first_start"][job]),
                        _csv_value(jobs["finish"][job]),
                        int(counts["gpus"][job]),
                        int(counts["servers"][job]),
                        int(counts["preemptions"][job]),
                        _csv_value(jobs["gpu_seconds"][job]),
                        _csv_value(ideal_gpu_seconds[job]),
                    ]
                )


def _csv_value(value: float) -> str:
    return "" if not np.isfinite(value) else repr(float(value))
