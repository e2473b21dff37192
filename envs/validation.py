"""The validators every formulation's config and job parser shares, and the base of the
configs themselves (:class:`MappingConfig`).

Each raises ``ValueError`` (``TypeError`` for a wrong generator) naming the bad value and
what is allowed, so every environment answers bad input with the same words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, ClassVar, Self, TypeVar

import numpy as np

Config = TypeVar("Config")

_NUMBER = (int, float, np.integer, np.floating)


def is_number(value: object) -> bool:
    """True for a real number, numpy's included; bool is refused (``True`` is no size)."""
    return isinstance(value, _NUMBER) and not isinstance(value, bool)


def int_at_least(name: str, value: object, minimum: int) -> int:
    """``value`` as an int, or ValueError when it is not an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def positive_number(name: str, value: object) -> float:
    """``value`` as a float, or ValueError when it is not a finite number > 0."""
    if not is_number(value) or not (math.isfinite(float(value)) and float(value) > 0):  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def number_in(name: str, value: object, low: float, high: float, *, open_low: bool) -> float:
    """``value`` as a float in ``(low, high]`` (``open_low``) or ``[low, high]``."""
    ok = is_number(value)
    if ok:
        number = float(value)  # type: ignore[arg-type]
        ok = math.isfinite(number) and (number > low if open_low else number >= low)
        ok = ok and number <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise ValueError(f"{name} must be a number in {bracket}{low:g}, {high:g}], got {value!r}")
    return float(value)  # type: ignore[arg-type]


def probability(name: str, value: object) -> float:
    """``value`` as a float in [0, 1], or ValueError."""
    if not is_number(value) or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]


def one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    """ValueError unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def check_rng(rng: object) -> np.random.Generator:
    """``rng`` itself if it is a numpy Generator; TypeError otherwise."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def override_fields(config: Config, label: str, **params: Any) -> Config:
    """``config`` with some fields replaced (ValueError naming unknown ones)."""
    known = {field.name for field in fields(config)}  # type: ignore[arg-type]
    unknown = sorted(set(map(str, params)) - known)
    if unknown:
        raise ValueError(
            f"unknown {label} parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return replace(config, **params)  # type: ignore[type-var]


def config_from_mapping(cls: type[Config], data: object, label: str, article: str = "a") -> Config:
    """``cls(**data)`` with a ValueError when ``data`` is no mapping or names unknown keys."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{article} {label} config must be a mapping, got {type(data).__name__}")
    return override_fields(cls(), label, **data)


class MappingConfig:
    """What every formulation's frozen config dataclass shares: it is built from a mapping
    of its fields (YAML) by :meth:`from_dict` and copied with some fields replaced by
    :meth:`with_overrides`; unknown keys fail naming the known ones. A subclass sets
    ``label``, its name in messages, and ``article`` where that reads "an"."""

    label: ClassVar[str]
    article: ClassVar[str] = "a"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """``cls(**data)`` with a ValueError naming unknown keys (or a non-mapping)."""
        return config_from_mapping(cls, data, cls.label, cls.article)

    def with_overrides(self, **params: Any) -> Self:
        """This config with some fields replaced (ValueError on unknown names)."""
        return override_fields(self, self.label, **params)
