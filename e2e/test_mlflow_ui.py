"""The MLflow UI as a person sees it: ``make e2e`` (not part of ``make test``).

How to run
----------
    make e2e                      # or: .venv/bin/python -m pytest -q e2e/

What you get
------------
The demo (``tune/configs/demo.yaml``) trains for one iteration -- without its warm start,
with three heuristics and two held-out seeds, so the check takes minutes, not an hour --
into a temporary MLflow store; ``mlflow ui`` serves it on 127.0.0.1; headless Chromium
(Debian's ``chromium``, installed with apt-get when missing) opens the experiment's runs
table (``#/experiments/<id>/runs``) and the compare view of the learned evaluation run next
to the heuristic runs, and saves both as PNG screenshots in ``$PODSCHED_RESULTS/e2e/`` (else
``~/podsched-results/e2e/``). The test asserts what the rendered pages show: every
compared run by its name (policy and seeds), and the ``avg_jct`` metric they share.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BIN = Path(PYTHON).parent
#: The demo, one iteration, made quick: no warm start, three heuristics, two seeds.
DEMO_OVERRIDES = [
    "warm_start=null",
    "evaluation.seeds=[1000, 1001]",
    "evaluation.validation_seeds=[]",
    "evaluation.baselines=[dsif+locality, fifo+packing, fifo+tetris]",
]


def chromium() -> str:
    """The chromium binary, installed with apt-get when missing."""
    found = shutil.which("chromium")
    if found is None:
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=True)
        found = shutil.which("chromium")
    assert found is not None, "chromium is not installed and apt-get could not install it"
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def render(browser: str, url: str, screenshot: Path, profile: Path) -> str:
    """``url`` rendered by headless Chromium: saves ``screenshot``, returns the DOM text."""
    common = [
        browser,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--window-size=1600,1000",
        # The UI is a single-page app: let its requests and rendering finish first.
        "--virtual-time-budget=30000",
    ]
    subprocess.run(
        [*common, f"--screenshot={screenshot}", url], check=True, capture_output=True, timeout=180
    )
    dom = subprocess.run(
        [*common, "--dump-dom", url], check=True, capture_output=True, text=True, timeout=180
    )
    return dom.stdout


def test_the_compare_view_shows_the_learned_and_heuristic_runs(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    browser = chromium()
    results = Path(
        os.environ.get("PODSCHED_RESULTS") or Path.home() / "podsched-results"
    ).expanduser()
    out = results / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = [f"tracking.tracking_uri={uri}", *DEMO_OVERRIDES]
    trained = subprocess.run(
        [PYTHON, str(ROOT / "platform" / "train.py"), "--config", "tune/configs/demo.yaml"]
        + ["--stop-iters", "1", "--storage", str(tmp_path / "results"), "--json"]
        + [arg for override in overrides for arg in ("--set", override)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    payload = json.loads(trained.stdout.splitlines()[-1])
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(payload["experiment"])
    runs = client.search_runs([experiment.experiment_id], "tags.stage = 'evaluation'")
    compared = {run.data.tags["mlflow.runName"]: run.info.run_id for run in runs}
    learned = f"eval-{payload['summary']['learned']}-seeds1000-1001"
    assert learned in compared and "eval-fifo+packing-seeds1000-1001" in compared
    port = free_port()
    command = [str(BIN / "mlflow"), "ui", "--backend-store-uri", uri, "--host", "127.0.0.1"]
    server = subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "mlflow ui down"
                time.sleep(0.5)
        base = f"http://127.0.0.1:{port}/#"
        table = render(
            browser,
            f"{base}/experiments/{experiment.experiment_id}/runs",
            out / "runs.png",
            tmp_path / "profile-runs",
        )
        ids = json.dumps(sorted(compared.values()))
        query = f"runs={quote(ids)}&experiments={quote(json.dumps([experiment.experiment_id]))}"
        compare = render(
            browser, f"{base}/compare-runs?{query}", out / "compare.png", tmp_path / "profile-cmp"
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    for name in compared:
        assert name in compare, f"{name} not shown in the compare view"
    assert "avg_jct" in compare and "avg_jct_ci95" in compare
    # The runs table lists every run by name: the training trial's says its seed.
    assert learned in table and "demo-train-seed0-" in table
    for screenshot in (out / "runs.png", out / "compare.png"):
        assert screenshot.read_bytes()[:4] == b"\x89PNG" and screenshot.stat().st_size > 10_000
    print(f"screenshots: {out / 'runs.png'}, {out / 'compare.png'}")
