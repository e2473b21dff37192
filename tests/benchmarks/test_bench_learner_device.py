"""benchmarks/bench_learner_device.py: what it records, the loss it times, its refusals.

No timing is asserted; the benchmark prints and writes it.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from envs.registry import make_env
from models.config import GNNModelConfig
from models.pod_gnn import PodGNN
from tune.experiment import load_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    return importlib.import_module("bench_learner_device")


@pytest.fixture
def recorded(bench: ModuleType, tmp_path: Path) -> Path:
    bench.main(["record", "--out", str(tmp_path), "--cases", "demo"])
    return tmp_path


def test_the_demo_recording_holds_a_minibatch_and_the_learners_schedule(
    recorded: Path,
) -> None:
    settings = json.loads((recorded / "demo.json").read_text())
    # demo.yaml: 1,000 env steps of 4 agents = 4,000 samples, minibatches of 250, 4 epochs.
    assert settings["minibatch_size"] == 250
    assert settings["updates_per_iteration"] == 4 * 4000 // 250 == 64
    assert settings["value_passes_per_iteration"] == 16
    assert settings["model"]["critic_gradient"] == "head"
    # The demo sets vf_clip_param and vf_loss_coeff; kl_coeff is RLlib's default.
    assert (settings["vf_clip_param"], settings["vf_loss_coeff"], settings["kl_coeff"]) == (
        1.0e9,
        0.01,
        0.2,
    )
    with np.load(recorded / "demo.npz") as arrays:
        assert {len(arrays[key]) for key in arrays.files} == {250}
        assert set(arrays.files) == set(settings["shapes"])


def test_the_network_built_from_shapes_is_the_configs_network(
    bench: ModuleType, recorded: Path
) -> None:
    settings = json.loads((recorded / "demo.json").read_text())
    rebuilt = bench.build_network(settings, torch.device("cpu"))
    config = load_config(REPO / "tune" / "configs" / "demo.yaml")
    env = make_env(config.environment.name, **config.environment.config)
    agent = env.possible_agents[0]
    torch.manual_seed(0)
    original = PodGNN(
        env.observation_space(agent),
        env.action_space(agent).n,
        GNNModelConfig(**config.model.config),
    )
    with np.load(recorded / "demo.npz") as arrays:
        batch = {key: torch.as_tensor(arrays[key]) for key in arrays.files}
    with torch.no_grad():
        rebuilt_logits, rebuilt_state = rebuilt(batch)
        logits, state = original(batch)
    # Same code path, batch and threads: equal to float32 rounding at most.
    torch.testing.assert_close(rebuilt_logits, logits, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(rebuilt_state, state, rtol=1e-6, atol=1e-6)


def test_the_loss_at_the_sampling_policy_is_advantage_value_and_entropy(
    bench: ModuleType, recorded: Path
) -> None:
    settings = json.loads((recorded / "demo.json").read_text())
    settings["entropy_coeff"] = 0.5  # the demo's 0 would hide the entropy term
    network = bench.build_network(settings, torch.device("cpu"))
    with np.load(recorded / "demo.npz") as arrays:
        batch = {key: torch.as_tensor(arrays[key]) for key in arrays.files}
    with torch.no_grad():
        logits, state = network(batch)
        values = network.value(state)
    distribution = torch.distributions.Categorical(logits=logits)
    actions = logits.argmax(-1)  # a legal action: the others sit at the float minimum
    advantages = torch.linspace(-1.0, 2.0, len(logits))
    returns = values + 3.0  # squared error 9 everywhere
    targets = {
        "old_logits": logits,
        "actions": actions,
        "old_logp": distribution.log_prob(actions),
        "advantages": advantages,
        "returns": returns,
    }
    with torch.no_grad():
        loss = bench.ppo_loss(network, batch, targets, settings)
    # At the sampling policy the ratio is 1 and the KL 0, so the loss is
    # -mean(A) + vf_coeff * 9 - entropy_coeff * mean(H).
    expected = -advantages.mean() + 0.01 * 9.0 - 0.5 * distribution.entropy().mean()
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)


def test_timing_reports_the_iterations_learning_from_its_medians(
    bench: ModuleType, recorded: Path
) -> None:
    (record,) = bench.time_cases(recorded, ["demo"], "cpu", threads=1, repeats=2)
    assert record["updates_per_iteration"] == 64
    expected = (64 * record["update_ms"] + 16 * record["value_pass_ms"]) / 1000
    assert record["learning_s_per_iteration"] == pytest.approx(expected, abs=0.01)
    with np.load(recorded / "demo.npz") as arrays:
        assert record["forced_rows"] == int((arrays["action_mask"].sum(-1) == 1).sum())


def test_bad_requests_are_refused_with_what_is_allowed(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for cases, what in (
        ("k8", "unknown case(s) k8; known: demo, k20"),
        ("demo,demo", "case(s) named more than once: demo; name each at most once"),
    ):
        with pytest.raises(SystemExit) as caught:
            bench.main(["time", "--data", str(tmp_path), "--cases", cases])
        assert caught.value.code == 2
        assert capsys.readouterr().err == f"bench_learner_device.py: error: --cases: {what}\n"
    with pytest.raises(SystemExit, match=r"no recording of \['demo'\] .* run `record` first"):
        bench.main(["time", "--data", str(tmp_path), "--cases", "demo"])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="--device cuda, but torch sees no GPU here"):
            bench.main(["time", "--data", str(tmp_path), "--device", "cuda"])


@pytest.mark.parametrize(
    ("option", "line"),
    [
        (
            ["--repeats", "0"],
            "bench_learner_device.py: error: argument --repeats: must be an integer >= 1, got '0'",
        ),
        (
            ["--threads", "0"],
            "bench_learner_device.py: error: argument --threads: must be an integer >= 1, got '0'",
        ),
        (
            ["--label", "a/b"],
            "bench_learner_device.py: error: argument --label: label 'a/b' is not a plain "
            "file-name part: use letters, digits, '_', '-' and '.' (not first), no '/'",
        ),
    ],
)
def test_bad_numbers_and_labels_are_one_line_before_any_timing(
    bench: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: list[str],
    line: str,
) -> None:
    # Refused at parsing, before the recording is even looked for.
    with pytest.raises(SystemExit) as caught:
        bench.main(["time", "--data", str(tmp_path), "--cases", "demo", *option])
    assert caught.value.code == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [line])


@pytest.fixture
def no_recording(bench: ModuleType, monkeypatch: pytest.MonkeyPatch) -> list:
    """``record`` replaced by a stand-in that notes its calls: none means no work began."""
    calls: list = []
    monkeypatch.setattr(bench, "record", lambda *args: calls.append(args))
    return calls


@pytest.fixture
def refused_record(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], no_recording: list
) -> Callable[..., str]:
    """``refused_record(*options)``: the stderr of ``record *options``, which must exit 2
    with nothing on stdout and nothing recorded."""

    def refuse(*options: str) -> str:
        with pytest.raises(SystemExit) as caught:
            bench.main(["record", *options])
        assert caught.value.code == 2
        out, err = capsys.readouterr()
        assert out == "" and no_recording == []
        return err

    return refuse


def test_an_out_under_a_file_is_one_line_before_anything_is_recorded(
    tmp_path: Path, refused_record: Callable[..., str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for out in (blocker / "recording", blocker):
        assert refused_record("--out", str(out), "--cases", "demo") == (
            f"bench_learner_device.py: error: --out {out}: {blocker} is a file, not a folder\n"
        )
    assert not (blocker.parent / "recording").exists()


def test_an_unwritable_out_is_one_line_before_anything_is_recorded(
    bench: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    refused_record: Callable[..., str],
    no_recording: list,
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    # As root a chmod would not lock it; the check asks os.access, so ask it the answer.
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode)
    )
    assert refused_record("--out", str(locked / "recording")) == (
        f"bench_learner_device.py: error: --out {locked / 'recording'}: {locked} is not writable\n"
    )
    # A folder that can be made is recorded into.
    bench.main(["record", "--out", str(tmp_path / "new" / "recording"), "--cases", "demo"])
    assert no_recording == [(tmp_path / "new" / "recording", ["demo"])]


def test_an_out_uri_is_one_line_before_anything_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused_record: Callable[..., str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert refused_record("--out", "s3://bucket/recording") == (
        "bench_learner_device.py: error: --out s3://bucket/recording: a URI; give a local "
        "folder (the recording is plain files, copy them to storage afterwards)\n"
    )
    assert list(tmp_path.iterdir()) == []  # no local "s3:" folder


@pytest.mark.parametrize("what", ["does not exist", "is not a folder"])
def test_data_that_is_no_folder_is_one_line_before_any_timing(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    data = tmp_path / "recording"
    if what == "is not a folder":
        data.write_text("x")
    with pytest.raises(SystemExit) as caught:
        bench.main(["time", "--data", str(data), "--cases", "demo"])
    assert caught.value.code == 2
    assert capsys.readouterr() == (
        "",
        f"bench_learner_device.py: error: --data {data} {what}; give the folder "
        "`record --out` wrote (or run `record` first)\n",
    )


def test_a_recording_without_its_settings_or_a_device_it_cannot_time_is_refused(
    bench: ModuleType, recorded: Path
) -> None:
    (recorded / "demo.json").unlink()
    with pytest.raises(SystemExit, match=r"no recording of \['demo'\] .* run `record` first"):
        bench.main(["time", "--data", str(recorded), "--cases", "demo"])
    with pytest.raises(SystemExit, match="--device 'meta': use cpu or cuda"):
        bench.main(["time", "--data", str(recorded), "--device", "meta"])
    if torch.cuda.is_available():
        with pytest.raises(SystemExit, match=r"--device 'cuda:99', but torch sees \d+ GPU"):
            bench.main(["time", "--data", str(recorded), "--device", "cuda:99"])
