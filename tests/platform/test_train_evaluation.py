"""platform/train.py on a single-agent formulation: after training, the learned policy and
the paper's baselines play the same held-out episodes, each logged as an MLflow run."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform.test_train import ROOT, client, last_json, runs_of

DEEPRM = ROOT / "tune" / "configs" / "deeprm.yaml"


@pytest.mark.integration
def test_deeprm_training_ends_with_the_papers_baselines_side_by_side(
    tmp_path: Path, sqlite_uri: str
) -> None:
    uri = sqlite_uri
    overrides = [
        "stop.training_iteration=1",
        "algorithm.train_batch_size=200",
        "algorithm.minibatch_size=100",
        "algorithm.num_epochs=1",
        "evaluation.seeds=[1000, 1001]",
        "evaluation.baselines=[sjf, packer]",
        f"tracking.tracking_uri={uri}",
    ]
    result = subprocess.run(
        [sys.executable, str(ROOT / "platform" / "train.py"), "--config", str(DEEPRM)]
        + ["--storage", str(tmp_path / "results"), "--json"]
        + [arg for override in overrides for arg in ("--set", override)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    policies = last_json(result.stdout)["policies"]
    assert list(policies) == ["learned-greedy", "learned-sampled", "sjf", "packer"]
    # SJF books every job it can: its two episodes end with every job done.
    assert policies["sjf"]["truncated"] == 0.0 and math.isfinite(policies["sjf"]["mean_slowdown"])
    evaluation = {
        run.data.tags["policy"]: run
        for run in runs_of(uri, "podsched-deeprm")
        if run.data.tags.get("stage") == "evaluation"
    }
    assert set(evaluation) == {"learned-greedy", "learned-sampled", "sjf", "packer"}
    assert "mean_slowdown" in evaluation["packer"].data.metrics
    # deeprm.yaml leaves evaluation.greedy out: the artifacts go with the greedy row.
    learned = evaluation["learned-greedy"]
    assert learned.data.params["evaluation.seeds"] == "1000,1001"
    artifacts = {a.path for a in client(uri).list_artifacts(learned.info.run_id)}
    # No per-job JCT list in a DeepRM summary, so no JCT CDF; the table is there.
    assert artifacts == {
        "config.yaml",
        "learning_curve.png",
        "evaluation.csv",
        "evaluation.json",
        "checkpoint.txt",
        "policy",  # the evaluated module, loadable without Ray (tune/policy_artifact.py)
    }
