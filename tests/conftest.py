"""Shared fixtures: one real local Ray per test session, started only when a test asks;
every default result folder (tune.paths) moved into a temporary folder, so no test writes
into the repository or the user's home; a real MLflow server behind a gate that can cut it
off (an outage as clients see it)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tune.worker_env import bound_spin_waits

# The tests' own torch threads and those of the local Rays they start (whose workers
# inherit this environment) wait as the programs' do: a short spin, then sleep
# (tune.worker_env).
# Before anything imports torch, which reads the setting once.
bound_spin_waits()


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


@pytest.fixture(scope="session")
def empty_mlflow_store(tmp_path_factory) -> Path:
    """An MLflow sqlite store with MLflow's schema and no runs, made once per session.

    Creating the schema (MLflow's alembic migrations) costs a fresh process 3-5 s on these
    machines, more under load, and every program a test runs on a new store paid it; a
    copy of this file is the same empty store, already migrated. (Its "Default"
    experiment keeps the template's artifact folder; the programs log into experiments
    of their own, whose artifacts land next to the copy.)
    """
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    folder = tmp_path_factory.mktemp("mlflow-template")
    database = folder / "mlflow.db"
    store = SqlAlchemyStore(f"sqlite:///{database}", str(folder / "artifacts"))
    store.engine.dispose()
    return database


@pytest.fixture
def sqlite_uri(tmp_path: Path, empty_mlflow_store: Path) -> str:
    """The tracking URI of a new, empty sqlite store at ``tmp_path / "mlflow.db"``."""
    database = tmp_path / "mlflow.db"
    shutil.copyfile(empty_mlflow_store, database)
    return f"sqlite:///{database}"


@pytest.fixture(scope="session", autouse=True)
def results_in_a_temporary_folder(tmp_path_factory):
    """PODSCHED_RESULTS (the root of Tune's, MLflow's and the warm start's default folders)
    points into the session's temporary folder, for this process and the programs it runs."""
    os.environ["PODSCHED_RESULTS"] = str(tmp_path_factory.mktemp("podsched-results"))
    yield


@pytest.fixture
def run_into_closed_pipe():
    """``run(command, **kwargs)``: ``subprocess.run`` of ``command`` (text, stderr
    captured, from the repository root unless ``cwd`` is given) with stdout a pipe whose
    reader is already gone -- ``| head -c 10`` once head has exited, without the race of a
    real ``head``."""

    def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
        read, write = os.pipe()
        os.close(read)
        kwargs.setdefault("cwd", Path(__file__).resolve().parents[1])
        kwargs.setdefault("timeout", 300)
        try:
            return subprocess.run(
                command, stdout=write, stderr=subprocess.PIPE, text=True, **kwargs
            )
        finally:
            os.close(write)

    return run


def free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Gate:
    """A TCP relay on 127.0.0.1:``port`` to a real server on ``upstream``: :meth:`close`
    drops every connection and refuses new ones (an outage, as clients see it), :meth:`open`
    accepts again on the same port -- without restarting the server behind it."""

    def __init__(self, port: int, upstream: int) -> None:
        self.port, self.upstream = port, upstream
        self.listener: socket.socket | None = None
        self.connections: list[socket.socket] = []

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        if self.listener is not None:
            # shutdown wakes the thread blocked in accept(); close alone would not.
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)
            self.listener.close()
            self.listener = None
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        self.connections.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client_side, _ = listener.accept()
            except OSError:  # closed: the outage
                return
            server_side = socket.create_connection(("127.0.0.1", self.upstream))
            self.connections += [client_side, server_side]
            for source, target in ((client_side, server_side), (server_side, client_side)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory) -> Iterator[int]:
    """A real ``mlflow server`` on 127.0.0.1 over a sqlite store, shared by the session's
    tests (each uses experiments of its own): yields its port. Its process group is
    stopped by its own id at the end."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    port = free_local_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"),
            # One worker process: MLflow's default of four each import MLflow and open
            # the store, which costs a busy 2-core machine tens of seconds per server.
            *("server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"),
            *("--backend-store-uri", f"sqlite:///{folder / 'server.db'}"),
            *("--artifacts-destination", str(folder / "artifacts")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300  # minutes on a busy 2-core machine
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no mlflow server"
                time.sleep(0.5)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture
def gated_mlflow(mlflow_server: int) -> Iterator[tuple[Gate, str]]:
    """The session's MLflow server reached through a fresh, open :class:`Gate`: yields the
    gate and the tracking URI (the gate's port)."""
    gate = Gate(free_local_port(), mlflow_server)
    gate.open()
    try:
        yield gate, f"http://127.0.0.1:{gate.port}"
    finally:
        gate.close()
