"""Server presets and per-partition mixes (001 §VI-A, §VI-C; 003 Table 1)."""

from __future__ import annotations

import numpy as np
import pytest

from envs.topology import SERVER_PRESETS, ServerArchitecture, Socket, build_cluster


def test_presets_match_the_papers() -> None:
    power8 = SERVER_PRESETS["power8"]
    assert (power8.num_sockets, power8.num_gpus, power8.num_cores) == (2, 4, 16)
    assert (power8.pcie_gbps, power8.qpi_gbps) == (128.0, 300.0)
    dgx1 = SERVER_PRESETS["dgx1"]
    assert (dgx1.num_sockets, dgx1.num_gpus, dgx1.num_cores) == (2, 8, 32)
    asymmetric = SERVER_PRESETS["asymmetric"]
    assert [(s.cores, sum(s.gpu_groups)) for s in asymmetric.sockets] == [(16, 4), (8, 2)]
    minsky = SERVER_PRESETS["minsky"]
    assert (minsky.num_gpus, minsky.num_gpu_groups, minsky.num_sockets) == (4, 4, 2)


def test_mixed_servers_follow_001_shares_in_every_partition() -> None:
    cluster = build_cluster("fat-tree", k=20, server="mixed")
    names = [a.name for a in cluster.architectures]
    for p in range(cluster.num_partitions):
        kinds = cluster.server_architecture[cluster.partition_servers(p)]
        counts = {names[i]: int((kinds == i).sum()) for i in range(len(names))}
        assert counts == {"single-socket": 20, "power8": 40, "dgx1": 40}
    # 20 x (20*2 + 40*4 + 40*8) GPUs
    assert cluster.num_gpus == 20 * (40 + 160 + 320)


def test_server_gpus_count_each_servers_architecture() -> None:
    cluster = build_cluster("fat-tree", k=4, server="mixed")
    # single-socket 2, power8 2 + 2, dgx1 4 + 4 GPUs, server by server.
    per_name = {"single-socket": 2, "power8": 4, "dgx1": 8}
    names = [cluster.architectures[a].name for a in cluster.server_architecture]
    assert set(names) == set(per_name)  # every kind present: the counts differ by server
    expected = [per_name[name] for name in names]
    assert cluster.server_gpus.tolist() == expected
    assert int(cluster.server_gpus.sum()) == cluster.num_gpus
    assert not cluster.server_gpus.flags.writeable


def test_server_cores_and_each_sockets_siblings_follow_the_architectures() -> None:
    cluster = build_cluster("fat-tree", k=4, server="mixed")
    names = [cluster.architectures[a].name for a in cluster.server_architecture]
    per_server = {name: SERVER_PRESETS[name].num_cores for name in set(names)}
    assert cluster.server_cores.tolist() == [per_server[name] for name in names]
    assert float(cluster.server_cores.sum()) == float(cluster.socket_cores.sum())
    # A single-socket server's socket has no siblings; each of a power8's two 8-core
    # sockets has the other's 8.
    siblings = cluster.socket_sibling_cores
    for server, name in enumerate(names):
        sockets = slice(*cluster.server_socket_offsets[server : server + 2])
        expected = {"single-socket": [0.0], "power8": [8.0, 8.0], "dgx1": [16.0, 16.0]}[name]
        assert siblings[sockets].tolist() == expected, name
    assert not cluster.server_cores.flags.writeable and not siblings.flags.writeable


def test_mix_is_seeded() -> None:
    first = build_cluster("fat-tree", k=4, server="mixed", seed=3).server_architecture
    again = build_cluster("fat-tree", k=4, server="mixed", seed=3).server_architecture
    other = [
        build_cluster("fat-tree", k=8, server="mixed", seed=s).server_architecture for s in range(4)
    ]
    assert np.array_equal(first, again)
    assert len({tuple(o.tolist()) for o in other}) > 1


def test_custom_architecture_in_any_topology() -> None:
    arch = ServerArchitecture("two-by-three", (Socket(12, (3,)), Socket(12, (1, 2))))
    cluster = build_cluster("bcube", n=2, k=1, server=arch)
    assert cluster.num_gpus == 4 * 6
    assert cluster.num_gpu_groups == 4 * 3


@pytest.mark.parametrize(
    ("sockets", "message"),
    [((), "at least one CPU socket"), ((Socket(0, (2,)),), "cores"), ((Socket(4, ()),), "no GPU")],
)
def test_bad_architectures_are_refused(sockets: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServerArchitecture("bad", sockets)


def test_bad_link_bandwidth_refused() -> None:
    with pytest.raises(ValueError, match="pcie_gbps"):
        ServerArchitecture("bad", (Socket(4, (1,)),), pcie_gbps=0)


@pytest.mark.parametrize(
    ("sockets", "bandwidths", "message"),
    [
        # Fractional counts used to pass and be truncated by the cluster's integer tables.
        (
            (Socket(8.5, (2, 1)),),
            {},
            "server architecture 'bad': socket 0 cores must be an integer >= 1, got 8.5",
        ),
        (
            (Socket(8, (2,)), Socket(8, (2.5, 1))),
            {},
            "server architecture 'bad': socket 1 GPUs per group must be an integer >= 1, got 2.5",
        ),
        (
            (Socket(8, (2, 0)),),
            {},
            "server architecture 'bad': socket 0 GPUs per group must be an integer >= 1, got 0",
        ),
        (
            (Socket("8", (2,)),),
            {},
            "server architecture 'bad': socket 0 cores must be an integer >= 1, got '8'",
        ),
        (
            (Socket(8, (2,)),),
            {"pcie_gbps": "128"},
            "server architecture 'bad': pcie_gbps must be positive finite numbers (Gbps), "
            "got ['128']",
        ),
        (
            (Socket(8, (2,)),),
            {"qpi_gbps": float("inf")},
            "server architecture 'bad': qpi_gbps must be positive finite numbers (Gbps), got [inf]",
        ),
        (
            (Socket(8, (2,)),),
            {"pcie_gbps": float("nan")},
            "server architecture 'bad': pcie_gbps must be positive finite numbers (Gbps), "
            "got [nan]",
        ),
    ],
)
def test_fractional_counts_and_bad_bandwidths_are_refused_exactly(
    sockets: tuple, bandwidths: dict, message: str
) -> None:
    with pytest.raises(ValueError) as error:
        ServerArchitecture("bad", sockets, **bandwidths)
    assert str(error.value) == message


def test_numpy_counts_and_bandwidths_make_the_same_cluster() -> None:
    given = ServerArchitecture(
        "np", (Socket(np.int64(12), (np.int32(3),)),), pcie_gbps=np.float32(64.0)
    )
    cluster = build_cluster("flat", servers=2, server=given)
    assert cluster.server_gpus.tolist() == [3, 3]
    assert cluster.socket_cores.tolist() == [12, 12]
    pcie = cluster.link_tier_names.index("pcie")
    assert cluster.link_gbps[cluster.link_tier == pcie].tolist() == [64.0, 64.0]


SOCKET_GROUPS = (
    "server architecture 'bad': socket 0 gpu_groups must be a list of GPU counts, one per "
    "group (e.g. (2,) for one group of 2 GPUs, () for none), got "
)


@pytest.mark.parametrize(
    ("sockets", "message"),
    [
        # A bare count is ambiguous (one group of 2 GPUs, or two groups?) and used to fail
        # with Python's own "'int' object is not iterable", naming no field.
        ((Socket(8, 2),), SOCKET_GROUPS + "2"),
        ((Socket(8, np.int64(2)),), SOCKET_GROUPS + "np.int64(2)"),
        ((Socket(8, None),), SOCKET_GROUPS + "None"),
        ((Socket(8, "2"),), SOCKET_GROUPS + "'2'"),
        # Not a Socket at all used to fail with "'int' object has no attribute 'cores'".
        ((8,), "server architecture 'bad': socket 0 must be a Socket(cores, gpu_groups), got 8"),
        (
            Socket(8, (2,)),
            "server architecture 'bad' needs at least one CPU socket: a list of "
            "Socket(cores, gpu_groups), got Socket(cores=8, gpu_groups=(2,))",
        ),
    ],
)
def test_a_bare_gpu_count_or_a_non_socket_is_refused_naming_the_field(
    sockets: object, message: str
) -> None:
    with pytest.raises(ValueError) as error:
        ServerArchitecture("bad", sockets)  # type: ignore[arg-type]
    assert str(error.value) == message


def test_lists_and_numpy_numbers_are_stored_as_a_hashable_architecture() -> None:
    # Lists used to be kept as given, so hash() (and any cache keyed on the server) failed.
    given = ServerArchitecture(
        "x",
        [Socket(np.int64(8), [np.int32(2)]), Socket(8, np.array([1, 1]))],  # type: ignore[arg-type]
        pcie_gbps=np.float32(64.0),
        qpi_gbps=np.int64(300),
    )
    plain = ServerArchitecture("x", (Socket(8, (2,)), Socket(8, (1, 1))), pcie_gbps=64.0)
    assert given == plain and hash(given) == hash(plain)
    assert type(given.sockets) is tuple
    assert all(type(s.cores) is int and type(s.gpu_groups) is tuple for s in given.sockets)
    assert [type(g) for s in given.sockets for g in s.gpu_groups] == [int, int, int]
    assert (type(given.pcie_gbps), type(given.qpi_gbps)) == (float, float)


@pytest.mark.parametrize("gbps", [np.array(128.0), np.array([128.0])])
def test_an_array_bandwidth_is_refused_with_one_message(gbps: np.ndarray) -> None:
    with pytest.raises(ValueError) as error:
        ServerArchitecture("bad", (Socket(8, (2,)),), pcie_gbps=gbps)  # type: ignore[arg-type]
    assert str(error.value) == (
        f"server architecture 'bad': pcie_gbps must be numbers (Gbps), not numpy arrays, got "
        f"[{gbps!r}]; pass each as a number (float(x) or x.item() of a one-element array)"
    )
