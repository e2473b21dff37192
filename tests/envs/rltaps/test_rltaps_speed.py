"""003 eq. 3, 10 and 12-15 by hand: one job alone, shared ToR links, racks, the fits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.rltaps import RLTapsEnv
from envs.rltaps.cnns import CNN_NAMES, CNN_TABLE
from envs.rltaps.config import RLTapsConfig
from envs.rltaps.speed import SpeedModel

from .conftest import EFFECTIVE, P100, assignment, job

# Default fits: t_100(g) = 0.005 (sqrt g - 1) s, t_500(g) = 0.025 (sqrt g - 1) s.


def t100(gpus: int) -> float:
    return 0.005 * math.sqrt(gpus) - 0.005


def t500(gpus: int) -> float:
    return 0.025 * math.sqrt(gpus) - 0.025


@pytest.fixture(scope="module")
def model() -> SpeedModel:
    return SpeedModel(RLTapsConfig())


def rows_of(*gpu_sets: list[int]) -> np.ndarray:
    rows = np.zeros((len(gpu_sets), 32))
    for row, gpus in enumerate(gpu_sets):
        rows[row, gpus] = 1.0
    return rows


def test_cnn_table_holds_convnet_burden_numbers() -> None:
    assert len(CNN_TABLE) == 35  # 003: "a table of 35 CNN architectures"
    table = {name: (gflops, megabytes) for name, gflops, megabytes in CNN_TABLE}
    assert table["vgg-vd-19"] == (20.0, 548.0)  # Appendix A's 20 x 10^9 FLOPs
    assert table["resnet-50"] == (4.0, 98.0)
    assert table["alexnet"] == (0.727, 233.0)
    assert table["densenet121"] == (3.0, 31.0)
    assert len(set(CNN_NAMES)) == 35


def test_single_rack_reduction_interpolates_the_two_fits(model: SpeedModel) -> None:
    gpus = np.array([16, 16, 16, 16, 16, 16, 1, 4])
    sizes = np.array([0.0, 50.0, 100.0, 300.0, 500.0, 900.0, 548.0, 548.0])
    # At 16 GPUs t_100 = 0.015 s and t_500 = 0.075 s: 0 at 0 MB, linear up to 100 MB, then
    # the line through both curves (also past 500 MB); one GPU reduces nothing.
    expected = [0.0, 0.0075, 0.015, 0.045, 0.075, 0.135, 0.0, 0.005 + 0.02 * 448 / 400]
    assert model.single_rack_reduction_s(gpus, sizes) == pytest.approx(expected)


def test_one_job_alone_runs_at_eq_3_speed(model: SpeedModel) -> None:
    # vgg-vd-19 (20 GFLOPs, 548 MB), mini-batch 256, on the 4 GPUs of machine 0: its links
    # are 4 GPU-CPU links (320 Gbps) and the CPU-CPU link (308), nobody else -> s = 1, r = 1.
    d_m = 20e9 * 256
    train_s = d_m / EFFECTIVE
    reduction = t100(4) + (t500(4) - t100(4)) * (548 - 100) / 400
    speeds = model.speeds(rows_of([0, 1, 2, 3]), np.array([d_m]), np.array([train_s]), [548.0])
    assert speeds.scale[0] == 1.0 and speeds.racks[0] == 1
    assert speeds.reduction_s[0] == pytest.approx(reduction)
    assert speeds.speed_flops[0] == pytest.approx(d_m * 4 / (train_s + reduction))

    env = RLTapsEnv(jobs=[job("vgg-vd-19", 256, 10, 4)])
    env.reset()
    _, reward, _, _, info = env.step(assignment({0: 0, 1: 0, 2: 0, 3: 0}))
    assert reward == pytest.approx(d_m * 4 / (train_s + reduction) / P100)
    assert info["idle_penalty"] == 0.0 and info["shortfall_penalty"] == 0.0


def test_two_jobs_sharing_tor_director_links_each_see_half(model: SpeedModel) -> None:
    # Job A on GPUs 0 (rack 0) and 8 (rack 1), job B on GPUs 4 (rack 0) and 12 (rack 1):
    # different machines, so they share only the ToR-director links of racks 0 and 1.
    d_m = 4e9 * 64  # resnet-50, 98 MB
    train_s = d_m / EFFECTIVE
    both = model.speeds(rows_of([0, 8], [4, 12]), np.full(2, d_m), np.full(2, train_s), [98, 98])
    tor_director = model.link_tier("tor-director")
    assert both.link_jobs[tor_director].tolist() == [2, 2, 0, 0]
    runtime_gbps = model.link_gbps[tor_director[:2]] / both.link_jobs[tor_director[:2]]
    assert runtime_gbps.tolist() == [25.0, 25.0]  # 50 Gbps (6.25 GB/s) over two jobs
    assert both.scale.tolist() == [2.0, 2.0]  # min default 50 / min run-time 25
    single_rack = t100(2) * 98 / 100
    assert both.reduction_s == pytest.approx([single_rack * 1.2 * 2] * 2)
    assert both.speed_flops == pytest.approx([d_m * 2 / (train_s + single_rack * 2.4)] * 2)

    alone = model.speeds(rows_of([0, 8]), np.array([d_m]), np.array([train_s]), [98])
    assert alone.scale.tolist() == [1.0]
    assert alone.reduction_s == pytest.approx([single_rack * 1.2])

    # A third job inside machine 5 shares no link with them: s = 1 for it.
    three = model.speeds(
        rows_of([0, 8], [4, 12], [20, 21]), np.full(3, d_m), np.full(3, train_s), [98, 98, 98]
    )
    assert three.scale.tolist() == [2.0, 2.0, 1.0]


def test_rack_factor_grows_by_a_fifth_per_rack(model: SpeedModel) -> None:
    # Four GPUs each time, over 1, 2, 3 and 4 racks; alone, so s = 1.
    gpu_sets = ([0, 2, 4, 6], [0, 2, 8, 10], [0, 2, 8, 16], [0, 8, 16, 24])
    speeds = model.speeds(
        rows_of(gpu_sets[0]), np.array([1e12]), np.array([0.1]), np.array([300.0])
    )
    base = speeds.reduction_s[0]
    assert base == pytest.approx((t100(4) + t500(4)) / 2)
    for racks, gpus in enumerate(gpu_sets, start=1):
        speeds = model.speeds(rows_of(gpus), np.array([1e12]), np.array([0.1]), [300.0])
        assert speeds.racks[0] == racks and speeds.scale[0] == 1.0
        assert speeds.reduction_s[0] == pytest.approx(base * (1 + (racks - 1) / 5))
    assert model.rack_factor(np.array([1, 2, 3, 4])) == pytest.approx([1.0, 1.2, 1.4, 1.6])


def test_one_gpu_job_reduces_nothing_and_loads_no_link(model: SpeedModel) -> None:
    speeds = model.speeds(rows_of([5], [5, 6]), np.full(2, 1e12), np.full(2, 0.1), [548, 548])
    assert speeds.reduction_s[0] == 0.0 and speeds.scale[0] == 1.0
    assert speeds.speed_flops[0] == pytest.approx(1e12 / 0.1)
    # GPUs 5 and 6 sit on different CPUs of machine 1: their path crosses that CPU-CPU link.
    qpi = model.link_tier("qpi")
    assert speeds.link_jobs[qpi].tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
