"""Draw a small cluster as a layered picture: switches by tier, then sockets, then GPU groups.

Nodes are coloured by partition (shared switches grey), edges by link tier. Kept out of
the envs package so the simulator never imports matplotlib.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI
import matplotlib.pyplot as plt
import numpy as np

from envs.topology import Cluster
from envs.topology.registry import TopologySpec, check_cluster_size, planned_size

MAX_DRAWN_NODES = 2500


def check_drawable(spec: TopologySpec) -> None:
    """ValueError, before the cluster of ``spec`` is built, when it is certainly too large
    to draw (:func:`draw_cluster` checks the exact count on the built one).

    Every server has a CPU socket, and every socket is a node of the drawing, so more
    servers than :data:`MAX_DRAWN_NODES` are too many nodes. Building such a cluster only
    to refuse it took seconds and gigabytes (fat-tree k=160: 6 s, 1.3 GB). One too large
    for memory at all is refused as the build would (:func:`check_cluster_size`).
    """
    check_cluster_size(spec)
    servers = planned_size(spec)["servers"]
    if servers > MAX_DRAWN_NODES:
        raise ValueError(
            f"{servers:,} servers are too many to draw legibly (each has a CPU socket, and "
            f"a drawing holds at most {MAX_DRAWN_NODES} nodes); draw a smaller topology, e.g. "
            "fat-tree k=4 or bcube n=4 k=1"
        )


def draw_cluster(cluster: Cluster, path: Path) -> None:
    """Write a PNG of ``cluster`` to ``path``; refuses clusters too large to read."""
    if cluster.num_nodes > MAX_DRAWN_NODES:
        raise ValueError(
            f"{cluster.num_nodes} nodes are too many to draw legibly (at most "
            f"{MAX_DRAWN_NODES}); draw a smaller topology, e.g. fat-tree k=4 or bcube n=4 k=1"
        )
    # Layers from the top: highest switch level first, then sockets, then GPU groups.
    top_level = int(cluster.switch_level.max())
    layer = np.concatenate(
        [
            top_level - cluster.switch_level.astype(np.int64),
            np.full(cluster.num_sockets, top_level + 1),
            np.full(cluster.num_gpu_groups, top_level + 2),
        ]
    )
    partition = np.concatenate(
        [
            cluster.switch_partition,
            cluster.server_partition[cluster.socket_server],
            cluster.server_partition[cluster.group_server],
        ]
    )
    x = np.zeros(cluster.num_nodes)
    for value in np.unique(layer):
        members = np.flatnonzero(layer == value)
        x[members] = (np.arange(len(members)) + 0.5) / len(members)
    y = -layer.astype(float)

    width = min(40.0, max(8.0, cluster.num_servers * 0.25))
    fig, ax = plt.subplots(figsize=(width, 2.0 + 1.2 * (top_level + 3)))
    tier_colors = plt.get_cmap("tab10")
    for tier, name in enumerate(cluster.link_tier_names):
        ends = cluster.link_nodes[cluster.link_tier == tier]
        if not len(ends):
            continue
        for k, (u, v) in enumerate(ends):
            ax.plot(
                [x[u], x[v]],
                [y[u], y[v]],
                color=tier_colors(tier % 10),
                linewidth=0.6,
                alpha=0.7,
                label=name if k == 0 else None,
                zorder=1,
            )
    partition_colors = plt.get_cmap("tab20")
    colors = [partition_colors(p % 20) if p >= 0 else (0.55, 0.55, 0.55, 1.0) for p in partition]
    markers = {0: "s", 1: "o", 2: "^"}
    kinds = np.concatenate(
        [
            np.zeros(cluster.num_switches, int),
            np.ones(cluster.num_sockets, int),
            np.full(cluster.num_gpu_groups, 2),
        ]
    )
    for kind, marker in markers.items():
        members = np.flatnonzero(kinds == kind)
        ax.scatter(
            x[members],
            y[members],
            c=[colors[m] for m in members],
            marker=marker,
            s=40,
            edgecolors="black",
            linewidths=0.3,
            zorder=2,
        )
    labels = [*reversed(cluster.switch_tier_names), "CPU sockets", "GPU groups"]
    ax.set_yticks(-np.arange(top_level + 3), labels)
    ax.set_xticks([])
    ax.set_title(f"{cluster!r}\nnodes coloured by partition (grey: shared switches)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", title="link tier")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
