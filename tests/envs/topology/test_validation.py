"""Bad input gets a ValueError naming the value and what is allowed."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from envs.topology import build_cluster, describe_cluster, make_spec


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("fat-tree", {"k": 5}, r"even integer >= 2, got 5"),
        ("fat-tree", {"k": 0}, r">= 2, got 0"),
        ("fat-tree", {"k": 4.0}, r"integer >= 2, got 4.0"),
        ("fat-tree", {"k": 4, "bandwidth_gbps": (10, 0, 40)}, r"positive.*\[10, 0, 40\]"),
        ("fat-tree", {"k": 4, "bandwidth_gbps": (10, 20)}, r"needs 3 values"),
        ("vl2", {"k": 6}, r"multiple of 4 and >= 4, got 6"),
        ("vl2", {"k": 0}, r">= 4, got 0"),
        ("vl2", {"k": 8, "bandwidth_gbps": (-1, 10, 10)}, r"positive"),
        ("bcube", {"n": 1, "k": 1}, r"BCube n must be an integer >= 2, got 1"),
        ("bcube", {"n": 4, "k": -1}, r"BCube k must be an integer >= 0, got -1"),
        ("bcube", {"n": 4, "k": 1, "bandwidth_gbps": (10,)}, r"k\+1 = 2 values"),
        ("bcube", {"n": 4, "k": 1, "cubes_per_partition": 3}, r"must divide the 4"),
        ("racks", {"racks": ()}, r"non-empty list"),
        ("racks", {"racks": (2, 0)}, r"at least 1 machine, got racks=\[2, 0\]"),
        ("racks", {"racks": (2,), "host_gbps": 0}, r"positive"),
        ("flat", {"servers": 0}, r"flat servers must be an integer >= 1, got 0"),
        ("flat", {"servers": 2, "gpus_per_server": 4, "server": "dgx1"}, r"not both"),
        (
            "fat-tree",
            {"server": "power9"},
            r"unknown server architecture 'power9'; known: .*power8",
        ),
        ("mesh", {}, r"unknown topology 'mesh'; known: bcube, fat-tree, flat, racks, vl2"),
        ("fat-tree", {"n": 3}, r"unknown parameter\(s\) n for topology 'fat-tree'; allowed: k"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(name: str, params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_cluster(name, **params)


FAT_TREE_BANDWIDTHS = "3 values (server-edge, edge-aggregation, aggregation-core)"


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        # Not a sequence at all: refused before len() is taken.
        (
            "fat-tree",
            {"bandwidth_gbps": 10},
            f"fat-tree bandwidth_gbps needs {FAT_TREE_BANDWIDTHS}, got 10",
        ),
        (
            "fat-tree",
            {"bandwidth_gbps": None},
            f"fat-tree bandwidth_gbps needs {FAT_TREE_BANDWIDTHS}, got None",
        ),
        (
            "fat-tree",
            {"bandwidth_gbps": "124"},
            f"fat-tree bandwidth_gbps needs {FAT_TREE_BANDWIDTHS}, got '124'",
        ),
        (
            "vl2",
            {"bandwidth_gbps": 10},
            "VL2 bandwidth_gbps needs 3 values (server-ToR, ToR-aggregation, "
            "aggregation-intermediate), got 10",
        ),
        (
            "bcube",
            {"n": 4, "k": 1, "bandwidth_gbps": 10},
            "BCube bandwidth_gbps needs k+1 = 2 values (one per level), got 10",
        ),
        # Infinite or NaN bandwidths would make every capacity sum inf or nan.
        (
            "fat-tree",
            {"bandwidth_gbps": (10, 20, float("inf"))},
            "fat-tree bandwidth_gbps must be positive finite numbers (Gbps), got [10, 20, inf]",
        ),
        (
            "vl2",
            {"bandwidth_gbps": (1, float("nan"), 10)},
            "VL2 bandwidth_gbps must be positive finite numbers (Gbps), got [1, nan, 10]",
        ),
        (
            "bcube",
            {"n": 4, "k": 1, "bandwidth_gbps": (10, -np.inf)},
            "BCube bandwidth_gbps must be positive finite numbers (Gbps), got [10, -inf]",
        ),
        (
            "racks",
            {"uplink_gbps": float("inf")},
            "racks host_gbps/uplink_gbps must be positive finite numbers (Gbps), got [100.0, inf]",
        ),
        (
            "flat",
            {"host_gbps": float("inf")},
            "flat host_gbps must be positive finite numbers (Gbps), got [inf]",
        ),
        (
            "fat-tree",
            {"bandwidth_gbps": (10, 20, True)},
            "fat-tree bandwidth_gbps must be positive finite numbers (Gbps), got [10, 20, True]",
        ),
        # Racks: not a list, or not whole machine counts.
        ("racks", {"racks": None}, "racks must be a non-empty list of machines per rack, got None"),
        ("racks", {"racks": 2}, "racks must be a non-empty list of machines per rack, got 2"),
        ("racks", {"racks": "22"}, "racks must be a non-empty list of machines per rack, got '22'"),
        (
            "racks",
            {"racks": (2, 2.5)},
            "every rack needs a whole number of machines (an integer >= 1), got racks=[2, 2.5]",
        ),
        (
            "racks",
            {"racks": (np.int64(2), True)},
            "every rack needs a whole number of machines (an integer >= 1), got racks=[2, True]",
        ),
        (
            "racks",
            {"racks": (np.int64(2), np.int64(0))},
            "every rack needs at least 1 machine, got racks=[2, 0]",
        ),
        # The seed reaches numpy only once it is a non-negative integer.
        ("fat-tree", {"seed": "x"}, "seed must be an integer >= 0, got 'x'"),
        ("fat-tree", {"seed": 1.5}, "seed must be an integer >= 0, got 1.5"),
        ("fat-tree", {"seed": -1}, "seed must be an integer >= 0, got -1"),
        ("fat-tree", {"seed": None}, "seed must be an integer >= 0, got None"),
        ("fat-tree", {"seed": True}, "seed must be an integer >= 0, got True"),
        ("racks", {"seed": -2}, "seed must be an integer >= 0, got -2"),
        ("flat", {"seed": "0"}, "seed must be an integer >= 0, got '0'"),
    ],
)
def test_bad_input_gets_the_exact_message(name: str, params: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        build_cluster(name, **params)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "bandwidth_gbps",
    [
        (10, 20, np.int64(40)),
        (np.float64(10.0), 20.0, np.int32(40)),
        np.array([10.0, 20.0, 40.0], dtype=np.float32),
    ],
)
def test_numpy_bandwidths_build_the_same_fat_tree(bandwidth_gbps: object) -> None:
    plain = build_cluster("fat-tree", k=4, bandwidth_gbps=(10.0, 20.0, 40.0))
    cluster = build_cluster("fat-tree", k=4, bandwidth_gbps=bandwidth_gbps)
    assert cluster.link_gbps.tolist() == plain.link_gbps.tolist()
    assert describe_cluster(cluster)["bisection_bandwidth_gbps"] == 80.0


def test_numpy_rack_sizes_build_the_same_racks_with_plain_params() -> None:
    cluster = build_cluster("racks", racks=(np.int64(2), 3))
    assert cluster.params == {"racks": [2, 3]}
    assert [type(machines) for machines in cluster.params["racks"]] == [int, int]
    assert np.diff(cluster.partition_server_offsets).tolist() == [2, 3]
    json.dumps(describe_cluster(cluster))  # numpy counts would not serialise


def test_numpy_integer_seed_is_the_same_seed() -> None:
    given = build_cluster("fat-tree", k=4, server="mixed", seed=np.int64(3))
    plain = build_cluster("fat-tree", k=4, server="mixed", seed=3)
    assert given.server_architecture.tolist() == plain.server_architecture.tolist()


@pytest.mark.parametrize(
    ("name", "params", "plain"),
    [
        (
            "fat-tree",
            {"bandwidth_gbps": np.array([10.0, 20.0, 40.0])},
            {"bandwidth_gbps": (10.0, 20.0, 40.0)},
        ),
        (
            "fat-tree",
            {"bandwidth_gbps": [np.float32(10), np.int64(20), 40]},
            {"bandwidth_gbps": (10.0, 20.0, 40.0)},
        ),
        ("vl2", {"bandwidth_gbps": np.array([1, 10, 10])}, {"bandwidth_gbps": (1.0, 10.0, 10.0)}),
        (
            "bcube",
            {"n": 4, "k": 1, "bandwidth_gbps": np.array([10.0, 20.0])},
            {"n": 4, "k": 1, "bandwidth_gbps": (10.0, 20.0)},
        ),
        ("racks", {"racks": np.array([2, 3])}, {"racks": (2, 3)}),
        (
            "racks",
            {"host_gbps": np.float64(100.0), "uplink_gbps": np.int64(50)},
            {"host_gbps": 100.0, "uplink_gbps": 50.0},
        ),
        ("flat", {"host_gbps": np.float32(10.0)}, {"host_gbps": 10.0}),
    ],
)
def test_numpy_values_leave_the_spec_hashable_and_plain(
    name: str, params: dict, plain: dict
) -> None:
    # A numpy array kept in a frozen spec made hash(spec) raise "unhashable type:
    # 'numpy.ndarray'" and spec == spec raise "truth value of an array is ambiguous".
    given = make_spec(name, **params)
    expected = make_spec(name, **plain)
    assert given == expected and hash(given) == hash(expected)
    for field in (f for f in params if f not in ("n", "k")):
        value = getattr(given, field)
        parts = value if isinstance(value, tuple) else (value,)
        assert type(value) in (tuple, float) and {type(p) for p in parts} <= {int, float}


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        # A 0-d array holds one number, not a list: it used to reach len() and fail with
        # "len() of unsized object".
        (
            "fat-tree",
            {"bandwidth_gbps": np.array(10.0)},
            f"fat-tree bandwidth_gbps needs {FAT_TREE_BANDWIDTHS}, got array(10.)",
        ),
        (
            "racks",
            {"racks": np.array(2)},
            "racks must be a non-empty list of machines per rack, got array(2)",
        ),
        (
            "flat",
            {"host_gbps": np.array([10.0])},
            "flat host_gbps must be numbers (Gbps), not numpy arrays, got [array([10.])]; "
            "pass each as a number (float(x) or x.item() of a one-element array)",
        ),
        (
            "fat-tree",
            {"bandwidth_gbps": np.ones((3, 1))},
            "fat-tree bandwidth_gbps must be numbers (Gbps), not numpy arrays, got "
            "[array([1.]), array([1.]), array([1.])]; pass each as a number (float(x) or "
            "x.item() of a one-element array)",
        ),
    ],
)
def test_an_array_where_a_number_belongs_gets_one_clear_message(
    name: str, params: dict, message: str
) -> None:
    with pytest.raises(ValueError) as error:
        make_spec(name, **params)
    assert str(error.value) == message


# --- sizes that would not fit in memory ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("fat-tree", {"k": 4}),
        ("fat-tree", {"k": 8, "server": "dgx1"}),
        ("vl2", {"k": 8}),
        ("vl2", {"d_a": 8, "d_i": 6, "servers_per_tor": 3}),
        ("bcube", {"n": 4, "k": 1}),
        ("bcube", {"n": 3, "k": 2, "server": "minsky"}),
        ("racks", {"racks": (2, 3, 1)}),
        ("racks", {"racks": (2, 2), "ports_per_server": 3}),
        ("flat", {"servers": 5, "gpus_per_server": 3}),
        ("flat", {"servers": 7, "server": "asymmetric"}),
    ],
)
def test_the_planned_size_is_the_built_one(name: str, params: dict) -> None:
    from envs.topology.registry import planned_size

    cluster = build_cluster(name, **params)
    built = {"servers": cluster.num_servers, "GPUs": cluster.num_gpus, "links": cluster.num_links}
    assert planned_size(make_spec(name, **params)) == built


def test_a_mix_is_sized_as_its_largest_servers() -> None:
    from envs.topology.registry import planned_size

    cluster = build_cluster("fat-tree", k=6, server="mixed")
    size = planned_size(make_spec("fat-tree", k=6, server="mixed"))
    assert size["servers"] == cluster.num_servers == 54
    assert size["GPUs"] == 54 * 8 >= cluster.num_gpus  # every server counted as a DGX-1
    assert size["links"] >= cluster.num_links


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("fat-tree", {"k": 20}),  # 001's scale
        ("fat-tree", {"k": 48, "server": "dgx1"}),  # 27,648 servers, 221,184 GPUs
        ("fat-tree", {"k": 160}),  # 1,024,000 servers: the largest fat-tree allowed
        ("vl2", {"k": 20, "server": "mixed"}),
        ("bcube", {"n": 6, "k": 3}),
        ("bcube", {"n": 32, "k": 3}),  # 1,048,576 servers
        ("flat", {"servers": 2**20, "gpus_per_server": 8}),
    ],
)
def test_paper_scales_and_far_beyond_fit(name: str, params: dict) -> None:
    from envs.topology.registry import check_cluster_size

    check_cluster_size(make_spec(name, **params))  # no error


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        (
            "fat-tree",
            {"k": 100_000},
            "fat-tree k=100000 would have 250,000,000,000,000 servers; at most 1,048,576 fit "
            "in memory",
        ),
        ("fat-tree", {"k": 162}, "fat-tree k=162 would have 1,062,882 servers"),
        ("vl2", {"k": 100_000}, "VL2 d_a=100000 d_i=100000 servers_per_tor=20 would have "),
        ("bcube", {"n": 1000, "k": 5}, "would have 1,000,000,000,000,000,000 servers"),
        # n^(k+1) is never computed in full (2^100000001 has 30 million digits).
        ("bcube", {"n": 2, "k": 100_000_000}, "would have more than 10^30 servers"),
        ("racks", {"racks": (100_000_000, 2)}, "racks (2 racks) would have 100,000,002 servers"),
        (
            "flat",
            {"servers": 16, "gpus_per_server": 10**9},
            "flat servers=16 would have 16,000,000,000 GPUs; at most 8,388,608 fit in memory",
        ),
        ("flat", {"servers": 2**20, "gpus_per_server": 9}, "9,437,184 GPUs"),
        # One server of 6,000 sockets: 17,997,000 inter-socket links, however few GPUs.
        (
            "racks",
            {"racks": (1,), "server": "wide"},
            "racks (1 rack) would have 17,997,004 links; at most 16,777,216 fit in memory",
        ),
    ],
)
def test_a_cluster_too_large_for_memory_is_refused_before_it_is_built(
    name: str, params: dict, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fat-tree k=100000 or BCube n=1000 k=5 ended in a MemoryError (or ate the machine's
    memory) while the builder filled its lists; now the count is refused up front."""
    from envs.topology import registry
    from envs.topology.servers import ServerArchitecture, Socket

    if params.get("server") == "wide":
        sockets = (Socket(8, (1,)), *[Socket(8, ())] * 5999)
        params["server"] = ServerArchitecture("wide", sockets)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("nothing may be built for a cluster this large")

    # Were the check gone, the test fails here instead of exhausting the machine's memory.
    monkeypatch.setattr(registry, "assemble_cluster", never)
    monkeypatch.setattr(registry.TOPOLOGIES[name], "plan", never)
    with pytest.raises(ValueError, match=re.escape(message)):
        build_cluster(name, **params)
