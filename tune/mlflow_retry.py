"""Evaluation runs that ride out a short MLflow outage.

Training buffers its metrics while MLflow is unreachable
(:class:`tune.mlflow_tracking.MLflowTrialCallback`); the held-out comparison after it is
one finished run per policy, logged in one go. :func:`log_run_retrying` logs such a run
and, when the tracking server cannot be reached, waits and tries again until a deadline:
a comparison of 96 heuristics is not lost to a server restart. A try that failed after
its run was created leaves a half-made run; it is deleted before the next try, so the
comparison still has one run per policy.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

#: How long the evaluation runs wait for an unreachable server (as the trial callback).
RETRY_FOR_S = 300.0
#: The longest pause between two tries.
MAX_PAUSE_S = 10.0


def outage_errors() -> tuple[type[BaseException], ...]:
    """What an unreachable or failing tracking server raises in MLflow's client: its own
    exception (HTTP errors and exhausted retries), requests' connection errors, and the
    socket's. :func:`is_outage` tells a server's trouble from a refused request."""
    from mlflow.exceptions import MlflowException
    from requests.exceptions import RequestException

    return MlflowException, RequestException, ConnectionError, TimeoutError


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` (one of :func:`outage_errors`) is worth waiting out: MLflow's
    client reports an unreachable server (its retries exhausted) and server errors as
    HTTP 5xx; a 4xx (a malformed name, a missing run) fails the same way on every try."""
    from mlflow.exceptions import MlflowException

    if isinstance(error, MlflowException):
        return error.get_http_status_code() >= 500
    return True


class Deadline:
    """One deadline shared by every run of a comparison, and the outage it reports once
    (on stderr, when it starts and when it ends)."""

    def __init__(
        self,
        tracking_uri: str,
        retry_for_s: float = RETRY_FOR_S,
        *,
        retried: str = "the evaluation runs are retried",
        resumed: str = "evaluation runs logged",
    ) -> None:
        """``retried`` and ``resumed`` word the outage's lines: what is tried again (for up
        to ``retry_for_s``) and what goes on once the server answers."""
        self.tracking_uri = tracking_uri
        self.retry_for_s = retry_for_s
        self.retried = retried
        self.resumed = resumed
        self.ends = time.monotonic() + retry_for_s
        self.outage_since: float | None = None

    def wait_or_raise(self, error: BaseException, pause: float) -> float:
        """Note the outage and sleep ``pause`` (capped by the deadline); re-raise
        ``error`` once the deadline has passed. Returns the next pause."""
        now = time.monotonic()
        if self.outage_since is None:
            self.outage_since = now
            print(
                f"MLflow: cannot reach {self.tracking_uri} ({type(error).__name__}); "
                f"{self.retried} for up to {self.retry_for_s:g} s",
                file=sys.stderr,
                flush=True,
            )
        if now >= self.ends:
            raise error
        time.sleep(min(pause, self.ends - now))
        return min(2 * pause, MAX_PAUSE_S)

    def reached(self) -> None:
        """A request got through: report the end of an outage."""
        if self.outage_since is not None:
            print(
                f"MLflow: {self.tracking_uri} reachable again after "
                f"{time.monotonic() - self.outage_since:.0f} s; {self.resumed}",
                file=sys.stderr,
                flush=True,
            )
            self.outage_since = None


def retrying(action: Callable[[], Any], deadline: Deadline) -> Any:
    """``action()``, tried again after each outage error until ``deadline``."""
    from tune.mlflow_tracking import quick_http

    pause = 1.0
    while True:
        try:
            with quick_http():
                result = action()
        except outage_errors() as error:
            if not is_outage(error):
                raise
            pause = deadline.wait_or_raise(error, pause)
            continue
        deadline.reached()
        return result


def log_run_retrying(
    tracking_uri: str,
    experiment_name: str,
    run_name: str,
    deadline: Deadline,
    on_created: Callable[[str], None] | None = None,
    **fields: Any,
) -> str:
    """:func:`tune.mlflow_tracking.log_run` (``fields`` are its keywords), tried again
    after an outage until ``deadline``; the half-made run of a failed try is deleted
    first. ``on_created`` also hears each try's new run id."""
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import log_run

    half_made: list[str] = []

    def created(run_id: str) -> None:
        half_made.append(run_id)
        if on_created is not None:
            on_created(run_id)

    def attempt() -> str:
        while half_made:
            MlflowClient(tracking_uri=tracking_uri).delete_run(half_made[0])
            half_made.pop(0)
        run_id = log_run(tracking_uri, experiment_name, run_name, on_created=created, **fields)
        half_made.clear()
        return run_id

    try:
        return retrying(attempt, deadline)
    except outage_errors():
        # Given up (a refused request, or the deadline): a half-made run must not stay
        # RUNNING where the server can still be told.
        for run_id in half_made:
            with contextlib.suppress(*outage_errors()):
                MlflowClient(tracking_uri=tracking_uri).set_terminated(run_id, status="FAILED")
        raise
