"""Where results land: stable defaults under one root, URIs untouched, MLflow artifacts in
an explicit location (never ./mlruns of the current folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tune.paths import (
    artifact_location,
    default_storage,
    default_tracking_uri,
    is_uri,
    local_folder,
    resolve_storage,
    results_root,
    storage_join,
    writable_folder_problem,
)


def test_defaults_live_under_the_results_root(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODSCHED_RESULTS", str(tmp_path / "results"))
    assert results_root() == tmp_path / "results"
    assert default_storage() == str(tmp_path / "results" / "ray_results")
    assert default_tracking_uri() == f"sqlite:///{tmp_path}/results/mlflow.db"
    monkeypatch.delenv("PODSCHED_RESULTS")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert results_root() == tmp_path / "home" / "podsched-results"


@pytest.mark.parametrize(
    "uri",
    ["s3://bucket/podsched results", "gs://bucket", "file:///mnt/shared/ray", "hdfs://nn:9000/x"],
)
def test_uris_pass_through_untouched(uri: str) -> None:
    assert is_uri(uri)
    assert resolve_storage(uri) == uri
    assert storage_join(uri, "demo") == f"{uri.rstrip('/')}/demo"


def test_local_storage_is_made_absolute(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert not is_uri("results/ray") and not is_uri("C:/not/a/uri")
    assert resolve_storage("results/ray") == str(tmp_path / "results" / "ray")
    assert storage_join(str(tmp_path), "demo", "x") == str(tmp_path / "demo" / "x")
    # Things RLlib loads by path stay local: under a local storage, else under the root.
    assert local_folder(str(tmp_path), "warm_start", "demo") == tmp_path / "warm_start" / "demo"
    monkeypatch.setenv("PODSCHED_RESULTS", str(tmp_path / "root"))
    assert local_folder("s3://bucket/x", "warm_start") == tmp_path / "root" / "warm_start"


def test_artifact_locations(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODSCHED_RESULTS", str(tmp_path / "root"))
    database = tmp_path / "store" / "mlflow.db"
    assert artifact_location(f"sqlite:///{database}", "podsched demo/1") == (
        (tmp_path / "store" / "mlartifacts" / "podsched_demo_1").as_uri()
    )
    assert artifact_location("http://127.0.0.1:5000", "demo") is None  # the server decides
    assert artifact_location("postgresql://db/mlflow", "demo") == (
        (tmp_path / "root" / "mlartifacts" / "demo").as_uri()
    )
    monkeypatch.chdir(tmp_path)  # a relative sqlite file: next to it, made absolute
    assert artifact_location("sqlite:///rel.db", "demo") == (
        (tmp_path / "mlartifacts" / "demo").as_uri()
    )


def test_artifacts_land_next_to_the_store_not_in_the_current_folder(
    monkeypatch, tmp_path: Path, sqlite_uri: str
) -> None:
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import experiment_id, log_run

    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri = sqlite_uri
    note = tmp_path / "note.txt"
    note.write_text("kept\n")
    run_id = log_run(uri, "paths", "eval-x", metrics={"avg_jct": 1.0}, artifacts=[note])
    client = MlflowClient(uri)
    location = client.get_experiment(experiment_id(uri, "paths")).artifact_location
    assert location == (tmp_path / "mlartifacts" / "paths").as_uri()
    stored = tmp_path / "mlartifacts" / "paths" / run_id / "artifacts" / "note.txt"
    assert stored.read_text() == "kept\n"
    assert os.listdir(elsewhere) == []


def test_a_folder_that_cannot_be_made_is_named_before_anything_is_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert writable_folder_problem(str(blocker / "results" / "tiny")) == (
        f"{blocker} is a file, not a folder"
    )
    assert writable_folder_problem(str(tmp_path / "new" / "deeper")) is None
    assert not (tmp_path / "new").exists()
    assert writable_folder_problem("s3://bucket/results") is None
    # What the programs resolve their --storage with refuses it before any work.
    with pytest.raises(ValueError, match=f"--storage {blocker / 's'}: {blocker} is a file"):
        resolve_storage(str(blocker / "s"))
