"""Inter-job interference on a shared server: paper 001 §V.

A worker of job J on GPU group g (CPU socket c, server s) is slowed by the *other* jobs'
tasks on the same server:

    S_cpu = a1 * exp(a2 * U_c + a3 * C_J) + l1          (exponential CPU term)
    U_c   = sum_{same socket} C_j + (sum_{other sockets} C_j - n_core)_+
    S_p   = b1 * U_p + b2 * P_J + l2                     (linear PCIe term)
    U_p   = sum_{same GPU group} P_j

with C the CPU cores a task keeps busy and P its PCIe traffic (GB/s), both profiled alone,
and n_core the cores of the other socket(s): a job first fills the socket it has affinity
with and only spills into ours once its own socket is full. The simulator charges the
*excess* over the same model with no interferers, ``S(U) - S(0)`` clipped at 0: the
constants l1, l2 and the job's own terms then describe its baseline, so a job alone runs at
its profiled (ideal) speed, and any interference slows it. A job's compute phase runs at
the pace of its slowest worker (synchronous training), so its slowdown is the maximum over
its workers.

The default coefficients are plausible values for 001's testbed (two 8-core sockets,
128 Gbps PCIe): a socket fully loaded by neighbours (U_c = 8 cores) slows a 4-core job by
about 40%, a neighbour moving 6 GB/s over the same PCIe switch by about 18%; 001 measured
30% average slowdown under bin packing (Fig. 1a). :func:`fit_interference` fits all seven
coefficients from measured (co-location, slowdown) samples by least squares, as 001 does.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np
from scipy.optimize import least_squares


@dataclass(frozen=True)
class InterferenceCoefficients:
    """Coefficients of 001's interference model (CPU: a1, a2, a3, l1; PCIe: b1, b2, l2)."""

    a1: float = 0.05
    a2: float = 0.25
    a3: float = 0.05
    l1: float = 0.0
    b1: float = 0.03
    b2: float = 0.0
    l2: float = 0.0

    def __post_init__(self) -> None:
        for name in ("a1", "a2", "b1"):
            if getattr(self, name) < 0:
                raise ValueError(
                    f"interference coefficient {name}={getattr(self, name)} must be >= 0: "
                    "more load on a shared socket or PCIe switch never speeds a job up"
                )

    def cpu_slowdown(self, shared_cpu: np.ndarray, own_cpu: np.ndarray) -> np.ndarray:
        """The paper's S_cpu for interfering CPU load ``U_c`` and own CPU use ``C_J``."""
        return self.a1 * np.exp(self.a2 * shared_cpu + self.a3 * own_cpu) + self.l1

    def pcie_slowdown(self, shared_pcie: np.ndarray, own_pcie: np.ndarray) -> np.ndarray:
        """The paper's S_p for interfering PCIe load ``U_p`` and own PCIe use ``P_J``."""
        return self.b1 * shared_pcie + self.b2 * own_pcie + self.l2

    def slowdown(
        self,
        shared_cpu: np.ndarray,
        own_cpu: np.ndarray,
        shared_pcie: np.ndarray,
        own_pcie: np.ndarray,
    ) -> np.ndarray:
        """Excess slowdown S(U) - S(0) >= 0 of tasks, elementwise over the arrays."""
        zero = np.zeros_like(np.asarray(shared_cpu, dtype=np.float64))
        excess = (
            self.cpu_slowdown(shared_cpu, own_cpu)
            - self.cpu_slowdown(zero, own_cpu)
            + self.pcie_slowdown(shared_pcie, own_pcie)
            - self.pcie_slowdown(zero, own_pcie)
        )
        return np.maximum(excess, 0.0)


def fit_interference(
    shared_cpu: np.ndarray,
    own_cpu: np.ndarray,
    shared_pcie: np.ndarray,
    own_pcie: np.ndarray,
    measured_slowdown: np.ndarray,
    initial: InterferenceCoefficients | None = None,
) -> InterferenceCoefficients:
    """Least-squares fit of 001's model S_cpu + S_p to measured slowdowns.

    Each sample is one co-location: the interfering loads (U_c, U_p), the job's own
    profile (C_J, P_J) and the slowdown measured, (T_real - T_alone) / T_alone.
    """
    arrays = [np.asarray(a, dtype=np.float64) for a in (shared_cpu, own_cpu, shared_pcie, own_pcie)]
    target = np.asarray(measured_slowdown, dtype=np.float64)
    if any(a.shape != target.shape for a in arrays) or target.ndim != 1:
        raise ValueError("fit_interference needs five 1-D arrays of equal length")
    if len(target) < 7:
        raise ValueError(
            f"fit_interference needs at least 7 samples for 7 coefficients, got {len(target)}"
        )
    start = np.array(astuple(initial or InterferenceCoefficients()), dtype=np.float64)

    def residuals(theta: np.ndarray) -> np.ndarray:
        a1, a2, a3, l1, b1, b2, l2 = theta
        model = (
            a1 * np.exp(a2 * arrays[0] + a3 * arrays[1]) + l1 + b1 * arrays[2] + b2 * arrays[3] + l2
        )
        return model - target

    lower = [0.0, 0.0, -np.inf, -np.inf, 0.0, -np.inf, -np.inf]
    fit = least_squares(residuals, start, bounds=(lower, np.inf))
    a1, a2, a3, l1, b1, b2, l2 = fit.x
    # l1 and l2 are not separately identifiable (both constants); keep their sum in l1.
    return InterferenceCoefficients(a1, a2, a3, l1 + l2, b1, b2, 0.0)
