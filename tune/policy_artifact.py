"""The evaluated policy as plain files: its RLModules' weights and settings, loadable without
Ray running, Tune, or RLlib's checkpoint format.

``platform/train.py`` logs this folder as the artifact ``policy/`` of the learned summary
evaluation run (every evaluation run of the comparison carries the tag
``policy_artifacts = runs:/<that run>/policy``). Layout::

    policy/policy.json                  format, environment (name and config), model name,
                                        sharing, module ids, the checkpoint it came from
    policy/<module_id>/state_dict.pt    torch.save(module.state_dict())
    policy/<module_id>/spaces.pkl       pickle of (observation_space, action_space)
    policy/<module_id>/model_config.json  the module's settings (model.config)

How to use::

    import mlflow
    from tune.policy_artifact import load_policy

    folder = mlflow.artifacts.download_artifacts("runs:/<run id>/policy")
    modules = load_policy(folder)            # {module_id: torch module, in eval mode}
    outputs = modules["shared"].forward_inference({"obs": batch})

Loading imports the module's class from ``models`` (torch modules built on RLlib's
``TorchRLModule`` base class) but starts nothing: no Ray cluster, no Algorithm.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from tune.experiment import ExperimentConfig

#: Version of the layout above.
FORMAT = 1


def save_policy(
    experiment: ExperimentConfig, modules: dict[str, str], source: str, out: Path
) -> Path:
    """Write the RLModules saved in ``modules`` (module id -> RLModule folder) as the
    layout above into ``out`` (created); ``source`` names where they came from. Returns
    ``out``."""
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModule

    out.mkdir(parents=True, exist_ok=True)
    for module_id, folder in modules.items():
        module = RLModule.from_checkpoint(folder)
        target = out / module_id
        target.mkdir(exist_ok=True)
        torch.save(module.state_dict(), target / "state_dict.pt")
        with (target / "spaces.pkl").open("wb") as handle:
            pickle.dump((module.observation_space, module.action_space), handle)
        settings = dict(experiment.model.config)
        (target / "model_config.json").write_text(json.dumps(settings, indent=1))
    description = {
        "format": FORMAT,
        "environment": experiment.environment.name,
        "environment_config": experiment.environment.config,
        "model": experiment.model.name,
        "sharing": experiment.model.sharing,
        "modules": sorted(modules),
        "source": source,
    }
    (out / "policy.json").write_text(json.dumps(description, indent=1, default=str))
    return out


def load_policy(folder: str | Path) -> dict[str, Any]:
    """The modules of a policy folder (layout above), by module id, weights loaded, in
    eval mode; ValueError when the folder is not such a policy."""
    import torch

    from models.registry import module_class

    folder = Path(folder)
    try:
        description = json.loads((folder / "policy.json").read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{folder}: not a policy folder (policy.json: {error})") from None
    if description.get("format") != FORMAT:
        raise ValueError(
            f"{folder}: policy format {description.get('format')!r}; this reader takes {FORMAT}"
        )
    modules = {}
    for module_id in description["modules"]:
        part = folder / module_id
        with (part / "spaces.pkl").open("rb") as handle:
            observation_space, action_space = pickle.load(handle)
        module = module_class(description["model"])(
            observation_space=observation_space,
            action_space=action_space,
            model_config=json.loads((part / "model_config.json").read_text()),
        )
        module.load_state_dict(torch.load(part / "state_dict.pt", weights_only=True))
        module.eval()
        modules[module_id] = module
    return modules
