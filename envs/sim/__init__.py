"""The cluster simulator: event-driven engine, performance model, metrics."""

from envs.sim.engine import (
    LINK_SHARING,
    JobStatus,
    PlacementError,
    SimulationStalledError,
    Simulator,
    SimulatorConfig,
)
from envs.sim.interference import InterferenceCoefficients, fit_interference
from envs.sim.metrics import SimulationResult
from envs.sim.perf import DEFAULT_PERF, PERF_MODELS, PerfSwitches, perf_switches
from envs.sim.timeline import Timeline, server_fragmentation

__all__ = [
    "DEFAULT_PERF",
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
    "perf_switches",
    "server_fragmentation",
]
