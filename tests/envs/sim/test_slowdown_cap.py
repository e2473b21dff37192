"""The cap on contention sensitivity (``SimulatorConfig.max_contention``), by hand.

Communication: two VGG-16 jobs (marl catalog: 0.29 s of compute, 553.44 MB of fp32
gradients), each a ring of 2 workers with one worker on each of the 2 servers of a flat
cluster (10 Gbps server ports). A ring of 2 moves ``2 x (1/2) x G = G`` MB per step over
both ports; alone a job has the whole 10 Gbps, together each gets 5 Gbps, so

    x = 553.44 x 8 / 1000 / 10 = 0.442752 s,
    alone = 0.29 + x = 0.732752 s,  shared = 0.29 + 2x = 1.175504 s,

so CS = shared / alone = 1.604; each job runs 1000 mini-batches / 2 workers = 500 steps.

Interference: ResNet-50 and CTC on one socket of a Power8 server (001 §V's model with the
default coefficients; communication off): CTC's CS is 1 + S_ctc = 1.132, ResNet-50's
1 + S_resnet = 1.065, so a cap of 1.1 binds CTC only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.sim import InterferenceCoefficients, Simulator, SimulatorConfig, perf_switches
from envs.topology import build_cluster
from envs.workload import ModelProfile, get_catalog

RESNET, VGG, CTC = 0, 1, 6  # marl catalog indices
STEPS = 500  # 1000 mini-batches of one worker, 2 workers per step
RELATIVE = 1e-9
TWO_SERVERS = build_cluster("flat", servers=2, gpus_per_server=4)  # groups 0, 1 | 2, 3


def vgg_steps() -> tuple[float, float]:
    """``(alone, shared)`` step seconds of one VGG-16 ring of 2 across the two servers."""
    vgg = get_catalog("marl")[VGG]
    comm_alone = vgg.gradient_mb * 8.0 / 1000.0 / 10.0
    return vgg.compute_time_s + comm_alone, vgg.compute_time_s + 2.0 * comm_alone


def run_two_rings(make_workload, max_contention: float) -> Simulator:
    """Both VGG-16 rings placed at 0 across the two servers, run to the end."""
    workload = make_workload([0.0, 0.0], [VGG, VGG], [2, 2])
    config = SimulatorConfig(interference=False, max_contention=max_contention)
    sim = Simulator(TWO_SERVERS, workload, config)
    assert sim.run_until_decision()
    sim.place(0, [0, 2])
    sim.place(1, [1, 3])
    return sim


def test_hand_derived_contention_is_what_the_cap_compares() -> None:
    alone, shared = vgg_steps()
    assert alone == pytest.approx(0.732752, rel=RELATIVE)
    assert shared == pytest.approx(1.175504, rel=RELATIVE)
    assert shared / alone == pytest.approx(1.604232, rel=1e-6)


def test_capped_jobs_run_at_the_cap_times_their_step_alone(make_workload) -> None:
    alone, _ = vgg_steps()
    sim = run_two_rings(make_workload, max_contention=1.25)
    np.testing.assert_allclose(sim.contention[[0, 1]], [1.25, 1.25], rtol=RELATIVE)
    np.testing.assert_allclose(sim.rate[[0, 1]], 2 / (1.25 * alone), rtol=RELATIVE)
    assert not sim.run_until_decision()
    # Identical jobs at identical rates finish together, capped all along.
    np.testing.assert_allclose(sim.finish_time, STEPS * 1.25 * alone, rtol=RELATIVE)


def test_no_cap_leaves_the_shared_link_formula(make_workload) -> None:
    _, shared = vgg_steps()
    sim = run_two_rings(make_workload, max_contention=math.inf)
    assert not sim.run_until_decision()
    np.testing.assert_allclose(sim.finish_time, STEPS * shared, rtol=RELATIVE)


def test_a_cap_above_the_contention_changes_nothing(make_workload) -> None:
    _, shared = vgg_steps()
    sim = run_two_rings(make_workload, max_contention=1.7)
    np.testing.assert_allclose(sim.contention[[0, 1]], shared / vgg_steps()[0], rtol=RELATIVE)
    assert not sim.run_until_decision()
    np.testing.assert_allclose(sim.finish_time, STEPS * shared, rtol=RELATIVE)


def test_a_cap_of_one_runs_every_job_as_if_alone(make_workload) -> None:
    alone, _ = vgg_steps()
    sim = run_two_rings(make_workload, max_contention=1.0)
    assert not sim.run_until_decision()
    np.testing.assert_allclose(sim.finish_time, STEPS * alone, rtol=RELATIVE)


def test_the_cap_binds_per_job_in_one_refresh(make_workload) -> None:
    # One socket of a Power8 server: each job slows the other by 001 §V's excess slowdown.
    cluster = build_cluster("flat", servers=1, server="power8")
    c = InterferenceCoefficients()
    marl = get_catalog("marl")
    resnet, ctc = marl[RESNET], marl[CTC]

    def excess(own: ModelProfile, other: ModelProfile) -> float:
        cpu = c.a1 * (
            math.exp(c.a2 * other.cpu_cores + c.a3 * own.cpu_cores) - math.exp(c.a3 * own.cpu_cores)
        )
        return cpu + c.b1 * other.pcie_gb_s

    s_resnet, s_ctc = excess(resnet, ctc), excess(ctc, resnet)
    assert s_resnet == pytest.approx(0.0654, abs=1e-4) and s_ctc == pytest.approx(0.1323, abs=1e-4)
    config = SimulatorConfig(communication=False, max_contention=1.1)
    sim = Simulator(cluster, make_workload([0.0, 0.0], [RESNET, CTC], [1, 1]), config)
    assert sim.run_until_decision()
    sim.place(0, [0])
    sim.place(1, [0])
    # CTC is capped at 1.1 x its step alone; ResNet-50, below the cap, is untouched.
    np.testing.assert_allclose(sim.contention[[0, 1]], [1 + s_resnet, 1.1], rtol=RELATIVE)
    np.testing.assert_allclose(
        sim.rate[[0, 1]],
        [1 / (resnet.compute_time_s * (1 + s_resnet)), 1 / (ctc.compute_time_s * 1.1)],
        rtol=RELATIVE,
    )


def test_the_ideal_model_is_untouched_by_any_cap(make_workload) -> None:
    workload = make_workload([0.0, 0.0], [VGG, VGG], [2, 2])
    config = SimulatorConfig(max_contention=1.0, **perf_switches("ideal")._asdict())
    sim = Simulator(TWO_SERVERS, workload, config)
    assert sim.run_until_decision()
    sim.place(0, [0, 2])
    sim.place(1, [1, 3])
    assert not sim.run_until_decision()
    np.testing.assert_allclose(sim.finish_time, sim.ideal_duration, rtol=RELATIVE)
    np.testing.assert_allclose(sim.finish_time, STEPS * get_catalog("marl")[VGG].compute_time_s)


def test_default_is_000s_largest_measured_contention() -> None:
    assert SimulatorConfig().max_contention == 3.0
    assert SimulatorConfig(max_contention=math.inf).max_contention == math.inf


@pytest.mark.parametrize("bad", [0.999, 0.0, -1.0, -math.inf, math.nan])
def test_bad_caps_name_the_field_and_what_is_allowed(bad: float) -> None:
    with pytest.raises(ValueError) as error:
        SimulatorConfig(max_contention=bad)
    assert str(error.value) == (
        "max_contention must be a number >= 1 (the most a job's step may exceed its step "
        f"alone) or math.inf for no cap, got {bad!r}"
    )
