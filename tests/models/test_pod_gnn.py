"""The hierarchical GNN: shapes, masks, equivariance, batching, gradients, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from envs.pod.env import PodSchedulingEnv
from models.config import GNNModelConfig
from models.pod_gnn import PodGNN

TOPOLOGIES = {
    "fat-tree": {"topology_params": {"k": 4}},
    "vl2": {"topology": "vl2", "topology_params": {"k": 4, "servers_per_tor": 2}},
    "bcube": {"topology": "bcube", "topology_params": {"n": 3, "k": 1}},
    "mixed": {"topology": "racks", "topology_params": {"racks": [3, 1, 2]}, "server": "mixed"},
    "server-level": {"topology_params": {"k": 4}, "level": "server"},
    "full-view": {"topology_params": {"k": 4}, "others": "full"},
}


def observations(env: PodSchedulingEnv, seed: int = 0, steps: int = 3) -> dict[str, dict]:
    """Observations after a few masked random steps (so some jobs run)."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
        obs, *_ = env.step(actions)
    return obs


def as_batch(space, obs_list: list[dict]) -> dict[str, torch.Tensor]:
    return {key: torch.as_tensor(np.stack([o[key] for o in obs_list])) for key in space.spaces}


def build(env: PodSchedulingEnv, **settings) -> PodGNN:
    torch.manual_seed(0)
    agent = env.possible_agents[0]
    return PodGNN(
        env.observation_space(agent), env.action_space(agent).n, GNNModelConfig(**settings)
    )


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_shapes_and_masked_probabilities(name: str) -> None:
    env = PodSchedulingEnv(num_jobs=20, **TOPOLOGIES[name])
    obs = observations(env)
    space = env.observation_space(env.possible_agents[0])
    batch = as_batch(space, list(obs.values()))
    net = build(env)
    logits, state = net(batch)
    agents, actions = len(obs), env.action_space(env.possible_agents[0]).n
    assert logits.shape == (agents, actions)
    assert state.shape == (agents, net.state_size)
    probabilities = torch.softmax(logits, dim=-1)
    masked = batch["action_mask"] == 0
    assert torch.all(probabilities[masked] == 0)
    assert torch.allclose(probabilities.sum(-1), torch.ones(agents))
    assert torch.isfinite(net.value(state)).all()


def test_relabelling_gpu_groups_permutes_their_logits() -> None:
    env = PodSchedulingEnv(num_jobs=20)
    obs = observations(env, steps=4)["scheduler_0"]
    net = build(env).eval()
    space = env.observation_space("scheduler_0")
    targets = int(np.sum(obs["node_type"][:, 0]))  # the partition's GPU groups: nodes 0..M-1
    permutation = np.random.default_rng(3).permutation(targets)
    relabel = np.arange(obs["node_mask"].shape[0])
    relabel[permutation] = np.arange(targets)  # old node permutation[i] becomes node i
    moved = dict(obs)
    for key in ("node_features", "node_type", "node_mask"):
        moved[key] = obs[key].copy()
        moved[key][:targets] = obs[key][permutation]
    moved["edge_index"] = relabel[obs["edge_index"]]
    moved["action_mask"] = obs["action_mask"].copy()
    moved["action_mask"][:targets] = obs["action_mask"][permutation]
    with torch.no_grad():
        original, _ = net(as_batch(space, [obs]))
        relabelled, _ = net(as_batch(space, [moved]))
    assert torch.allclose(relabelled[0, :targets], original[0, permutation], atol=1e-5)
    assert torch.allclose(relabelled[0, targets:], original[0, targets:], atol=1e-5)


def test_batch_of_one_equals_row_of_batch() -> None:
    env = PodSchedulingEnv(
        num_jobs=20, topology="vl2", topology_params={"k": 4, "servers_per_tor": 2}
    )
    obs = list(observations(env).values())
    space = env.observation_space(env.possible_agents[0])
    net = build(env).eval()
    with torch.no_grad():
        together, state = net(as_batch(space, obs))
        for row, single in enumerate(obs):
            alone, alone_state = net(as_batch(space, [single]))
            assert torch.allclose(alone[0], together[row], atol=1e-5)
            assert torch.allclose(alone_state[0], state[row], atol=1e-5)


@pytest.mark.parametrize(
    ("edge_network", "room_features"), [("full", False), ("factorized", False), ("full", True)]
)
def test_gradients_reach_every_parameter(edge_network: str, room_features: bool) -> None:
    env = PodSchedulingEnv(num_jobs=20, room_features=room_features)
    obs = list(observations(env).values())
    net = build(env, edge_network=edge_network)
    space = env.observation_space(env.possible_agents[0])
    logits, state = net(as_batch(space, obs))
    valid = torch.isfinite(logits) & (logits > torch.finfo(torch.float32).min / 2)
    loss = (logits[valid] ** 2).sum() + (net.value(state) ** 2).sum()
    loss.backward()
    for name, parameter in net.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_a_head_only_critic_leaves_the_gnn_to_the_actor() -> None:
    """critic_gradient="head": the value loss reaches the value head and nothing else;
    "shared" (the default) also reaches the GNN. The values themselves are the same."""
    env = PodSchedulingEnv(num_jobs=20)
    space = env.observation_space(env.possible_agents[0])
    batch = as_batch(space, list(observations(env).values()))
    torch.manual_seed(0)
    shared = build(env)
    head_only = build(env, critic_gradient="head")
    head_only.load_state_dict(shared.state_dict())
    values = {}
    for name, net in (("shared", shared), ("head", head_only)):
        _, state = net(batch)
        values[name] = net.value(state)
        (values[name] ** 2).sum().backward()
    assert torch.equal(values["shared"], values["head"])
    for name, parameter in head_only.named_parameters():
        reached = parameter.grad is not None and parameter.grad.abs().sum() > 0
        assert reached == name.startswith("value_head."), name
    assert shared.inner[0].filter.weight.grad.abs().sum() > 0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="edge_network='dense'; allowed: full, factorized"):
        GNNModelConfig(edge_network="dense")
    with pytest.raises(ValueError, match="critic_gradient='actor'; allowed: shared, head"):
        GNNModelConfig(critic_gradient="actor")
    with pytest.raises(ValueError, match="unknown GNNModelConfig key"):
        GNNModelConfig.from_model_config({"hiden": 3})


def reference_output(
    layer: object, x: torch.Tensor, target: torch.Tensor, messages: torch.Tensor, aggregation: str
) -> torch.Tensor:
    """The layer's output from per-edge ``messages`` [E, out] reduced edge by edge onto
    their ``target`` nodes (nodes without edges get 0, then the bias)."""
    nodes, out = x.shape[0], messages.shape[1]
    if aggregation == "max":
        index = target.unsqueeze(-1).expand(-1, out)
        reduced = torch.zeros(nodes, out).scatter_reduce(
            0, index, messages, "amax", include_self=False
        )
    else:
        reduced = torch.zeros(nodes, out).index_add_(0, target, messages)
    if aggregation == "mean":
        reduced = reduced / torch.bincount(target, minlength=nodes).clamp(min=1).unsqueeze(-1)
    return torch.relu(layer.combine(torch.cat([x, reduced + layer.bias], dim=-1)))


@pytest.mark.parametrize("aggregation", ["mean", "sum", "max"])
def test_full_filter_equals_the_per_edge_matrix_construction(aggregation: str) -> None:
    """The linear-cost 'full' layer computes NNConv's per-edge Theta(e) h_w: aggregated
    first (mean, sum) or message by message (max), equal to float32 rounding."""
    from models.layers import EdgeConditionedConv

    torch.manual_seed(1)
    layer = EdgeConditionedConv(5, 7, edge_dim=3, edge_network="full", aggr=aggregation)
    x = torch.randn(6, 5)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 1], [1, 0, 3, 2, 5, 4, 2]])
    edge_attr = torch.rand(7, 3)
    theta = layer.filter(edge_attr).view(-1, 5, 7)  # one in x out matrix per edge
    messages = torch.bmm(x[edge_index[0]].unsqueeze(1), theta).squeeze(1)
    expected = reference_output(layer, x, edge_index[1], messages, aggregation)
    assert torch.allclose(layer(x, edge_index, edge_attr), expected, atol=1e-5)


def test_building_the_layer_leaves_no_file_behind(tmp_path) -> None:
    """PyG renders an inherited ``propagate`` from a template into a new file in the
    temporary directory of each process; the layer keeps the generic one, so a process
    that builds and runs it (every aggregation, the message-passing "max" included)
    writes nothing there. A fresh process: a class is rendered once per process."""
    import os
    import subprocess
    import sys

    script = (
        "import torch\n"
        "from models.layers import EdgeConditionedConv\n"
        "x, edge_index = torch.randn(3, 4), torch.tensor([[0, 1], [1, 2]])\n"
        "for aggregation in ('mean', 'sum', 'max'):\n"
        "    EdgeConditionedConv(4, 4, 3, aggr=aggregation)(x, edge_index, torch.rand(2, 3))\n"
    )
    environment = {**os.environ, "TMPDIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", script], check=True, env=environment, timeout=120)
    assert sorted(path.name for path in tmp_path.glob("*.py")) == []


@pytest.mark.parametrize("aggregation", ["mean", "sum", "max"])
def test_factorized_filter_equals_its_per_edge_messages(aggregation: str) -> None:
    """The factorized layer's low-rank sum (V per node before the gather, U after the sum)
    is the message form U (g(e) * V h_w) aggregated edge by edge, to float32 rounding."""
    from models.layers import EdgeConditionedConv

    torch.manual_seed(3)
    layer = EdgeConditionedConv(
        5, 7, edge_dim=3, edge_network="factorized", rank=4, aggr=aggregation
    )
    x = torch.randn(6, 5)
    # Node 2 receives two parallel edges; node 5 none.
    edge_index = torch.tensor([[0, 1, 2, 3, 1, 1, 4], [1, 0, 3, 2, 2, 2, 0]])
    edge_attr = torch.rand(7, 3)
    messages = layer.up(torch.relu(layer.filter(edge_attr)) * layer.down(x[edge_index[0]]))
    expected = reference_output(layer, x, edge_index[1], messages, aggregation)
    assert torch.allclose(layer(x, edge_index, edge_attr), expected, atol=1e-5)


@pytest.mark.parametrize("aggregation", ["mean", "sum"])
def test_dense_convolution_equals_the_scatter_form(aggregation: str) -> None:
    """A batch of padded graphs through the dense operator gives the scatter form's
    output on the joined graph: padding edges (pointing anywhere) add nothing, parallel
    edges add up, nodes without edges get h_N = b. Equal to float32 rounding."""
    from models.layers import EdgeConditionedConv, dense_operator
    from models.pod_gnn import batch_graph

    torch.manual_seed(4)
    layer = EdgeConditionedConv(5, 7, edge_dim=3, aggr=aggregation)
    batch, nodes = 3, 6
    edge_index = torch.randint(0, nodes, (batch, 2, 9))
    edge_index[1, :, 3] = edge_index[1, :, 4]  # a parallel edge in sample 1
    edge_mask = torch.ones(batch, 9, dtype=torch.int8)
    edge_mask[0, 6:] = 0  # padding in sample 0
    edge_mask[2] = 0  # sample 2 has no edges at all
    edge_attr = torch.rand(batch, 9, 3)
    x = torch.randn(batch, nodes, 5)
    joined, joined_attr = batch_graph(edge_index, edge_attr, edge_mask, nodes)
    expected = layer(x.reshape(batch * nodes, 5), joined, joined_attr).view(batch, nodes, 7)
    operator = dense_operator(edge_index, edge_attr, edge_mask, nodes, aggregation)
    assert operator.shape == (batch, nodes * (1 + 3), nodes)
    assert torch.allclose(layer.dense_forward(x, operator), expected, atol=1e-5)
    with pytest.raises(ValueError, match="needs aggr in"):
        dense_operator(edge_index, edge_attr, edge_mask, nodes, "max")


@pytest.mark.parametrize("name", ["fat-tree", "full-view", "server-level"])
def test_dense_and_scatter_networks_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole network gives the same logits and values through dense products (small
    graphs) and through scatters (forced by lowering the size limit), to 1e-4."""
    import models.pod_gnn

    env = PodSchedulingEnv(num_jobs=20, **TOPOLOGIES[name])
    obs = list(observations(env).values())
    space = env.observation_space(env.possible_agents[0])
    net = build(env)
    with torch.no_grad():
        dense_logits, dense_state = net(as_batch(space, obs))
        monkeypatch.setattr(models.pod_gnn, "DENSE_MAX_NODES", 0)
        scatter_logits, scatter_state = net(as_batch(space, obs))
    legal = as_batch(space, obs)["action_mask"] > 0
    assert torch.allclose(dense_logits[legal], scatter_logits[legal], atol=1e-4)
    assert torch.allclose(net.value(dense_state), net.value(scatter_state), atol=1e-4)


def test_the_dense_layer_computes_only_the_outputs_asked_for() -> None:
    """``dense_forward(..., outputs=M)`` gives the first M rows of the full layer: a node's
    output reads only its own operator rows (to float32 rounding: other product shapes)."""
    from models.layers import EdgeConditionedConv, dense_operator

    torch.manual_seed(5)
    layer = EdgeConditionedConv(4, 6, edge_dim=3)
    batch, nodes = 3, 7
    edge_index = torch.randint(0, nodes, (batch, 2, 12))
    edge_mask = torch.ones(batch, 12, dtype=torch.int8)
    operator = dense_operator(edge_index, torch.rand(batch, 12, 3), edge_mask, nodes, "mean")
    x = torch.randn(batch, nodes, 4)
    full = layer.dense_forward(x, operator)
    for outputs in (1, 3, nodes):
        part = layer.dense_forward(x, operator, outputs)
        assert part.shape == (batch, outputs, 6)
        assert torch.allclose(part, full[:, :outputs], atol=1e-6)


@pytest.mark.parametrize("name", ["fat-tree", "server-level"])
def test_inner_embeddings_are_the_targets_rows_in_both_forms(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both forms return the first ``num_targets`` nodes' embeddings (the dense form's last
    layer computes only those), and they agree to 1e-4."""
    import models.pod_gnn

    env = PodSchedulingEnv(num_jobs=20, **TOPOLOGIES[name])
    space = env.observation_space(env.possible_agents[0])
    batch = as_batch(space, list(observations(env).values()))
    net = build(env)
    with torch.no_grad():
        dense = net.inner_embeddings(batch)
        monkeypatch.setattr(models.pod_gnn, "DENSE_MAX_NODES", 0)
        scatter = net.inner_embeddings(batch)
    targets = min(batch["node_features"].shape[1], net.num_targets)
    assert dense.shape == scatter.shape == (len(batch["node_features"]), targets, 32)
    assert torch.allclose(dense, scatter, atol=1e-4)


def test_states_of_a_large_batch_come_in_chunks_equal_to_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``states`` over more rows than STATE_CHUNK_ROWS (lowered to 3 here: 3 + 3 + 2 rows)
    gives each row the state of the single pass (rows never mix; 1e-6 for the other
    product shapes), and the critic's value of it."""
    import models.pod_gnn

    env = PodSchedulingEnv(num_jobs=20, **TOPOLOGIES["fat-tree"])
    space = env.observation_space(env.possible_agents[0])
    rows = list(observations(env, seed=0).values()) + list(observations(env, seed=1).values())
    batch = as_batch(space, rows)
    assert len(rows) == 8
    net = build(env)
    with torch.no_grad():
        single, _ = net.scheduler_states(batch, net.inner_embeddings(batch))
        monkeypatch.setattr(models.pod_gnn, "STATE_CHUNK_ROWS", 3)
        chunked = net.states(batch)
    assert chunked.shape == single.shape
    assert torch.allclose(chunked, single, atol=1e-6)


def test_graphs_without_edges_still_convolve() -> None:
    from models.layers import EdgeConditionedConv

    for edge_network in ("full", "factorized"):
        layer = EdgeConditionedConv(4, 6, edge_dim=3, edge_network=edge_network)
        out = layer(torch.randn(3, 4), torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 3))
        assert out.shape == (3, 6) and torch.isfinite(out).all()


def test_pairwise_head_equals_the_concatenated_input() -> None:
    """A head scoring (item, context) pairs applies its first layer's context half once per
    sample: the same logits as concatenating the context to every item."""
    from models.pod_gnn import mlp, pairwise_head

    torch.manual_seed(2)
    head = mlp([6 + 4, 16, 1])
    items, context = torch.randn(3, 5, 6), torch.randn(3, 4)
    concatenated = torch.cat([items, context.unsqueeze(1).expand(-1, 5, -1)], dim=-1)
    expected = head(concatenated).squeeze(-1)
    assert torch.allclose(pairwise_head(head, items, context), expected, atol=1e-6)


def test_forward_scores_read_each_targets_room() -> None:
    """With room features a forward action's logit depends on that target's room only."""
    env = PodSchedulingEnv(num_jobs=20, room_features=True)
    net = build(env)
    space = env.observation_space(env.possible_agents[0])
    batch = as_batch(space, list(observations(env).values()))
    batch["action_mask"][:] = 1
    before = net(batch)[0]
    batch["forward_room"][:, 1] = 1.0 - batch["forward_room"][:, 1]  # the second target's
    after = net(batch)[0]
    targets = net.num_targets
    changed = (before - after).abs() > 1e-7
    assert changed[:, targets + 1].all()
    assert not changed[:, :targets].any() and not changed[:, targets + 2 :].any()
    assert not changed[:, targets].any()


def test_every_score_reads_whether_its_action_is_advised() -> None:
    """With advice, moving the advice from one action to another changes those two
    actions' logits only; without it the network has no advice input."""
    env = PodSchedulingEnv(num_jobs=20, advice="fifo+packing")
    net = build(env)
    space = env.observation_space(env.possible_agents[0])
    batch = as_batch(space, list(observations(env).values()))
    batch["action_mask"][:] = 1
    batch["advice"][:] = 0
    batch["advice"][:, 0] = 1
    before, state_before = net(batch)
    targets = net.num_targets
    for moved_to in (1, targets + 1, batch["advice"].shape[1] - 1):  # target, forward, wait
        batch["advice"][:] = 0
        batch["advice"][:, moved_to] = 1
        after, state_after = net(batch)
        changed = (before - after).abs() > 1e-7
        assert changed[:, [0, moved_to]].all()
        assert changed.sum() == 2 * len(changed)
        assert torch.equal(state_before, state_after)  # the critic's state ignores advice
    plain = build(PodSchedulingEnv(num_jobs=20))
    assert not plain.advised and net.advised
    widths = [net.place_head[0].in_features, net.forward_head[0].in_features]
    assert widths == [plain.place_head[0].in_features + 1, plain.forward_head[0].in_features + 1]


def test_full_view_counts_a_full_gpu_group_and_ignores_padding() -> None:
    """others="full": another pod's GPU group with no free GPU or core and no job is a row
    of zeros, like padding; the environment's partitions_node_mask tells them apart. Seven
    of pod 1's eight groups turning exactly full must move the output (as nearly full
    does), and garbage in padded rows must not."""
    env = PodSchedulingEnv(num_jobs=20, **TOPOLOGIES["full-view"])
    obs = observations(env)["scheduler_0"]
    space = env.observation_space("scheduler_0")
    net = build(env).eval()
    assert obs["partitions_node_mask"].shape == obs["partitions"].shape[:2]
    np.testing.assert_array_equal(obs["partitions_node_mask"][0], obs["node_mask"])
    groups = np.flatnonzero(obs["node_type"][:, 0] > 0)  # GPU-group rows (pods alike)
    free = np.zeros(obs["partitions"].shape[-1], np.float32)
    free[:2] = 1.0  # all its GPUs and cores free

    def with_pod1(values: np.ndarray) -> dict:
        changed = {**obs, "partitions": obs["partitions"].copy()}
        changed["partitions"][1, groups] = values
        return changed

    all_free = with_pod1(free)
    one_free = with_pod1(np.vstack([free, np.zeros((len(groups) - 1, len(free)), np.float32)]))
    with torch.no_grad():
        _, state_all = net(as_batch(space, [all_free]))
        _, state_one = net(as_batch(space, [one_free]))
    assert (state_all - state_one).abs().max() > 1e-4  # was 6e-8: the full groups dropped
    # Racks of 3, 1 and 2 mixed servers: the smaller partitions' rows are padded.
    env = PodSchedulingEnv(num_jobs=20, **{**TOPOLOGIES["mixed"], "others": "full"})
    obs = observations(env)["scheduler_0"]
    space = env.observation_space("scheduler_0")
    net = build(env).eval()
    padded = obs["partitions_node_mask"] == 0
    assert padded.any()
    noisy = {**obs, "partitions": obs["partitions"].copy()}
    noisy["partitions"][padded] = 7.0
    with torch.no_grad():
        _, state = net(as_batch(space, [obs]))
        _, state_noisy = net(as_batch(space, [noisy]))
    torch.testing.assert_close(state, state_noisy, atol=1e-6, rtol=0)
