"""The hierarchical GNN scheduler of paper 001 (§IV-A, §IV-B), over ``pod_scheduling_v0``
observations, as a plain torch module (the RLModule wrapper is in :mod:`.rl_modules`).

1. **Inner GNN** -- ``inner_layers`` edge-conditioned convolutions over the agent's inner
   graph (GPU groups, sockets, switches; or servers) give node embeddings H.
2. **Encoder** -- H of the placement targets (masked mean and max, so one model fits
   every partition size), the concurrent jobs' models x and demands r, and the task p
   go through an MLP to the scheduler feature z^0.
3. **Inter-scheduler GNN** -- the agent's own node starts from z^0, the other schedulers
   from their shared summaries, top-tier switches from their type; ``inter_layers``
   convolutions give z^1..z^K. The state is the DenseNet-style concatenation
   s = (z^0, z^1, ..., z^K) at the agent's node.
4. **Heads** -- the actor scores each placement target from its embedding with s, each
   forward target from that scheduler's concatenated embeddings with s, and "wait" from
   s (one hidden layer of ``head_hidden``, ReLU); logits of masked actions are pushed to
   the float minimum. The critic maps s to the value. With an ``advice`` observation
   (``pod_scheduling_v0``'s ``advice``: a heuristic's advised action) every action's
   score also reads whether it is the advised one.

Graphs of a batch are joined by offset arithmetic on ``edge_index`` (sample b's nodes
are ``b * n + i``); padded edges are dropped and padded nodes, which then have no
neighbours, are zeroed after every layer and never enter pooling or logits. Nothing loops
over batch elements or agents. With ``others="full"`` observations the other partitions'
node features enter as pooled per-scheduler features, so nothing is encoded 20 times.
"""

from __future__ import annotations

import itertools

import torch
from gymnasium import spaces
from torch import Tensor, nn

from models.config import GNNModelConfig
from models.layers import EdgeConditionedConv, dense_operator, supports_dense

MASKED_LOGIT = torch.finfo(torch.float32).min


def mask_logits(mask: Tensor) -> Tensor:
    """[B, A] logits of the mask alone: 0 on legal actions, the float minimum elsewhere
    (added to a network's logits it masks them; alone it is the distribution of a row
    with one legal action)."""
    return torch.clamp(torch.log(mask.float()), min=MASKED_LOGIT)


def choice_rows(mask: Tensor) -> tuple[Tensor, Tensor]:
    """Indices of the rows with more than one legal action, and of the others."""
    choice = (mask > 0).sum(dim=-1) > 1
    return torch.nonzero(choice).squeeze(-1), torch.nonzero(~choice).squeeze(-1)


def select_rows(obs: dict[str, Tensor], rows: Tensor) -> dict[str, Tensor]:
    """The observation batch restricted to ``rows``.

    ``index_select`` copies the same rows as ``value[rows]`` and is about three times
    faster on a CPU for these small batches (advanced indexing goes through a general
    gather): the demo's 19 observation keys, 0.08 against 0.23 ms a call, twice per PPO
    update and once per sampling step -- about 1% of an iteration.
    """
    return {key: torch.index_select(value, 0, rows) for key, value in obs.items()}


TARGET_TYPES = [0, 3]  # gpu_group, server in envs.topology.views.VIEW_NODE_TYPES
EDGE_DIM = 3
# Graphs up to this many nodes convolve as one dense batched product per layer
# (models.layers.dense_operator); larger ones, whose N^2 cells would mostly be zeros,
# scatter along their edges.
DENSE_MAX_NODES = 128
# Rows per pass when only states are wanted for a large batch (GAE's value pass over a
# whole train batch): a demo chunk's dense operators (512 x 76 x 19 floats, 3 MB) stay in
# cache where the 4,000 rows' 23 MB do not -- 4,096 rows in 44 ms instead of 102 ms on
# the 2-core EPYC, the same values (rows never mix).
STATE_CHUNK_ROWS = 512


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(fan_in, fan_out))
        if index < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def pairwise_head(head: nn.Sequential, items: Tensor, context: Tensor) -> Tensor:
    """``head(cat[items[b, i], context[b]])`` for every item: [B, K] from [B, K, F], [B, C].

    The head's first layer is linear, so its context half is applied once per sample and
    broadcast over the K items instead of being recomputed K times (the same function and
    parameters as concatenating; it saves most of the head's arithmetic).
    """
    first = head[0]
    width = items.shape[-1]
    hidden = nn.functional.linear(items, first.weight[:, :width]) + nn.functional.linear(
        context, first.weight[:, width:], first.bias
    ).unsqueeze(1)
    return head[1:](hidden).squeeze(-1)


def batch_graph(
    edge_index: Tensor, edge_attr: Tensor, edge_mask: Tensor, num_nodes: int
) -> tuple[Tensor, Tensor]:
    """Join B padded graphs into one: node i of sample b becomes ``b * num_nodes + i``."""
    batch = edge_index.shape[0]
    offsets = torch.arange(batch, device=edge_index.device).view(batch, 1, 1) * num_nodes
    joined = (edge_index.long() + offsets).permute(1, 0, 2).reshape(2, -1)
    valid = edge_mask.reshape(-1) > 0
    return joined[:, valid], edge_attr.reshape(-1, edge_attr.shape[-1])[valid].float()


def masked_pool(values: Tensor, mask: Tensor) -> Tensor:
    """Mean and max over dimension 1 of ``values`` [B, n, H] where ``mask`` [B, n] > 0."""
    weights = mask.float().unsqueeze(-1)
    count = weights.sum(dim=1).clamp(min=1.0)
    mean = (values * weights).sum(dim=1) / count
    maximum = values.masked_fill(weights == 0, MASKED_LOGIT).max(dim=1).values
    maximum = torch.where(weights.sum(dim=1) > 0, maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


class PodGNN(nn.Module):
    """001's hierarchical GNN actor-critic for one observation space (see module doc)."""

    def __init__(
        self, observation_space: spaces.Dict, num_actions: int, config: GNNModelConfig
    ) -> None:
        super().__init__()
        self.config = config
        shapes = {key: space.shape for key, space in observation_space.spaces.items()}
        self.num_schedulers = shapes["self"][0]
        self.num_targets = num_actions - self.num_schedulers
        node_inputs = shapes["node_features"][1] + shapes["node_type"][1]
        hidden = config.hidden

        def conv() -> EdgeConditionedConv:
            return EdgeConditionedConv(
                hidden, hidden, EDGE_DIM, config.edge_network, config.edge_rank, config.aggregation
            )

        self.node_input = nn.Linear(node_inputs, hidden)
        self.inner = nn.ModuleList(conv() for _ in range(config.inner_layers))
        jobs = shapes["jobs_model"][0] * (shapes["jobs_model"][1] + shapes["jobs_demand"][1])
        encoder_inputs = 2 * hidden + jobs + shapes["task"][0]
        self.full_view = "partitions" in shapes
        if self.full_view:
            self.partition_input = nn.Linear(shapes["partitions"][2], hidden)
        self.encoder = mlp([encoder_inputs, config.encoder_hidden, hidden])
        summary_inputs = shapes["schedulers"][1] + shapes["inter_node_type"][1]
        self.scheduler_input = nn.Linear(
            summary_inputs + (2 * hidden if self.full_view else 0), hidden
        )
        self.inter = nn.ModuleList(conv() for _ in range(config.inter_layers))
        state = hidden * (1 + config.inter_layers)
        self.state_size = state
        # With advice every action's score reads one more number: is it the advised one.
        self.advised = "advice" in shapes
        advice = int(self.advised)
        self.place_head = mlp([hidden + advice + state, config.head_hidden, 1])
        # With room features each forward target's scores also read its room for the job.
        forward_room = shapes["forward_room"][1] if "forward_room" in shapes else 0
        self.forward_head = mlp([state + forward_room + advice + state, config.head_hidden, 1])
        self.wait_head = mlp([state + advice, config.head_hidden, 1])
        self.value_head = mlp([state, config.head_hidden, 1])

    # ------------------------------------------------------------------ parts
    def _operator(self, obs: dict[str, Tensor], prefix: str, num_nodes: int) -> Tensor:
        """The dense aggregation matrix of the graph whose keys start with ``prefix``."""
        return dense_operator(
            obs[f"{prefix}edge_index"],
            obs[f"{prefix}edge_attr"].float(),
            obs[f"{prefix}edge_mask"],
            num_nodes,
            self.config.aggregation,
        )

    def _dense(self, num_nodes: int) -> bool:
        """Whether a graph of ``num_nodes`` nodes convolves densely (see DENSE_MAX_NODES)."""
        return num_nodes <= DENSE_MAX_NODES and supports_dense(
            self.config.edge_network, self.config.aggregation
        )

    def inner_embeddings(self, obs: dict[str, Tensor]) -> Tensor:
        """H: [B, n, hidden] embeddings of the first ``n = min(N, num_targets)`` nodes of
        each sample's inner graph (the placement targets' slots): nothing reads the
        others'. Through the dense form (graphs of up to :data:`DENSE_MAX_NODES` nodes)
        the last layer computes only these rows."""
        features = torch.cat([obs["node_features"].float(), obs["node_type"].float()], dim=-1)
        batch, num_nodes, _ = features.shape
        node_valid = (obs["node_mask"] > 0).reshape(-1, 1).float()
        if self._dense(num_nodes):
            operator = self._operator(obs, "", num_nodes)
            valid = node_valid.view(batch, num_nodes, 1)
            h = self.node_input(features) * valid
            for layer in self.inner[:-1]:
                h = layer.dense_forward(h, operator) * valid
            # Pooling and the placement head read only the targets (the first slots), so
            # the last layer computes only their rows (the same numbers; 8 of 19 nodes per
            # pod at fat-tree k=4).
            targets = min(num_nodes, self.num_targets)
            if len(self.inner):
                return self.inner[-1].dense_forward(h, operator, targets) * valid[:, :targets]
            return h[:, :targets]
        edge_index, edge_attr = batch_graph(
            obs["edge_index"], obs["edge_attr"], obs["edge_mask"], num_nodes
        )
        h = self.node_input(features.reshape(batch * num_nodes, -1)) * node_valid
        for layer in self.inner:
            h = layer(h, edge_index, edge_attr) * node_valid
        return h.view(batch, num_nodes, -1)[:, : min(num_nodes, self.num_targets)]

    def scheduler_states(self, obs: dict[str, Tensor], embeddings: Tensor) -> tuple[Tensor, Tensor]:
        """``(s, Z)``: the agent's state [B, state] and every scheduler node's [B, P,
        state] (the inter graph's first P nodes; its switches' last layer is not computed:
        nothing reads it)."""
        # Targets are the GPU-group (or server) nodes among the first M; a smaller
        # partition's later slots hold its sockets and switches instead.
        types = obs["node_type"][:, : self.num_targets].float()
        target_mask = (types[..., TARGET_TYPES].sum(-1) > 0) & (
            obs["node_mask"][:, : self.num_targets] > 0
        )
        pooled = masked_pool(embeddings[:, : self.num_targets], target_mask)
        batch = pooled.shape[0]
        z0 = self.encoder(
            torch.cat(
                [
                    pooled,
                    obs["jobs_model"].float().reshape(batch, -1),
                    obs["jobs_demand"].float().reshape(batch, -1),
                    obs["task"].float(),
                ],
                dim=-1,
            )
        )
        summaries = [obs["schedulers"].float(), obs["inter_node_type"].float()]
        num_inter = summaries[0].shape[1]
        if self.full_view:
            partitions = self.partition_input(obs["partitions"].float())  # [B, P, n, hidden]
            # The environment's mask, not the features: a full GPU group's features are
            # all zero, like a padded row's, and it must still count in its pod's mean.
            real = obs["partitions_node_mask"].unsqueeze(-1) > 0  # [B, P, n, 1]
            per_scheduler = torch.cat(
                [
                    (partitions * real).sum(2) / real.sum(2).clamp(min=1),
                    partitions.masked_fill(~real, float("-inf")).max(dim=2).values,
                ],
                dim=-1,
            )
            padding = per_scheduler.new_zeros(
                batch, num_inter - self.num_schedulers, per_scheduler.shape[-1]
            )
            summaries.append(torch.cat([per_scheduler, padding], dim=1))
        nodes = self.scheduler_input(torch.cat(summaries, dim=-1))  # [B, V, hidden]
        self_mask = torch.zeros(batch, num_inter, 1, device=nodes.device)
        self_mask[:, : self.num_schedulers, 0] = obs["self"].float()
        nodes = self_mask * z0.unsqueeze(1) + (1 - self_mask) * nodes
        layers = [nodes]
        schedulers = self.num_schedulers
        if self._dense(num_inter):
            operator = self._operator(obs, "inter_", num_inter)
            for index, layer in enumerate(self.inter):
                # The state and the forward heads read only scheduler nodes (the first
                # P): the last layer computes only their rows.
                last = index == len(self.inter) - 1
                layers.append(
                    layer.dense_forward(layers[-1], operator, schedulers if last else None)
                )
        else:
            edge_index, edge_attr = batch_graph(
                obs["inter_edge_index"], obs["inter_edge_attr"], obs["inter_edge_mask"], num_inter
            )
            h = nodes.reshape(batch * num_inter, -1)
            for layer in self.inter:
                h = layer(h, edge_index, edge_attr)
                layers.append(h.view(batch, num_inter, -1))
        # DenseNet-style concatenation per scheduler node.
        every_node = torch.cat([layer[:, :schedulers] for layer in layers], dim=-1)
        state = (every_node * self_mask[:, :schedulers]).sum(dim=1)
        return state, every_node

    def logits(
        self, obs: dict[str, Tensor], embeddings: Tensor, state: Tensor, nodes: Tensor
    ) -> Tensor:
        """Masked action logits [B, A]: targets, forwards, wait."""
        batch = state.shape[0]
        targets = embeddings[:, : self.num_targets]
        forward_nodes = obs["forward_targets"].long()  # [B, P-1] scheduler node ids
        gathered = torch.gather(
            nodes, 1, forward_nodes.unsqueeze(-1).expand(-1, -1, nodes.shape[-1])
        )
        if "forward_room" in obs:
            gathered = torch.cat([gathered, obs["forward_room"].float()], dim=-1)
        wait_inputs = state
        if self.advised:
            advice = obs["advice"].float().unsqueeze(-1)  # [B, A, 1]
            targets = torch.cat([targets, advice[:, : self.num_targets]], dim=-1)
            gathered = torch.cat([gathered, advice[:, self.num_targets : -1]], dim=-1)
            wait_inputs = torch.cat([state, advice[:, -1]], dim=-1)
        place = pairwise_head(self.place_head, targets, state)
        forward = pairwise_head(self.forward_head, gathered, state)
        wait = self.wait_head(wait_inputs)
        logits = torch.cat([place, forward.view(batch, -1), wait], dim=-1)
        return logits + mask_logits(obs["action_mask"])

    def states(self, obs: dict[str, Tensor]) -> Tensor:
        """The agent's state s [B, state] of every row, without the heads (the critic's
        input), :data:`STATE_CHUNK_ROWS` rows per pass."""
        rows = obs["action_mask"].shape[0]
        if rows <= STATE_CHUNK_ROWS:
            return self.scheduler_states(obs, self.inner_embeddings(obs))[0]
        parts = []
        for start in range(0, rows, STATE_CHUNK_ROWS):
            part = {key: value[start : start + STATE_CHUNK_ROWS] for key, value in obs.items()}
            parts.append(self.scheduler_states(part, self.inner_embeddings(part))[0])
        return torch.cat(parts)

    def value(self, state: Tensor) -> Tensor:
        """The critic: [B] values (with ``critic_gradient="head"`` its loss trains only
        this head: the state is detached from the GNN that computed it)."""
        if self.config.critic_gradient == "head":
            state = state.detach()
        return self.value_head(state).squeeze(-1)

    def forward(self, obs: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """``(logits [B, A], state [B, state])``."""
        embeddings = self.inner_embeddings(obs)
        state, nodes = self.scheduler_states(obs, embeddings)
        return self.logits(obs, embeddings, state, nodes), state

    def training_forward(self, obs: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """:meth:`forward` for a training batch: the same loss and gradients, with the
        backward pass kept to the rows that need it.

        With ``critic_gradient="head"`` a row with one legal action contributes nothing
        to the GNN's gradient: its log-probability is 0 and its entropy and KL are 0
        whatever the network says (see :meth:`acting_logits`), and its value loss stops
        at the detached state. Its state is still needed (the critic's head reads it),
        so those rows run without autograd and only the rows with a choice record a
        graph. With the shared critic every row's value loss reaches the GNN, and this is
        :meth:`forward`.
        """
        rows, forced = choice_rows(obs["action_mask"])
        if self.config.critic_gradient != "head" or len(forced) == 0:
            return self.forward(obs)
        with torch.no_grad():
            forced_state = self.states(select_rows(obs, forced))
        logits = mask_logits(obs["action_mask"])
        state = logits.new_zeros((len(logits), forced_state.shape[-1]))
        state = state.index_copy(0, forced, forced_state)
        if len(rows):
            choice_logits, choice_state = self.forward(select_rows(obs, rows))
            logits = logits.index_copy(0, rows, choice_logits)
            state = state.index_copy(0, rows, choice_state)
        return logits, state

    def acting_logits(self, obs: dict[str, Tensor]) -> Tensor:
        """Logits [B, A] that define the same action distribution as :meth:`forward`'s,
        with the network run only on the rows that have a choice.

        An agent with one legal action (often two in five samples: nothing to place, or
        a job that fits in one place) takes it with probability 1 whatever the network
        says: its masked logits put every other action at the float minimum, whose
        softmax term underflows to 0. Its row here is the mask itself (0 on the legal
        action, the minimum elsewhere): the same probabilities, log-probability 0, and
        KL 0 to any policy, as the full pass gives. Only for acting (no gradient flows
        through the rows not computed); training runs :meth:`forward` on every row.
        """
        rows, forced = choice_rows(obs["action_mask"])
        if len(forced) == 0:
            return self.forward(obs)[0]
        logits = mask_logits(obs["action_mask"])
        if len(rows):
            logits[rows] = self.forward(select_rows(obs, rows))[0]
        return logits
