"""Builders for exact scheduler tests: hand-made jobs, fillers that occupy GPUs and cores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from envs.schedulers import PreemptionSettings, make_scheduler
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import Cluster
from envs.workload import Workload, get_catalog, make_workload

MODELS = get_catalog("marl").names


def model_index(name: str) -> int:
    """Index of a model of the ``marl`` catalog (001 Table I)."""
    return MODELS.index(name)


@dataclass
class JobSpec:
    """One hand-made job: workers x (gpus, cpus), parameter servers, work, model, user."""

    workers: int = 1
    gpus: float = 1.0
    cpus: float = 1.0
    iterations: int = 1000
    arrival: float = 0.0
    ps: int = 0
    ps_cpus: float = 1.0
    model: str = "ResNet-50"
    user: int = -1


@dataclass
class Setup:
    """A simulator at its first decision, with helpers to occupy resources."""

    sim: Simulator
    num_jobs: int
    fillers: list[int] = field(default_factory=list)

    def occupy(self, group: int, gpus: int = 1, cpus: float = 0.0) -> int:
        """Start a long filler job holding ``gpus`` GPUs and ``cpus`` cores on ``group``."""
        job = self.fillers.pop(0)
        self.sim.place(job, [group])
        # Fillers are 1-GPU, 0-core jobs; extra GPUs and cores come from more fillers.
        for _ in range(gpus - 1):
            self.sim.place(self.fillers.pop(0), [group])
        if cpus:
            self.sim.place(self.cpu_filler(cpus), [group])
        return job

    def cpu_filler(self, cpus: float) -> int:
        """A prepared CPU-only filler job of ``cpus`` cores (not started)."""
        for index, job in enumerate(self.fillers):
            if self.sim.worker_gpus[job] == 0 and self.sim.worker_cpus[job] == cpus:
                return self.fillers.pop(index)
        raise AssertionError(f"no CPU filler of {cpus} cores was prepared")


def build_workload(
    specs: Sequence[JobSpec], gpu_fillers: int = 0, cpu_fillers: Sequence[float] = ()
) -> Workload:
    """The jobs of ``specs`` (in order), then long fillers (1 GPU, 0 cores; 0 GPU, c cores)."""
    filler_specs = [JobSpec(gpus=1, cpus=0, iterations=10**9) for _ in range(gpu_fillers)]
    filler_specs += [JobSpec(gpus=0, cpus=c, iterations=10**9) for c in cpu_fillers]
    jobs = list(specs) + filler_specs
    count = len(jobs)
    users = [job.user for job in jobs]
    num_users = max(users) + 1 if max(users, default=-1) >= 0 else 0
    return Workload(
        arrival_time=np.array([job.arrival for job in jobs], dtype=float),
        model=np.array([model_index(job.model) for job in jobs]),
        num_workers=np.array([job.workers for job in jobs]),
        worker_demand=np.array([[job.gpus, job.cpus] for job in jobs], dtype=float),
        num_ps=np.array([job.ps for job in jobs]),
        ps_demand=np.array([[0.0, job.ps_cpus] for job in jobs], dtype=float),
        epochs=np.ones(count),
        iterations_per_epoch=np.array([job.iterations for job in jobs]),
        catalog_name="marl",
        user=np.array(users) if num_users else None,
        user_names=tuple(f"user{u}" for u in range(num_users)),
    )


def start(
    cluster: Cluster,
    specs: Sequence[JobSpec],
    gpu_fillers: int = 0,
    cpu_fillers: Sequence[float] = (),
    config: SimulatorConfig | None = None,
) -> Setup:
    """A simulator of ``specs`` plus fillers, advanced to its first decision."""
    workload = build_workload(specs, gpu_fillers, cpu_fillers)
    sim = Simulator(cluster, workload, config)
    assert sim.run_until_decision()
    return Setup(sim, len(specs), list(range(len(specs), len(workload))))


@pytest.fixture
def setup_sim():
    """``start(cluster, specs, gpu_fillers=, cpu_fillers=, config=)`` -> :class:`Setup`."""
    return start


@pytest.fixture
def job_spec():
    """The :class:`JobSpec` constructor."""
    return JobSpec


# Seconds a resumed job stalls restoring its checkpoint, in the preemption tests.
RESTART = 7.0


def preemptive_schedule(
    cluster: Cluster, policy: str, seed: int, **workload: object
) -> tuple[list[float], list[float], list[int]]:
    """``policy`` with preemption (60 s minimum run, LAS thresholds 300 and 3,600 GPU-s,
    7 s restart cost) on the seeded ``deepshare`` workload of ``workload``'s options; every
    job must finish. Returns each job's first start, finish and preemptions: what the
    tests comparing a shortcut with its path not taken compare."""
    jobs = make_workload("deepshare", rng=np.random.default_rng(seed), **workload)
    sim = Simulator(cluster, jobs, SimulatorConfig(restart_cost_s=RESTART))
    settings = PreemptionSettings(min_run_s=60.0, las_thresholds_gpu_s=(300.0, 3600.0))
    sim.run(make_scheduler(policy, preemption=settings))
    assert (sim.status == JobStatus.FINISHED).all()
    return sim.first_start.tolist(), sim.finish_time.tolist(), sim.preemptions.tolist()


def record_answers(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list:
    """Replace ``owner.name`` (a function or method) by itself, keeping every answer it
    gives in the returned list."""
    original = getattr(owner, name)
    answers: list = []

    def recorded(*args, **kwargs):
        answer = original(*args, **kwargs)
        answers.append(answer)
        return answer

    monkeypatch.setattr(owner, name, recorded)
    return answers
