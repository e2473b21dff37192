"""platform/reproduce.py: the papers' figures as data (values read from the papers), the
settings' configs at both scales, argument errors, and one real reproduction at a tiny
budget (Ray, train.py, MLflow on a sqlite store under tmp)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tune.paper_figures import BEST_HEURISTIC, FIGURES, LEARNED, PAPERS, PaperFigure, figures_of
from tune.preflight import check_experiment
from tune.reproduction import SETTINGS, budget, build_config, compare, settings_of

ROOT = Path(__file__).resolve().parents[2]
REPRODUCE = ROOT / "platform" / "reproduce.py"


def run(
    *args: str, timeout: float = 300, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPRODUCE), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def reproduce_module():
    """platform/reproduce.py as a module (platform/ is not a package)."""
    if str(ROOT / "platform") not in sys.path:
        sys.path.insert(0, str(ROOT / "platform"))
    import reproduce

    return reproduce


# ------------------------------------------------------------------ the papers' figures
def figure(paper: str, label: str, setting: str = "sierra") -> PaperFigure:
    (found,) = [f for f in figures_of(paper) if f.label == label and f.setting == setting]
    return found


def test_the_figures_are_the_papers_numbers() -> None:
    assert figure("004", "NTAT of CuSH").value == 3.33
    assert figure("004", "NTAT of SJF BF").value == 4.13
    table1 = {
        f.policy: f.value for f in figures_of("004") if f.setting == "sierra" and f.kind == "value"
    }
    assert table1["fcfs+df"] == 7.13 and table1["random+bf"] == 5.42 and table1[LEARNED] == 3.33
    # A baseline's own value is context, never "reached".
    assert figure("004", "NTAT of SJF BF").reached(2.0) is None
    assert figure("004", "NTAT reduction vs SJF BF").value == 19.0
    assert figure("004", "NTAT of CuSH").source == "Table 1 (Sierra)"
    base = {f.label: f.value for f in figures_of("000") if f.setting == "rl-base"}
    assert base == {
        "average JCT reduction vs SRTF": 15.4,
        "average JCT reduction vs LAS": 18.2,
        "p90 JCT reduction vs SRTF": 16.4,
        "p90 JCT reduction vs LAS": 20.7,
    }
    hybrid = {f.label: f.value for f in figures_of("000") if f.setting == "rl-hybrid"}
    # 000 §V: "For p90 JCT, RL-base and RL-Hybrid equally achieve 16.4% and 20.7%".
    assert hybrid == {
        "average JCT reduction vs SRTF": 12.1,
        "average JCT reduction vs LAS": 15.1,
        "p90 JCT reduction vs SRTF": 16.4,
        "p90 JCT reduction vs LAS": 20.7,
    }
    fat_tree = [f for f in figures_of("001") if f.setting == "fat-tree"]
    assert {(f.reference, f.value, f.bound) for f in fat_tree} == {
        ("fifo+tetris", 24.3, ">="),
        ("fifo+load-balancing", 24.3, ">="),
        ("fifo+lif", 24.3, ">="),
    }
    assert {f.value for f in figures_of("001") if f.setting in ("vl2", "bcube")} == {21.0}
    assert {f.value for f in figures_of("002")} == {4.6, 2.1}
    # Both trainings of 003 and of 004 are held to the same figures.
    assert {f.setting for f in figures_of("003")} == {"reinforce", "ppo"}
    assert figure("004", "NTAT of CuSH", "sierra-ppo").value == 3.33
    # 003 only plots its slowdowns: claims without numbers.
    assert {(f.reference, f.value, f.bound) for f in figures_of("003")} == {
        ("random", None, "lower"),
        ("sjf", None, "lower"),
        ("tetris", None, "lower"),
    }


def test_every_figure_has_a_source_a_unit_and_a_setting() -> None:
    sys.path.insert(0, str(ROOT / "platform"))
    from reproduce import metric_key, param_key

    settings = {(s.paper, s.name) for s in SETTINGS}
    allowed = set("_-./ :")
    for item in FIGURES:
        assert item.source and item.unit
        # MLflow accepts the names the figures are logged under (002's label has a comma).
        assert all(c.isalnum() or c in allowed for c in param_key(f"paper.{item.label}"))
        assert all(c.isalnum() or c in "_-./" for c in metric_key(item.label))
        assert (item.paper, item.setting) in settings
    assert {item.paper for item in FIGURES} == set(PAPERS)


def test_measures_by_hand() -> None:
    rows = {
        LEARNED: {"avg_jct": 80.0, "avg_ntat": 3.5},
        "srtf": {"avg_jct": 100.0},
        BEST_HEURISTIC: {"avg_jct": 160.0},
    }
    reduction = PaperFigure(
        "000", "x", "r", "reduction", 15.4, "%", "s", "avg_jct", LEARNED, "RL", reference="srtf"
    )
    assert reduction.measure(rows) == pytest.approx(20.0)
    assert reduction.reached(20.0) is True and reduction.reached(15.0) is False
    ratio = PaperFigure(
        "002", "x", "r", "ratio", 4.6, "x", "s", "avg_jct", LEARNED, "S", reference=BEST_HEURISTIC
    )
    assert ratio.measure(rows) == pytest.approx(2.0)
    assert ratio.reached(2.0) is False
    value = PaperFigure("004", "x", "v", "value", 3.33, "NTAT", "s", "avg_ntat", LEARNED, "C")
    assert value.measure(rows) == 3.5 and value.reached(3.5) is False
    lower = PaperFigure(
        "003",
        "x",
        "l",
        "reduction",
        None,
        "%",
        "s",
        "avg_jct",
        LEARNED,
        "R",
        reference="srtf",
        bound="lower",
    )
    assert lower.reached(lower.measure(rows)) is True
    assert reduction.measure({LEARNED: {}}) is None and reduction.reached(None) is None


def test_bad_figures_are_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        PaperFigure("0", "x", "l", "better", 1.0, "%", "s", "m", LEARNED, "P")
    with pytest.raises(ValueError, match="reference"):
        PaperFigure("0", "x", "l", "reduction", 1.0, "%", "s", "m", LEARNED, "P")


def test_compare_sets_the_evaluation_next_to_the_figures() -> None:
    """A train.py payload by hand: 001 fat-tree, learned 9000 s, tetris 12000 s."""
    (setting,) = [s for s in settings_of("001") if s.name == "fat-tree"]
    payload = {
        "summary": {"learned": "learned-greedy", "best_heuristic": "dsif+packing"},
        "evaluation": {
            "learned-greedy": {"kind": "learned", "metrics": {"avg_jct": 9000.0}},
            "fifo+tetris": {"kind": "heuristic", "metrics": {"avg_jct": 12000.0}},
            "fifo+load-balancing": {"kind": "heuristic", "metrics": {"avg_jct": 18000.0}},
            "fifo+lif": {"kind": "heuristic", "metrics": {"avg_jct": 10000.0}},
            "dsif+packing": {"kind": "heuristic", "metrics": {"avg_jct": 9000.0}},
        },
    }
    comparison = compare(setting, payload)
    by_reference = {f["reference"]: f for f in comparison.figures}
    assert by_reference["fifo+tetris"]["product"] == pytest.approx(25.0)
    assert by_reference["fifo+tetris"]["reached"] is True
    assert by_reference["fifo+lif"]["product"] == pytest.approx(10.0)
    assert by_reference["fifo+lif"]["reached"] is False
    # 001 reports JCT in 30-minute intervals as well.
    assert comparison.rows[LEARNED]["avg_jct_intervals"] == pytest.approx(5.0)
    assert comparison.rows["fifo+load-balancing"]["avg_jct_intervals"] == pytest.approx(10.0)
    assert comparison.learned == "learned-greedy"
    # In the intervals the experiment ran with (--set environment.config.interval_s=600).
    shorter = compare(setting, payload, interval_s=600.0)
    assert shorter.rows[LEARNED]["avg_jct_intervals"] == pytest.approx(15.0)


# ------------------------------------------------------------------ configs at both scales
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: f"{s.paper}-{s.name}")
@pytest.mark.parametrize("scale", ["small", "paper"])
def test_every_setting_builds_a_valid_config(setting, scale: str) -> None:
    experiment = build_config(setting, scale, experiment="podsched-reproduce")
    check_experiment(experiment)  # the training preflight: keys, model/environment fit
    assert experiment.name == f"reproduce-{setting.paper}-{setting.name}-{scale}"
    assert experiment.experiment_name == "podsched-reproduce"
    if scale == "small":
        assert experiment.evaluation.seeds == [1000, 1001, 1002, 1003, 1004]


def test_the_paper_scale_is_the_papers_setting() -> None:
    def config(paper: str, name: str, scale: str):
        (setting,) = [s for s in settings_of(paper) if s.name == name]
        return build_config(setting, scale)

    fat_tree = config("001", "fat-tree", "paper")
    env = fat_tree.environment.config
    assert env["topology_params"] == {"k": 20}  # 001 §VI-A: k = 20, 2,000 servers
    assert env["home"] == "partition" and env["workload_params"] == {"jobs_per_interval": 15}
    assert (fat_tree.algorithm.lr, fat_tree.algorithm.gamma) == (1e-5, 0.9)
    assert config("001", "bcube", "paper").environment.config["topology_params"] == {"n": 6, "k": 3}
    assert config("001", "vl2", "paper").environment.config["topology"] == "vl2"
    assert config("001", "fat-tree", "small").environment.config["topology_params"] == {"k": 4}
    # A small 001 plays 001's three baselines beside the heuristic paper001.yaml clones.
    played = config("001", "fat-tree", "small").evaluation.baselines
    assert {"fifo+tetris", "fifo+load-balancing", "fifo+lif"} <= set(played)
    assert config("001", "fat-tree", "small").warm_start.heuristic in played
    assert config("000", "rl-hybrid", "paper").environment.config["mode"] == "hybrid"
    assert config("004", "sierra", "paper").environment.config["cluster"] == "sierra"
    assert config("002", "dqn", "paper").algorithm.name == "DQN"
    # 003 §5.1: 50 epochs x 200 sequences, one update each; 004 §4: 5000 epochs.
    assert config("003", "reinforce", "paper").stop.criteria()["training_iteration"] == 10000
    # ... replaying a fixed set of 200 training sequences (§5.1.1), not a fresh one each.
    protocol = config("003", "reinforce", "paper").algorithm.extra["learner_config_dict"]
    assert protocol["reinforce"]["training_sequences"] == 200
    assert config("004", "sierra", "paper").stop.criteria()["training_iteration"] == 5000
    reinforce = config("004", "sierra", "small").algorithm.extra["learner_config_dict"]
    assert reinforce["reinforce"]["episodes_per_sequence"] == 24  # M kept at small scale
    assert reinforce["reinforce"]["sequences_per_update"] == 2
    # The policy selector's step raised for the short budget; the job selector's is 004's.
    assert reinforce["reinforce"]["head_lr"] == {"job": 1.0e-4, "policy": 0.03}
    paper = config("004", "sierra", "paper").algorithm.extra["learner_config_dict"]
    assert paper["reinforce"]["head_lr"] == {"job": 1.0e-4, "policy": 1.0e-3}
    # The report states a REINFORCE update in episodes: 2 job sets x 24 simulations.
    spent = budget(config("004", "sierra", "small"))
    assert (spent["algorithm"], spent["episodes_per_update"], spent["iterations"]) == (
        "REINFORCE",
        48,
        6,
    )
    assert budget(config("000", "rl-base", "small"))["episodes_per_update"] is None
    # DQN samples 1,000 env steps an iteration; its train_batch_size (32) is one update's.
    dqn = budget(config("002", "dqn", "small"))
    assert (dqn["env_steps_per_iteration"], dqn["train_batch_size"]) == (1000, 32)
    # 001 at paper scale on BCube(6,3): 18 schedulers x 15 jobs x 8 whole intervals.
    bcube = config("001", "bcube", "paper").environment.config
    assert bcube["num_jobs"] == 18 * 15 * 8


# ------------------------------------------------------------------ argument errors
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["009"], "PAPER '009' is unknown; allowed: 000, 001, 002, 003, 004, all"),
        (["001", "--scale", "huge"], "--scale 'huge' is unknown; allowed: small, paper"),
        (["001", "--settings", "torus"], "--settings torus unknown for 001"),
        (["001", "--settings", ","], "--settings names no setting; allowed: fat-tree, vl2"),
        (["000", "--tracking-uri", "bogus://x"], "MLflow keeps no runs at a bogus:// URI"),
        (["004", "--set", "stop.training_iteration=0", "--dry-run"], "training_iteration"),
        ([], "PAPER"),
        # A file where the results folder would go: refused before any setting trains.
        (["004", "--storage", "README.md/results"], "--storage"),
        # ... and by a dry run, which checks what a real run would.
        (
            ["004", "--storage", "README.md/results", "--dry-run"],
            "--storage " + str(ROOT / "README.md/results") + ": ",
        ),
        # A store no other process sees: train.py's runs would be lost.
        (["004", "--tracking-uri", "sqlite://", "--dry-run"], "in-memory sqlite store"),
        (["004", "--tracking-uri", "sqlite:///:memory:"], "in-memory sqlite store"),
        # Nothing listens on the discard port: said in seconds, before any setting trains.
        (["004", "--tracking-uri", "http://127.0.0.1:9"], "http://127.0.0.1:9 cannot be reached"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reproduce.py: error:")
    assert message in lines[0]
    assert result.stdout == ""


def test_a_relative_sqlite_uri_is_the_file_in_the_callers_folder(
    tmp_path: Path, monkeypatch
) -> None:
    reproduce = reproduce_module()
    monkeypatch.chdir(tmp_path)
    assert reproduce.absolute_tracking_uri("sqlite:///runs.db") == f"sqlite:///{tmp_path}/runs.db"
    assert (
        reproduce.absolute_tracking_uri("sqlite:///sub/runs.db?mode=rw")
        == f"sqlite:///{tmp_path}/sub/runs.db?mode=rw"
    )
    for unchanged in ("sqlite:////abs/runs.db", "http://127.0.0.1:5000", "postgresql://h/db"):
        assert reproduce.absolute_tracking_uri(unchanged) == unchanged
    with pytest.raises(ValueError, match="in-memory sqlite store"):
        reproduce.absolute_tracking_uri("sqlite://")


def test_a_dry_run_from_another_folder_gives_train_py_the_absolute_uri(tmp_path: Path) -> None:
    """train.py runs in the repository: the configs it gets name the caller's file."""
    result = run(
        *("004", "--dry-run", "--json", "--tracking-uri", "sqlite:///runs.db"), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    configs = json.loads(result.stdout)["configs"]
    assert {c["config"]["tracking"]["tracking_uri"] for c in configs.values()} == {
        f"sqlite:///{tmp_path}/runs.db"
    }


def test_dry_run_checks_the_paper_scale_without_training() -> None:
    result = run("001", "--scale", "paper", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    configs = json.loads(result.stdout)["configs"]
    assert sorted(configs) == ["001/bcube", "001/fat-tree", "001/vl2"]
    assert configs["001/fat-tree"]["iterations"] == 200


# ------------------------------------------------------------------ end to end
@pytest.mark.integration
def test_a_tiny_reproduction_of_000_logs_parent_and_children(
    tmp_path: Path, sqlite_uri: str
) -> None:
    """000's RL-Hybrid at one PPO iteration on 20-job sets, two held-out workloads (hybrid:
    where the barely trained policy schedules nothing, the greedy rule does, so every job
    finishes and the learned row has a JCT). Run from another folder than the repository,
    where train.py runs, with a relative store (MLFLOW_TRACKING_URI=sqlite:///mlflow.db)
    and storage: train.py's runs land in the caller's store, nested under the setting."""
    from mlflow.tracking import MlflowClient

    uri = sqlite_uri
    assert uri == f"sqlite:///{tmp_path}/mlflow.db"
    tiny = [
        "stop.training_iteration=1",
        "algorithm.train_batch_size=200",
        "algorithm.minibatch_size=100",
        "algorithm.num_epochs=1",
        "environment.config.num_jobs=20",
        "evaluation.seeds=[1000, 1001]",
    ]
    sets = [item for override in tiny for item in ("--set", override)]
    strays = [ROOT / "mlflow.db", ROOT / "mlartifacts"]  # where the runs went astray
    there = [path for path in strays if path.exists()]
    try:
        result = run(
            *("000", "--settings", "rl-hybrid", "--json", "--storage", "results", *sets),
            timeout=600,
            cwd=tmp_path,
            env={"MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"},
        )
        assert [path for path in strays if path.exists()] == there
    finally:
        for path in strays:
            if path not in there and path.is_file():
                path.unlink()
            elif path not in there and path.is_dir():
                shutil.rmtree(path)
    assert result.returncode == 0, result.stderr[-3000:]
    payload = json.loads(result.stdout)
    assert payload["tracking_uri"] == uri
    assert list((tmp_path / "results").iterdir())  # Tune's results, in the caller's folder
    (report,) = payload["papers"]
    (entry,) = report["settings"]
    assert entry["status"] == "FINISHED"
    assert entry["budget"]["iterations"] == 1
    assert entry["budget"]["evaluation_seeds"] == [1000, 1001]
    figures = {f["label"]: f for f in entry["figures"]}
    versus_srtf = figures["average JCT reduction vs SRTF"]
    assert versus_srtf["paper"] == 12.1
    rows = entry["rows"]
    by_hand = 100.0 * (1.0 - rows[LEARNED]["avg_jct"] / rows["srtf"]["avg_jct"])
    assert versus_srtf["product"] == pytest.approx(by_hand)
    assert figures["average JCT reduction vs LAS"]["paper"] == 15.1
    assert set(rows) >= {LEARNED, "srtf", "las"}
    # The printed table's twin and the JSON are the parent run's artifacts.
    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(report["parent_run_id"])
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["mlflow.runName"] == "reproduce-000-small"
    key = "rl-hybrid/average_JCT_reduction_vs_SRTF"
    assert parent.data.metrics[key] == pytest.approx(versus_srtf["product"])
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert artifacts == {"reproduce-000-small.md", "reproduce-000-small.json"}
    table = Path(client.download_artifacts(parent.info.run_id, "reproduce-000-small.md"))
    assert "| average JCT reduction vs SRTF | §V-B Fig. 5 | 12.1% |" in table.read_text()
    experiment = client.get_experiment_by_name("podsched-reproduce")
    runs = client.search_runs([experiment.experiment_id])
    by_parent: dict[str | None, list] = {}
    for found in runs:
        by_parent.setdefault(found.data.tags.get("mlflow.parentRunId"), []).append(found)
    (setting_run,) = by_parent[parent.info.run_id]
    assert setting_run.data.tags["mlflow.runName"] == "000-rl-hybrid-small"
    assert setting_run.data.params["paper.average JCT reduction vs SRTF"] == "12.1%"
    nested = {run.data.tags["mlflow.runName"] for run in by_parent[setting_run.info.run_id]}
    # train.py's training run and one evaluation run per row, all under the setting.
    assert any("-train-seed0-" in name for name in nested)
    assert {"eval-las-seeds1000-1001", "eval-srtf-seeds1000-1001"} <= nested
    assert len(runs) == 2 + len(by_parent[setting_run.info.run_id])


def hand_trained(avg_jct: dict[str, float]) -> dict:
    """A train.py ``--json`` result by hand: 000's rows with these avg JCTs (p90 twice)."""
    kinds = {"learned-greedy": "learned", "srtf": "heuristic", "las": "heuristic"}
    return {
        "summary": {"learned": "learned-greedy", "best_heuristic": "srtf"},
        "evaluation": {
            policy: {"kind": kinds[policy], "metrics": {"avg_jct": jct, "p90_jct": 2 * jct}}
            for policy, jct in avg_jct.items()
        },
        "training_s": 1.0,
        "checkpoint": "/checkpoint",
    }


@pytest.mark.integration
def test_an_mlflow_outage_after_training_keeps_the_report(
    gated_mlflow, tmp_path: Path, monkeypatch, capsys
) -> None:
    """The tracking server goes away as 000's first setting finishes training (train.py's
    result stands in for the training, MLflow is a real server behind a gate): both
    settings' figures are still printed and their files kept, one line names what was not
    logged, and the exit status is 1."""
    from mlflow.tracking import MlflowClient

    reproduce = reproduce_module()
    gate, uri = gated_mlflow
    monkeypatch.setenv("PODSCHED_RESULTS", str(tmp_path / "results"))
    # MLflow's client gives up on the gone server at once instead of after minutes.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    trained = []

    def train_then_outage(experiment, folder, storage):
        trained.append(experiment.name)
        gate.close()  # the server goes away as the training ends
        return hand_trained({"learned-greedy": 8000.0, "srtf": 10000.0, "las": 16000.0}), "", 1.0

    monkeypatch.setattr(reproduce, "train_setting", train_then_outage)
    status = reproduce.main(
        ["000", "--settings", "rl-base,rl-hybrid", "--json", "--tracking-uri", uri]
    )
    out, err = capsys.readouterr()
    assert status == 1
    assert trained == ["reproduce-000-rl-base-small", "reproduce-000-rl-hybrid-small"]
    payload = json.loads(out)
    (report,) = payload["papers"]
    for entry in report["settings"]:
        assert entry["status"] == "FINISHED"
        figures = {f["label"]: f["product"] for f in entry["figures"]}
        assert figures["average JCT reduction vs SRTF"] == pytest.approx(20.0)
        assert figures["average JCT reduction vs LAS"] == pytest.approx(50.0)
    not_logged = [
        "nesting train.py's runs of 000/rl-base",
        "000/rl-base's figures",
        "000/rl-hybrid's run",
        "nesting train.py's runs of 000/rl-hybrid",
        "000/rl-hybrid's figures",
        "paper 000's figures and report",
    ]
    assert payload["not_logged"]["what"] == not_logged
    assert payload["not_logged"]["error"].startswith("MlflowException: ")
    (kept,) = (tmp_path / "results" / "unlogged-evaluations").iterdir()
    assert sorted(path.name for path in kept.iterdir()) == [
        "reproduce-000-small.json",
        "reproduce-000-small.md",
    ]
    assert (
        "| average JCT reduction vs SRTF | §V-B Fig. 5 | 15.4% | 20.0% | yes |"
        in (kept / "reproduce-000-small.md").read_text()
    )
    assert json.loads((kept / "reproduce-000-small.json").read_text())["settings"] == json.loads(
        json.dumps(report["settings"])
    )
    (line,) = [line for line in err.splitlines() if "not logged" in line]
    assert line.startswith(f"reproduce.py: warning: MLflow at {uri} failed (MlflowException: ")
    assert f"; not logged: {'; '.join(not_logged)} (runs begun may still show RUNNING)" in line
    assert line.endswith(f"The results above are unaffected; the report's files are in {kept}")
    gate.open()
    # What the line says: the parent run began and was never finished.
    parent = MlflowClient(tracking_uri=uri).get_run(report["parent_run_id"])
    assert parent.info.status == "RUNNING"
