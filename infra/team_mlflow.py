"""A team MLflow: the tracking server on a PostgreSQL backend store, with an artifact store.

How to run
----------
    python infra/team_mlflow.py serve --data-dir /srv/podsched-mlflow
    python infra/team_mlflow.py serve --data-dir /srv/podsched-mlflow --port 5000 --db-port 5433
    export MLFLOW_TRACKING_URI=http://127.0.0.1:5000      # then train as usual

What you get
------------
One foreground program (fit for a systemd unit or a tmux pane) that keeps everything in
``--data-dir``: ``postgres/`` (a PostgreSQL 15 cluster made with ``initdb`` on first start,
one database ``mlflow`` owned by the role ``mlflow``, password authentication only),
``pgpass`` (that role's generated password, mode 0600: libpq reads it through
``PGPASSFILE``, so no password is ever on a command line or in a URI) and ``artifacts/``
(the artifact store, which the server proxies: clients need no access to the folder).
PostgreSQL listens on 127.0.0.1 only (no Unix socket); MLflow binds ``--host``, 127.0.0.1
unless told otherwise. The program prints one line when the server answers, then runs
until SIGINT/SIGTERM, when it stops the MLflow server and then PostgreSQL (a fast
shutdown, by its own process id) and exits 0. PostgreSQL refuses to run as root; run as
root, the program runs it as ``--db-os-user`` (default ``postgres``), which must be able
to enter the data folder's parents. ``initdb`` and ``postgres`` come from ``--pg-bin``,
else the folder of ``initdb`` on PATH, else ``pg_config --bindir``, else the newest
/usr/lib/postgresql/*/bin (where Debian and Ubuntu install them, off PATH). Bad input
prints one line on stderr and exits 2.

Exposing it: keep ``--host 127.0.0.1`` and put a reverse proxy with TLS and a login in
front of it (MLflow's server has no authentication of its own), or bind a private
interface and name the host names clients use with ``--allowed-hosts``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATABASE = "mlflow"
ROLE = "mlflow"
#: Where Debian/Ubuntu's postgresql-NN packages install the server's programs (NN/bin).
POSTGRES_LIB = Path("/usr/lib/postgresql")


class SetupError(RuntimeError):
    """Something the user must fix before the server can start (one line, exit 2)."""


@dataclass(frozen=True)
class Layout:
    """Where a team MLflow keeps its state under one data folder."""

    root: Path

    @property
    def postgres(self) -> Path:
        """The PostgreSQL cluster (``initdb``'s data directory)."""
        return self.root / "postgres"

    @property
    def artifacts(self) -> Path:
        """The artifact store the server proxies."""
        return self.root / "artifacts"

    @property
    def pgpass(self) -> Path:
        """The role's password in libpq's pgpass format (mode 0600)."""
        return self.root / "pgpass"

    @property
    def postgres_log(self) -> Path:
        """PostgreSQL's server log."""
        return self.root / "postgres.log"


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="team_mlflow.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="start PostgreSQL (initialised on first use) and the MLflow server"
    )
    serve.add_argument(
        "--data-dir", type=Path, required=True, help="folder of the database, password, artifacts"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface MLflow binds (default 127.0.0.1: this machine only)",
    )
    serve.add_argument("--port", type=int, default=5000, help="MLflow's port (default 5000)")
    serve.add_argument(
        "--db-port", type=int, default=5432, help="PostgreSQL's port on 127.0.0.1 (default 5432)"
    )
    serve.add_argument(
        "--allowed-hosts",
        help="Host headers MLflow answers, comma-separated (MLflow's default: localhost and "
        "private IPs); set it to the names clients use when binding beyond 127.0.0.1",
    )
    serve.add_argument(
        "--workers", type=int, default=2, help="MLflow server worker processes (default 2)"
    )
    serve.add_argument(
        "--db-os-user",
        default="postgres",
        help="OS user that runs PostgreSQL when this program runs as root (default postgres)",
    )
    serve.add_argument(
        "--pg-bin",
        type=Path,
        help="folder of initdb and postgres (default: that of `initdb` on PATH, else "
        "`pg_config --bindir` if it holds initdb, else the newest /usr/lib/postgresql/*/bin)",
    )
    serve.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for each service to answer"
    )
    return parser


def check_arguments(args: argparse.Namespace) -> None:
    """Reject bad input with a :class:`SetupError` naming the value and what is allowed."""
    for name in ("port", "db_port"):
        value = getattr(args, name)
        if not 1 <= value <= 65535:
            raise SetupError(f"--{name.replace('_', '-')} must be in 1..65535, got {value}")
    if args.port == args.db_port:
        raise SetupError(f"--port and --db-port must differ, both are {args.port}")
    if args.workers < 1:
        raise SetupError(f"--workers must be >= 1, got {args.workers}")
    if args.data_dir.exists() and not args.data_dir.is_dir():
        raise SetupError(f"--data-dir {args.data_dir} exists and is not a folder")


def pg_config_bindir() -> Path | None:
    """What ``pg_config --bindir`` says, or None without a working ``pg_config``."""
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return None
    try:
        done = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    answer = done.stdout.strip()
    return Path(answer) if done.returncode == 0 and answer else None


def newest_versioned_bin(root: Path) -> Path | None:
    """The ``root/<version>/bin`` holding ``initdb`` of the highest version, or None.

    Versions compare as numbers (16 > 9.6); folders not named like a version are skipped."""
    found = []
    for initdb in root.glob("*/bin/initdb"):
        version = initdb.parent.parent.name
        if re.fullmatch(r"\d+(\.\d+)*", version) and initdb.is_file():
            found.append((tuple(int(part) for part in version.split(".")), initdb.parent))
    return max(found)[1] if found else None


def find_postgres_binaries() -> Path:
    """The folder of ``initdb`` when --pg-bin is not given, or a :class:`SetupError`.

    Debian and Ubuntu's postgresql-NN packages put ``initdb`` and ``postgres`` in
    /usr/lib/postgresql/NN/bin, which is not on PATH (only the client programs get links in
    /usr/bin): after PATH, ask ``pg_config --bindir`` (Debian's names that folder of its own
    major), then take the newest version installed there."""
    on_path = shutil.which("initdb")
    if on_path is not None:
        return Path(on_path).resolve().parent
    bindir = pg_config_bindir()
    # libpq-dev's pg_config can belong to a newer major than the server: it must hold initdb.
    if bindir is not None and (bindir / "initdb").is_file():
        return bindir
    newest = newest_versioned_bin(POSTGRES_LIB)
    if newest is not None:
        return newest
    asked = f"pg_config --bindir ({bindir})" if bindir is not None else "pg_config (none)"
    raise SetupError(
        f"no initdb on PATH, in {asked} or in {POSTGRES_LIB}/*/bin: install PostgreSQL's "
        "server or pass --pg-bin <folder of initdb and postgres>"
    )


def postgres_binaries(pg_bin: Path | None) -> Path:
    """The folder holding ``initdb`` and ``postgres``."""
    if pg_bin is None:
        pg_bin = find_postgres_binaries()
    for program in ("initdb", "postgres"):
        if not (pg_bin / program).is_file():
            raise SetupError(f"{pg_bin / program} does not exist: pass --pg-bin <PostgreSQL bin>")
    return pg_bin


def database_account(os_user: str) -> pwd.struct_passwd | None:
    """The account PostgreSQL runs as: ``os_user`` when we are root, else ourselves (None)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(os_user)
    except KeyError:
        raise SetupError(
            f"PostgreSQL refuses to run as root and OS user {os_user!r} does not exist: "
            "create it or pass --db-os-user"
        ) from None


def check_reachable(folder: Path, account: pwd.struct_passwd) -> None:
    """``account`` (not root) can enter every parent of ``folder``, or a :class:`SetupError`."""
    for parent in folder.resolve().parents:
        mode = parent.stat()
        if mode.st_uid == account.pw_uid or mode.st_mode & stat.S_IXOTH:
            continue
        if mode.st_gid == account.pw_gid and mode.st_mode & stat.S_IXGRP:
            continue
        raise SetupError(
            f"PostgreSQL runs as {account.pw_name!r} (it refuses root) and cannot enter "
            f"{parent}: choose a --data-dir whose parents others may enter (e.g. under /srv)"
        )


def run_as(account: pwd.struct_passwd | None) -> dict[str, Any]:
    """Popen keywords that run a child as ``account`` (nothing when it is ourselves)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def initialise(layout: Layout, pg_bin: Path, account: pwd.struct_passwd | None) -> None:
    """Create the data folder, the PostgreSQL cluster (superuser ``mlflow``, scram password
    auth) and the pgpass file, unless the cluster exists already."""
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.artifacts.mkdir(exist_ok=True)
    if (layout.postgres / "data" / "PG_VERSION").is_file():
        if not layout.pgpass.is_file():
            raise SetupError(f"{layout.pgpass} is missing: the database's password is lost")
        return
    if layout.postgres.exists():
        raise SetupError(f"{layout.postgres} holds no PostgreSQL cluster: remove it to start anew")
    if account is not None:
        # Others may pass through (PostgreSQL's user reaches its folder), not list.
        layout.root.chmod(0o711)
        check_reachable(layout.postgres, account)
    password = secrets.token_hex(24)
    layout.postgres.mkdir(mode=0o700)
    password_file = layout.postgres / "initial-password"
    password_file.write_text(password + "\n")
    password_file.chmod(0o600)
    if account is not None:
        os.chown(layout.postgres, account.pw_uid, account.pw_gid)
        os.chown(password_file, account.pw_uid, account.pw_gid)
    initdb = [
        str(pg_bin / "initdb"),
        *("--pgdata", str(layout.postgres / "data")),
        *("--username", ROLE, "--pwfile", str(password_file)),
        *("--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C"),
    ]
    done = subprocess.run(initdb, capture_output=True, text=True, **run_as(account))
    password_file.unlink()
    if done.returncode != 0:
        shutil.rmtree(layout.postgres, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SetupError(f"initdb failed: {last}")
    layout.pgpass.write_text(f"*:*:*:{ROLE}:{password}\n")
    layout.pgpass.chmod(0o600)


def libpq_environment(layout: Layout) -> dict[str, str]:
    """The environment that lets libpq (psycopg2, MLflow's SQLAlchemy) log in."""
    return {**os.environ, "PGPASSFILE": str(layout.pgpass)}


def connect(layout: Layout, db_port: int, database: str = DATABASE) -> Any:
    """A psycopg2 connection to ``database`` as ``mlflow`` on 127.0.0.1:``db_port``."""
    import psycopg2

    password = layout.pgpass.read_text().strip().rsplit(":", 1)[1]
    return psycopg2.connect(
        host="127.0.0.1", port=db_port, user=ROLE, password=password, dbname=database
    )


def start_postgres(
    layout: Layout,
    pg_bin: Path,
    db_port: int,
    account: pwd.struct_passwd | None,
    timeout: float,
) -> subprocess.Popen:
    """Start PostgreSQL on 127.0.0.1:``db_port`` (TCP only) and make sure the ``mlflow``
    database exists; returns the postmaster's process."""
    if port_in_use(db_port):
        raise SetupError(f"--db-port {db_port} is in use on 127.0.0.1: choose another")
    command = [
        str(pg_bin / "postgres"),
        *("-D", str(layout.postgres / "data"), "-p", str(db_port)),
        *("-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="),
    ]
    log = layout.postgres_log.open("a")
    server = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **run_as(account)
    )
    log.close()
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection = connect(layout, db_port, database="postgres")
            break
        except Exception as error:
            if server.poll() is not None:
                tail = layout.postgres_log.read_text().strip().splitlines()[-3:]
                raise SetupError(f"PostgreSQL exited ({server.returncode}): {tail}") from error
            if time.monotonic() > deadline:
                stop_process(server, signal.SIGINT)
                raise SetupError(f"PostgreSQL did not answer in {timeout:.0f} s") from error
            time.sleep(0.3)
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if cursor.fetchone() is None:
                cursor.execute(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
    finally:
        connection.close()
    return server


def start_mlflow(args: argparse.Namespace, layout: Layout) -> subprocess.Popen:
    """Start ``mlflow server`` on the PostgreSQL store and the artifact folder."""
    if port_in_use(args.port, args.host):
        raise SetupError(f"--port {args.port} is in use on {args.host}: choose another")
    command = [
        sys.executable,
        *("-m", "mlflow", "server"),
        *(
            "--backend-store-uri",
            f"postgresql+psycopg2://{ROLE}@127.0.0.1:{args.db_port}/{DATABASE}",
        ),
        *("--artifacts-destination", str(layout.artifacts)),
        *("--host", args.host, "--port", str(args.port), "--workers", str(args.workers)),
    ]
    if args.allowed_hosts:
        command += ["--allowed-hosts", args.allowed_hosts]
    # Its own output goes to stderr: stdout carries only this program's ready line.
    return subprocess.Popen(
        command, env=libpq_environment(layout), stdout=sys.stderr, start_new_session=True
    )


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already listens on ``host:port``."""
    probe_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((probe_host, port)) == 0


def wait_for_mlflow(server: subprocess.Popen, url: str, timeout: float) -> None:
    """Return once ``url``/health answers; a :class:`SetupError` if the server exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None:
            raise SetupError(f"the MLflow server exited ({server.returncode}) before answering")
        if time.monotonic() > deadline:
            raise SetupError(f"the MLflow server did not answer at {url} in {timeout:.0f} s")
        time.sleep(0.5)


def stop_process(
    process: subprocess.Popen, how: signal.Signals, group: bool = False, timeout: float = 60
) -> None:
    """Signal ``process`` by its own id (with ``group``, its process group: a server and its
    workers), wait for it, kill it if it does not stop in ``timeout`` seconds."""
    if process.poll() is not None:
        return
    send = os.killpg if group else os.kill
    with contextlib.suppress(ProcessLookupError):
        send(process.pid, how)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            send(process.pid, signal.SIGKILL)
        process.wait()


def serve(args: argparse.Namespace) -> int:
    """Run PostgreSQL and MLflow until SIGINT/SIGTERM; returns the exit status."""
    check_arguments(args)
    pg_bin = postgres_binaries(args.pg_bin)
    account = database_account(args.db_os_user)
    layout = Layout(args.data_dir.resolve())
    initialise(layout, pg_bin, account)
    stopping: list[int] = []

    def request_stop(signum: int, frame: Any) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    database = start_postgres(layout, pg_bin, args.db_port, account, args.timeout)
    mlflow_server = None
    try:
        mlflow_server = start_mlflow(args, layout)
        url = f"http://{'127.0.0.1' if args.host == '0.0.0.0' else args.host}:{args.port}"
        wait_for_mlflow(mlflow_server, url, args.timeout)
        print(
            f"team MLflow at {url} (PostgreSQL on 127.0.0.1:{args.db_port}, pid "
            f"{database.pid}; artifacts in {layout.artifacts}); "
            f"set MLFLOW_TRACKING_URI={url}",
            flush=True,
        )
        while not stopping and mlflow_server.poll() is None and database.poll() is None:
            time.sleep(0.5)
        if not stopping:
            crashed = "MLflow server" if mlflow_server.poll() is not None else "PostgreSQL"
            print(f"team_mlflow.py: error: the {crashed} stopped", file=sys.stderr)
            return 1
        return 0
    finally:
        if mlflow_server is not None:
            stop_process(mlflow_server, signal.SIGTERM, group=True)
        # SIGINT to the postmaster is PostgreSQL's fast shutdown: sessions end, the data
        # stays consistent (its own children are signalled by it, never by us).
        stop_process(database, signal.SIGINT)


def main(argv: list[str] | None = None) -> int:
    """Run the program; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return serve(args)
    except SetupError as error:
        print(f"team_mlflow.py: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
