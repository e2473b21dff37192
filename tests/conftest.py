"""Shared fixtures: one real local Ray per test session, started only when a test asks."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A real in-process Ray (2 CPUs, no dashboard), shut down at the end of the session."""
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # A short absolute session folder: Ray's unix sockets live there (108-byte path limit).
    session = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=session)
    yield ray
    ray.shutdown()
    shutil.rmtree(session, ignore_errors=True)
