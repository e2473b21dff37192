"""The performance model, checked against values derived by hand from its formulas."""

from __future__ import annotations

import numpy as np
import pytest

from envs.sim import InterferenceCoefficients, Simulator, SimulatorConfig, fit_interference
from envs.sim.profiling import alone_communication_s
from envs.topology import build_cluster
from envs.workload import get_catalog

RESNET, CTC = 0, 6  # marl catalog: ResNet-50 (4 cores, 1.4 GB/s PCIe), CTC (1 core, 1.6 GB/s)


def start_all(sim: Simulator, placements: dict[int, list[int]]) -> None:
    assert sim.run_until_decision()
    for job, groups in placements.items():
        sim.place(job, groups)


def test_a_job_alone_runs_at_ideal_speed(make_workload) -> None:
    sim = Simulator(build_cluster("fat-tree", k=4), make_workload([0.0], [RESNET], [1]))
    start_all(sim, {0: [5]})
    assert sim.contention[0] == 1.0
    assert not sim.run_until_decision()
    assert sim.finish_time[0] == pytest.approx(sim.ideal_duration[0], rel=1e-12)
    # 1 epoch x 1000 mini-batches x 0.16 s (ResNet-50 on one GPU).
    assert sim.ideal_duration[0] == pytest.approx(160.0)


def test_two_jobs_on_one_link_each_get_half(make_workload) -> None:
    cluster = build_cluster("flat", servers=3, gpus_per_server=4)  # 2 groups of 2 GPUs each
    config = SimulatorConfig(interference=False)
    # AllReduce (deepshare LM): 2 workers on servers 0 and 1, and on servers 0 and 2.
    workload = make_workload([0.0, 0.0], [3, 3], [2, 2], catalog="deepshare")
    sim = Simulator(cluster, workload, config)
    start_all(sim, {0: [0, 2], 1: [1, 4]})
    lm = get_catalog("deepshare")[3]
    # A ring of 2 moves 2 x (1/2) x G megabytes over server 0's 10 Gbps port, shared by 2.
    gigabits = lm.gradient_mb * 8 / 1000
    step_shared = lm.compute_time_s + gigabits / 5.0
    step_alone = lm.compute_time_s + gigabits / 10.0
    for job in (0, 1):
        assert sim.rate[job] == pytest.approx(2 / step_shared)
        assert sim.contention[job] == pytest.approx(step_shared / step_alone)
    assert sim.link_jobs[cluster.port_link[0]] == 2
    assert sim.link_jobs[cluster.port_link[1]] == 1


def test_traffic_sharing_weighs_each_partner_by_its_duty_cycle(make_workload) -> None:
    cluster = build_cluster("flat", servers=3, gpus_per_server=4)
    config = SimulatorConfig(interference=False, link_sharing="traffic")
    # LM (ring of 2) on servers 0 and 1, GNN (ring of 2) on servers 0 and 2: they share
    # server 0's 10 Gbps port; a third LM on servers 1 and 2 joins later.
    workload = make_workload([0.0, 0.0, 0.0], [3, 0, 3], [2, 2, 2], catalog="deepshare")
    sim = Simulator(cluster, workload, config)
    start_all(sim, {0: [0, 2], 1: [1, 4]})
    deepshare = get_catalog("deepshare")
    lm, gnn = deepshare[3], deepshare[0]
    lm_comm = lm.gradient_mb * 8 / 1000 / 10.0  # 2 x (1/2) x G over 10 Gbps, alone
    gnn_comm = gnn.gradient_mb * 8 / 1000 / 10.0
    lm_duty = lm_comm / (lm.compute_time_s + lm_comm)
    gnn_duty = gnn_comm / (gnn.compute_time_s + gnn_comm)
    # Each sees 10 / (1 + the other's duty cycle) Gbps on the shared port.
    lm_step = lm.compute_time_s + lm_comm * (1 + gnn_duty)
    gnn_step = gnn.compute_time_s + gnn_comm * (1 + lm_duty)
    assert sim.rate[0] == pytest.approx(2 / lm_step)
    assert sim.contention[0] == pytest.approx(lm_step / (lm.compute_time_s + lm_comm))
    assert sim.contention[1] == pytest.approx(gnn_step / (gnn.compute_time_s + gnn_comm))
    assert sim.link_load[cluster.port_link[0]] == pytest.approx(lm_duty + gnn_duty)
    # The third job crosses servers 1's and 2's ports: LM 0 now has a partner on each of
    # its ports and the busier port (server 1: another LM) is its bottleneck.
    sim.place(2, [3, 5])
    assert sim.contention[0] == pytest.approx(
        (lm.compute_time_s + lm_comm * (1 + max(gnn_duty, lm_duty))) / (lm.compute_time_s + lm_comm)
    )
    # Leaving returns the shared port to its remaining user: GNN alone on server 0's port.
    sim.preempt(0)
    assert sim.link_load[cluster.port_link[0]] == pytest.approx(gnn_duty)
    assert sim.link_jobs[cluster.port_link[0]] == 1


def test_traffic_sharing_with_every_duty_cycle_at_one_is_equal_sharing(make_workload) -> None:
    # Jobs that always communicate (no compute) are 003's equal split by job count.
    cluster = build_cluster("flat", servers=3, gpus_per_server=4)
    workload = make_workload([0.0, 0.0], [3, 3], [2, 2], catalog="deepshare")
    rates = {}
    for sharing in ("equal", "traffic"):
        sim = Simulator(cluster, workload, SimulatorConfig(link_sharing=sharing))
        sim.compute_time[:] = 0.0
        start_all(sim, {0: [0, 2], 1: [1, 4]})
        rates[sharing] = sim.rate.copy()
    np.testing.assert_allclose(rates["traffic"], rates["equal"])


def test_unknown_link_sharing_is_refused() -> None:
    with pytest.raises(ValueError, match="link_sharing must be one of equal, traffic"):
        SimulatorConfig(link_sharing="fair")


def test_colocation_on_one_socket_slows_per_the_model(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, server="power8")  # groups 0, 1 on sockets 0, 1
    coefficients = InterferenceCoefficients()
    marl = get_catalog("marl")
    resnet, ctc = marl[RESNET], marl[CTC]

    same = Simulator(cluster, make_workload([0.0, 0.0], [RESNET, CTC], [1, 1]))
    start_all(same, {0: [0], 1: [0]})
    expected = (
        coefficients.a1
        * (
            np.exp(coefficients.a2 * ctc.cpu_cores + coefficients.a3 * resnet.cpu_cores)
            - np.exp(coefficients.a3 * resnet.cpu_cores)
        )
        + coefficients.b1 * ctc.pcie_gb_s
    )
    assert same.rate[0] == pytest.approx(1 / (resnet.compute_time_s * (1 + expected)))

    # On the other socket: CTC's 1 core stays below that socket's 8, no shared PCIe switch.
    apart = Simulator(cluster, make_workload([0.0, 0.0], [RESNET, CTC], [1, 1]))
    start_all(apart, {0: [0], 1: [1]})
    assert apart.rate[0] == pytest.approx(1 / resnet.compute_time_s)
    assert apart.contention[0] == 1.0


def test_other_socket_spills_over_past_its_cores(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, server="dgx1")  # 16 cores per socket
    # Four DLRM jobs (6 cores each) on socket 1 keep 24 cores busy: 8 spill into socket 0.
    workload = make_workload([0.0] * 5, [0, 2, 2, 2, 2], [1] * 5, catalog="deepshare")
    sim = Simulator(cluster, workload)
    start_all(sim, {0: [0], **{job: [1] for job in range(1, 5)}})
    c = InterferenceCoefficients()
    gnn = get_catalog("deepshare")[0]
    own = gnn.cpu_cores
    expected = c.a1 * (np.exp(c.a2 * 8.0 + c.a3 * own) - np.exp(c.a3 * own))
    assert sim.rate[0] == pytest.approx(1 / (gnn.compute_time_s * (1 + expected)))


def test_a_parameter_server_slows_its_neighbours_but_never_straggles(make_workload) -> None:
    cluster = build_cluster("flat", servers=1, server="power8")  # groups 0, 1 on sockets 0, 1
    config = SimulatorConfig(communication=False)
    # ResNet-50 with 2 workers on socket 0 and its PS (1 core, no PCIe) on socket 1 beside
    # a CTC worker (1 core, 1.6 GB/s).
    workload = make_workload([0.0, 0.0], [RESNET, CTC], [2, 1], ps=[1, 0])
    sim = Simulator(cluster, workload, config)
    start_all(sim, {0: [0, 0, 1], 1: [1]})
    c = InterferenceCoefficients()
    resnet, ctc = get_catalog("marl")[RESNET], get_catalog("marl")[CTC]
    # The workers share nothing (socket 0 holds only their own 8 cores; socket 1's 2 stay
    # below its 8): ResNet runs alone. Its PS would see CTC's core, but does no step.
    assert sim.rate[0] == 2 / resnet.compute_time_s
    assert sim.contention[0] == 1.0
    # CTC shares socket 1 with the PS's core; the PS moves no PCIe traffic.
    own = ctc.cpu_cores
    expected = c.a1 * (np.exp(c.a2 * 1.0 + c.a3 * own) - np.exp(c.a3 * own))
    assert sim.rate[1] == pytest.approx(1 / (ctc.compute_time_s * (1 + expected)), rel=1e-12)
    assert sim.contention[1] == pytest.approx(1 + expected, rel=1e-12)


def test_prepared_interference_terms_give_the_formula() -> None:
    """The simulator's form (own-use terms computed once per start) is 001's S(U) - S(0)."""
    c = InterferenceCoefficients(a1=0.04, a2=0.3, a3=0.1, l1=-0.05, b1=0.05, b2=0.02, l2=0.01)
    rng = np.random.default_rng(5)
    shared_cpu, own_cpu = rng.uniform(0, 12, 50), rng.uniform(0, 6, 50)
    shared_pcie, own_pcie = rng.uniform(0, 8, 50), rng.uniform(0, 4, 50)
    expected = c.a1 * (np.exp(c.a2 * shared_cpu + c.a3 * own_cpu) - np.exp(c.a3 * own_cpu))
    expected += c.b1 * shared_pcie
    prepared = c.excess(shared_cpu, shared_pcie, c.idle_terms(own_cpu, own_pcie))
    np.testing.assert_allclose(prepared, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        c.slowdown(shared_cpu, 2.0, shared_pcie, 0.5),  # one own use for every task
        c.a1 * (np.exp(c.a2 * shared_cpu + c.a3 * 2.0) - np.exp(c.a3 * 2.0)) + c.b1 * shared_pcie,
        rtol=1e-12,
        atol=1e-15,
    )


def test_parameter_server_pairs_use_the_ps_bandwidth(make_workload) -> None:
    cluster = build_cluster("fat-tree", k=4)
    config = SimulatorConfig(interference=False)
    # VGG-16 with 2 workers in pod 0 and 1 PS in pod 1: every pair crosses the core.
    sim = Simulator(cluster, make_workload([0.0], [1], [2], ps=[1]), config)
    start_all(sim, {0: [0, 2, 8]})
    vgg = get_catalog("marl")[1]
    # Each worker pushes and pulls G/1 MB; the PS's 10 Gbps port carries both workers'
    # pairs but counts the job once, so each pair sees the full 10 Gbps bottleneck.
    step = vgg.compute_time_s + 2 * vgg.gradient_mb * 8 / 1000 / 10.0
    assert sim.rate[0] == pytest.approx(2 / step)


def test_profiled_time_alone_is_the_simulators_own(make_workload) -> None:
    """The profiling code's communication alone (what SCED2 and the contention env read)
    is the simulator's step alone for the same placement, derived by hand."""
    cluster = build_cluster("fat-tree", k=4)
    config = SimulatorConfig(interference=False)
    sim = Simulator(cluster, make_workload([0.0], [1], [2], ps=[1]), config)
    start_all(sim, {0: [0, 2, 8]})
    vgg = get_catalog("marl")[1]
    by_hand = 2 * vgg.gradient_mb * 8 / 1000 / 10.0  # as in the test above
    profiled = alone_communication_s(cluster, "ps", 2, 1, vgg.gradient_mb, np.array([0, 2, 8]))
    assert profiled == pytest.approx(by_hand, rel=1e-12)
    assert sim.rate[0] == pytest.approx(2 / (vgg.compute_time_s + profiled), rel=1e-12)
    # One task, or a ring of tasks that exchange nothing: no time.
    assert alone_communication_s(cluster, "allreduce", 1, 0, vgg.gradient_mb, np.array([0])) == 0
    assert alone_communication_s(cluster, "allreduce", 2, 0, 0.0, np.array([0, 8])) == 0


def test_fit_recovers_known_coefficients() -> None:
    truth = InterferenceCoefficients(a1=0.04, a2=0.3, a3=0.1, l1=-0.05, b1=0.05, b2=0.02, l2=0.0)
    rng = np.random.default_rng(3)
    shared_cpu, own_cpu = rng.uniform(0, 12, 200), rng.uniform(1, 6, 200)
    shared_pcie, own_pcie = rng.uniform(0, 8, 200), rng.uniform(0, 4, 200)
    measured = truth.cpu_slowdown(shared_cpu, own_cpu) + truth.pcie_slowdown(shared_pcie, own_pcie)
    fitted = fit_interference(shared_cpu, own_cpu, shared_pcie, own_pcie, measured)
    predicted = fitted.cpu_slowdown(shared_cpu, own_cpu) + fitted.pcie_slowdown(
        shared_pcie, own_pcie
    )
    assert np.allclose(predicted, measured, atol=1e-6)
    assert fitted.a2 == pytest.approx(0.3, rel=1e-3)
    assert fitted.b1 == pytest.approx(0.05, rel=1e-3)


def test_fit_refuses_too_few_samples() -> None:
    with pytest.raises(ValueError, match="at least 7 samples"):
        fit_interference(*(np.ones(3) for _ in range(5)))
