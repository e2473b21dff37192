"""CuSH's job and policy selectors as one RLModule: the cascade distribution, masks, batch
norm modes, gradients, checkpoints and PPO through RLlib."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

from envs.cush import CuSHEnv
from models.cush_module import CuSHModelConfig, CuSHModule, JobThenPolicy
from models.registry import module_class

CONFIG = Path(__file__).resolve().parents[2] / "tune" / "configs" / "cush.yaml"
PPO_CONFIG = CONFIG.with_name("cush_ppo.yaml")
# A small cluster keeps the image (and the tests) small; the module does not care. An
# untrained greedy policy may only ever "do nothing": max_time caps those episodes.
SMALL = {"nodes": 8, "max_time": 100}


def observations(env: CuSHEnv, count: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """``count`` consecutive observations of an SJF+BF episode, stacked per key."""
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    while len(seen) < count:
        obs, _, terminated, truncated, _ = env.step(env.baseline_action("sjf+bf"))
        seen.append(obs)
        if terminated or truncated:
            obs, _ = env.reset(seed=seed + len(seen))
    return {key: torch.as_tensor(np.stack([o[key] for o in seen])) for key in seen[0]}


def make_module(env: CuSHEnv, **model_config) -> CuSHModule:
    torch.manual_seed(0)
    return CuSHModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=model_config,
    )


def distribution(module: CuSHModule, obs: dict[str, torch.Tensor]) -> JobThenPolicy:
    out = module.forward_inference({Columns.OBS: obs})
    return module.get_inference_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])


def joint_probabilities(dist: JobThenPolicy, choices: int) -> torch.Tensor:
    """p(job, policy) [B, J, 2] by evaluating logp on every action."""
    batch = dist.job.logits.shape[0]
    table = torch.zeros(batch, choices, 2)
    for job, policy in itertools.product(range(choices), range(2)):
        action = torch.tensor([job, policy]).expand(batch, 2)
        table[:, job, policy] = dist.logp(action).exp()
    return table


@pytest.fixture(scope="module")
def env() -> CuSHEnv:
    return CuSHEnv(**SMALL)


@pytest.fixture(scope="module")
def batch(env: CuSHEnv) -> dict[str, torch.Tensor]:
    obs = observations(env, 24)
    # The episode must show infeasible slots, or the mask tests would test nothing.
    assert (obs["action_mask"][:, 1 : env.config.queue_size + 1] == 0).any()
    return obs


def test_shapes_and_the_papers_layers(env: CuSHEnv, batch: dict[str, torch.Tensor]) -> None:
    queue = env.config.queue_size
    # vf_share_layers is RLlib's own key: it must be accepted and ignored.
    module = make_module(env, vf_share_layers=False)
    logits = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == (24, (queue + 1) * 3)
    assert logits.shape[-1] == JobThenPolicy.required_input_dim(env.action_space)
    actions = distribution(module, batch).sample()
    assert actions.shape == (24, 2)
    assert all(env.action_space.contains(action.numpy()) for action in actions)
    values = module.compute_values({Columns.OBS: batch})
    assert values.shape == (24,) and torch.isfinite(values).all()
    conv, _, norm = module.jsm[0], module.jsm[1], module.jsm[2]
    assert (conv.out_channels, conv.kernel_size, conv.stride, conv.padding) == (
        16,
        (2, 2),
        (1, 1),
        (0, 0),
    )
    assert conv.in_channels == queue + 1 and isinstance(norm, torch.nn.BatchNorm2d)
    hidden = module.psm[0]
    assert (hidden.in_features, hidden.out_features) == (2, 10)


def test_masked_jobs_get_probability_zero(env: CuSHEnv, batch: dict[str, torch.Tensor]) -> None:
    queue = env.config.queue_size
    module = make_module(env)
    dist = distribution(module, batch)
    joint = joint_probabilities(dist, queue + 1)
    job_mask = batch["action_mask"][:, : queue + 1]
    assert torch.all(joint.sum(-1)[job_mask == 0] == 0)
    assert torch.all(joint.sum(-1)[job_mask == 1] > 0)
    assert torch.allclose(joint.sum((1, 2)), torch.ones(24))
    samples = torch.stack([dist.sample() for _ in range(200)])  # [200, B, 2]
    chosen = torch.gather(job_mask.expand(200, -1, -1), -1, samples[..., :1])
    assert torch.all(chosen == 1)


def test_a_masked_allocation_policy_gets_probability_zero(
    env: CuSHEnv, batch: dict[str, torch.Tensor]
) -> None:
    queue = env.config.queue_size
    obs = {key: value.clone() for key, value in batch.items()}
    obs["action_mask"][:, queue + 1] = 0  # forbid depth-first
    joint = joint_probabilities(distribution(make_module(env), obs), queue + 1)
    assert torch.all(joint[:, 1:, 0] == 0)


def test_the_policy_selector_reads_the_chosen_jobs_type(
    env: CuSHEnv, batch: dict[str, torch.Tensor]
) -> None:
    queue = env.config.queue_size
    module = make_module(env)
    obs = {key: value[:1].expand(2, *value.shape[1:]).clone() for key, value in batch.items()}
    obs["action_mask"][:, : queue + 1] = 1
    obs["job_types"][0] = torch.tensor([1.0, 0.0])  # every slot dgemm
    obs["job_types"][1] = torch.tensor([0.0, 1.0])  # every slot daxpy
    dist = distribution(module, obs)
    policy = dist.policy.probs  # [2, J, P]: the policy row of every job choice
    # The JSM does not see the types, only the PSM does: same job probabilities...
    assert torch.allclose(dist.job.probs[0], dist.job.probs[1])
    # ... but each slot's policy row follows its job's type, identical across slots.
    assert not torch.allclose(policy[0, 1], policy[1, 1])
    assert torch.allclose(policy[0, 1:], policy[0, 1].expand(queue, -1))
    # "Do nothing" places nothing: its policy is certain, so it adds nothing to logp.
    assert torch.equal(policy[:, 0], torch.tensor([[1.0, 0.0], [1.0, 0.0]]))
    nothing = torch.zeros(2, 2, dtype=torch.long)
    assert torch.allclose(dist.logp(nothing), dist.job.log_prob(nothing[:, 0]))


def test_entropy_kl_and_greedy_action_are_exact(
    env: CuSHEnv, batch: dict[str, torch.Tensor]
) -> None:
    choices = env.config.queue_size + 1
    first = distribution(make_module(env), batch)
    torch.manual_seed(1)
    other = CuSHModule(
        observation_space=env.observation_space, action_space=env.action_space, model_config={}
    )
    second = distribution(other, batch)
    p, q = joint_probabilities(first, choices), joint_probabilities(second, choices)
    safe_log_p = torch.where(p > 0, p.log(), torch.zeros_like(p))
    safe_log_q = torch.where(p > 0, q.log(), torch.zeros_like(q))
    assert torch.allclose(first.entropy(), -(p * safe_log_p).sum((1, 2)), atol=1e-5)
    assert torch.allclose(first.kl(second), (p * (safe_log_p - safe_log_q)).sum((1, 2)), atol=1e-5)
    assert torch.allclose(first.kl(first), torch.zeros(24), atol=1e-6)
    greedy = first.to_deterministic().sample()
    job = p.sum(-1).argmax(-1)
    assert torch.equal(greedy[:, 0], job)
    assert torch.equal(greedy[:, 1], p[torch.arange(24), job].argmax(-1))


def test_each_network_gets_its_own_share_of_the_log_probability(
    env: CuSHEnv, batch: dict[str, torch.Tensor]
) -> None:
    """004 Alg. 1 weighs log pi_JSM(job) and log pi_PSM(policy | job) by different returns:
    the two shares are the job's and the chosen job's policy log-probabilities, and sum to
    the cascade's logp; each head's parameters are its own network's."""
    module = make_module(env)
    dist = distribution(module, batch)
    torch.manual_seed(2)
    actions = dist.sample()
    heads = dist.head_logps(actions)
    assert set(heads) == {"job", "policy"}
    assert torch.allclose(heads["job"] + heads["policy"], dist.logp(actions))
    assert torch.allclose(heads["job"], dist.job.log_prob(actions[:, 0]))
    rows = dist.policy.logits[torch.arange(len(actions)), actions[:, 0]]  # [B, 2]
    assert torch.allclose(heads["policy"], rows.gather(-1, actions[:, 1:]).squeeze(-1))
    groups = module.policy_head_parameters()
    assert [id(p) for p in groups["job"]] == [id(p) for p in module.jsm.parameters()]
    assert [id(p) for p in groups["policy"]] == [id(p) for p in module.psm.parameters()]


def test_a_batch_of_one_equals_its_row_in_a_batch(
    env: CuSHEnv, batch: dict[str, torch.Tensor]
) -> None:
    module = make_module(env)
    module.forward_train({Columns.OBS: batch})  # move the running statistics off 0 / 1
    together = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    values = module.compute_values({Columns.OBS: batch})
    for row in range(0, 24, 5):
        one = {key: value[row : row + 1] for key, value in batch.items()}
        alone = module.forward_inference({Columns.OBS: one})[Columns.ACTION_DIST_INPUTS]
        assert torch.allclose(alone[0], together[row], atol=1e-5)
        assert torch.allclose(module.compute_values({Columns.OBS: one})[0], values[row], atol=1e-5)


def test_batch_norm_trains_on_batch_statistics_and_acts_on_running_ones(
    env: CuSHEnv, batch: dict[str, torch.Tensor]
) -> None:
    module = make_module(env)
    norm = module.jsm[2]
    assert torch.equal(norm.running_mean, torch.zeros(16))
    acting = module.forward_exploration({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(norm.running_mean, torch.zeros(16))  # acting never updates them
    training = module.forward_train({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert not torch.equal(norm.running_mean, torch.zeros(16))
    assert not torch.allclose(acting, training)


def test_gradients_reach_every_parameter(env: CuSHEnv, batch: dict[str, torch.Tensor]) -> None:
    module = make_module(env)
    # The critic's output layer starts at zero (so values start at 0), which blocks the
    # gradient to its conv layer until the first update moves it; move it here.
    torch.nn.init.normal_(module.critic_out.weight, std=1e-3)
    obs = {key: value.clone() for key, value in batch.items()}
    obs["action_mask"][:, :] = 1  # every job choice open, so every PSM row matters
    out = module.forward_train({Columns.OBS: obs})
    dist = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    actions = torch.stack([torch.arange(24) % 6, torch.arange(24) % 2], dim=-1)
    values = module.compute_values({Columns.OBS: obs}, embeddings=out[Columns.EMBEDDINGS])
    (dist.logp(actions).sum() + dist.entropy().sum() + values.sum()).backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        assert torch.isfinite(parameter.grad).all(), name


def test_checkpoint_restores_identical_outputs(
    env: CuSHEnv, batch: dict[str, torch.Tensor], tmp_path: Path
) -> None:
    module = make_module(env, policy_hidden=6)
    module.forward_train({Columns.OBS: batch})  # running statistics must travel too
    before = module.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    module.save_to_path(str(tmp_path / "module"))
    restored = RLModule.from_checkpoint(str(tmp_path / "module"))
    assert restored.settings == module.settings
    after = restored.forward_inference({Columns.OBS: batch})[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(before, after)
    assert torch.equal(
        module.compute_values({Columns.OBS: batch}), restored.compute_values({Columns.OBS: batch})
    )


def test_settings_are_validated(env: CuSHEnv) -> None:
    assert CuSHModelConfig() == CuSHModelConfig(
        filters=16, kernel_size=2, policy_hidden=10, value_scale=1.0
    )
    with pytest.raises(ValueError, match="unknown CuSHModelConfig key"):
        CuSHModelConfig.from_model_config({"filter": 16})
    with pytest.raises(ValueError, match="policy_hidden must be an integer >= 1"):
        CuSHModelConfig(policy_hidden=0)
    with pytest.raises(ValueError, match="kernel_size=6 does not fit the 48 x 5 image"):
        make_module(env, kernel_size=6)


def test_registry_and_config_name_the_module() -> None:
    from tune.experiment import load_config

    experiment = load_config(CONFIG)
    assert module_class(experiment.model.name) is CuSHModule
    assert experiment.environment.name == "podsched/CuSH-v0"


def test_evaluation_compares_the_module_with_the_baselines(env: CuSHEnv, tmp_path: Path) -> None:
    from tune.evaluation.single_agent import evaluate_single_agent

    make_module(env).save_to_path(str(tmp_path / "module"))
    table = evaluate_single_agent(
        "podsched/CuSH-v0", SMALL, [1000], str(tmp_path / "module"), ["sjf+bf", "fcfs+df"]
    )
    assert list(table) == ["learned", "sjf+bf", "fcfs+df"]
    for entry in table.values():
        assert {"episode_return", "avg_ntat", "avg_penalty", "truncated"} <= set(entry["metrics"])
    assert table["sjf+bf"]["metrics"]["avg_ntat"] >= 1.0
    with pytest.raises(ValueError, match="unknown baseline"):
        evaluate_single_agent("podsched/CuSH-v0", SMALL, [1000], None, ["sjf"])


@pytest.mark.integration
def test_ppo_trains_two_iterations_from_the_config(ray_local, tmp_path: Path) -> None:
    from tune.evaluation import module_paths
    from tune.evaluation.single_agent import evaluate_single_agent
    from tune.experiment import load_config
    from tune.rllib_config import algorithm_config

    experiment = load_config(
        PPO_CONFIG,
        [
            "algorithm.train_batch_size=200",
            "algorithm.minibatch_size=50",
            "algorithm.num_epochs=1",
        ],
    )
    algo = algorithm_config(experiment, seed=0).build_algo()
    try:
        results = [algo.train() for _ in range(2)]
        checkpoint = algo.save_to_path(str(tmp_path / "checkpoint"))
        acting_norm = algo.get_module().jsm[2]  # the env runner's copy
    finally:
        algo.stop()
    for result in results:
        assert result["env_runners"]["num_env_steps_sampled"] > 0
        assert math.isfinite(result["learners"]["default_policy"]["total_loss"])
    assert "episode_return_mean" in results[-1]["env_runners"]
    path = module_paths(checkpoint, ["default_policy"])["default_policy"]
    # Batch norm's running statistics, learned by the learner, reach the env runner.
    learned_norm = RLModule.from_checkpoint(path).jsm[2]
    assert not torch.equal(learned_norm.running_mean, torch.zeros(16))
    assert torch.equal(acting_norm.running_mean, learned_norm.running_mean)
    assert torch.equal(acting_norm.running_var, learned_norm.running_var)
    # Two iterations teach little: the greedy policy may still only "do nothing" until
    # max_time, so the evaluation episode is capped short.
    evaluation_env = {**experiment.environment.config, "max_time": 100}
    table = evaluate_single_agent(
        experiment.environment.name, evaluation_env, [1000], path, ["sjf+bf"]
    )
    assert set(table) == {"learned", "sjf+bf"}
    assert table["learned"]["episodes"][0]["steps"] > 0
