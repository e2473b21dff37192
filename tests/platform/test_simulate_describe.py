"""``platform/simulate.py describe`` end to end, as a user runs it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform.programs import cap_memory

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "platform" / "simulate.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def run_capped(*args: str) -> subprocess.CompletedProcess:
    """``run`` with the program's memory capped (:func:`tests.platform.programs.cap_memory`)."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        preexec_fn=cap_memory,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--topology", "fat-tree", "--k", "20"],
            {"servers": 2000, "gpus": 8000, "partitions": 20},
        ),
        (["--topology", "vl2", "--k", "20"], {"servers": 2000, "partitions": 20}),
        (["--topology", "bcube", "--n", "6", "--k", "3"], {"servers": 1296, "partitions": 18}),
        (
            ["--topology", "racks", "--racks", "2,2,2,2"],
            {"servers": 8, "gpus": 32, "partitions": 4},
        ),
        (["--topology", "flat", "--servers", "15", "--gpus", "8"], {"servers": 15, "gpus": 120}),
        (["--topology", "fat-tree", "--k", "4", "--server", "dgx1"], {"gpus": 128}),
    ],
)
def test_describe_json(args: list[str], expected: dict) -> None:
    result = run("describe", *args, "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    for key in ("servers", "gpus", "cpu_sockets", "gpu_groups", "partitions"):
        assert isinstance(summary[key], int)
    for key in ("switches", "links"):
        assert all(isinstance(v, int) for v in summary[key].values())
    assert isinstance(summary["servers_per_partition"], list)
    assert sum(summary["servers_per_partition"]) == summary["servers"]
    assert summary["total_bandwidth_gbps"] > summary["bisection_bandwidth_gbps"] > 0
    assert {key: summary[key] for key in expected} == expected


def test_describe_table_for_people() -> None:
    result = run("describe", "--topology", "fat-tree", "--k", "4")
    assert result.returncode == 0
    rows = {
        label.strip(): value.strip()
        for label, value in (line.split("  ", 1) for line in result.stdout.splitlines())
    }
    assert rows["servers"] == "16" and rows["GPUs"] == "64"
    assert rows["partitions"] == "4 x 4 servers"
    assert "switches: core" in result.stdout and "bisection bandwidth" in result.stdout
    assert "80.0 Gbps" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--topology", "fat-tree", "--k", "5"], "even integer >= 2, got 5"),
        (["--topology", "bcube", "--n", "1"], "BCube n must be an integer >= 2"),
        (["--topology", "vl2", "--k", "10"], "multiple of 4"),
        (["--topology", "racks", "--racks", "2,x"], "--racks takes machines per rack"),
        (["--topology", "fat-tree", "--server", "cray"], "unknown server architecture 'cray'"),
        (["--topology", "torus"], "invalid choice: 'torus'"),
        (["--topology", "flat", "--k", "4"], "--k does not apply to flat"),
    ],
)
def test_describe_errors_are_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    result = run("describe", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and fragment in result.stderr


def test_describe_draws_a_png(tmp_path: Path) -> None:
    target = tmp_path / "bcube.png"
    result = run("describe", "--topology", "bcube", "--n", "4", "--k", "1", "--draw", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = run("describe", "--topology", "fat-tree", "--k", "20", "--draw", str(target))
    assert refused.returncode == 2 and "too many to draw" in refused.stderr


@pytest.mark.parametrize(
    ("args", "servers"),
    [
        (["--topology", "fat-tree", "--k", "160"], "1,024,000"),  # the largest allowed
        (["--topology", "bcube", "--n", "32", "--k", "3"], "1,048,576"),
        (["--topology", "flat", "--servers", "2501"], "2,501"),
    ],
)
def test_a_cluster_too_large_to_draw_is_refused_before_it_is_built(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    servers: str,
) -> None:
    """``describe --topology fat-tree --k 160 --draw x.png`` built the whole cluster (6 s,
    1.3 GB) only to refuse to draw it; now its planned size refuses it, nothing built."""
    import envs.topology.registry

    def no_building(*_: object, **__: object) -> None:
        raise AssertionError("the cluster was built")

    monkeypatch.setattr(envs.topology.registry, "assemble_cluster", no_building)
    monkeypatch.syspath_prepend(str(ROOT / "platform"))
    spec = importlib.util.spec_from_file_location("simulate_program", SCRIPT)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    target = tmp_path / "cluster.png"
    assert program.main(["describe", *args, "--draw", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"simulate.py: error: {servers} servers are too many to draw legibly (each has a CPU "
        "socket, and a drawing holds at most 2500 nodes); draw a smaller topology, e.g. "
        "fat-tree k=4 or bcube n=4 k=1\n"
    )
    assert not target.exists()


@pytest.mark.parametrize("name", ["cluster", "outdir"])
def test_a_drawing_name_matplotlib_would_change_is_one_line(tmp_path: Path, name: str) -> None:
    """matplotlib writes "cluster" as cluster.png (and a folder "outdir" as outdir.png)
    while the output said "cluster": refused like run --plot, before anything is built."""
    (tmp_path / "outdir").mkdir()
    target = tmp_path / name
    result = run("describe", "--topology", "flat", "--servers", "4", "--draw", str(target))
    assert result.returncode == 2 and result.stdout == ""
    problem = "is a folder; give a file name" if name == "outdir" else "a name without"
    assert result.stderr.count("\n") == 1 and f"--draw {target}: " in result.stderr
    assert problem in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["outdir"]


def test_help_explains_every_option() -> None:
    result = run("describe", "--help")
    assert result.returncode == 0
    for option in (
        "--topology",
        "--k",
        "--n",
        "--racks",
        "--servers",
        "--gpus",
        "--server",
        "--json",
        "--draw",
    ):
        assert option in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--topology", "fat-tree", "--k", "100000"],
            "fat-tree k=100000 would have 250,000,000,000,000 servers; at most 1,048,576 fit "
            "in memory",
        ),
        (["--topology", "vl2", "--k", "100000"], "would have 50,000,000,000 servers; at most"),
        (["--topology", "bcube", "--n", "1000", "--k", "5"], "BCube n=1000 k=5 would have 1,"),
        (["--topology", "racks", "--racks", "100000000,2"], "would have 100,000,002 servers"),
        (
            ["--topology", "flat", "--servers", "16", "--gpus", "1000000000"],
            "flat servers=16 would have 16,000,000,000 GPUs; at most 8,388,608 fit in memory",
        ),
    ],
)
def test_a_cluster_too_large_for_memory_is_one_line(args: list[str], message: str) -> None:
    """These ended in a MemoryError traceback (or the machine's memory) while building."""
    result = run_capped("describe", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("simulate.py: error: ") and message in result.stderr


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_a_reader_that_stops_reading_ends_it_quietly(
    output: list[str], run_into_closed_pipe
) -> None:
    """``describe ... | head -c 10``: it printed "simulate.py: error: [Errno 32] Broken
    pipe" and exited 2, as for a bad command line; now 141 (128 + SIGPIPE, as a Unix
    tool ends) and nothing on stderr."""
    result = run_into_closed_pipe(
        [
            sys.executable,
            str(SCRIPT),
            "describe",
            "--topology",
            "bcube",
            "--n",
            "6",
            "--k",
            "3",
            *output,
        ]
    )
    assert (result.returncode, result.stderr) == (141, "")
