"""The edge-conditioned graph convolution of paper 001 §IV-A, following the PyG template.

    h_N(u) = AGG_{w in N(u)} Theta_uw h_w + b,   Theta_uw = F(E(u, w))
    h_u'   = ReLU(W [h_u, h_N(u)])

``F`` is a one-layer network from the edge vector (bandwidth, load, tier) to the filter.
With ``edge_network="full"`` it outputs all in x out entries (NNConv's construction, exact
to 001). Because one layer is affine in the edge vector e (D entries),
``Theta(e) = B + sum_k e_k W_k``, so the message ``Theta(e)^T h_w`` is computed as
``h_w B + sum_k e_k (h_w W_k)``: D + 1 products per *node* instead of an in x out matrix
per *edge* -- the same function and parameters, at a cost linear in the edges.
"factorized" instead outputs ``rank`` gates of a low-rank filter ``Theta = U diag(F(e)) V``
(with a ReLU, so not affine), for when a non-linear edge network is wanted.

With the "full" filter and a linear aggregation (mean or sum) the layer aggregates first:
``AGG_w Theta(e_uw) h_w = sum_k (AGG_w c_k(e_uw) h_w) W_k`` with ``c = (1, e)`` and
``W_0 = B``, so each edge only scales its source's features by its ``1 + D`` coefficients,
and one ``[N, (1 + D) in] x [(1 + D) in, out]`` product follows the scatter. It is the
same function and the same parameters as the message form (which "max" still uses) with
a handful of tensor operations per layer: the per-step cost of a small graph is that of
launching operations, and the backward pass of an ``index_add`` is a gather.

For a batch of small graphs (a partition's inner graph, the inter-scheduler graph) the
aggregation is a dense product: :func:`dense_operator` writes each sample's coefficients
``c_k(e_uw)`` (divided by u's degree for "mean") into a ``[B, (1 + D) N, N]`` matrix once
per forward pass, and every layer over that graph is then one batched matrix product and
two matrix products with the filter folded into the combination
(:meth:`EdgeConditionedConv.dense_forward`) instead of ``1 + D`` scatters, their gathers
in the backward pass and a concatenation. The edge vectors are observations, not
parameters, so building the operator needs no gradient; the result is the same up to
float32 rounding (summation order).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing

# Aggregations that commute with the filter's sum over edge coefficients.
LINEAR_AGGREGATIONS = ("mean", "sum")


def supports_dense(edge_network: str, aggr: str) -> bool:
    """Whether :meth:`EdgeConditionedConv.dense_forward` computes this layer's function."""
    return edge_network == "full" and aggr in LINEAR_AGGREGATIONS


def dense_operator(
    edge_index: Tensor, edge_attr: Tensor, edge_mask: Tensor, num_nodes: int, aggr: str
) -> Tensor:
    """A batch of padded graphs as the matrix of :meth:`EdgeConditionedConv.dense_forward`.

    ``edge_index`` [B, 2, E] (source, target per edge), ``edge_attr`` [B, E, D],
    ``edge_mask`` [B, E] (padding 0), ``aggr`` "mean" or "sum" -> [B, N (1 + D), N].
    Row ``u (1 + D) + k``, column ``w`` holds the sum of ``c_k(e)`` over the valid edges
    w -> u, with ``c = (1, e_1, ..., e_D)``, divided by u's valid in-degree (at least 1)
    for "mean", as the scatter form does. Parallel edges add up. Rows are node-major so
    that the product with node features [B, N, F] reads as [B, N, (1 + D) F] without a
    copy. (Node u's own features enter the layer directly, not through this matrix: an
    identity block here cost a fifth of the product for a copy.)
    """
    if aggr not in LINEAR_AGGREGATIONS:
        raise ValueError(f"a dense operator needs aggr in {LINEAR_AGGREGATIONS}, got {aggr!r}")
    batch, _, edges = edge_index.shape
    valid = (edge_mask > 0).float()
    coefficients = torch.cat([edge_attr.new_ones(batch, edges, 1), edge_attr], dim=-1).float()
    coefficients = coefficients * valid.unsqueeze(-1)
    rows = coefficients.shape[-1]  # one row per coefficient
    source, target = edge_index[:, 0].long(), edge_index[:, 1].long()
    if aggr == "mean":
        degree = valid.new_zeros(batch, num_nodes).scatter_add_(1, target, valid)
        coefficients = coefficients / degree.clamp(min=1.0).gather(1, target).unsqueeze(-1)
    # Flat position of (sample, target row, coefficient, source): padded edges, which may
    # point at any node, add zeros.
    block = rows * num_nodes * num_nodes
    first = (
        target * rows * num_nodes
        + source
        + block * torch.arange(batch, device=source.device).view(batch, 1)
    )
    index = first.unsqueeze(-1) + num_nodes * torch.arange(rows, device=source.device)
    flat = coefficients.new_zeros(batch * block).index_add_(
        0, index.reshape(-1), coefficients.reshape(-1)
    )
    return flat.view(batch, num_nodes * rows, num_nodes)


class EdgeConditionedConv(MessagePassing):
    r"""001's edge-conditioned convolution.

    Args:
        in_channels: node feature size.
        out_channels: output size.
        edge_dim: edge feature size.
        edge_network: "full" or "factorized" (see the module docstring).
        rank: gates of the factorized filter.
        aggr: "mean" (001), "max" or "sum".

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`, edge indices
          :math:`(2, |\mathcal{E}|)`, edge features :math:`(|\mathcal{E}|, D)`
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        edge_dim: int,
        edge_network: str = "full",
        rank: int = 8,
        aggr: str = "mean",
    ) -> None:
        super().__init__(aggr=aggr)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.edge_network = edge_network
        if edge_network == "full":
            self.filter = nn.Linear(edge_dim, in_channels * out_channels)
        elif edge_network == "factorized":
            self.filter = nn.Linear(edge_dim, rank)
            self.down = nn.Linear(in_channels, rank, bias=False)
            self.up = nn.Linear(rank, out_channels, bias=False)
        else:
            raise ValueError(f"edge_network must be 'full' or 'factorized', got {edge_network!r}")
        self.bias = nn.Parameter(torch.empty(out_channels))
        self.combine = nn.Linear(in_channels + out_channels, out_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialize every parameter."""
        super().reset_parameters()
        for module in self.children():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        nn.init.zeros_(self.bias)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        """One convolution; nodes without neighbours get h_N = b."""
        if self.edge_network == "full" and self.aggr in LINEAR_AGGREGATIONS:
            neighbourhood = self._aggregate_first(x, edge_index, edge_attr) + self.bias
            return torch.relu(self.combine(torch.cat([x, neighbourhood], dim=-1)))
        if self.aggr in LINEAR_AGGREGATIONS:
            neighbourhood = self._gated_low_rank(x, edge_index, edge_attr) + self.bias
            return torch.relu(self.combine(torch.cat([x, neighbourhood], dim=-1)))
        if self.edge_network == "full":
            # Per node: h B and h W_k for each edge feature k (see the module docstring),
            # one matmul: [N, in] x [in, out * (1 + D)].
            weight = self.filter.weight.view(self.in_channels, self.out_channels, -1)
            bias = self.filter.bias.view(self.in_channels, self.out_channels, 1)
            stacked = torch.cat([bias, weight], dim=-1).reshape(self.in_channels, -1)
            source = x @ stacked
        else:
            source = x
        neighbourhood = self.propagate(edge_index, x=source, edge_attr=edge_attr) + self.bias
        return torch.relu(self.combine(torch.cat([x, neighbourhood], dim=-1)))

    def dense_forward(self, x: Tensor, operator: Tensor, outputs: int | None = None) -> Tensor:
        """One convolution of a batch of graphs: ``x`` [B, N, in] and the graph's
        :func:`dense_operator` [B, N (1 + D), N] (built for this layer's aggregation) ->
        [B, M, out] for the first ``M = outputs`` nodes (default all N). Only for the
        "full" filter with "mean" or "sum".

        ``combine(cat[h_u, AGG + b])`` is linear before its ReLU, so the filter and the
        combination fold into one weight: one batched product gathers the ``1 + D``
        aggregates per node, and two matrix products apply the folded weight to them and
        the combination's own half to ``h_u``. A node's output reads only its own row of
        the operator, so the first M outputs need only the operator's first M (1 + D)
        rows: a network that reads only some nodes of its last layer (the placement
        targets) computes only those, the same numbers as their rows of the full layer.
        """
        batch, num_nodes, _ = x.shape
        rows = num_nodes if outputs is None else outputs
        coefficients = operator.shape[1] // num_nodes
        # Slices, not copies: all N rows when every output is asked for.
        gathered = torch.bmm(operator[:, : rows * coefficients], x).reshape(batch * rows, -1)
        x_own = x[:, :rows]
        own = self.combine.weight[:, : self.in_channels]
        neighbourhood = self.combine.weight[:, self.in_channels :]
        folded = self._stacked_filter() @ neighbourhood.t()
        bias = self.combine.bias + neighbourhood @ self.bias
        itself = torch.addmm(bias, x_own.reshape(batch * rows, -1), own.t())
        return torch.relu(torch.addmm(itself, gathered, folded)).view(batch, rows, -1)

    def _stacked_filter(self) -> Tensor:
        """Filter weights per coefficient, B first: [(1 + D) * in, out]."""
        weight = self.filter.weight.view(self.in_channels, self.out_channels, -1)
        bias = self.filter.bias.view(1, self.in_channels, self.out_channels)
        return torch.cat([bias, weight.permute(2, 0, 1)], dim=0).reshape(-1, self.out_channels)

    def _gated_low_rank(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        """``AGG_w U (g(e_uw) * V h_w)`` of the factorized filter for a linear AGG: [N, out].

        ``V`` applies per node before the gather and ``U`` per node after the sum (both
        linear, no bias), so each edge carries ``rank`` numbers instead of ``in`` and
        ``out``: the same function as the message form, a fraction of its cost on graphs
        with many more edges than nodes (the inter-scheduler graph at paper scale).
        """
        num_nodes = x.shape[0]
        source, target = edge_index[0], edge_index[1]
        gates = torch.relu(self.filter(edge_attr))
        messages = gates * self.down(x).index_select(0, source)
        summed = messages.new_zeros(num_nodes, messages.shape[1]).index_add(0, target, messages)
        return self.up(self._reduce(summed, target))

    def _aggregate_first(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        """``AGG_w Theta(e_uw) h_w`` for a linear AGG (see the module docstring): [N, out]."""
        num_nodes = x.shape[0]
        source, target = edge_index[0], edge_index[1]  # PyG's flow: messages source -> target
        sources = x.index_select(0, source)
        # One [N, in] sum per coefficient (1, e_1, ..., e_D); no [E, 1 + D, in] intermediate.
        sums = [x.new_zeros(num_nodes, self.in_channels).index_add(0, target, sources)]
        for feature in range(edge_attr.shape[1]):
            weighted = sources * edge_attr[:, feature : feature + 1]
            sums.append(x.new_zeros(num_nodes, self.in_channels).index_add(0, target, weighted))
        summed = torch.cat(sums, dim=-1)
        return self._reduce(summed, target) @ self._stacked_filter()

    def _reduce(self, summed: Tensor, target: Tensor) -> Tensor:
        """Per-node sums [N, F] of the edges into each node -> this layer's aggregate
        ("mean" divides by the in-degree, at least 1)."""
        if self.aggr != "mean":
            return summed
        degree = torch.bincount(target, minlength=summed.shape[0]).clamp(min=1)
        return summed / degree.unsqueeze(-1).to(summed.dtype)

    def propagate(self, edge_index: Tensor, **kwargs: Any) -> Tensor:
        """PyG's generic :meth:`MessagePassing.propagate` (for "max", the one aggregation
        that sends messages).

        Defined here so that PyG keeps it: for a class that inherits ``propagate``,
        PyG renders a specialised copy from a template into a new file in the temporary
        directory of every process that builds the layer -- every Ray worker, test and
        CLI run -- and never deletes it.
        """
        return super().propagate(edge_index, **kwargs)

    def message(self, x_j: Tensor, edge_attr: Tensor) -> Tensor:
        """Theta(E(u, w)) h_w for every edge."""
        if self.edge_network == "full":
            features = 1 + edge_attr.shape[-1]
            per_feature = x_j.view(x_j.shape[0], self.out_channels, features)  # [E, out, 1 + D]
            coefficients = torch.cat([edge_attr.new_ones(edge_attr.shape[0], 1), edge_attr], dim=-1)
            return torch.bmm(per_feature, coefficients.unsqueeze(-1)).squeeze(-1)
        gates = torch.relu(self.filter(edge_attr))
        return self.up(gates * self.down(x_j))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
            f"edge_network={self.edge_network}, aggr={self.aggr})"
        )
