"""The performance model as one named choice: ``ideal`` or ``contention``.

- ``contention`` (the default, :class:`~envs.sim.engine.SimulatorConfig`'s own): a job's
  step time grows with interference from the jobs sharing its sockets and servers and with
  communication between its workers over links it may share with other jobs (see
  :mod:`envs.sim.engine`). A trace's duration is the job's compute time, free of
  interference and communication; the job takes longer wherever either applies (spread
  workers, crowded servers), so its GPU-seconds consumed exceed the trace's.
- ``ideal``: no interference and no communication time: every job runs at its trace (or
  catalog) duration wherever it is placed, as in simulators that model no network
  (Tiresias'). A trace's duration is then exactly the job's run time at its requested GPUs.

:func:`perf_switches` turns the name into the simulator's two switches; it is the one
place that knows the names.
"""

from __future__ import annotations

from typing import NamedTuple

#: The performance models, by name.
PERF_MODELS = ("ideal", "contention")
#: The model used when none is named: today's simulator with interference and links.
DEFAULT_PERF = "contention"


class PerfSwitches(NamedTuple):
    """``SimulatorConfig``'s speed-model switches a performance model sets."""

    interference: bool
    communication: bool


def perf_switches(perf: str) -> PerfSwitches:
    """The switches of the performance model ``perf`` (one of :data:`PERF_MODELS`).

    ``SimulatorConfig(**perf_switches("ideal")._asdict(), ...)`` builds a contention-free
    simulator. Raises ValueError naming the bad value and the allowed ones.
    """
    if perf == "ideal":
        return PerfSwitches(interference=False, communication=False)
    if perf == "contention":
        return PerfSwitches(interference=True, communication=True)
    raise ValueError(f"perf must be one of {', '.join(PERF_MODELS)}, got {perf!r}")
