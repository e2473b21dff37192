"""A multi-node Ray cluster on this machine for the fault-tolerance tests, in a process of
its own (``ray.cluster_utils.Cluster``: a head and worker nodes as separate raylets, each
with its own resources).

Run by tests/infra/test_multinode.py, never by hand. It prints one JSON object per line on
stdout: first the cluster (``address``, ``head`` and ``workers`` node ids), then one answer
per command read from stdin:

- ``actors CLASS``: every actor of that class, alive or dead (``id``, ``node_id``,
  ``state``, ``pid``), from Ray's state API;
- ``remove NODE_ID``: the worker node's processes are killed (a lost machine);
- ``add``: a new worker node joins (a replacement, as an autoscaler or KubeRay adds one);
- ``quit``: every node is stopped by its processes' ids, then the program exits.

In its own process because a cluster started in-process writes its address where a plain
``ray.init()`` of the same user would join it: here ``RAY_TMPDIR`` is a private folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def reply(payload: dict[str, Any]) -> None:
    """One JSON line on stdout."""
    print(json.dumps(payload), flush=True)


def main() -> int:
    """Start the cluster, answer commands until ``quit``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="worker nodes to start with")
    parser.add_argument("--worker-cpus", type=int, default=2, help="logical CPUs per worker")
    parser.add_argument("--dashboard-port", type=int, required=True, help="state API port")
    args = parser.parse_args()

    from ray.cluster_utils import Cluster
    from ray.util.state import list_actors

    # No CPUs on the head, as on the deployed clusters (infra/): trials and env runners
    # go to the workers; the head holds the control plane and the dashboard.
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "node_ip_address": "127.0.0.1",
            "include_dashboard": True,
            "dashboard_host": "127.0.0.1",
            "dashboard_port": args.dashboard_port,
        },
    )
    workers = {}
    try:
        for _ in range(args.workers):
            node = cluster.add_node(num_cpus=args.worker_cpus, node_ip_address="127.0.0.1")
            workers[node.node_id] = node
        cluster.wait_for_nodes()
        reply(
            {
                "address": cluster.address,
                "head": cluster.head_node.node_id,
                "workers": list(workers),
            }
        )
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "actors":
                found = list_actors(
                    address=f"http://127.0.0.1:{args.dashboard_port}",
                    filters=[("class_name", "=", argument)],
                    detail=True,
                    limit=1000,
                )
                reply(
                    {
                        "actors": [
                            {
                                "id": actor.actor_id,
                                "node_id": actor.node_id,
                                "state": actor.state,
                                "pid": actor.pid,
                            }
                            for actor in found
                        ]
                    }
                )
            elif command == "remove":
                cluster.remove_node(workers.pop(argument), allow_graceful=False)
                reply({"removed": argument})
            elif command == "add":
                node = cluster.add_node(num_cpus=args.worker_cpus, node_ip_address="127.0.0.1")
                workers[node.node_id] = node
                reply({"added": node.node_id})
            elif command == "quit":
                break
            else:
                reply({"error": f"unknown command {line.strip()!r}"})
    finally:
        cluster.shutdown()
    reply({"stopped": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
