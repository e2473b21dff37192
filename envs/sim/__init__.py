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
from envs.sim.timeline import Timeline, server_fragmentation

__all__ = [
    "LINK_SHARING",
    "InterferenceCoefficients",
    "JobStatus",
    "PlacementError",
    "SimulationResult",
    "SimulationStalledError",
    "Simulator",
    "SimulatorConfig",
    "Timeline",
    "fit_interference",
    "server_fragmentation",
]
