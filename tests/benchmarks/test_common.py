"""benchmarks/common.py: the selectors' --help and refusals, and the results file's name."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
KNOWN = ["demo", "contended"]


@pytest.fixture
def common(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("common")


def test_names_are_selected_in_order_and_none_means_all(common: ModuleType) -> None:
    assert common.selected_names(None, KNOWN, "x.py") == KNOWN
    assert common.selected_names([], KNOWN, "x.py") == KNOWN
    assert common.selected_names(["contended", "demo"], KNOWN, "x.py") == ["contended", "demo"]


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_what_the_program_does_the_names_and_the_default(
    common: ModuleType, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        common.selected_names(["demo", flag], KNOWN, "x.py", about="Times the things.")
    assert caught.value.code == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[0] == "usage: x.py [setting ...]"
    assert "Times the things." in out
    assert "settings: demo, contended (default: all, in that order" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["k20"], "x.py: unknown setting(s) k20; known: demo, contended"),
        (["demo", "--all"], "x.py: unknown setting(s) --all; known: demo, contended"),
        (
            ["demo", "contended", "demo"],
            "x.py: setting(s) named more than once: demo; name each at most once",
        ),
    ],
)
def test_an_unknown_or_repeated_name_is_one_line_and_exit_2(
    common: ModuleType, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        common.selected_names(argv, KNOWN, "x.py")
    assert caught.value.code == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [line])


@pytest.mark.parametrize("name", ["training-a/b", "../x", "", ".hidden", "a b"])
def test_a_results_name_with_a_folder_or_odd_characters_is_refused(
    common: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    with pytest.raises(ValueError, match="is not a plain file-name part: use letters, digits"):
        common.write_results(name, [])
    assert not (tmp_path / "results").exists()


def test_plain_names_and_labels_are_kept(
    common: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    assert common.write_results("training-stop47b.v2", []) == tmp_path / "training-stop47b.v2.json"
    assert common.label_argument("h200_gpu-1") == "h200_gpu-1"
    with pytest.raises(argparse.ArgumentTypeError, match="label 'a/b' is not a plain"):
        common.label_argument("a/b")


@pytest.mark.parametrize("text", ["0", "-3", "x", "1.5", ""])
def test_positive_int_refuses_what_is_not_an_integer_of_at_least_1(
    common: ModuleType, text: str
) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be an integer >= 1, got"):
        common.positive_int(text)
    assert common.positive_int("3") == 3


@pytest.mark.parametrize(
    "name", ["cush", "deeprm", "formulations", "models", "pod_env", "simulator", "topology"]
)
def test_benchmarks_without_arguments_answer_help_and_refuse_others_before_running(
    name: str,
) -> None:
    """Each runs its benchmark only with no argument: --help and a mistyped flag end at
    once (they used to run the whole benchmark and overwrite its results)."""
    import subprocess
    import sys

    script = BENCHMARKS / f"bench_{name}.py"
    shown = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: bench_{name}.py\n")
    refused = subprocess.run(
        [sys.executable, str(script), "--fast"], capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == f"bench_{name}.py: takes no arguments, got --fast (see --help)\n"


def test_results_that_cannot_be_written_where_asked_are_kept_in_a_temporary_file(
    common: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setattr(common, "RESULTS", blocker / "results")  # a file in the way
    monkeypatch.setattr(common.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    records = [{"setting": "demo", "avg_jct": 1.5}]
    kept = common.write_results("learning", records)
    assert kept.parent == tmp_path / "tmp" and kept.name.startswith("learning-")
    assert json.loads(kept.read_text())["results"] == records
    err = capsys.readouterr().err
    assert err.startswith(f"cannot write {blocker / 'results' / 'learning.json'} (")
    assert err.endswith(f"results written to {kept}\n")
