"""infra/team_mlflow.py for real: a throwaway PostgreSQL 15 (its own data folder and port)
under an MLflow server, the demo (tune/configs/demo.yaml: its network, its 16 environments,
its warm start, validation and evaluation, at a budget of seconds) trained against it for
one iteration, and every run, metric and artifact found there -- through MLflow and in
PostgreSQL's own tables. The program is stopped by its own process id, and it stops
PostgreSQL by the postmaster's."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "infra" / "team_mlflow.py"
DEMO = ROOT / "tune" / "configs" / "demo.yaml"
# The demo's training at a budget of seconds (this test and the multi-node one): iterations
# of 400 env steps in four environments per runner and one pass of two minibatches, the warm
# start on two recorded episodes.
DEMO_TRAINING_IN_SECONDS = (
    "algorithm.train_batch_size=400",
    "algorithm.minibatch_size=200",
    "algorithm.num_epochs=1",
    "resources.num_envs_per_env_runner=4",
    "warm_start.episodes=2",
    "warm_start.heldout_episodes=1",
    "warm_start.epochs=1",
)
# The demo's pipeline end to end: every stage runs (warm start by imitation, one PPO
# iteration, validation, the held-out comparison), each on one workload.
DEMO_BUDGET = (
    *DEMO_TRAINING_IN_SECONDS,
    "evaluation.seeds=[1000]",
    "evaluation.validation_seeds=[2000]",
    # One validation workload cannot show a checkpoint significantly better than the clone:
    # the lowest mean chooses.
    "evaluation.selection_confidence=0",
    "evaluation.baselines=[dsif+locality]",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def team_mlflow() -> Any:
    """The program as a module (infra/ is not a package)."""
    spec = importlib.util.spec_from_file_location("podsched_team_mlflow", PROGRAM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def data_root() -> Iterator[Path]:
    """A folder PostgreSQL's own OS user can enter (pytest's tmp_path is root's, 0700)."""
    root = Path(tempfile.mkdtemp(prefix="team-mlflow-", dir="/tmp"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def mlflow_database(port: int, password: str) -> Iterator[Any]:
    """A cursor on the team server's PostgreSQL database ``mlflow`` as user ``mlflow``."""
    import psycopg2

    with (
        contextlib.closing(
            psycopg2.connect(
                host="127.0.0.1", port=port, user="mlflow", password=password, dbname="mlflow"
            )
        ) as connection,
        connection.cursor() as cursor,
    ):
        yield cursor


def test_bad_arguments_fail_with_one_line(tmp_path: Path) -> None:
    program = team_mlflow()
    defaults = program.build_parser().parse_args(["serve", "--data-dir", str(tmp_path)])
    assert defaults.host == "127.0.0.1"  # this machine only, unless told otherwise
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    cases = {
        ("--data-dir", str(not_a_folder)): f"--data-dir {not_a_folder} exists and is not a folder",
        ("--data-dir", str(tmp_path), "--port", "70000"): "--port must be in 1..65535, got 70000",
        ("--data-dir", str(tmp_path), "--port", "5000", "--db-port", "5000"): (
            "--port and --db-port must differ, both are 5000"
        ),
    }
    for arguments, message in cases.items():
        done = subprocess.run(
            [sys.executable, str(PROGRAM), "serve", *arguments],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stderr == f"team_mlflow.py: error: {message}\n"
    if os.geteuid() == 0:
        # PostgreSQL refuses root; its own user cannot enter pytest's 0700 folders.
        done = subprocess.run(
            [sys.executable, str(PROGRAM), "serve", "--data-dir", str(tmp_path / "team")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert "PostgreSQL runs as 'postgres' (it refuses root) and cannot enter" in done.stderr
        assert done.stderr.count("\n") == 1


def executable(path: Path, text: str = "#!/bin/sh\n") -> Path:
    """A file of mode 0755 at ``path`` (its folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def postgres_install(root: Path, version: str, server: bool = True) -> Path:
    """A fake ``root/<version>/bin``: initdb and postgres for a server, psql only without."""
    folder = root / version / "bin"
    for program in ("initdb", "postgres", "psql") if server else ("psql",):
        executable(folder / program)
    return folder


@pytest.fixture
def no_postgres(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path, Path]:
    """The program with an empty PATH folder (no initdb, no pg_config) and an empty Debian
    PostgreSQL root: (module, the PATH folder, the root)."""
    program = team_mlflow()
    path = tmp_path / "path"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    lib = tmp_path / "usr-lib-postgresql"
    lib.mkdir()
    # raising=False: a program without the constant fails the tests' asserts, not this.
    monkeypatch.setattr(program, "POSTGRES_LIB", lib, raising=False)
    return program, path, lib


def test_postgres_binaries_off_path_are_found_in_the_newest_debian_folder(
    no_postgres: tuple[Any, Path, Path],
) -> None:
    program, _, lib = no_postgres
    # Debian's postgresql-15: the server programs in /usr/lib/postgresql/15/bin, not on PATH.
    postgres_install(lib, "9.6")
    fifteen = postgres_install(lib, "15")
    postgres_install(lib, "16", server=False)  # a newer client only: no initdb
    executable(lib / "latest" / "bin" / "initdb")  # not a version: skipped
    assert program.postgres_binaries(None) == fifteen  # 15 > 9.6 as numbers, not as text
    sixteen = postgres_install(lib, "16")
    assert program.postgres_binaries(None) == sixteen


def test_postgres_binaries_ask_pg_config_before_the_debian_folders(
    tmp_path: Path, no_postgres: tuple[Any, Path, Path]
) -> None:
    program, path, lib = no_postgres
    postgres_install(lib, "15")
    custom = postgres_install(tmp_path / "opt", "14")
    pg_config = executable(path / "pg_config", f"#!/bin/sh\necho {custom}\n")
    assert program.postgres_binaries(None) == custom
    # libpq-dev's pg_config of another major than the server names a folder without
    # initdb: the Debian folders decide.
    executable(pg_config, f"#!/bin/sh\necho {lib / '17' / 'bin'}\n")
    assert program.postgres_binaries(None) == lib / "15" / "bin"
    # initdb on PATH comes first of all (its real folder, through a link).
    (path / "initdb").symlink_to(custom / "initdb")
    assert program.postgres_binaries(None) == custom
    # --pg-bin overrides everything.
    assert program.postgres_binaries(lib / "15" / "bin") == lib / "15" / "bin"


def test_missing_postgres_binaries_fail_with_one_line_naming_where_it_looked(
    tmp_path: Path, no_postgres: tuple[Any, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    program, path, lib = no_postgres
    postgres_install(lib, "16", server=False)
    with pytest.raises(program.SetupError) as error:
        program.postgres_binaries(None)
    assert str(error.value) == (
        f"no initdb on PATH, in pg_config (none) or in {lib}/*/bin: install PostgreSQL's "
        "server or pass --pg-bin <folder of initdb and postgres>"
    )
    executable(path / "pg_config", f"#!/bin/sh\necho {lib / '16' / 'bin'}\n")
    with pytest.raises(program.SetupError) as error:
        program.postgres_binaries(None)
    assert str(error.value) == (
        f"no initdb on PATH, in pg_config --bindir ({lib / '16' / 'bin'}) or in {lib}/*/bin: "
        "install PostgreSQL's server or pass --pg-bin <folder of initdb and postgres>"
    )
    # Through the command line: exit 2 and that one line, before anything is made.
    capsys.readouterr()
    assert program.main(["serve", "--data-dir", str(tmp_path / "team")]) == 2
    assert capsys.readouterr().err == f"team_mlflow.py: error: {error.value}\n"
    assert not (tmp_path / "team").exists()


@pytest.mark.integration
def test_training_logs_everything_to_the_postgres_backed_server(data_root: Path) -> None:
    from mlflow.tracking import MlflowClient

    port, db_port = free_port(), free_port()
    data_dir = data_root / "team"
    log = (data_root / "server.log").open("w")
    server = subprocess.Popen(
        [
            *(sys.executable, str(PROGRAM), "serve", "--data-dir", str(data_dir)),
            *("--port", str(port), "--db-port", str(db_port), "--workers", "1"),
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        start_new_session=True,
    )
    postmaster = None
    try:
        assert server.stdout is not None
        ready = server.stdout.readline()  # one line once the server answers
        assert ready.startswith(f"team MLflow at http://127.0.0.1:{port} "), (
            ready + (data_root / "server.log").read_text()[-3000:]
        )
        postmaster = int((data_dir / "postgres" / "data" / "postmaster.pid").read_text().split()[0])
        assert f"pid {postmaster};" in ready
        # Bound to loopback only: PostgreSQL's configuration as it runs.
        password = (data_dir / "pgpass").read_text().strip().rsplit(":", 1)[1]
        assert oct((data_dir / "pgpass").stat().st_mode & 0o777) == "0o600"
        with mlflow_database(db_port, password) as cursor:
            cursor.execute("SHOW listen_addresses")
            assert cursor.fetchone() == ("127.0.0.1",)
        uri = f"http://127.0.0.1:{port}"
        result = subprocess.run(
            [
                *(sys.executable, str(ROOT / "platform" / "train.py"), "--config", str(DEMO)),
                *("--storage", str(data_root / "results"), "--stop-iters", "1", "--json"),
                *("--set", f"tracking.tracking_uri={uri}"),
                *(arg for override in DEMO_BUDGET for arg in ("--set", override)),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        payload = json.loads(result.stdout.strip().splitlines()[-1])
        assert payload["tracking_uri"] == uri
        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name("podsched-demo")
        assert experiment is not None
        runs = client.search_runs([experiment.experiment_id])
        training = [run for run in runs if run.data.tags.get("stage") != "evaluation"]
        evaluation = {
            run.data.tags["policy"]: run
            for run in runs
            if run.data.tags.get("stage") == "evaluation"
        }
        assert len(training) == 1 and len(runs) == 4
        assert set(evaluation) == {"learned-greedy", "learned-sampled", "dsif+locality"}
        assert all(run.info.status == "FINISHED" for run in runs)
        train_run = training[0]
        assert train_run.data.params["algorithm.train_batch_size"] == "400"
        assert train_run.data.params["model.config.critic_gradient"] == "head"
        # One iteration: every iteration's counters and the learner's statistics, at step 1.
        for name in ("env_steps_lifetime", "time_this_iter_s", "shared/policy_loss"):
            history = client.get_metric_history(train_run.info.run_id, name)
            assert [metric.step for metric in history] == [1], name
        assert train_run.data.metrics["env_steps_lifetime"] >= 400
        assert evaluation["dsif+locality"].data.metrics["jobs_finished"] == 40
        learned = evaluation["learned-greedy"]
        artifacts = {a.path for a in client.list_artifacts(learned.info.run_id)}
        assert artifacts == {
            "config.yaml",
            "validation.json",  # the warm start and the checkpoint, scored on workload 2000
            "jct_cdf.png",
            "evaluation.csv",
            "evaluation.json",
            "checkpoint.txt",
            "policy",  # the evaluated policy's module (a folder)
        }
        # The artifacts are files of the server's artifact store, byte for byte what the
        # client downloads; the runs and metrics are rows of PostgreSQL's tables.
        [run_folder] = [
            path for path in (data_dir / "artifacts").rglob(learned.info.run_id) if path.is_dir()
        ]
        stored = {path.name: path for path in (run_folder / "artifacts").iterdir()}
        assert set(stored) == artifacts
        assert stored["policy"].is_dir() and any(stored["policy"].rglob("*.pkl"))
        downloaded = Path(client.download_artifacts(learned.info.run_id, "checkpoint.txt"))
        assert stored["checkpoint.txt"].read_bytes() == downloaded.read_bytes()
        assert downloaded.read_text().strip() == payload["checkpoint"]
        with mlflow_database(db_port, password) as cursor:
            cursor.execute(
                "SELECT run_uuid, status FROM runs WHERE experiment_id = %s",
                (int(experiment.experiment_id),),
            )
            rows = dict(cursor.fetchall())
            assert rows == {run.info.run_id: "FINISHED" for run in runs}
            cursor.execute(
                "SELECT step, value FROM metrics WHERE run_uuid = %s AND key = %s",
                (train_run.info.run_id, "env_steps_lifetime"),
            )
            [(step, value)] = cursor.fetchall()
            assert step == 1
            assert value == pytest.approx(train_run.data.metrics["env_steps_lifetime"])
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGTERM)  # the program, by its own id
        try:
            status = server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            status = server.wait()
        log.close()
        if postmaster is not None and alive(postmaster):
            # Only if the program failed to: PostgreSQL's fast shutdown, by its own id.
            os.kill(postmaster, signal.SIGINT)
    assert status == 0, (data_root / "server.log").read_text()[-3000:]
    # It stopped PostgreSQL (by the postmaster's id) and the MLflow server before exiting.
    assert postmaster is not None and not alive(postmaster)
    for stopped in (port, db_port):
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", stopped)) != 0
