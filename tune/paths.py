"""Where results land: stable default folders, and storage locations that may be URIs.

Programs run from a checkout, from ``ray job submit``'s temporary copy of it on the head
node, or from a container, so nothing defaults to a path inside the code's folder. Every
default lives under one results root:

- ``$PODSCHED_RESULTS`` when set, else ``~/podsched-results``;
- Tune's results (checkpoints, trial logs): ``<root>/ray_results/<experiment>``;
- the MLflow store: ``sqlite:///<root>/mlflow.db``, its artifacts next to it in
  ``<root>/mlartifacts/<experiment>`` (see :func:`artifact_location`);
- evaluations the tracking server would not take: ``<root>/unlogged-evaluations/<time>``.

A storage location given by the user is either a local folder (made absolute) or a URI
Tune's storage accepts (``s3://``, ``gs://``, ``file://``, ...), passed through untouched.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from urllib.parse import urlparse

#: The environment variable that moves every default result folder.
RESULTS_ENV = "PODSCHED_RESULTS"
#: The results root without that variable.
DEFAULT_RESULTS = Path("~") / "podsched-results"


def results_root() -> Path:
    """``$PODSCHED_RESULTS``, else ``~/podsched-results`` (absolute)."""
    return Path(os.environ.get(RESULTS_ENV) or DEFAULT_RESULTS).expanduser().resolve()


def default_storage() -> str:
    """Tune's results folder when ``--storage`` is not given."""
    return str(results_root() / "ray_results")


def default_tracking_uri() -> str:
    """The MLflow store when neither the config nor ``MLFLOW_TRACKING_URI`` names one."""
    return f"sqlite:///{results_root() / 'mlflow.db'}"


def is_uri(location: str) -> bool:
    """Whether ``location`` is a URI (``scheme://...``) rather than a local path."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) is not None


def resolve_storage(location: str | os.PathLike[str]) -> str:
    """A URI untouched; a local path made absolute (``~`` expanded). ValueError
    (``--storage <path>: <why>``) for a local folder that could not be made or written
    (:func:`writable_folder_problem`), before any work."""
    text = os.fspath(location)
    if is_uri(text):
        return text
    path = str(Path(text).expanduser().resolve())
    problem = writable_folder_problem(path)
    if problem is not None:
        raise ValueError(f"--storage {path}: {problem}")
    return path


def unlogged_evaluations_folder() -> Path:
    """``<root>/unlogged-evaluations/<now>``: where a program keeps an evaluation the
    tracking server would not take (a new folder name each second; not created)."""
    return results_root() / "unlogged-evaluations" / time.strftime("%Y%m%d-%H%M%S")


def writable_folder_problem(location: str) -> str | None:
    """Why the local folder ``location`` could not be created or written (a file on the
    way, a folder this user cannot write), else None; a URI is its storage's business.
    Nothing is created: the question is asked before any work."""
    if is_uri(location):
        return None
    path = Path(location).expanduser()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def storage_join(storage: str, *parts: str) -> str:
    """``storage`` / ``parts``: joined with ``/`` inside a URI, as a path otherwise."""
    if is_uri(storage):
        return "/".join([storage.rstrip("/"), *parts])
    return str(Path(storage, *parts))


def local_folder(storage: str, *parts: str) -> Path:
    """A local folder for what must stay on this machine (a warm-start module RLlib loads
    by path): under ``storage`` when it is local, else under the results root."""
    base = results_root() if is_uri(storage) else Path(storage)
    return Path(base, *parts)


def artifact_location(tracking_uri: str, experiment: str) -> str | None:
    """Where a new MLflow experiment keeps its artifacts: for a sqlite store, the folder
    ``mlartifacts/<experiment>`` next to the database file; for a tracking server (http),
    None -- the server decides (``--artifacts-destination``); for any other store,
    ``<results root>/mlartifacts/<experiment>``. Never relative to the current directory,
    which is where MLflow would put them (``./mlruns``) otherwise."""
    parsed = urlparse(tracking_uri)
    if parsed.scheme in ("http", "https", "databricks"):
        return None
    folder_name = re.sub(r"[^A-Za-z0-9._-]+", "_", experiment).strip("_") or "experiment"
    if parsed.scheme == "sqlite" and tracking_uri.startswith("sqlite:///"):
        database = Path(tracking_uri[len("sqlite:///") :])
        if not database.is_absolute():
            database = Path.cwd() / database
        base = database.parent
    else:
        base = results_root()
    return (base / "mlartifacts" / folder_name).resolve().as_uri()
