"""The struct-of-arrays Workload: validation, derived quantities, transformations, JSON."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.workload import Workload, concatenate, get_catalog


def small_workload() -> Workload:
    """Three marl jobs: a PS job, an AllReduce job, and a fixed-duration job."""
    return Workload(
        arrival_time=[0.0, 10.0, 10.0],
        model=[0, 6, 1],  # ResNet-50, CTC, VGG-16
        num_workers=[2, 4, 1],
        num_ps=[1, 0, 0],
        worker_demand=[[1.0, 4.0], [1.0, 1.0], [2.0, 3.0]],
        ps_demand=[[0.0, 2.0], [0.0, 0.0], [0.0, 0.0]],
        epochs=[3.0, 200.0, 0.0],
        iterations_per_epoch=[40_037, 214, 0],
        duration=[math.nan, math.nan, 500.0],
        user=[0, -1, 1],
        user_names=("ann", "bob"),
        vc=[0, 0, -1],
        vc_names=("research",),
    )


def test_fields_are_normalized_copies_and_read_only() -> None:
    arrivals = np.array([0.0, 5.0])
    jobs = Workload(
        arrival_time=arrivals,
        model=[0, 1],
        num_workers=[1, 1],
        worker_demand=[[1, 2], [1, 2]],
        duration=[10.0, 20.0],
    )
    arrivals[0] = 99.0  # the workload holds its own copy
    assert jobs.arrival_time[0] == 0.0
    assert jobs.model.dtype == np.int64 and jobs.worker_demand.dtype == np.float64
    np.testing.assert_array_equal(jobs.num_ps, [0, 0])
    np.testing.assert_array_equal(jobs.ps_demand, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(jobs.user, [-1, -1])
    np.testing.assert_array_equal(jobs.partition, [-1, -1])
    np.testing.assert_array_equal(jobs.job_id, [0, 1])
    np.testing.assert_array_equal(jobs.epochs, [0, 0])
    for array in (jobs.arrival_time, jobs.model, jobs.worker_demand, jobs.duration, jobs.user):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1


def test_derived_quantities_by_hand() -> None:
    jobs = small_workload()
    assert len(jobs) == jobs.num_jobs == 3
    assert jobs.num_resources == 2
    # job 0: 2 workers x (1 GPU, 4 CPU) + 1 PS x (0, 2) = (2, 10)
    np.testing.assert_array_equal(jobs.total_demand, [[2, 10], [4, 4], [2, 3]])
    np.testing.assert_array_equal(jobs.total_gpus, [2, 4, 2])
    np.testing.assert_array_equal(jobs.total_cpus, [10, 4, 3])
    np.testing.assert_array_equal(jobs.num_tasks, [3, 4, 1])
    np.testing.assert_array_equal(jobs.max_task_demand, [[1, 4], [1, 1], [2, 3]])
    np.testing.assert_array_equal(jobs.is_fixed_duration, [False, False, True])
    # ResNet-50: 3 x 40,037 x 0.16 / 2; CTC: 200 x 214 x 0.03 / 4; fixed: 500.
    np.testing.assert_allclose(
        jobs.ideal_duration(), [3 * 40_037 * 0.16 / 2, 200 * 214 * 0.03 / 4, 500.0]
    )
    assert jobs.model_name(1) == "CTC"
    assert jobs.user_name(0) == "ann" and jobs.user_name(1) is None
    assert jobs.vc_name(1) == "research" and jobs.vc_name(2) is None
    assert jobs.resource_index("cpu") == 1
    with pytest.raises(ValueError, match="unknown resource 'mem'"):
        jobs.resource_index("mem")
    assert jobs.catalog is get_catalog("marl")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"arrival_time": [0.0, 20.0, 10.0]}, r"not sorted: job 2 arrives at 10.0 s, before job 1"),
        ({"arrival_time": [-1.0, 10.0, 10.0]}, r"arrival_time\[0\] = -1.0.*>= 0"),
        ({"arrival_time": [0.0, 10.0]}, r"model has shape \(3,\); expected \(2,\)"),
        ({"model": [0, 8, 1]}, r"model\[1\] = 8; codes must lie in \[0, 7\]"),
        ({"num_workers": [2, 0, 1]}, r"num_workers\[1\] = 0; every job needs >= 1 worker"),
        ({"num_ps": [1, -1, 0]}, r"num_ps\[1\] = -1"),
        (
            {"worker_demand": [[1.0, 4.0], [1.0, -1.0], [2.0, 3.0]]},
            r"worker_demand\[1, 1\] \(cpu\) = -1.0",
        ),
        ({"worker_demand": [[1.0, 4.0], [1.0, 1.0]]}, r"worker_demand has shape \(2, 2\)"),
        ({"resource_names": ("cpu", "gpu")}, r"must start with \('gpu', 'cpu'\)"),
        ({"resource_names": ("gpu", "cpu", "gpu")}, r"repeats a name"),
        ({"duration": [math.nan, math.nan, 0.0]}, r"duration\[2\] = 0.0; a fixed duration"),
        ({"epochs": [3.0, 0.0, 0.0]}, r"job 1 is progress-based .* needs epochs > 0"),
        ({"epochs": [3.0, 200.0, 1.0]}, r"job 2 has a fixed duration of 500.0 s and also"),
        ({"user": [0, 2, 1]}, r"user\[1\] = 2; codes must lie in \[-1, 1\]"),
        ({"partition": [0, -2, 0]}, r"partition\[1\] = -2"),
        ({"model": [0.0, 6.5, 1.0]}, r"model must hold whole numbers"),
        ({"catalog_name": "nope"}, r"unknown model catalog 'nope'"),
    ],
)
def test_validation_names_field_and_rule(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        small_workload().replace(**change)


def test_type_errors() -> None:
    with pytest.raises(TypeError, match="not booleans"):
        small_workload().replace(model=[True, False, True])
    with pytest.raises(TypeError, match="array of numbers"):
        small_workload().replace(arrival_time=["a", "b", "c"])


def test_select_by_mask_and_unsorted_indices_keeps_arrival_order() -> None:
    jobs = small_workload()
    by_mask = jobs.select([True, False, True])
    np.testing.assert_array_equal(by_mask.job_id, [0, 2])
    by_index = jobs.select([2, 0])
    assert by_index == by_mask
    assert by_index.user_names == ("ann", "bob")
    assert len(jobs.select([])) == 0
    with pytest.raises(ValueError, match="repeated index"):
        jobs.select([1, 1])
    with pytest.raises(ValueError, match=r"out of range.*\[0, 2\]"):
        jobs.select([3])
    with pytest.raises(ValueError, match=r"boolean selection needs shape \(3,\)"):
        jobs.select([True])
    with pytest.raises(TypeError, match="boolean mask or integer indices"):
        jobs.select([0.5])


def test_head_window_scale_rebase() -> None:
    jobs = small_workload()
    np.testing.assert_array_equal(jobs.head(2).job_id, [0, 1])
    assert len(jobs.head(10)) == 3
    with pytest.raises(ValueError, match="job count >= 0"):
        jobs.head(-1)
    np.testing.assert_array_equal(jobs.window(5.0, None).job_id, [1, 2])
    np.testing.assert_array_equal(jobs.window(None, 10.0).job_id, [0])
    assert len(jobs.window(0.0, 0.0)) == 0
    with pytest.raises(ValueError, match="start_s <= end_s"):
        jobs.window(5.0, 1.0)
    np.testing.assert_array_equal(jobs.scale_arrivals(0.5).arrival_time, [0.0, 5.0, 5.0])
    with pytest.raises(ValueError, match="finite number > 0"):
        jobs.scale_arrivals(0)
    shifted = jobs.replace(arrival_time=[100.0, 110.0, 110.0]).rebase()
    np.testing.assert_array_equal(shifted.arrival_time, [0.0, 10.0, 10.0])


def test_concatenate_merges_by_arrival_and_remaps_names() -> None:
    first = small_workload()
    second = Workload(
        arrival_time=[5.0],
        model=[2],
        num_workers=[1],
        worker_demand=[[1.0, 1.0]],
        duration=[60.0],
        user=[0],
        user_names=("bob",),
        vc=[0],
        vc_names=("prod",),
        job_id=[7],
    )
    merged = concatenate([first, second])
    np.testing.assert_array_equal(merged.arrival_time, [0.0, 5.0, 10.0, 10.0])
    np.testing.assert_array_equal(merged.job_id, [0, 7, 1, 2])
    assert merged.user_names == ("ann", "bob")
    assert merged.vc_names == ("research", "prod")
    assert [merged.user_name(j) for j in range(4)] == ["ann", "bob", None, "bob"]
    assert [merged.vc_name(j) for j in range(4)] == ["research", "prod", "research", None]
    other = second.replace(catalog_name="cush", model=[0])
    with pytest.raises(ValueError, match="part 1 uses catalog 'cush'"):
        concatenate([first, other])
    with pytest.raises(ValueError, match="at least one"):
        concatenate([])


def test_to_dict_is_json_and_round_trips() -> None:
    jobs = small_workload()
    data = jobs.to_dict()
    assert data["jobs"]["duration"] == [None, None, 500.0]
    text = json.dumps(data, allow_nan=False)
    assert Workload.from_dict(json.loads(text)) == jobs
    empty = jobs.select([])
    assert Workload.from_dict(json.loads(json.dumps(empty.to_dict()))) == empty


def test_from_dict_rejects_wrong_shape_of_dict() -> None:
    data = small_workload().to_dict()
    with pytest.raises(ValueError, match=r"unknown keys \['extra'\]"):
        Workload.from_dict({**data, "extra": 1})
    with pytest.raises(ValueError, match="version 2"):
        Workload.from_dict({**data, "version": 2})
    jobs = dict(data["jobs"])
    del jobs["vc"]
    with pytest.raises(ValueError, match="exactly the columns"):
        Workload.from_dict({**data, "jobs": jobs})
    with pytest.raises(TypeError, match="needs a mapping"):
        Workload.from_dict([])  # type: ignore[arg-type]


def test_equality_and_repr() -> None:
    jobs = small_workload()
    assert jobs == small_workload()
    assert jobs != jobs.replace(user_names=("ann", "cat"))
    assert jobs != jobs.scale_arrivals(2.0)
    assert "Workload(jobs=3, catalog='marl'" in repr(jobs)
    summary = jobs.summary()
    assert summary["jobs"] == 3
    assert summary["parameter_server_jobs"] == 1
    assert summary["fixed_duration_jobs"] == 1
    assert summary["models"]["VGG-16"] == 1


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    count = draw(st.integers(0, 12))
    gaps = draw(st.lists(st.floats(0.001, 1e4), min_size=count, max_size=count))
    fixed = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    demand = st.floats(0.0, 16.0, allow_nan=False)
    rows = st.lists(demand, min_size=3, max_size=3)
    return Workload(
        arrival_time=np.cumsum(gaps),  # strictly increasing
        model=draw(st.lists(st.integers(0, 7), min_size=count, max_size=count)),
        num_workers=draw(st.lists(st.integers(1, 64), min_size=count, max_size=count)),
        num_ps=draw(st.lists(st.integers(0, 4), min_size=count, max_size=count)),
        worker_demand=np.array(draw(st.lists(rows, min_size=count, max_size=count))).reshape(
            count, 3
        ),
        ps_demand=np.array(draw(st.lists(rows, min_size=count, max_size=count))).reshape(count, 3),
        epochs=[0.0 if f else 2.5 for f in fixed],
        iterations_per_epoch=[0 if f else 100 for f in fixed],
        duration=[60.0 if f else math.nan for f in fixed],
        resource_names=("gpu", "cpu", "mem"),
        user=[draw(st.integers(-1, 1)) for _ in range(count)],
        user_names=("u0", "u1"),
    )


@settings(max_examples=60, deadline=None)
@given(workloads(), st.data())
def test_json_round_trip_and_split_merge(jobs: Workload, data: st.DataObject) -> None:
    assert Workload.from_dict(json.loads(json.dumps(jobs.to_dict(), allow_nan=False))) == jobs
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(jobs), max_size=len(jobs))))
    mask = mask.astype(bool).reshape(len(jobs))
    # Arrivals are distinct, so splitting and merging back restores the workload.
    assert concatenate([jobs.select(mask), jobs.select(~mask)]) == jobs
    np.testing.assert_allclose(
        jobs.total_gpus.sum(),
        jobs.select(mask).total_gpus.sum() + jobs.select(~mask).total_gpus.sum(),
    )


def test_pickle_keeps_values_and_read_only_arrays() -> None:
    jobs = small_workload()
    _ = jobs.total_demand  # a cached property travels too
    copy = pickle.loads(pickle.dumps(jobs))
    assert copy == jobs
    for array in (copy.arrival_time, copy.worker_demand, copy.total_demand):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1
