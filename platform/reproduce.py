"""Reproduce a paper's headline experiment and set the product's figures next to the paper's.

How to run
----------
    python platform/reproduce.py 004                     # CuSH on Sierra, small scale
    python platform/reproduce.py 001 --settings fat-tree --json
    python platform/reproduce.py all --scale small       # every paper, one after another
    python platform/reproduce.py 001 --scale paper --dry-run   # the paper's configs, checked
    python platform/reproduce.py 003 --set stop.training_iteration=2    # any config key

What you get
------------
For each setting of the paper (:mod:`tune.reproduction`: 000 RL-base and RL-Hybrid, 001
fat-tree, VL2 and BCube, 002 DQN, 003 RL-TAPS, 004 Sierra), the experiment YAML of
``tune/configs`` at the chosen scale -- ``small`` (default: a short training budget and five
held-out workloads, within 30 minutes per paper on 2 CPUs) or ``paper`` (the paper's
cluster, workload and budget: for a real cluster) -- trained where the paper trains and
evaluated next to the paper's baselines on the same held-out workloads, by
``platform/train.py`` (one subprocess per setting; its own Ray, or the cluster in
RAY_ADDRESS). Then a table per paper: each of the paper's figures (:mod:`tune.paper_figures`:
the value, its table or figure, its unit) next to the product's, whether the product reaches
it, the product's rows (001: JCT in scheduling intervals as well as hours), the setting, the
seeds and the training budget. MLflow (the tracking URI of ``--tracking-uri``, else
MLFLOW_TRACKING_URI, else ``$PODSCHED_RESULTS/mlflow.db``; a relative ``sqlite:///runs.db``
is the file in the current folder, for train.py too) gets, in the experiment
``podsched-reproduce``, one parent run per paper (the figures as params, the product's as
metrics, the table as artifacts) with one child run per setting, under which train.py's
training and evaluation runs nest. ``--json`` prints one object (``papers``: per paper its
``settings`` with ``budget``, ``rows``, ``figures``, ``status``, and ``parent_run_id``;
``not_logged``, the MLflow error and what it did not take, when MLflow failed).
``--dry-run`` builds and checks every config (preflight: keys, model/environment fit) and
``--storage``, and prints them without training. A bad PAPER, ``--scale``, ``--settings`` or
``--storage`` prints one line and exits with status 2 before anything runs; a failed
training exits 1. When MLflow stops taking runs during a reproduction (a server gone), the
trainings go on and the report is printed all the same, its files kept in
``$PODSCHED_RESULTS/unlogged-evaluations/<time>``; one line names what was not logged, and
the exit status is 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from envs.sim.report import json_safe
from tune.cli import OneLineParser, UsageError
from tune.experiment import ConfigError, ExperimentConfig
from tune.paper_figures import PAPERS
from tune.paths import (
    RESULTS_ENV,
    is_uri,
    resolve_storage,
    results_root,
    unlogged_evaluations_folder,
)
from tune.reproduction import (
    SCALES,
    Setting,
    budget,
    build_config,
    compare,
    format_figure,
    settings_of,
)
from tune.train_output import read_train_output

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "platform" / "train.py"
#: The MLflow experiment of every reproduction (parent runs per paper).
EXPERIMENT = "podsched-reproduce"


def build_parser() -> OneLineParser:
    """The command line; every error raises :class:`UsageError` (one line, exit 2)."""
    parser = OneLineParser(
        prog="reproduce.py",
        description=__doc__.split("How to run")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paper", metavar="PAPER", help=f"one of {', '.join(PAPERS)}, or all")
    parser.add_argument(
        "--scale",
        default="small",
        help="small (default: fits 2 CPUs, under 30 minutes per paper) or paper (the "
        "paper's setting and budget, for a cluster)",
    )
    parser.add_argument("--settings", help="run only these settings of the paper, comma separated")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key of every setting, dotted, repeatable",
    )
    parser.add_argument(
        "--storage",
        help="Tune results folder (default: $PODSCHED_RESULTS/ray_results, via train.py)",
    )
    parser.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: see above); a relative sqlite:///FILE is FILE in "
        "the current folder",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="build and check the configs; train nothing"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    return parser


def chosen_settings(args: argparse.Namespace) -> list[Setting]:
    """The settings PAPER, --scale and --settings name; UsageError naming what is allowed."""
    if args.scale not in SCALES:
        raise UsageError(f"--scale {args.scale!r} is unknown; allowed: {', '.join(SCALES)}")
    if args.paper != "all" and args.paper not in PAPERS:
        raise UsageError(f"PAPER {args.paper!r} is unknown; allowed: {', '.join(PAPERS)}, all")
    papers = PAPERS if args.paper == "all" else (args.paper,)
    settings = [setting for paper in papers for setting in settings_of(paper)]
    if args.settings is not None:
        wanted = [name.strip() for name in args.settings.split(",") if name.strip()]
        known = [setting.name for setting in settings]
        if not wanted:
            raise UsageError(f"--settings names no setting; allowed: {', '.join(known)}")
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise UsageError(
                f"--settings {', '.join(unknown)} unknown for {args.paper}; allowed: "
                f"{', '.join(known)}"
            )
        settings = [setting for setting in settings if setting.name in wanted]
    return settings


def build_all(
    settings: list[Setting], scale: str, overrides: list[str], tracking_uri: str | None
) -> dict[str, ExperimentConfig]:
    """Every setting's config, checked before anything runs (preflight)."""
    from tune.preflight import check_experiment

    extra = list(overrides)
    if tracking_uri:
        extra.append(f"tracking.tracking_uri={tracking_uri}")
    configs = {}
    for setting in settings:
        experiment = build_config(setting, scale, extra, experiment=EXPERIMENT)
        check_experiment(experiment)
        configs[f"{setting.paper}/{setting.name}"] = experiment
    return configs


def absolute_tracking_uri(uri: str) -> str:
    """``uri`` with a relative sqlite database (``sqlite:///runs.db``) or file-store path
    made absolute against the current folder, the one the user typed it in; anything else
    untouched. train.py runs in the repository and Tune's trials in folders of their own,
    where the relative name would open other stores. ValueError for an in-memory sqlite
    store, which no other process sees."""
    parsed = urlparse(uri)
    if parsed.scheme == "sqlite":
        database, _, query = uri.removeprefix("sqlite://").partition("?")
        database = database.removeprefix("/")
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise ValueError(
                f"tracking URI {uri!r} is an in-memory sqlite store, which train.py's "
                "process cannot see; name a file, e.g. sqlite:///mlflow.db (taken in this "
                "folder) or sqlite:////abs/path/mlflow.db"
            )
        if uri.startswith("sqlite:///") and not Path(database).is_absolute():
            absolute = f"sqlite:///{Path(database).absolute()}"
            return f"{absolute}?{query}" if query else absolute
        return uri
    if not is_uri(uri) and parsed.scheme in ("", "file") and not uri.startswith("file:"):
        return str(Path(uri).expanduser().absolute())
    return uri


def pin_tracking_uri(
    configs: dict[str, ExperimentConfig], tracking_uri: str
) -> dict[str, ExperimentConfig]:
    """Every config with ``tracking.tracking_uri`` set to ``tracking_uri``, the store the
    parent runs go to: train.py reads it from the config before MLFLOW_TRACKING_URI."""
    return {
        key: dataclasses.replace(
            experiment,
            tracking=dataclasses.replace(experiment.tracking, tracking_uri=tracking_uri),
        )
        for key, experiment in configs.items()
    }


class Tracking:
    """The MLflow calls of a reproduction after its store was found reachable. The first
    one the store does not take (a server gone, a database that fails) is remembered with
    its reason and every later one is skipped and named, so a finished training's report
    is never lost to MLflow, and MLflow's retries are waited out once, not per call."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        #: Why the store stopped taking calls (None while it takes them).
        self.failure: str | None = None
        #: What was not logged, in order.
        self.not_logged: list[str] = []

    def call(self, what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)``; None, with ``what`` noted as not logged, when
        the store failed now or before."""
        from tune.mlflow_retry import outage_errors

        if self.failure is None:
            try:
                return function(*args, **kwargs)
            except (*outage_errors(), OSError) as error:
                text = str(error).strip()
                reason = text.splitlines()[0][:200] if text else type(error).__name__
                self.failure = f"{type(error).__name__}: {reason}"
        if what not in self.not_logged:
            self.not_logged.append(what)
        return None

    def problem(self, kept: str) -> str:
        """The one line that says what was not logged and where the report is (``kept``)."""
        return (
            f"MLflow at {self.tracking_uri} failed ({self.failure}); not logged: "
            f"{'; '.join(self.not_logged)} (runs begun may still show RUNNING). The results "
            f"above are unaffected; {kept}"
        )


def log(line: str) -> None:
    """Progress on stderr (stdout carries the table or the JSON object)."""
    print(f"reproduce.py: {line}", file=sys.stderr, flush=True)


def train_setting(
    experiment: ExperimentConfig, folder: Path, storage: str | None
) -> tuple[dict[str, Any] | None, str, float]:
    """Run train.py on ``experiment`` (written to ``folder``); returns its ``--json``
    payload (None when there is none), what went wrong (empty when nothing did: a payload
    with a problem is a result whose evaluation MLflow did not take), and the seconds."""
    config_path = folder / f"{experiment.name}.yaml"
    config_path.write_text(yaml.safe_dump(experiment.to_dict(), sort_keys=False))
    command = [sys.executable, str(TRAIN), "--config", str(config_path), "--json"]
    if storage:
        command += ["--storage", storage]
    # train.py runs in the repository, not in the caller's folder: a relative results root
    # would name another folder there (the tracking URI is made absolute in its config).
    env = dict(os.environ)
    if env.get(RESULTS_ENV):
        env[RESULTS_ENV] = str(results_root())
    started = time.monotonic()
    # stderr (Tune's progress) goes to the user as it comes; stdout is train.py's JSON.
    process = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    seconds = time.monotonic() - started
    payload, problem = read_train_output(process.stdout, process.returncode)
    return payload, problem, seconds


def nest_new_runs(tracking_uri: str, since_ms: int, parent_run_id: str, skip: set[str]) -> int:
    """Make the runs train.py created in :data:`EXPERIMENT` since ``since_ms`` (its
    training and evaluation runs) children of ``parent_run_id``; returns how many.

    train.py logs its runs on its own; the setting's run is their parent by MLflow's
    ``mlflow.parentRunId`` tag. Reproductions run their settings one at a time, so the
    runs started in the window are this setting's.
    """
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import experiment_id

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.search_runs(
        [experiment_id(tracking_uri, EXPERIMENT)],
        filter_string=f"attributes.start_time >= {since_ms}",
        max_results=5000,
    )
    nested = 0
    for run in found:
        if run.info.run_id in skip or "mlflow.parentRunId" in run.data.tags:
            continue
        client.set_tag(run.info.run_id, "mlflow.parentRunId", parent_run_id)
        nested += 1
    return nested


def start_run(
    tracking_uri: str, name: str, params: dict[str, Any], tags: dict[str, str], parent: str | None
) -> str:
    """An MLflow run left RUNNING (finished by :func:`finish_run`); returns its id."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    from tune.mlflow_tracking import _param_value, experiment_id

    client = MlflowClient(tracking_uri=tracking_uri)
    all_tags = {**tags, "mlflow.runName": name}
    if parent:
        all_tags["mlflow.parentRunId"] = parent
    run = client.create_run(experiment_id(tracking_uri, EXPERIMENT), tags=all_tags)
    client.log_batch(run.info.run_id, params=[Param(k, _param_value(v)) for k, v in params.items()])
    return run.info.run_id


def finish_run(
    tracking_uri: str,
    run_id: str,
    metrics: dict[str, float],
    status: str,
    artifacts: list[Path] | None = None,
) -> None:
    """Log ``metrics`` (finite numbers) and ``artifacts`` and end the run with ``status``."""
    import math

    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    now = int(time.time() * 1000)
    values = [
        Metric(key, float(value), now, 0)
        for key, value in metrics.items()
        if isinstance(value, int | float) and math.isfinite(value)
    ]
    if values:
        client.log_batch(run_id, metrics=values)
    for artifact in artifacts or []:
        client.log_artifact(run_id, str(artifact))
    client.set_terminated(run_id, status=status)


def metric_key(text: str) -> str:
    """An MLflow metric name from free text (letters, digits, ``_-./``)."""
    return "".join(c if c.isalnum() or c in "_-./" else "_" for c in text).strip("_")


def param_key(text: str) -> str:
    """An MLflow param name from free text: MLflow also allows spaces and colons there."""
    return "".join(c if c.isalnum() or c in "_-./ :" else "_" for c in text)


def reproduce_paper(
    paper: str,
    settings: list[Setting],
    configs: dict[str, ExperimentConfig],
    args: argparse.Namespace,
    tracking: Tracking,
    folder: Path,
) -> dict[str, Any]:
    """Train and evaluate ``paper``'s settings, log the parent and child runs; the
    paper's part of the ``--json`` object. What MLflow does not take is left to
    ``tracking`` to report: the trainings and the report go on without it."""
    tracking_uri = tracking.tracking_uri
    parent = tracking.call(
        f"paper {paper}'s parent run",
        start_run,
        tracking_uri,
        f"reproduce-{paper}-{args.scale}",
        {"paper": paper, "scale": args.scale, "settings": ",".join(s.name for s in settings)},
        {"stage": "reproduction", "paper": paper, "scale": args.scale},
        None,
    )
    results = []
    parent_metrics: dict[str, float] = {}
    for setting in settings:
        experiment = configs[f"{paper}/{setting.name}"]
        spent = budget(experiment)
        log(
            f"{paper} {setting.name}: training {experiment.name} ({spent['iterations']} iterations)"
        )
        label = f"{paper}/{setting.name}"
        child = tracking.call(
            f"{label}'s run",
            start_run,
            tracking_uri,
            f"{paper}-{setting.name}-{args.scale}",
            {
                "config": setting.config,
                "overrides": " ".join(setting.overrides_for(args.scale) + list(args.set)),
                **{f"budget.{k}": v for k, v in spent.items()},
                **{
                    param_key(f"paper.{f.label}"): format_figure(f.value, f.unit, f.bound)
                    for f in setting.figures
                },
            },
            {"stage": "reproduction-setting", "paper": paper, "setting": setting.name},
            parent,
        )
        since = int(time.time() * 1000)
        payload, error, seconds = train_setting(experiment, folder, args.storage)
        # A run that could not be started (None) means the store failed: calls on it are
        # skipped by ``tracking`` and named among what was not logged.
        tracking.call(
            f"nesting train.py's runs of {label}",
            nest_new_runs,
            tracking_uri,
            since,
            child,
            {parent, child},
        )
        entry: dict[str, Any] = {
            "setting": setting.name,
            "note": setting.note,
            "config": setting.config,
            "experiment": experiment.name,
            "budget": spent,
            "seconds": round(seconds, 1),
            "status": "FINISHED" if payload is not None and not error else "FAILED",
        }
        metrics: dict[str, float] = {}
        if payload is not None:
            interval_s = experiment.environment.config.get("interval_s")
            comparison = compare(setting, payload, interval_s)
            entry.update(
                rows=comparison.rows,
                figures=comparison.figures,
                learned=comparison.learned,
                best_heuristic=comparison.best_heuristic,
                training_s=payload.get("training_s"),
                checkpoint=payload.get("checkpoint"),
            )
            for figure in comparison.figures:
                if figure["product"] is not None:
                    metrics[metric_key(figure["label"])] = figure["product"]
                    parent_metrics[metric_key(f"{setting.name}/{figure['label']}")] = figure[
                        "product"
                    ]
            for row, values in comparison.rows.items():
                for key, value in values.items():
                    metrics[metric_key(f"{row}/{key}")] = value
        if error:
            entry["error"] = error
            log(f"{paper} {setting.name}: {error}")
        tracking.call(
            f"{label}'s figures", finish_run, tracking_uri, child, metrics, entry["status"]
        )
        results.append(entry)
    report = {"paper": paper, "scale": args.scale, "parent_run_id": parent, "settings": results}
    table = folder / f"reproduce-{paper}-{args.scale}.md"
    table.write_text(format_report(report) + "\n")
    data = folder / f"reproduce-{paper}-{args.scale}.json"
    data.write_text(json.dumps(json_safe(report), indent=1))
    failed = any(entry["status"] != "FINISHED" for entry in results)
    status = "FAILED" if failed else "FINISHED"
    tracking.call(
        f"paper {paper}'s figures and report",
        finish_run,
        *(tracking_uri, parent, parent_metrics, status, [table, data]),
    )
    return report


def format_report(report: dict[str, Any]) -> str:
    """One paper's comparison as Markdown: per setting, its budget and seeds, the paper's
    figures next to the product's, and the product's rows."""
    lines = [f"## Paper {report['paper']} ({report['scale']} scale)", ""]
    for entry in report["settings"]:
        spent = entry["budget"]
        warm = spent.get("warm_start")
        lines.append(f"### {entry['setting']}: {entry['note']}")
        lines.append("")
        lines.append(
            f"`{entry['config']}`; {spent['algorithm']}, {spent['iterations']} "
            + (
                f"updates of {spent['episodes_per_update']} episodes"
                if spent.get("episodes_per_update")
                else f"iterations of {spent['env_steps_per_iteration']} env steps"
            )
            + f", training seeds {spent['training_seeds']}, "
            f"held-out seeds {spent['evaluation_seeds']}"
            + (
                f", validation seeds {spent['validation_seeds']}"
                if spent["validation_seeds"]
                else ""
            )
            + (
                f"; warm start: clone of {warm['heuristic']} ({warm['episodes']} episodes)"
                if warm
                else ""
            )
            + f"; {entry['seconds'] / 60:.1f} min"
        )
        lines.append("")
        if entry["status"] != "FINISHED":
            lines.append(f"**{entry['status']}**: {entry.get('error', '')}")
            lines.append("")
            continue
        lines.append("| figure | source | paper | product | reached |")
        lines.append("|---|---|---|---|---|")
        for figure in entry["figures"]:
            reached = {True: "yes", False: "**no**", None: "-"}[figure["reached"]]
            product = format_figure(figure["product"], figure["unit"])
            paper = format_figure(figure["paper"], figure["unit"], figure["bound"])
            lines.append(
                f"| {figure['label']} | {figure['source']} | {paper} | {product} | {reached} |"
            )
        lines.append("")
        lines.append(
            f"learned row: `{entry['learned']}`; best heuristic: `{entry['best_heuristic']}`"
        )
        lines.append("")
        metrics = sorted({key for values in entry["rows"].values() for key in values})
        lines.append("| row | " + " | ".join(metrics) + " |")
        lines.append("|---" * (len(metrics) + 1) + "|")
        for row, values in entry["rows"].items():
            cells = [_cell(key, values.get(key)) for key in metrics]
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines).rstrip()


def _cell(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric in ("avg_jct", "p90_jct", "makespan"):
        return f"{value / 3600:.3f} h"
    return f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    """Run the program; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        settings = chosen_settings(args)
        if args.tracking_uri:
            args.tracking_uri = absolute_tracking_uri(args.tracking_uri)
        configs = build_all(settings, args.scale, args.set, args.tracking_uri)
        if args.storage:
            # Every setting's train.py would refuse it, one after another, after MLflow
            # runs were opened for them; a dry run says so as well.
            args.storage = resolve_storage(args.storage)
    except (UsageError, ConfigError, ValueError) as error:
        print(f"reproduce.py: error: {error}", file=sys.stderr)
        return 2
    if args.dry_run:
        shown = {key: {**budget(c), "config": c.to_dict()} for key, c in configs.items()}
        if args.json:
            print(json.dumps(json_safe({"scale": args.scale, "configs": shown})))
        else:
            for key, entry in shown.items():
                print(f"{key}: {entry['config']['name']} -- checked")
        return 0
    from tune.mlflow_retry import outage_errors
    from tune.mlflow_tracking import experiment_id, quick_http, resolve_tracking_uri, ui_command

    try:
        # MLFLOW_TRACKING_URI or a config's own URI may be relative as well: train.py gets
        # the absolute one in its config, the parent runs' store.
        tracking_uri = absolute_tracking_uri(resolve_tracking_uri(next(iter(configs.values()))))
        configs = pin_tracking_uri(configs, tracking_uri)
        # Every setting's runs hang under a parent run: a store that cannot be reached
        # would otherwise surface minutes later, from MLflow's retries, as a traceback.
        with quick_http():
            experiment_id(tracking_uri, EXPERIMENT)
    except (ConfigError, ValueError) as error:
        print(f"reproduce.py: error: {error}", file=sys.stderr)
        return 2
    except outage_errors() as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(
            f"reproduce.py: error: MLflow at {tracking_uri} cannot be reached ({reason[:200]}); "
            "start it or choose another --tracking-uri",
            file=sys.stderr,
        )
        return 2
    reports = []
    tracking = Tracking(tracking_uri)
    kept = ""
    with tempfile.TemporaryDirectory(prefix="reproduce-") as scratch:
        folder = Path(scratch)
        for paper in dict.fromkeys(setting.paper for setting in settings):
            mine = [setting for setting in settings if setting.paper == paper]
            reports.append(reproduce_paper(paper, mine, configs, args, tracking, folder))
        if tracking.failure is not None:
            kept = keep_reports(folder)
    failed = any(e["status"] != "FINISHED" for report in reports for e in report["settings"])
    if args.json:
        payload = {"scale": args.scale, "tracking_uri": tracking_uri, "papers": reports}
        if tracking.failure is not None:
            payload["not_logged"] = {"error": tracking.failure, "what": tracking.not_logged}
        print(json.dumps(json_safe(payload)))
    else:
        for report in reports:
            print(format_report(report))
            if report["parent_run_id"] is not None:
                print(f"\nMLflow parent run {report['parent_run_id']} in '{EXPERIMENT}'\n")
        print(f"open it with: {ui_command(tracking_uri)}")
    if tracking.failure is not None:
        print(f"reproduce.py: warning: {tracking.problem(kept)}", file=sys.stderr)
        return 1
    return 1 if failed else 0


def keep_reports(folder: Path) -> str:
    """Copy the reports (``reproduce-*.md`` and ``.json``) of ``folder``, a temporary
    folder, to :func:`tune.paths.unlogged_evaluations_folder`; says where they are."""
    reports = sorted(folder.glob("reproduce-*.md")) + sorted(folder.glob("reproduce-*.json"))
    if not reports:
        return "no report file was written"
    target = unlogged_evaluations_folder()
    try:
        target.mkdir(parents=True, exist_ok=True)
        for report in reports:
            shutil.copy2(report, target / report.name)
    except OSError as error:
        return f"the report's files could not be kept in {target} ({error.strerror or error})"
    return f"the report's files are in {target}"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
