"""Tiresias' starvation promotion in discretized LAS, on schedules derived by hand."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import LeastAttainedService, PreemptionSettings, make_scheduler
from envs.sim import JobStatus, Simulator, SimulatorConfig
from envs.topology import build_cluster

from .conftest import JobSpec, build_workload

ONE_GPU = build_cluster("flat", servers=1, gpus_per_server=1)
IDEAL = SimulatorConfig(interference=False, communication=False)


def starved_long_job(knob: float | None) -> Simulator:
    """L (2,000 mini-batches of ResNet-50: 320 s) at 0, then five 40-s jobs S1..S5 at
    100, 130, 170, 210, 250 on one GPU; LAS with one threshold at 50 GPU-s, no guard."""
    arrivals = [100.0, 130.0, 170.0, 210.0, 250.0]
    specs = [JobSpec(iterations=2000)] + [JobSpec(iterations=250, arrival=a) for a in arrivals]
    sim = Simulator(ONE_GPU, build_workload(specs), IDEAL)
    settings = PreemptionSettings(
        min_run_s=0.0, las_thresholds_gpu_s=(50.0,), las_promote_knob=knob
    )
    sim.run(make_scheduler("las+packing", preemption=settings))
    assert (sim.status == JobStatus.FINISHED).all()
    assert np.array_equal(sim.work_done, sim.work_total)
    return sim


def test_without_promotion_the_demoted_job_waits_for_every_short_one():
    # S1 preempts L at 100 (L attained 100 GPU-s: second queue); S1..S5 then run back to
    # back, 100-300, and L's remaining 220 s follow: done at 520.
    sim = starved_long_job(None)
    assert sim.finish_time.tolist() == pytest.approx([520.0, 140.0, 180.0, 220.0, 260.0, 300.0])
    assert sim.preemptions.tolist() == [1, 0, 0, 0, 0, 0]


def test_a_job_that_waited_knob_times_its_run_is_promoted_to_the_back_of_queue_zero():
    # Knob 1. L ran 100 s and was preempted at 100: due at 200, when the scheduler asked
    # for a decision (no arrival or completion then). Promoted, L joins queue 0 behind S3
    # (entered at 170, running) and ahead of S4 (arrives at 210). S3 ends at 220, L runs
    # with its service counted from 0 again, crosses 50 GPU-s at 270 and S4 preempts it.
    # L ran 50 s since its promotion: due again at 320, when S5 (entered at 250) runs;
    # S5 ends at 350 and L finishes its last 170 s at 520.
    sim = starved_long_job(1.0)
    assert sim.finish_time.tolist() == pytest.approx([520.0, 140.0, 180.0, 220.0, 310.0, 350.0])
    assert sim.preemptions.tolist() == [2, 0, 0, 0, 0, 0]
    # The simulator's attained service is never reset: metrics read it.
    assert sim.attained_gpu_seconds[0] == pytest.approx(320.0)


def test_promotion_offsets_the_service_that_decides_the_queue():
    ordering = LeastAttainedService((50.0,), promote_knob=2.0)
    specs = [JobSpec(iterations=2000), JobSpec(iterations=250, arrival=10.0)]
    sim = Simulator(ONE_GPU, build_workload(specs), IDEAL)
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim._advance(60.0)  # L ran 60 s: 60 GPU-s, second queue
    sim.preempt(0)
    jobs = np.array([0, 1])
    assert ordering.queue(sim, jobs).tolist() == [1, 0]
    # Waiting, L is due 2 x 60 s after its preemption.
    assert ordering.next_priority_change(sim, np.zeros(0, np.int64)) == pytest.approx(180.0)
    sim._advance(180.0)
    assert ordering.queue(sim, jobs).tolist() == [0, 0]
    assert ordering.service(sim, jobs).tolist() == [0.0, 0.0]
    # Queue 0 again, but entered at 180, after the job that arrived at 10.
    assert ordering.priority_keys(sim, jobs)[1].tolist() == [180.0, 10.0]


@pytest.mark.parametrize("knob", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_knobs_are_refused(knob):
    with pytest.raises(ValueError, match="promote_knob must be a finite number > 0"):
        LeastAttainedService((50.0,), promote_knob=knob)
    with pytest.raises(ValueError, match="promote_knob"):
        PreemptionSettings(las_promote_knob=knob)


def test_promotion_needs_queues():
    with pytest.raises(ValueError, match="promotion needs queues"):
        LeastAttainedService(None, promote_knob=8.0)
