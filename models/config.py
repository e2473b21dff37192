"""Settings of the scheduler networks, read from an RLModule's ``model_config`` dict."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

EDGE_NETWORKS = ("full", "factorized")
AGGREGATIONS = ("mean", "max", "sum")
CRITIC_GRADIENTS = ("shared", "head")


@dataclass(frozen=True)
class GNNModelConfig:
    """The hierarchical edge-conditioned GNN of paper 001 §IV-A, §VI-A.

    ``inner_layers`` (001: 4) convolutions over a partition's inner graph and
    ``inter_layers`` (001: 2) over the inter-scheduler graph, ``hidden`` channels each;
    ``encoder_hidden``: the MLP encoder to the scheduler feature z^0; ``head_hidden``:
    actor and critic hidden layer (001: 128). ``edge_network``: "full" gives every edge
    its own in x out filter from a one-layer network (001, NNConv style); "factorized"
    a rank-``edge_rank`` filter, for clusters whose edges x channels^2 would not fit.
    ``aggregation``: how neighbour messages combine (001: mean). ``critic_gradient``:
    where the value loss's gradient goes: "shared" (001: the critic and the actor share
    the GNN, so the value loss also moves the actor's features) or "head" (the critic's
    own head only: the GNN learns from the actor's loss alone).
    """

    hidden: int = 32
    inner_layers: int = 4
    inter_layers: int = 2
    encoder_hidden: int = 128
    head_hidden: int = 128
    edge_network: str = "full"
    edge_rank: int = 8
    aggregation: str = "mean"
    critic_gradient: str = "shared"

    def __post_init__(self) -> None:
        for name in ("hidden", "encoder_hidden", "head_hidden", "edge_rank"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("inner_layers", "inter_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if self.edge_network not in EDGE_NETWORKS:
            raise ValueError(
                f"edge_network={self.edge_network!r}; allowed: {', '.join(EDGE_NETWORKS)}"
            )
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(
                f"aggregation={self.aggregation!r}; allowed: {', '.join(AGGREGATIONS)}"
            )
        if self.critic_gradient not in CRITIC_GRADIENTS:
            raise ValueError(
                f"critic_gradient={self.critic_gradient!r}; allowed: {', '.join(CRITIC_GRADIENTS)}"
            )

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> GNNModelConfig:
        """Build from an RLModule ``model_config`` (unknown keys are refused)."""
        return settings_from_dict(cls, model_config)


@dataclass(frozen=True)
class MLPModelConfig:
    """The baseline: an MLP over the flattened observation (no graph structure)."""

    hidden: tuple[int, ...] = (256, 256)

    def __post_init__(self) -> None:
        if not self.hidden or any(
            isinstance(size, bool) or not isinstance(size, int) or size < 1 for size in self.hidden
        ):
            raise ValueError(
                f"hidden must be a non-empty list of integers >= 1, got {self.hidden!r}"
            )

    @classmethod
    def from_model_config(cls, model_config: dict[str, Any] | None) -> MLPModelConfig:
        """Build from an RLModule ``model_config`` (unknown keys are refused)."""
        data = dict(model_config or {})
        if "hidden" in data:
            data["hidden"] = tuple(data["hidden"])
        return settings_from_dict(cls, data)


def settings_from_dict(cls: type, data: dict[str, Any] | None) -> Any:
    """``cls(**data)`` for a settings dataclass, refusing unknown keys by name."""
    data = dict(data or {})
    allowed = [field.name for field in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown {cls.__name__} key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    return cls(**data)


def require_positive_int(name: str, value: object) -> None:
    """ValueError unless ``value`` is an integer >= 1 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def require_positive_number(name: str, value: object) -> None:
    """ValueError unless ``value`` is a finite number > 0 (bools refused)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value < float("inf")
    ):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")


def layer_sizes(name: str, value: object) -> tuple[int, ...]:
    """``value`` (a list or tuple of integers >= 1, at least one) as a tuple; else
    ValueError. Frozen settings keep it as a tuple, so YAML lists compare equal."""
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(f"{name} must be a non-empty list of integers >= 1, got {value!r}")
    for size in value:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{name} must be a non-empty list of integers >= 1, got {value!r}")
    return tuple(value)
