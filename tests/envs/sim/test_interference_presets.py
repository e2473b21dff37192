"""The interference model's named coefficient sets and 001's Fig. 1(a) fit (hand-checked)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.sim import INTERFERENCE_PRESETS, InterferenceCoefficients, interference_coefficients
from envs.sim.interference import PAPER001_FIG1A_SCALE
from envs.sim.interference_fit import (
    FIG1A_MEAN_SLOWDOWN,
    fig1a_colocations,
    fig1a_scale,
    fig1a_slowdowns,
    scaled,
)
from envs.workload import get_catalog


def test_fig1a_pairs_table_one_in_order() -> None:
    """ResNet-50 (4 cores, 1.4 GB/s) shares a server with VGG-16 (3 cores, 3.9 GB/s): each
    sees the other's profile as its interfering load."""
    loads = fig1a_colocations()
    assert loads["shared_cpu"][:2].tolist() == [3.0, 4.0]
    assert loads["shared_pcie"][:2].tolist() == [3.9, 1.4]
    assert loads["own_cpu"][:2].tolist() == [4.0, 3.0]


def test_default_predicts_about_a_third_of_fig1a() -> None:
    """ResNet-50 next to VGG-16 by hand: 0.05 e^(0.05*4) (e^(0.25*3) - 1) + 0.03 * 3.9."""
    by_hand = 0.05 * math.exp(0.2) * (math.exp(0.75) - 1) + 0.03 * 3.9
    slowdowns = fig1a_slowdowns(InterferenceCoefficients())
    assert slowdowns[0] == pytest.approx(by_hand, rel=1e-12)
    # Every pair the same way, from the catalog's profiles: jobs 2i and 2i+1 share a
    # server, each loaded by the other's cores and PCIe traffic.
    models = get_catalog("marl")
    every = [
        0.05 * math.exp(0.05 * models[i].cpu_cores) * (math.exp(0.25 * models[i ^ 1].cpu_cores) - 1)
        + 0.03 * models[i ^ 1].pcie_gb_s
        for i in range(len(models))
    ]
    np.testing.assert_allclose(slowdowns, every, rtol=1e-12)
    # About 9.5% on average against 001's 30%: the fit's factor is 0.30 over that mean.
    assert round(sum(every) / len(every), 3) == 0.095
    assert fig1a_scale() == pytest.approx(0.30 / (sum(every) / len(every)), rel=1e-12)


def test_paper001_fit_predicts_fig1a_mean() -> None:
    fitted = INTERFERENCE_PRESETS["paper001-fit"]
    assert fitted.a1 == pytest.approx(0.05 * PAPER001_FIG1A_SCALE)
    assert fitted.b1 == pytest.approx(0.03 * PAPER001_FIG1A_SCALE)
    assert (fitted.a2, fitted.a3, fitted.b2) == (0.25, 0.05, 0.0)
    # The preset's rounded factor (3.17 for 3.1666) lands within 0.1 point of 30%.
    assert fig1a_slowdowns(fitted).mean() == pytest.approx(FIG1A_MEAN_SLOWDOWN, abs=1e-3)


def test_scaling_a1_and_b1_scales_every_slowdown() -> None:
    base = fig1a_slowdowns(InterferenceCoefficients())
    np.testing.assert_allclose(
        fig1a_slowdowns(scaled(InterferenceCoefficients(), 2.5)), 2.5 * base, rtol=1e-12
    )


def test_specs_resolve_to_coefficients() -> None:
    assert interference_coefficients("default") == InterferenceCoefficients()
    assert interference_coefficients({"a1": 0.2}) == InterferenceCoefficients(a1=0.2)
    given = InterferenceCoefficients(b1=0.1)
    assert interference_coefficients(given) is given


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("paper002", "allowed: default, paper001-fit"),
        ({"alpha": 1.0}, "unknown key"),
        ({"a1": "big"}, "must be a number"),
        ({"a1": -1.0}, "must be >= 0"),
        ({"b2": float("nan")}, "b2=nan must be a finite number"),
        ({"l1": float("inf")}, "l1=inf must be a finite number"),
        (3, "preset name"),
    ],
)
def test_bad_specs_say_what_is_allowed(spec: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        interference_coefficients(spec)
