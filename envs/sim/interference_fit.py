"""001's Fig. 1(a) rebuilt on the interference model: where ``paper001-fit`` comes from.

001 §II-C: the eight Table I jobs, each one worker on one GPU, are bin-packed onto four
servers of one 16-core CPU and two GPUs each, and each job's training speed is compared
with the job alone on a server; the mean slowdown is 30% (Fig. 1(a)). All jobs demand the
same (6 cores, 1 GPU), so bin packing fills the servers in Table I's order: ResNet-50 with
VGG-16, Inception-bn with ResNeXt-110, DSSM with Seq2Seq, CTC with WLM. With one CPU per
server both jobs of a server share the socket and the PCIe switch, so each job's
interfering load is its neighbour's profile: U_c = C_neighbour, U_p = P_neighbour (no
spill-over term). The profiles are the ``marl`` catalog's (C_J = ``cpu_cores``, P_J =
``pcie_gb_s``).

The simulator charges the excess S(U) - S(0), which is linear in a1 and b1: scaling both
by ``s`` scales every predicted slowdown, and so the mean, by ``s``. :func:`fig1a_scale`
is the ``s`` that makes the mean 30%.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from envs.sim.interference import InterferenceCoefficients
from envs.workload.catalog import get_catalog

#: 001 Fig. 1(a): mean training slowdown of the eight jobs under bin packing vs alone.
FIG1A_MEAN_SLOWDOWN = 0.30


def fig1a_colocations(catalog: str = "marl") -> dict[str, np.ndarray]:
    """Per job of Fig. 1(a) (Table I order): ``shared_cpu`` (U_c), ``own_cpu`` (C_J),
    ``shared_pcie`` (U_p), ``own_pcie`` (P_J); jobs 2i and 2i+1 share server i."""
    models = get_catalog(catalog)
    if len(models) % 2:
        raise ValueError(f"catalog {catalog!r} has an odd number of models; Fig. 1(a) pairs them")
    own_cpu = np.array([model.cpu_cores for model in models], dtype=np.float64)
    own_pcie = np.array([model.pcie_gb_s for model in models], dtype=np.float64)
    # Each job's neighbour is the other job of its pair: index i ^ 1 swaps 2i and 2i+1.
    neighbour = np.arange(len(models)) ^ 1
    return {
        "shared_cpu": own_cpu[neighbour],
        "own_cpu": own_cpu,
        "shared_pcie": own_pcie[neighbour],
        "own_pcie": own_pcie,
    }


def fig1a_slowdowns(coefficients: InterferenceCoefficients, catalog: str = "marl") -> np.ndarray:
    """Each Fig. 1(a) job's predicted slowdown (T_real - T_alone) / T_alone."""
    loads = fig1a_colocations(catalog)
    return coefficients.slowdown(
        loads["shared_cpu"], loads["own_cpu"], loads["shared_pcie"], loads["own_pcie"]
    )


def fig1a_scale(
    coefficients: InterferenceCoefficients | None = None,
    target: float = FIG1A_MEAN_SLOWDOWN,
    catalog: str = "marl",
) -> float:
    """The factor on a1 and b1 that makes Fig. 1(a)'s mean predicted slowdown ``target``."""
    predicted = float(fig1a_slowdowns(coefficients or InterferenceCoefficients(), catalog).mean())
    if predicted <= 0:
        raise ValueError("these coefficients predict no slowdown in Fig. 1(a); nothing to scale")
    return target / predicted


def scaled(coefficients: InterferenceCoefficients, factor: float) -> InterferenceCoefficients:
    """``coefficients`` with a1 and b1 multiplied by ``factor`` (the shape kept)."""
    return replace(coefficients, a1=coefficients.a1 * factor, b1=coefficients.b1 * factor)
