"""Where a trained policy to evaluate comes from: ``--checkpoint`` of ``platform/evaluate.py``.

A reference is one of

- a local folder: an Algorithm checkpoint (Tune's ``checkpoint_NNNNNN``) or a policy folder
  (:mod:`tune.policy_artifact`: ``policy.json`` and one folder per module);
- an MLflow artifact URI (``runs:/<run id>/policy``, ``models:/...``,
  ``mlflow-artifacts:/...``), downloaded from the experiment's tracking server: the
  ``policy_artifacts`` tag of every evaluation run names the learned policy this way;
- any other URI that Tune's storage takes (``s3://``, ``gs://``, ``file://``, ...), copied
  with pyarrow's file systems, as Tune reads its own checkpoints.

:func:`policy_modules` turns it into the RLModule folders, by module id, that the
evaluators load with ``RLModule.from_checkpoint``. Downloads and conversions go into a
working folder the caller owns (and removes).
"""

from __future__ import annotations

from pathlib import Path

from tune.evaluation.common import module_paths
from tune.paths import is_uri

#: URI schemes MLflow resolves itself (through the tracking server).
MLFLOW_SCHEMES = ("runs:/", "models:/", "mlflow-artifacts:/")


def local_folder(reference: str, tracking_uri: str | None, workdir: Path) -> Path:
    """The folder ``reference`` names, on this machine: downloaded or copied into
    ``workdir`` when it is remote. ValueError (saying what was wrong) when it cannot be
    found or read."""
    if reference.startswith(MLFLOW_SCHEMES):
        import mlflow
        from mlflow.exceptions import MlflowException

        try:
            downloaded = mlflow.artifacts.download_artifacts(
                reference, dst_path=str(workdir / "download"), tracking_uri=tracking_uri
            )
        except MlflowException as error:
            raise ValueError(f"cannot download {reference} from {tracking_uri}: {error}") from None
        return Path(downloaded)
    if is_uri(reference):
        from pyarrow import fs

        target = workdir / "copy"
        try:
            fs.copy_files(reference, str(target))
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot copy {reference}: {error}") from None
        return target
    folder = Path(reference).expanduser().resolve()
    if not folder.is_dir():
        raise ValueError(f"no checkpoint folder at {folder}")
    return folder


def policy_modules(
    reference: str, module_ids: list[str], tracking_uri: str | None, workdir: Path
) -> dict[str, str]:
    """RLModule folders by module id for the policy ``reference`` names (see the module
    doc). A policy folder's modules are written as RLModule checkpoints into ``workdir``;
    its module ids must be the experiment's ``module_ids``."""
    folder = local_folder(reference, tracking_uri, workdir)
    if not (folder / "policy.json").is_file():
        try:
            return module_paths(folder, module_ids)
        except FileNotFoundError as error:
            raise ValueError(f"{reference}: {error}") from None
    from tune.policy_artifact import load_policy

    modules = load_policy(folder)
    if sorted(modules) != sorted(module_ids):
        raise ValueError(
            f"{reference} holds modules {', '.join(sorted(modules))}; the experiment's are "
            f"{', '.join(sorted(module_ids))}"
        )
    paths = {}
    for module_id, module in modules.items():
        target = workdir / "modules" / module_id
        module.save_to_path(str(target))
        paths[module_id] = str(target)
    return paths
