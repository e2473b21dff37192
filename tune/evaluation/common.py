"""What the multi-agent and single-agent evaluations share: the learned policy's rows, its
default mode, where a checkpoint keeps its modules, and the mean that skips missing values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

# How the learned policy acts when a caller does not say: one definition, with the default
# of the config's ``evaluation.greedy`` (tune.experiment imports nothing of tune).
from tune.experiment import DEFAULT_GREEDY as DEFAULT_GREEDY

#: The learned policy, played in the mode a caller asks for.
LEARNED = "learned"
#: The learned policy's two evaluation rows: argmax actions, and actions sampled per episode.
LEARNED_GREEDY = "learned-greedy"
LEARNED_SAMPLED = "learned-sampled"
LEARNED_ROWS = (LEARNED_GREEDY, LEARNED_SAMPLED)


def learned_rows(greedy: bool | None = None) -> list[str]:
    """The learned policy's rows: both (``None``), or only the greedy or the sampled one."""
    if greedy is None:
        return list(LEARNED_ROWS)
    return [LEARNED_GREEDY if greedy else LEARNED_SAMPLED]


def is_learned(policy: str) -> bool:
    """Whether ``policy`` names a row of the learned policy (not a heuristic)."""
    return policy == LEARNED or policy in LEARNED_ROWS


def module_paths(checkpoint: str | Path, module_ids: list[str]) -> dict[str, str]:
    """Where the RLModules of an Algorithm checkpoint live, by module id."""
    base = Path(checkpoint) / "learner_group" / "learner" / "rl_module"
    paths = {module: str(base / module) for module in module_ids}
    missing = [path for path in paths.values() if not Path(path).is_dir()]
    if missing:
        raise FileNotFoundError(
            f"no RLModule at {missing[0]}; is {checkpoint} an Algorithm checkpoint?"
        )
    return paths


def finite_mean(values: list[Any]) -> float:
    """The mean of the finite values (None, NaN and inf left out); NaN when none is left."""
    finite = [float(value) for value in values if value is not None and np.isfinite(value)]
    return float(np.mean(finite)) if finite else float("nan")
