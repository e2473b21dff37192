"""The simulator's event heap: time-ordered, ties broken by insertion order (deterministic)."""

from __future__ import annotations

import heapq
from typing import NamedTuple

ARRIVAL, TICK, WAKE = 0, 1, 2
EVENT_KIND_NAMES = ("arrival", "tick", "wake")


class Event(NamedTuple):
    """One scheduled event; ``payload`` is the job index for arrivals.

    A tuple, so the heap compares events in C: by time, then sequence number (unique, so
    kind and payload are never compared). The whole Philly trace pushes 82k arrivals.
    """

    time: float
    sequence: int
    kind: int
    payload: int = -1


class EventQueue:
    """A min-heap of events with a sequence number so equal times pop in push order."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._sequence = 0

    def push(self, time: float, kind: int, payload: int = -1) -> None:
        """Schedule an event."""
        heapq.heappush(self._heap, Event(time, self._sequence, kind, payload))
        self._sequence += 1

    def push_many(self, times: list[float], kind: int, payloads: list[int]) -> None:
        """Schedule one event per ``(time, payload)``, pushed in that order (as many
        :meth:`push` calls would, in one heapify)."""
        start = self._sequence
        self._heap.extend(
            Event(time, start + offset, kind, payload)
            for offset, (time, payload) in enumerate(zip(times, payloads, strict=True))
        )
        heapq.heapify(self._heap)
        self._sequence += len(times)

    def peek_time(self) -> float:
        """Time of the next event, ``inf`` when empty."""
        return self._heap[0].time if self._heap else float("inf")

    def pop(self) -> Event:
        """Remove and return the next event."""
        return heapq.heappop(self._heap)

    def drop(self, kind: int) -> int:
        """Remove every event of ``kind``; the others keep their order. Returns how many."""
        kept = [event for event in self._heap if event.kind != kind]
        dropped = len(self._heap) - len(kept)
        heapq.heapify(kept)
        self._heap = kept
        return dropped

    def __len__(self) -> int:
        return len(self._heap)
