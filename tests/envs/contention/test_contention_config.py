"""ContentionConfig takes the numpy scalars sweeps hand over and stores plain numbers,
while every bad value still gets its clear message."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from envs.contention.config import ContentionConfig


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # np.float32 / np.int64 (not subclasses of float / int) used to be refused here.
        ({"w1": np.float32(0.5)}, {"w1": 0.5}),
        ({"w1": np.int64(1)}, {"w1": 1.0}),
        ({"w1": np.float64(0.6)}, {"w1": 0.6}),
        ({"preempt_cs": np.float32(1.5)}, {"preempt_cs": 1.5}),
        ({"preempt_cs": np.int64(2)}, {"preempt_cs": 2.0}),
        ({"restart_cost_s": np.int64(30)}, {"restart_cost_s": 30.0}),
        ({"restart_cost_s": np.float32(0.5)}, {"restart_cost_s": 0.5}),
        ({"mean_interarrival_s": np.int64(60)}, {"mean_interarrival_s": 60.0}),
        ({"mean_interarrival_s": np.float32(0.5)}, {"mean_interarrival_s": 0.5}),
        # Accepted before, but kept as numpy numbers that JSON refuses.
        ({"link_gbps": np.float32(10.0)}, {"link_gbps": 10.0}),
        ({"job_hours": np.float64(2.0)}, {"job_hours": 2.0}),
        ({"round_s": np.int64(60)}, {"round_s": 60.0}),
        ({"horizon_s": np.int32(86_400)}, {"horizon_s": 86_400.0}),
        ({"nodes": np.int64(2), "gpu_choices": (1, 2, 4)}, {"nodes": 2}),
        ({"gpus_per_node": np.int32(4), "gpu_choices": (1, 2, 4)}, {"gpus_per_node": 4}),
        ({"num_jobs": np.int64(16)}, {"num_jobs": 16}),
        ({"candidates": np.int64(3)}, {"candidates": 3}),
        ({"max_steps": np.uint16(50)}, {"max_steps": 50}),
        ({"interference": np.bool_(True)}, {"interference": True}),
        ({"mix": np.array([1, 1, 1, 1, 1, 1], dtype=np.int64)}, {"mix": (1.0,) * 6}),
    ],
)
def test_numpy_scalars_are_stored_as_plain_python_numbers(params: dict, expected: dict) -> None:
    config = ContentionConfig(**params)
    for name, value in expected.items():
        stored = getattr(config, name)
        assert stored == pytest.approx(value) and type(stored) is type(value), name
    # What configs are for: cache keys, MLflow parameters, saved experiment configs.
    hash(config)
    json.dumps(dataclasses.asdict(config))
    assert config == ContentionConfig(**{**params, **expected})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"w1": np.float32(1.5)}, r"w1 must be a number in \[0, 1\] \(W2 = 1 - w1\), got "),
        ({"w1": np.float64("nan")}, r"w1 must be a number in \[0, 1\]"),
        ({"w1": np.bool_(True)}, r"w1 must be a number in \[0, 1\]"),
        ({"w1": "0.5"}, r"w1 must be a number in \[0, 1\]"),
        ({"preempt_cs": np.int64(1)}, "preempt_cs must be a number > 1 or None"),
        ({"preempt_cs": np.float32("nan")}, "preempt_cs must be a number > 1 or None"),
        ({"preempt_cs": True}, "preempt_cs must be a number > 1 or None"),
        # A bool is no duration: True used to pass as 1 second.
        ({"restart_cost_s": True}, "restart_cost_s must be a number >= 0"),
        ({"restart_cost_s": np.float64(-1.0)}, "restart_cost_s must be a number >= 0"),
        ({"restart_cost_s": np.float32("nan")}, "restart_cost_s must be a number >= 0"),
        ({"mean_interarrival_s": True}, "mean_interarrival_s must be a finite number >= 0"),
        ({"mean_interarrival_s": np.inf}, "mean_interarrival_s must be a finite number >= 0"),
        ({"mean_interarrival_s": "60"}, "mean_interarrival_s must be a finite number >= 0"),
        ({"link_gbps": np.bool_(True)}, "link_gbps must be a finite number > 0"),
        ({"round_s": np.float64("nan")}, "round_s must be a finite number > 0"),
        ({"nodes": np.float64(4.0)}, "nodes must be an integer >= 1"),
        ({"num_jobs": np.int64(0)}, "num_jobs must be an integer >= 1"),
        ({"interference": np.int64(1)}, "interference must be true or false"),
        # float() used to read True as 1 and "2" as 2.
        ({"mix": (True, 1, 1, 1, 1, 1)}, "mix weights must be six numbers"),
        ({"mix": ("2", 1, 1, 1, 1, 1)}, "mix weights must be six numbers"),
        ({"mix": (1, 1, 1, 1, 1, np.inf)}, "mix weights must be six numbers"),
        ({"mix": 3}, "mix must be one of normal, heavy, medium, low or six weights"),
    ],
)
def test_numpy_scalars_let_no_bad_value_through(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ContentionConfig(**params)


def test_overrides_and_mappings_store_plain_numbers_too() -> None:
    config = ContentionConfig.from_dict({"w1": np.float32(0.3)}).with_overrides(
        num_jobs=np.int64(8)
    )
    assert (config.w1, config.num_jobs) == (pytest.approx(0.3), 8)
    assert (type(config.w1), type(config.num_jobs)) == (float, int)
