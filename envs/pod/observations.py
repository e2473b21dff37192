"""Observations of ``pod_scheduling_v0`` (001 §IV-A), fixed-shape for RLlib.

Per agent (N = ``max_jobs``, L = 2 resource types GPU/CPU, Y = models in the catalog,
n/e = the largest partition's nodes/edges, P = schedulers, A = actions):

======================  ==============  ====================================================
key                     shape           content
======================  ==============  ====================================================
node_features           [n, L+R+S+2N]   GPU-group (or server) nodes: c = free GPUs and cores
                                        (fractions of the largest group/socket; at server
                                        level, of the largest server), with
                                        ``room_features`` R = 3 room columns (its server's
                                        free GPUs, room for the whole job, the job's tasks
                                        on the server; else R = 0), with
                                        ``release_features`` S = 2 columns (its GPUs and its
                                        server's that running jobs release within one
                                        interval: :mod:`envs.pod.release`; else S = 0), d =
                                        workers and PSs of each of the N jobs on the node;
                                        0 elsewhere
node_type               [n, 5]          one-hot gpu_group/socket/switch/server/scheduler
node_mask               [n]             int8, 1 for real nodes
edge_index              [2, e]          int64, both directions; padding points at node 0
edge_attr               [e, 3]          bandwidth / max, jobs on the link (mean), tier / max
edge_mask               [e]             int8
jobs_model              [N, Y]          x: one-hot model of each concurrent job
jobs_demand             [N, 2(1+L)+T]   r: workers, worker demand, PSs, PS demand; with
                                        ``job_times`` (T = 1) the job's remaining ideal
                                        run time, log(1 + intervals)
task                    [1+Y+2(1+L)+2T] p: is-PS flag, model one-hot, the job's demands
                                        (its r row); with ``job_times`` also the rounds
                                        it was already sent back to wait (at most 8
                                        counted), over 4
schedulers              [V, 6]          inter-scheduler nodes (P schedulers, then shared
                                        switches): free GPU and core fraction, queue and
                                        running jobs / N, mean network link load, has a task
inter_node_type         [V, 5]          one-hot as node_type
inter_edge_index        [2, E']         the inter-scheduler graph, aggregate links
inter_edge_attr         [E', 3]         as edge_attr
inter_edge_mask         [E']            int8
self                    [P]             one-hot: which scheduler node is this agent
forward_targets         [P-1]           int64: scheduler node of each forward action
forward_room            [P-1, 3]        only with ``room_features``: each forward target's
                                        room for the job (:mod:`envs.pod.room`)
action_mask             [A]             int8 (PettingZoo's test requires int8)
advice                  [A]             only with ``advice``: int8 one-hot of the action
                                        the heuristic's plan gives, zeros when the mask
                                        forbids it (:mod:`envs.pod.advice`)
partitions              [P, n, F]       only with others="full": every partition's
                                        node_features (F = L+R+S+2N columns, same padding)
partitions_node_mask    [P, n]          only with others="full": int8, every partition's
                                        node_mask (a full GPU group's features are all 0,
                                        like padding's: only the mask tells them apart)
======================  ==============  ====================================================

The concurrent jobs of a scheduler are the jobs in its queue (head first: slot 0 is the
job being placed) and then the running jobs with tasks in its partition, by index.
Demands are GPUs over the largest group and cores over the largest socket; task counts
over 8 (001's jobs have at most 4 workers and 4 PSs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from envs.pod.config import PodSchedulingConfig
from envs.pod.decisions import DecisionRound, JobInProgress
from envs.pod.layout import ClusterLayout
from envs.pod.release import RELEASE_FEATURES, ReleaseFeatures
from envs.pod.room import FORWARD_ROOM_FEATURES, TARGET_ROOM_FEATURES, RoomFeatures
from envs.sim import Simulator
from envs.topology.views import VIEW_NODE_TYPES

NUM_RESOURCES = 2
SUMMARY_FEATURES = 6
TASK_COUNT_SCALE = 8.0
DEFERRAL_SCALE = 4.0
MAX_DEFERRALS_SHOWN = 8


class ObservationBuilder:
    """Builds the spaces once and each agent's observation per step."""

    def __init__(self, layout: ClusterLayout, config: PodSchedulingConfig, num_models: int) -> None:
        self.layout = layout
        self.config = config
        self.num_models = num_models
        cluster = layout.cluster
        self.num_agents = cluster.num_partitions
        self.num_actions = layout.max_targets + (self.num_agents - 1) + 1
        # GPUs of the largest server; of the largest target (group, or server at that level).
        self.server_gpu_scale = float(cluster.server_gpus.max())
        self.gpu_scale = float(cluster.group_gpus.max())
        self.core_scale = float(cluster.socket_cores.max())
        if layout.level == "server":
            self.gpu_scale = self.server_gpu_scale
            self.core_scale = float(cluster.server_cores.max())
        room_columns = TARGET_ROOM_FEATURES if config.room_features else 0
        self.release_column = NUM_RESOURCES + room_columns
        release_columns = RELEASE_FEATURES if config.release_features else 0
        # Where the d columns (tasks of each concurrent job) start.
        self.slot_column = self.release_column + release_columns
        self.node_feature_size = self.slot_column + 2 * config.max_jobs
        self.time_columns = 1 if config.job_times else 0
        self.demand_size = 2 * (1 + NUM_RESOURCES) + self.time_columns
        self.task_size = 1 + num_models + self.demand_size + self.time_columns
        groups = np.arange(cluster.num_gpu_groups)
        self.group_partition = cluster.server_partition[cluster.group_server[groups]]
        self.group_target = np.zeros(cluster.num_gpu_groups, dtype=np.int64)
        for part in layout.partitions:
            self.group_target[part.groups] = part.group_target
        self.forward_targets = [
            np.array([k for k in range(self.num_agents) if k != agent], dtype=np.int64)
            for agent in range(self.num_agents)
        ]
        network = np.arange(cluster.num_network_links)
        ends = cluster.link_nodes[network]
        self.partition_links = [
            network[np.isin(ends, self._partition_nodes(p)).any(axis=1)]
            for p in range(self.num_agents)
        ]
        cluster_groups = [part.groups for part in layout.partitions]
        self._all_groups = np.arange(cluster.num_gpu_groups)
        self._partition_group_starts = np.array([g[0] for g in cluster_groups], dtype=np.int64)
        self._partition_gpus = np.array(
            [cluster.group_gpus[g].sum() for g in cluster_groups], dtype=np.float64
        )
        socket_ranges = [
            np.arange(
                cluster.server_socket_offsets[cluster.partition_servers(p)[0]],
                cluster.server_socket_offsets[cluster.partition_servers(p)[-1] + 1],
            )
            for p in range(self.num_agents)
        ]
        self._partition_socket_starts = np.array([r[0] for r in socket_ranges], dtype=np.int64)
        self._partition_cores = np.array(
            [cluster.socket_cores[r].sum() for r in socket_ranges], dtype=np.float64
        )
        # Every partition has at least its servers' port links, so no segment is empty.
        self._partition_link_counts = np.array([len(links) for links in self.partition_links])
        self._partition_link_ids = np.concatenate(self.partition_links)
        self._partition_link_starts = np.concatenate(
            [[0], np.cumsum(self._partition_link_counts)[:-1]]
        ).astype(np.int64)
        self._self = np.eye(self.num_agents, dtype=np.float32)
        self._partition_node_masks = np.stack(
            [part.graph.node_mask for part in self.layout.partitions]
        ).astype(np.int8)
        self._index_edges(layout)
        # Each agent's targets padded to the largest partition's (valid where real), and at
        # device level the CPU socket of each target GPU group.
        self._target_ids = np.zeros((self.num_agents, layout.max_targets), dtype=np.int64)
        self._target_sockets = np.zeros_like(self._target_ids)
        self._target_valid = np.zeros((self.num_agents, layout.max_targets), dtype=bool)
        for part in layout.partitions:
            count = len(part.targets)
            self._target_ids[part.partition, :count] = part.targets
            self._target_valid[part.partition, :count] = True
            if layout.level == "device":
                self._target_sockets[part.partition, :count] = part.group_sockets
        self.room = (
            RoomFeatures(layout, self.forward_targets, self._target_ids, self._target_valid)
            if config.room_features
            else None
        )
        self.release = (
            ReleaseFeatures(
                layout,
                self._target_ids,
                self._target_valid,
                target_scale=self.gpu_scale,
                server_scale=self.server_gpu_scale,
            )
            if config.release_features
            else None
        )
        self._demand_table = np.zeros((0, self.demand_size), dtype=np.float32)
        self._models = np.zeros(0, dtype=np.int64)
        self.space = self._build_space()

    def _index_edges(self, layout: ClusterLayout) -> None:
        """Static edge features of every agent's padded inner graph, and where each real
        edge's physical links are, so one ``reduceat`` gives every edge's load."""
        edges = layout.max_edges
        self._edge_attr_static = np.zeros((self.num_agents, edges, 3), dtype=np.float32)
        link_ids, starts, rows, counts = [], [], [], []
        offset = 0
        for part in layout.partitions:
            graph, view = part.graph, part.graph.view
            self._edge_attr_static[part.partition, :, 0] = graph.edge_attr_static[:, 0]
            self._edge_attr_static[part.partition, :, 2] = graph.edge_attr_static[:, 1]
            if not view.num_edges:
                continue
            link_ids.append(view.edge_link_ids)
            starts.append(view.edge_link_offsets[:-1] + offset)
            offset += len(view.edge_link_ids)
            rows.append(part.partition * edges + np.arange(view.num_edges))
            counts.append(graph.link_counts)
        empty = np.zeros(0, dtype=np.int64)
        self._edge_link_ids = np.concatenate(link_ids) if link_ids else empty
        self._edge_link_starts = np.concatenate(starts) if starts else empty
        self._edge_rows = np.concatenate(rows) if rows else empty
        self._edge_link_counts = np.concatenate(counts) if counts else empty

    # ------------------------------------------------------------------ spaces
    def _build_space(self) -> spaces.Dict:
        layout, n_jobs = self.layout, self.config.max_jobs
        n, e = layout.max_nodes, layout.max_edges
        inter = layout.inter
        types = len(VIEW_NODE_TYPES)
        unit = {"low": 0.0, "high": 1.0, "dtype": np.float32}
        unbounded = {"low": 0.0, "high": np.inf, "dtype": np.float32}
        entries: dict[str, spaces.Space] = {
            "node_features": spaces.Box(shape=(n, self.node_feature_size), **unbounded),
            "node_type": spaces.Box(shape=(n, types), **unit),
            "node_mask": spaces.Box(0, 1, (n,), np.int8),
            "edge_index": spaces.Box(0, n - 1, (2, e), np.int64),
            "edge_attr": spaces.Box(shape=(e, 3), **unbounded),
            "edge_mask": spaces.Box(0, 1, (e,), np.int8),
            "jobs_model": spaces.Box(shape=(n_jobs, self.num_models), **unit),
            "jobs_demand": spaces.Box(shape=(n_jobs, self.demand_size), **unbounded),
            "task": spaces.Box(shape=(self.task_size,), **unbounded),
            "schedulers": spaces.Box(shape=(inter.view.num_nodes, SUMMARY_FEATURES), **unbounded),
            "inter_node_type": spaces.Box(shape=(inter.view.num_nodes, types), **unit),
            "inter_edge_index": spaces.Box(
                0, max(inter.view.num_nodes - 1, 0), inter.edge_index.shape, np.int64
            ),
            "inter_edge_attr": spaces.Box(shape=(inter.edge_index.shape[1], 3), **unbounded),
            "inter_edge_mask": spaces.Box(0, 1, (inter.edge_index.shape[1],), np.int8),
            "self": spaces.Box(shape=(self.num_agents,), **unit),
            "forward_targets": spaces.Box(
                0, max(self.num_agents - 1, 0), (self.num_agents - 1,), np.int64
            ),
            "action_mask": spaces.Box(0, 1, (self.num_actions,), np.int8),
        }
        if self.config.room_features:
            entries["forward_room"] = spaces.Box(
                shape=(max(self.num_agents - 1, 0), FORWARD_ROOM_FEATURES), **unit
            )
        if self.config.advice is not None:
            entries["advice"] = spaces.Box(0, 1, (self.num_actions,), np.int8)
        if self.config.others == "full":
            entries["partitions"] = spaces.Box(
                shape=(self.num_agents, n, self.node_feature_size), **unbounded
            )
            entries["partitions_node_mask"] = spaces.Box(0, 1, (self.num_agents, n), np.int8)
        return spaces.Dict(entries)

    # ------------------------------------------------------------------ per episode
    def bind(self, sim: Simulator) -> None:
        """Per-job tables of a new episode's workload (demands, models)."""
        self._demand_table = np.stack(
            [
                sim.num_workers / TASK_COUNT_SCALE,
                sim.worker_gpus / self.gpu_scale,
                sim.worker_cpus / self.core_scale,
                sim.num_ps / TASK_COUNT_SCALE,
                sim.ps_gpus / self.gpu_scale,
                sim.ps_cpus / self.core_scale,
                *([np.zeros(len(sim.num_ps))] if self.time_columns else []),
            ],
            axis=1,
        ).astype(np.float32)
        self._models = sim.workload.model.astype(np.int64)

    # ------------------------------------------------------------------ per step
    def observe_all(
        self,
        sim: Simulator,
        round_: DecisionRound | None,
        running_in: list[set[int]],
        placements: dict[int, tuple[np.ndarray, int]],
        forward_limit: int,
        deferrals: np.ndarray | None = None,
    ) -> list[dict[str, np.ndarray]]:
        """Every agent's observation now (``round_`` None between rounds).

        ``placements``: the running jobs' task groups and worker counts. ``deferrals``:
        per job, the rounds it was sent back to wait (read with ``job_times``).
        """
        if self.time_columns:
            # The time column of the per-job table follows the jobs' progress.
            done_s = sim.work_done * sim.compute_time / sim.num_workers
            remaining = np.maximum(sim.ideal_duration - done_s, 0.0)
            self._demand_table[:, -1] = np.log1p(remaining / self.config.interval_s)
        free_gpus = round_.free_gpus() if round_ is not None else sim.free_gpus
        free_cores = round_.free_cores() if round_ is not None else sim.free_cores
        masks = self.action_masks(round_, forward_limit)
        slots = [self._job_slots(agent, round_, running_in) for agent in range(self.num_agents)]
        features = self._node_features(slots, placements, sim, free_gpus, free_cores)
        forward_room = None
        if self.room is not None:
            target_room, forward_room = self.room.compute(round_, free_gpus, free_cores)
            features[:, : self.layout.max_targets, NUM_RESOURCES : self.release_column] = (
                target_room
            )
        if self.release is not None:
            features[:, : self.layout.max_targets, self.release_column : self.slot_column] = (
                self.release.compute(sim, self.config.interval_s)
            )
        inter = self.layout.inter
        shared = {
            "schedulers": self._summaries(sim, round_, running_in, free_gpus, free_cores),
            "inter_node_type": inter.node_type_one_hot,
            "inter_edge_index": inter.edge_index,
            "inter_edge_attr": np.column_stack(
                [
                    inter.edge_attr_static[:, 0],
                    inter.edge_load(sim.link_jobs, inter.edge_index.shape[1]),
                    inter.edge_attr_static[:, 1],
                ]
            ),
            "inter_edge_mask": inter.edge_mask,
        }
        if self.config.others == "full":
            shared["partitions"] = features
            shared["partitions_node_mask"] = self._partition_node_masks
        edge_attr = self._edge_attr(sim.link_jobs)
        jobs_model, jobs_demand = self._jobs(slots)
        observations = []
        for agent, part in enumerate(self.layout.partitions):
            graph = part.graph
            head = round_.head(agent) if round_ is not None else None
            observation = {
                "node_features": features[agent],
                "node_type": graph.node_type_one_hot,
                "node_mask": graph.node_mask,
                "edge_index": graph.edge_index,
                "edge_attr": edge_attr[agent],
                "edge_mask": graph.edge_mask,
                "jobs_model": jobs_model[agent],
                "jobs_demand": jobs_demand[agent],
                "task": self._task(head, deferrals),
                **shared,
                "self": self._self[agent],
                "forward_targets": self.forward_targets[agent],
                "action_mask": masks[agent],
            }
            if forward_room is not None:
                observation["forward_room"] = forward_room[agent]
            observations.append(observation)
        return observations

    def action_masks(self, round_: DecisionRound | None, forward_limit: int) -> list[np.ndarray]:
        """Per agent: targets with room for its task, useful forwards, and waiting."""
        masks = []
        for agent, part in enumerate(self.layout.partitions):
            mask = np.zeros(self.num_actions, dtype=np.int8)
            mask[-1] = 1  # wait (send the job back to the queue) / nothing to do
            head = round_.head(agent) if round_ is not None else None
            if head is not None:
                fits = round_.fitting_groups(head, self._all_groups)
                local = fits[part.groups]
                if self.layout.level == "device":
                    mask[: len(part.targets)] = local
                else:
                    np.maximum.at(mask, part.group_target, local.astype(np.int8))
                if head.forwards < forward_limit:
                    room = np.logical_or.reduceat(fits, self._partition_group_starts)
                    mask[self.layout.max_targets : -1] = room[self.forward_targets[agent]]
            masks.append(mask)
        return masks

    # ------------------------------------------------------------------ pieces
    def _job_slots(
        self, agent: int, round_: DecisionRound | None, running_in: list[set[int]]
    ) -> list[tuple[int, list[int]]]:
        """Up to N (job, groups claimed so far) pairs: the queue, then running jobs here."""
        limit = self.config.max_jobs
        slots: list[tuple[int, list[int]]] = []
        if round_ is not None:
            slots = [(entry.job, entry.groups) for entry in round_.queues[agent]][:limit]
        if len(slots) < limit:
            running = sorted(running_in[agent])[: limit - len(slots)]
            slots.extend((job, []) for job in running)
        return slots

    def _node_features(
        self,
        slots: list[list[tuple[int, list[int]]]],
        placements: dict[int, tuple[np.ndarray, int]],
        sim: Simulator,
        free_gpus: np.ndarray,
        free_cores: np.ndarray,
    ) -> np.ndarray:
        """Every agent's node features at once: [P, n, L + 2N] (see the module table)."""
        features = np.zeros(
            (self.num_agents, self.layout.max_nodes, self.node_feature_size), dtype=np.float32
        )
        if self.layout.level == "device":
            gpus, cores = free_gpus[self._target_ids], free_cores[self._target_sockets]
        else:
            cluster = sim.cluster
            gpus = np.add.reduceat(free_gpus, cluster.server_group_offsets[:-1])[self._target_ids]
            cores = np.add.reduceat(free_cores, cluster.server_socket_offsets[:-1])
            cores = cores[self._target_ids]
        targets = self.layout.max_targets
        features[:, :targets, 0] = np.where(self._target_valid, gpus / self.gpu_scale, 0.0)
        features[:, :targets, 1] = np.where(self._target_valid, cores / self.core_scale, 0.0)
        # d: each slot's workers and PSs on the agent's nodes. Gather every (agent, slot)'s
        # task groups in plain lists, then place all tasks with a few array operations.
        task_groups, owners, columns, workers = [], [], [], []
        for agent, agent_slots in enumerate(slots):
            for slot, (job, claimed) in enumerate(agent_slots):
                if claimed:  # a job being placed: the tasks claimed so far
                    groups, job_workers = claimed, int(sim.num_workers[job])
                elif job in placements:
                    groups, job_workers = placements[job]
                else:
                    continue
                task_groups.append(groups)
                owners.append(agent)
                columns.append(self.slot_column + 2 * slot)
                workers.append(job_workers)
        if task_groups:
            counts = np.fromiter(map(len, task_groups), dtype=np.int64, count=len(task_groups))
            groups = np.concatenate(task_groups).astype(np.int64, copy=False)
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            is_ps = np.arange(len(groups)) - starts >= np.repeat(workers, counts)
            agent = np.repeat(owners, counts)
            here = self.group_partition[groups] == agent
            np.add.at(
                features,
                (
                    agent[here],
                    self.group_target[groups[here]],
                    np.repeat(columns, counts)[here] + is_ps[here],
                ),
                1.0,
            )
        return features

    def _jobs(self, slots: list[list[tuple[int, list[int]]]]) -> tuple[np.ndarray, np.ndarray]:
        """Every agent's x (one-hot models, [P, N, Y]) and r (demands, [P, N, 2(1+L)])."""
        limit = self.config.max_jobs
        models = np.zeros((self.num_agents, limit, self.num_models), dtype=np.float32)
        demand = np.zeros((self.num_agents, limit, self.demand_size), dtype=np.float32)
        owners = [agent for agent, agent_slots in enumerate(slots) for _ in agent_slots]
        if owners:
            positions = [slot for agent_slots in slots for slot in range(len(agent_slots))]
            jobs = [job for agent_slots in slots for job, _ in agent_slots]
            models[owners, positions, self._models[jobs]] = 1.0
            demand[owners, positions] = self._demand_table[jobs]
        return models, demand

    def _edge_attr(self, link_jobs: np.ndarray) -> np.ndarray:
        """Every agent's inner edge features [P, e, 3]: bandwidth, load (the mean number of
        jobs on the edge's physical links), tier."""
        attr = self._edge_attr_static.copy()
        if len(self._edge_link_ids):
            sums = np.add.reduceat(link_jobs[self._edge_link_ids], self._edge_link_starts)
            attr.reshape(-1, 3)[self._edge_rows, 1] = sums / self._edge_link_counts
        return attr

    def _task(self, head: JobInProgress | None, deferrals: np.ndarray | None) -> np.ndarray:
        task = np.zeros(self.task_size, dtype=np.float32)
        if head is None:
            return task
        task[0] = 1.0 if head.current_is_ps else 0.0
        task[1 + self._models[head.job]] = 1.0
        task[1 + self.num_models : 1 + self.num_models + self.demand_size] = self._demand_table[
            head.job
        ]
        if self.time_columns and deferrals is not None:
            shown = min(int(deferrals[head.job]), MAX_DEFERRALS_SHOWN)
            task[-1] = shown / DEFERRAL_SCALE
        return task

    def _summaries(
        self,
        sim: Simulator,
        round_: DecisionRound | None,
        running_in: list[set[int]],
        free_gpus: np.ndarray,
        free_cores: np.ndarray,
    ) -> np.ndarray:
        summary = np.zeros((self.layout.inter.view.num_nodes, SUMMARY_FEATURES), dtype=np.float32)
        agents = self.num_agents
        scale = float(self.config.max_jobs)
        gpus = np.add.reduceat(free_gpus, self._partition_group_starts)
        cores = np.add.reduceat(free_cores, self._partition_socket_starts)
        summary[:agents, 0] = gpus / self._partition_gpus
        summary[:agents, 1] = cores / self._partition_cores
        if round_ is not None:
            summary[:agents, 2] = [len(queue) / scale for queue in round_.queues]
            summary[:agents, 5] = [1.0 if queue else 0.0 for queue in round_.queues]
        summary[:agents, 3] = [len(jobs) / scale for jobs in running_in]
        load = sim.link_jobs[self._partition_link_ids].astype(np.float64)
        summary[:agents, 4] = (
            np.add.reduceat(load, self._partition_link_starts) / self._partition_link_counts
        )
        return summary

    def _partition_nodes(self, partition: int) -> np.ndarray:
        """Global node ids of a partition's switches and CPU sockets (network link ends)."""
        cluster = self.layout.cluster
        servers = cluster.partition_servers(partition)
        sockets = np.arange(
            cluster.server_socket_offsets[servers[0]],
            cluster.server_socket_offsets[servers[-1] + 1],
        )
        switches = np.flatnonzero(cluster.switch_partition == partition)
        return np.concatenate([switches, cluster.socket_node(sockets)])

    def nbytes(self) -> int:
        """Bytes of one agent's observation."""
        total = 0
        for space in self.space.spaces.values():
            assert isinstance(space, spaces.Box)
            total += int(np.prod(space.shape)) * space.dtype.itemsize
        return total

    @staticmethod
    def check(observation: dict[str, Any], space: spaces.Dict) -> bool:
        """Whether ``observation`` lies in ``space`` (dtype and shape included)."""
        return space.contains(observation)
