"""The PPO learner's minibatch update on a CPU and, where one is lent, on a GPU (issue 13).

Learning is most of a training iteration on these 2-core machines (README "Training
throughput"): the demo's learner makes 64 minibatch updates of 250 agent samples an
iteration, k=20's 80 of 200, and each is one training pass of the pod GNN, PPO's loss,
a backward pass and a fused Adam step. This benchmark times that update -- the network
and its settings exactly as the experiment config builds them, on minibatches recorded
from the configured environment -- on any torch device, without Ray, so it also runs on a
GPU machine where the simulator's and Ray's packages are not installed. With a GPU, an
experiment gets the same learner through ``resources.num_gpus_per_learner: 1``.

The loss has the terms and weights of RLlib's PPO loss (clipped surrogate, KL to the
sampling policy, entropy, value error clipped at ``vf_clip_param``); advantages and value
targets are drawn at random, since the arithmetic, not the learning, is timed. Float32
throughout, TF32 off (torch's default): the same function as on the CPU.

``make bench`` (or no arguments) records into a temporary folder and times on the CPU,
and on the GPU too where torch sees one. On a GPU machine without the simulator's packages,
two steps::

    python benchmarks/bench_learner_device.py record --out DIR       # minibatches, settings
    python benchmarks/bench_learner_device.py time --data DIR [--device cuda] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import case_list, label_argument, positive_int, print_table, write_results

from tune.cli import OneLineParser
from tune.paths import is_uri, writable_folder_problem

# Cases as bench_training.py trains them: the config and the overrides of its case.
CASES: dict[str, tuple[str, list[str]]] = {
    "demo": ("demo.yaml", []),
    "k20": (
        "fattree_k20.yaml",
        ["algorithm.train_batch_size=200", "algorithm.minibatch_size=200"],
    ),
}
CONFIGS = Path(__file__).resolve().parents[1] / "tune" / "configs"
# RLlib's PPO defaults for the terms the configs do not set.
PPO_DEFAULTS = {"kl_coeff": 0.2, "vf_loss_coeff": 1.0, "vf_clip_param": 10.0}
COLUMNS = [
    ("case", "case"),
    ("device", "device"),
    ("threads", "threads"),
    ("minibatch", "minibatch"),
    ("update_ms", "update ms"),
    ("value_pass_ms", "value pass ms"),
    ("updates_per_iteration", "updates/iter"),
    ("learning_s_per_iteration", "learning s/iter"),
]


def record(out: Path, cases: list[str]) -> None:
    """Write ``<case>.npz`` (one minibatch of observations) and ``<case>.json`` (settings)."""
    from bench_models import sample_observations

    from envs.registry import make_env
    from tune.experiment import load_config

    out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        file_name, overrides = CASES[case]
        config = load_config(CONFIGS / file_name, overrides)
        algorithm = config.algorithm
        env = make_env(config.environment.name, **config.environment.config)
        agent = env.possible_agents[0]
        space = env.observation_space(agent)
        observations = sample_observations(env, algorithm.minibatch_size)
        arrays = {key: np.stack([o[key] for o in observations]) for key in space.spaces}
        np.savez_compressed(out / f"{case}.npz", **arrays)
        agents = len(env.possible_agents)
        # Every agent acts at every env step, so a batch of env steps holds agents x steps
        # agent samples: that many minibatches for GAE's value pass, num_epochs times over
        # for the updates.
        minibatches = -(-agents * algorithm.train_batch_size // algorithm.minibatch_size)
        settings = {
            "case": case,
            "model": config.model.config,
            "num_actions": int(env.action_space(agent).n),
            "shapes": {key: list(s.shape) for key, s in space.spaces.items()},
            "agents": agents,
            "env_steps_per_iteration": algorithm.train_batch_size,
            "minibatch_size": algorithm.minibatch_size,
            "updates_per_iteration": algorithm.num_epochs * minibatches,
            "value_passes_per_iteration": minibatches,
            "lr": algorithm.lr,
            "clip_param": algorithm.clip_param,
            "entropy_coeff": algorithm.entropy_coeff,
            **{key: algorithm.extra.get(key, value) for key, value in PPO_DEFAULTS.items()},
        }
        (out / f"{case}.json").write_text(json.dumps(settings, indent=2))
        print(f"recorded {case}: {len(observations)} samples of {agents} agents in {out}")


def build_network(settings: dict[str, Any], device: torch.device) -> torch.nn.Module:
    """The pod GNN of the recorded config, on ``device`` (seeded: the same weights anywhere)."""
    from gymnasium import spaces

    from models.config import GNNModelConfig, settings_from_dict
    from models.pod_gnn import PodGNN

    # PodGNN reads the observation space's shapes only.
    space = spaces.Dict(
        {
            key: spaces.Box(-np.inf, np.inf, tuple(shape), np.float32)
            for key, shape in settings["shapes"].items()
        }
    )
    torch.manual_seed(0)
    model = settings_from_dict(GNNModelConfig, settings["model"])
    return PodGNN(space, settings["num_actions"], model).to(device)


def ppo_loss(
    network: torch.nn.Module,
    batch: dict[str, torch.Tensor],
    targets: dict[str, torch.Tensor],
    settings: dict[str, Any],
) -> torch.Tensor:
    """PPO's loss with RLlib's terms: clipped surrogate, KL, entropy, clipped value error."""
    logits, state = network.training_forward(batch)
    values = network.value(state)
    new = torch.distributions.Categorical(logits=logits)
    old = torch.distributions.Categorical(logits=targets["old_logits"])
    ratio = torch.exp(new.log_prob(targets["actions"]) - targets["old_logp"])
    advantages = targets["advantages"]
    clip = settings["clip_param"]
    surrogate = torch.min(advantages * ratio, advantages * ratio.clamp(1 - clip, 1 + clip))
    value_error = ((values - targets["returns"]) ** 2).clamp(max=settings["vf_clip_param"])
    return (
        -surrogate.mean()
        + settings["kl_coeff"] * torch.distributions.kl_divergence(old, new).mean()
        + settings["vf_loss_coeff"] * value_error.mean()
        - settings["entropy_coeff"] * new.entropy().mean()
    )


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(step: Any, device: torch.device, warmup: int, repeats: int) -> float:
    """Median milliseconds of ``step()`` after ``warmup`` untimed calls."""
    for _ in range(warmup):
        step()
    synchronize(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def time_case(data: Path, case: str, device: torch.device, repeats: int) -> dict[str, Any]:
    """Median update and value-pass milliseconds of one recorded case on ``device``."""
    settings = json.loads((data / f"{case}.json").read_text())
    with np.load(data / f"{case}.npz") as arrays:
        batch = {key: torch.as_tensor(arrays[key]).to(device) for key in arrays.files}
    network = build_network(settings, device)
    optimizer = torch.optim.Adam(network.parameters(), lr=settings["lr"], fused=True)
    generator = torch.Generator().manual_seed(1)
    size = settings["minibatch_size"]
    with torch.no_grad():
        old_logits, _ = network(batch)
        sampling_policy = torch.distributions.Categorical(logits=old_logits)
        actions = sampling_policy.sample()
        targets = {
            "old_logits": old_logits,
            "actions": actions,
            "old_logp": sampling_policy.log_prob(actions),
            "advantages": torch.randn(size, generator=generator).to(device),
            "returns": torch.randn(size, generator=generator).to(device),
        }

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        ppo_loss(network, batch, targets, settings).backward()
        optimizer.step()

    def value_pass() -> None:
        with torch.no_grad():
            network(batch)

    update_ms = median_ms(update, device, warmup=5, repeats=repeats)
    value_ms = median_ms(value_pass, device, warmup=3, repeats=repeats)
    learning_s = (
        settings["updates_per_iteration"] * update_ms
        + settings["value_passes_per_iteration"] * value_ms
    ) / 1000
    forced = int((batch["action_mask"].sum(-1) == 1).sum())
    return {
        "case": case,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "minibatch": size,
        "forced_rows": forced,
        "update_ms": round(update_ms, 2),
        "value_pass_ms": round(value_ms, 2),
        "updates_per_iteration": settings["updates_per_iteration"],
        "learning_s_per_iteration": round(learning_s, 3),
        "env_steps_per_iteration": settings["env_steps_per_iteration"],
    }


def optional_label(text: str) -> str:
    """``--label``: empty (no suffix) or a plain file-name part."""
    return text and label_argument(text)


def check_folders(args: argparse.Namespace) -> None:
    """ValueError unless ``record --out`` is a folder this user can create or write
    (:func:`tune.paths.writable_folder_problem`; nothing is created here) and ``time
    --data`` is an existing folder: asked before the environment is built or a case timed,
    so that a bad folder never costs the recording."""
    if args.step == "record":
        if is_uri(args.out):
            # Path() would fold "s3://b/x" into a local folder "s3:/b/x" and write there.
            raise ValueError(
                f"--out {args.out}: a URI; give a local folder (the recording is plain "
                "files, copy them to storage afterwards)"
            )
        problem = writable_folder_problem(args.out)
        if problem is not None:
            raise ValueError(f"--out {args.out}: {problem}")
    elif args.step == "time" and not args.data.is_dir():
        what = "is not a folder" if args.data.exists() else "does not exist"
        raise ValueError(
            f"--data {args.data} {what}; give the folder `record --out` wrote "
            "(or run `record` first)"
        )


def build_parser() -> OneLineParser:
    """The command line; a bad value -- a ``record --out`` that cannot be written, a
    ``time --data`` that is no folder included -- is one line and exit 2 before anything is
    recorded or timed (:meth:`OneLineParser.parse_or_exit`, :func:`check_folders`)."""
    parser = OneLineParser(prog="bench_learner_device.py", description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step")
    record_step = steps.add_parser("record", help="record minibatches and settings")
    record_step.add_argument(
        "--out",
        required=True,
        help="folder for <case>.npz and <case>.json (made if missing; checked before any work)",
    )
    record_step.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}"
    )
    time_step = steps.add_parser("time", help="time the update on a device")
    time_step.add_argument(
        "--data", type=Path, required=True, help="the existing folder `record --out` wrote"
    )
    time_step.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}"
    )
    time_step.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1")
    time_step.add_argument(
        "--threads", type=positive_int, default=2, help="CPU threads, >= 1 (default 2)"
    )
    time_step.add_argument(
        "--repeats", type=positive_int, default=20, help="timed calls per median, >= 1 (default 20)"
    )
    time_step.add_argument(
        "--label",
        type=optional_label,
        default="",
        help="suffix of the results file's name: results/learner_device-LABEL.json "
        "(letters, digits, '_', '-', '.'; default none)",
    )
    return parser


def time_cases(
    data: Path, cases: list[str], device_name: str, threads: int, repeats: int
) -> list[dict[str, Any]]:
    """Time every case on one device; print its table."""
    try:
        device = torch.device(device_name)
    except RuntimeError as error:
        raise SystemExit(f"bench_learner_device: --device {device_name!r}: {error}") from None
    if device.type not in ("cpu", "cuda"):
        # synchronize() waits for CUDA only: another device's queued work would go untimed.
        raise SystemExit(f"bench_learner_device: --device {device_name!r}: use cpu or cuda[:N]")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_learner_device: --device cuda, but torch sees no GPU here")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise SystemExit(
            f"bench_learner_device: --device {device_name!r}, but torch sees "
            f"{torch.cuda.device_count()} GPU(s) here (cuda:0 ...)"
        )
    missing = [
        c for c in cases if not all((data / f"{c}.{kind}").is_file() for kind in ("npz", "json"))
    ]
    if missing:
        raise SystemExit(
            f"bench_learner_device: no recording of {missing} in {data}; run `record` first"
        )
    torch.set_num_threads(threads)
    records = [time_case(data, case, device, repeats) for case in cases]
    print_table(
        "PPO minibatch update of the pod GNN (forward, PPO loss, backward, fused Adam)",
        [header for _, header in COLUMNS],
        [[record[key] for key, _ in COLUMNS] for record in records],
    )
    return records


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Record and/or time; print the tables; write ``results/learner_device[-label].json``."""
    parser = build_parser()
    args = parser.parse_or_exit([] if argv is None else argv)
    try:
        cases = case_list(getattr(args, "cases", ",".join(CASES)), list(CASES))
        check_folders(args)
    except ValueError as error:
        parser.refuse(error)
    if args.step == "record":
        record(Path(args.out), cases)
        return []
    if args.step == "time":
        records = time_cases(args.data, cases, args.device, args.threads, args.repeats)
        label = args.label
    else:  # everything here: record, then the CPU (the learner's 2 threads) and any GPU
        with tempfile.TemporaryDirectory(prefix="bench-learner-") as folder:
            record(Path(folder), cases)
            records = time_cases(Path(folder), cases, "cpu", 2, 20)
            if torch.cuda.is_available():
                records += time_cases(Path(folder), cases, "cuda", 2, 50)
        label = ""
    write_results("learner_device" + (f"-{label}" if label else ""), records)
    return records


if __name__ == "__main__":
    main(sys.argv[1:])
