"""platform/evaluate.py --mlflow: a tracking server that fails after the evaluation played
loses nothing -- the results are kept in a file, named in one line, and the exit is 1."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def program() -> ModuleType:
    path = ROOT / "platform" / "evaluate.py"
    spec = importlib.util.spec_from_file_location("evaluate_program", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_unreachable_server_keeps_the_results_and_says_where(
    program: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mlflow.exceptions import MlflowException

    import tune.runs
    from tune.experiment import config_from_dict

    def unreachable(*args: object, **kwargs: object) -> None:
        raise MlflowException("API request failed after 5 retries")

    monkeypatch.setattr(tune.runs, "log_evaluation_runs", unreachable)
    monkeypatch.setenv("PODSCHED_RESULTS", str(tmp_path))
    experiment = config_from_dict({"name": "tiny", "environment": {"name": "pod_scheduling_v0"}})
    payload = {"policies": {"fifo+packing": {"avg_jct": 7200.0}}, "summary": {"best": "x"}}
    status = program.log_or_keep(experiment, "http://127.0.0.1:9", {}, {}, "", payload)
    assert status == 1
    kept = sorted((tmp_path / "unlogged-evaluations").glob("*/tiny.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == payload
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "evaluate.py: error: the evaluation runs were not logged to http://127.0.0.1:9 "
        f"(MlflowException); the results are in {kept[0]}"
    ]


def test_a_logged_evaluation_exits_0(program: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    import tune.runs
    from tune.experiment import config_from_dict

    logged = []
    monkeypatch.setattr(tune.runs, "log_evaluation_runs", lambda *a, **k: logged.append(a))
    experiment = config_from_dict({"environment": {"name": "pod_scheduling_v0"}})
    assert program.log_or_keep(experiment, "http://127.0.0.1:9", {}, {}, "", {}) == 0
    assert len(logged) == 1
