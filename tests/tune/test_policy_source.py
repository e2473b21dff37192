"""tune/policy_source.py: a policy to evaluate from a folder, a file system URI or an MLflow
artifact, always the same weights (no Ray; MLflow on a temporary sqlite store)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from envs.pod.env import PodSchedulingEnv
from tune.experiment import config_from_dict
from tune.policy_source import policy_modules

SMALL = {"topology": "flat", "topology_params": {"servers": 4}, "num_jobs": 4}
MODEL = {"hidden": 4, "inner_layers": 1, "inter_layers": 1}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """An Algorithm-checkpoint-shaped folder holding one untrained shared GNN module."""
    from models.rl_modules import PodGNNModule

    env = PodSchedulingEnv(**SMALL)
    torch.manual_seed(0)
    module = PodGNNModule(
        observation_space=env.observation_space("scheduler_0"),
        action_space=env.action_space("scheduler_0"),
        model_config=MODEL,
    )
    folder = tmp_path_factory.mktemp("algo") / "checkpoint_000003"
    module.save_to_path(str(folder / "learner_group" / "learner" / "rl_module" / "shared"))
    return folder


def weights(path: str) -> dict[str, torch.Tensor]:
    from ray.rllib.core.rl_module.rl_module import RLModule

    return RLModule.from_checkpoint(path).state_dict()


def assert_same_weights(first: str, second: str) -> None:
    a, b = weights(first), weights(second)
    assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def policy_folder(checkpoint: Path, out: Path) -> Path:
    from tune.evaluation import module_paths
    from tune.policy_artifact import save_policy

    experiment = config_from_dict({"environment": {"config": SMALL}, "model": {"config": MODEL}})
    return save_policy(experiment, module_paths(checkpoint, ["shared"]), str(checkpoint), out)


def test_a_local_checkpoint_is_used_in_place(checkpoint: Path, tmp_path: Path) -> None:
    paths = policy_modules(str(checkpoint), ["shared"], None, tmp_path)
    assert paths == {"shared": str(checkpoint / "learner_group/learner/rl_module/shared")}
    assert list(tmp_path.iterdir()) == []  # nothing copied


def test_a_file_system_uri_is_copied(checkpoint: Path, tmp_path: Path) -> None:
    paths = policy_modules(checkpoint.as_uri(), ["shared"], None, tmp_path / "work")
    assert Path(paths["shared"]).is_relative_to(tmp_path / "work")
    assert_same_weights(paths["shared"], str(checkpoint / "learner_group/learner/rl_module/shared"))


def test_a_policy_folder_and_its_mlflow_artifact(
    checkpoint: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    original = str(checkpoint / "learner_group/learner/rl_module/shared")
    folder = policy_folder(checkpoint, tmp_path / "policy")
    paths = policy_modules(str(folder), ["shared"], None, tmp_path / "local")
    assert_same_weights(paths["shared"], original)
    # Logged as evaluation runs log it, then fetched by its runs:/ URI.
    uri = sqlite_uri
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("policies", (tmp_path / "artifacts").as_uri())
    run = client.create_run(experiment)
    client.log_artifacts(run.info.run_id, str(folder), "policy")
    client.set_terminated(run.info.run_id)
    reference = f"runs:/{run.info.run_id}/policy"
    paths = policy_modules(reference, ["shared"], uri, tmp_path / "fetched")
    assert_same_weights(paths["shared"], original)
    assert mlflow.get_tracking_uri() != uri  # the store was passed, not made global


def test_bad_references_say_what_was_wrong(
    checkpoint: Path, tmp_path: Path, sqlite_uri: str
) -> None:
    with pytest.raises(ValueError, match=r"no checkpoint folder at .*missing"):
        policy_modules(str(tmp_path / "missing"), ["shared"], None, tmp_path)
    with pytest.raises(ValueError, match=r"no RLModule at .*rl_module/scheduler_0"):
        policy_modules(str(checkpoint), ["scheduler_0"], None, tmp_path)
    folder = policy_folder(checkpoint, tmp_path / "policy")
    with pytest.raises(ValueError, match="holds modules shared; the experiment's are a, b"):
        policy_modules(str(folder), ["a", "b"], None, tmp_path / "w")
    uri = sqlite_uri
    with pytest.raises(ValueError, match="cannot download runs:/0123456789abcdef/policy"):
        policy_modules("runs:/0123456789abcdef/policy", ["shared"], uri, tmp_path / "x")
    with pytest.raises(ValueError, match="cannot copy file:///"):
        policy_modules((tmp_path / "nowhere").as_uri(), ["shared"], None, tmp_path / "y")
