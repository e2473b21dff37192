"""Shared fixtures: one real local Ray per test session, started only when a test asks;
every default result folder (tune.paths) moved into a temporary folder, so no test writes
into the repository or the user's home."""

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


@pytest.fixture(scope="session", autouse=True)
def results_in_a_temporary_folder(tmp_path_factory):
    """PODSCHED_RESULTS (the root of Tune's, MLflow's and the warm start's default folders)
    points into the session's temporary folder, for this process and the programs it runs."""
    os.environ["PODSCHED_RESULTS"] = str(tmp_path_factory.mktemp("podsched-results"))
    yield
