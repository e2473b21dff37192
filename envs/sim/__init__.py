"""The cluster simulator: event-driven engine, performance model, metrics."""

from envs.sim.engine import (
    LINK_SHARING,
    JobStatus,
    PlacementError,
    SimulationStalledError,
    Simulator,
    SimulatorConfig,
)
from envs.sim.interference import (
    INTERFERENCE_PRESETS,
    InterferenceCoefficients,
    fit_interference,
    interference_coefficients,
)
from envs.sim.metrics import SimulationResult
from envs.sim.perf import DEFAULT_PERF, PERF_MODELS, PerfSwitches, perf_switches
from envs.sim.timeline import Timeline, server_fragmentation

__all__ = [
    "DEFAULT_PERF",
    "INTERFERENCE_PRESETS",
    "LINK_SHARING",
    "PERF_MODELS",
    "InterferenceCoefficients",
    "JobStatus",
    "PerfSwitches",
    "PlacementError",
    "SimulationResult",
    "SimulationStalledError",
    "Simulator",
    "SimulatorConfig",
    "Timeline",
    "fit_interference",
    "interference_coefficients",
    "perf_switches",
    "server_fragmentation",
]
