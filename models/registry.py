"""RLModule classes by the names experiment configs use (``model: {name: pod_gnn}``)."""

from __future__ import annotations

from typing import Any

MODULES: dict[str, str] = {
    "pod_gnn": "models.rl_modules:PodGNNModule",
    "pod_mlp": "models.rl_modules:PodMLPModule",
    "deeprm": "models.deeprm_module:DeepRMModule",
    "cush": "models.cush_module:CuSHModule",
    "sced2": "models.sced2_module:Sced2Module",
    "sced2_dqn": "models.sced2_module:Sced2QModule",
    "contention": "models.contention_module:ContentionModule",
    "multi_softmax": "models.multi_softmax_module:MultiSoftmaxModule",
}


def module_class(name: str) -> Any:
    """The RLModule class registered as ``name``."""
    import importlib

    target = MODULES.get(name)
    if target is None:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(sorted(MODULES))}")
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)
