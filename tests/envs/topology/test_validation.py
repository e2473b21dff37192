"""Bad input gets a ValueError naming the value and what is allowed."""

from __future__ import annotations

import pytest

from envs.topology import build_cluster


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
