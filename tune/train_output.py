"""What a ``platform/train.py --json`` subprocess left for its caller.

train.py prints one JSON object as its last stdout line whenever training and the held-out
evaluation finished -- also when it then exits 1 because the tracking server would not take
the evaluation runs (the payload names where their files were kept,
``evaluation_unlogged``). Callers that run it (``platform/reproduce.py``,
``benchmarks/bench_learning.py``) keep such a result instead of losing the work that made
it, and still report the exit status.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple


class TrainOutput(NamedTuple):
    """``payload``: train.py's JSON object, None when there is none; ``problem``: why the
    run did not end cleanly (empty when it exited 0 with a payload)."""

    payload: dict[str, Any] | None
    problem: str


def read_train_output(stdout: str, returncode: int) -> TrainOutput:
    """The payload on ``stdout``'s last line, and what went wrong, if anything."""
    lines = stdout.strip().splitlines()
    payload = None
    if lines:
        try:
            parsed = json.loads(lines[-1])
        except json.JSONDecodeError:
            parsed = None
        payload = parsed if isinstance(parsed, dict) else None
    if returncode == 0 and payload is not None:
        return TrainOutput(payload, "")
    if payload is None:
        return TrainOutput(None, f"train.py exited with status {returncode} and no result")
    unlogged = payload.get("evaluation_unlogged")
    kept = f"; its evaluation was not logged, the files are in {unlogged}" if unlogged else ""
    return TrainOutput(payload, f"train.py exited with status {returncode}{kept}")
