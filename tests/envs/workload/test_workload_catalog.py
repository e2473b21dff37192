"""Model catalogs: the papers' numbers, derived quantities, lookups and validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envs.workload import (
    COLLECTIVE_PATTERNS,
    ModelCatalog,
    ModelProfile,
    catalog_names,
    derived_communication,
    get_catalog,
)


def test_catalog_names_and_unknown_name_lists_them() -> None:
    assert catalog_names() == ("marl", "deepshare", "sced2", "cush")
    with pytest.raises(ValueError, match=r"unknown model catalog 'philly'.*marl, deepshare"):
        get_catalog("philly")


def test_marl_has_the_eight_models_of_001_table_1_with_parameter_servers() -> None:
    marl = get_catalog("marl")
    assert marl.names == (
        "ResNet-50",
        "VGG-16",
        "Inception-bn",
        "ResNeXt-110",
        "DSSM",
        "Seq2Seq",
        "CTC",
        "WLM",
    )
    assert all(profile.collective == "ps" for profile in marl)
    assert all(profile.uses_parameter_server for profile in marl)


@pytest.mark.parametrize(
    ("model", "parameters_m", "bandwidth", "ratio", "pattern"),
    [
        ("GNN", 0.33, 24.63, 0.57, "allreduce"),
        ("IMG", 2.04, 211.25, 2.43, "allreduce"),
        ("DLRM", 333.32, 170.28, 13.36, "allreduce"),
        ("LM", 202.44, 854.82, 1.87, "allreduce"),
        ("FSDP", 184.89, 2672.40, 7.32, "reduce-scatter+all-gather"),
        ("MoE", 268.92, 929.48, 13.79, "all-to-all"),
    ],
)
def test_deepshare_matches_000_table_1_exactly(
    model: str, parameters_m: float, bandwidth: float, ratio: float, pattern: str
) -> None:
    profile = get_catalog("deepshare")[model]
    assert profile.bandwidth_mb_s == bandwidth
    assert profile.comm_comp_ratio == ratio
    assert profile.collective == pattern
    # fp32 gradients: 4 bytes per trainable parameter.
    assert profile.gradient_mb == pytest.approx(parameters_m * 4, abs=0.005)


def test_deepshare_ratios_quoted_in_000_section_3_follow_from_table_1() -> None:
    deepshare = get_catalog("deepshare")
    img = deepshare["IMG"]
    # "FSDP and MoE demonstrate respectively 3.01x and 5.67x higher comm/comp ratio and
    # 12.65x and 4.40x larger average bandwidth consumption compared to MobileNetV3"
    assert deepshare["FSDP"].comm_comp_ratio / img.comm_comp_ratio == pytest.approx(3.01, abs=0.005)
    assert deepshare["MoE"].comm_comp_ratio / img.comm_comp_ratio == pytest.approx(5.67, abs=0.01)
    assert deepshare["FSDP"].bandwidth_mb_s / img.bandwidth_mb_s == pytest.approx(12.65, abs=0.005)
    assert deepshare["MoE"].bandwidth_mb_s / img.bandwidth_mb_s == pytest.approx(4.40, abs=0.005)
    # "Transformer-XL ... 4.04x higher bandwidth consumption"; GraphSage "88.34% lower".
    assert deepshare["LM"].bandwidth_mb_s / img.bandwidth_mb_s == pytest.approx(4.04, abs=0.01)
    assert 1 - deepshare["GNN"].bandwidth_mb_s / img.bandwidth_mb_s == pytest.approx(
        0.8834, abs=0.0001
    )


@pytest.mark.parametrize(
    ("model", "sensitivity"),
    [("VGG16", 5.9), ("Transformer", 2.7), ("DeepSpeech", 1.6), ("InceptionV3", 1.4)],
)
def test_sced2_locality_sensitivities_of_002(model: str, sensitivity: float) -> None:
    profile = get_catalog("sced2")[model]
    assert profile.locality_sensitivity == sensitivity
    assert profile.preferred_placement == "depth-first"


def test_marl_vgg16_borrows_002_measurement() -> None:
    assert get_catalog("marl")["VGG-16"].locality_sensitivity == 5.9


def test_cush_dgemm_packs_and_daxpy_spreads() -> None:
    cush = get_catalog("cush")
    dgemm, daxpy = cush["dgemm"], cush["daxpy"]
    assert dgemm.preferred_placement == "depth-first"
    assert daxpy.preferred_placement == "breadth-first"
    # Compute bound vs network bound.
    assert dgemm.comm_comp_ratio < 1 < daxpy.comm_comp_ratio


def test_derived_communication_by_hand() -> None:
    # 100 MB gradient, 0.1 s compute: 200 MB per step at 1250 MB/s = 0.16 s of comm,
    # ratio 1.6, average bandwidth 200 / 0.26 = 769.23 MB/s.
    assert derived_communication(100.0, 0.1) == (769.23, 1.6)
    # marl VGG-16: 138.36M params -> 553.44 MB; comm 1106.88 / 1250 = 0.885504 s;
    # ratio 0.885504 / 0.29 = 3.0535; bandwidth 1106.88 / 1.175504 = 941.62.
    vgg = get_catalog("marl")["VGG-16"]
    assert vgg.gradient_mb == 553.44
    assert vgg.comm_comp_ratio == 3.053
    assert vgg.bandwidth_mb_s == 941.62
    with pytest.raises(ValueError, match="compute_time_s > 0"):
        derived_communication(1.0, 0.0)


def test_ideal_duration_follows_001_section_6a() -> None:
    resnet = get_catalog("marl")["ResNet-50"]
    # 40,037 iterations x 0.16 s x 3 epochs / 4 workers.
    assert resnet.ideal_duration_s(num_workers=4) == pytest.approx(40_037 * 0.16 * 3 / 4)
    assert resnet.ideal_duration_s(epochs=1) == pytest.approx(6405.92)
    with pytest.raises(ValueError, match="at least 1 worker"):
        resnet.ideal_duration_s(num_workers=0)


def test_lookup_is_case_insensitive_and_lists_names_when_unknown() -> None:
    marl = get_catalog("marl")
    assert marl.index("vgg-16") == 1
    assert marl["resnet-50"].name == "ResNet-50"
    assert marl[7].name == "WLM"
    with pytest.raises(ValueError, match=r"no model 'GPT'.*ResNet-50, VGG-16"):
        marl.index("GPT")


def test_columns_are_read_only_arrays_in_index_order() -> None:
    deepshare = get_catalog("deepshare")
    bandwidth = deepshare.column("bandwidth_mb_s")
    np.testing.assert_array_equal(bandwidth, [24.63, 211.25, 170.28, 854.82, 2672.40, 929.48])
    assert bandwidth is deepshare.column("bandwidth_mb_s")  # built once
    with pytest.raises(ValueError, match="read-only"):
        bandwidth[0] = 1.0
    with pytest.raises(ValueError, match="not a numeric model-profile field"):
        deepshare.column("collective")


def test_every_profile_is_valid_and_sourced() -> None:
    for name in catalog_names():
        for profile in get_catalog(name):
            assert profile.collective in COLLECTIVE_PATTERNS
            assert profile.source, f"{name}/{profile.name} has no source"
            assert profile.compute_time_s > 0


def test_profile_validation_names_the_field() -> None:
    good = get_catalog("marl")["CTC"]
    with pytest.raises(ValueError, match=r"compute_time_s=-1.*> 0"):
        dataclasses.replace(good, compute_time_s=-1)
    with pytest.raises(ValueError, match=r"collective='ring'.*allowed: ps, allreduce"):
        dataclasses.replace(good, collective="ring")
    with pytest.raises(ValueError, match="iterations_per_epoch=0"):
        dataclasses.replace(good, iterations_per_epoch=0)
    with pytest.raises(ValueError, match="pcie_gb_s=nan"):
        dataclasses.replace(good, pcie_gb_s=float("nan"))


def test_catalog_rejects_duplicate_and_empty() -> None:
    ctc = get_catalog("marl")["CTC"]
    with pytest.raises(ValueError, match="names a model twice: ctc"):
        ModelCatalog("twice", (ctc, dataclasses.replace(ctc, name="ctc")))
    with pytest.raises(ValueError, match="no model"):
        ModelCatalog("empty", ())


def test_profile_is_frozen() -> None:
    profile: ModelProfile = get_catalog("cush")["dgemm"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.compute_time_s = 2.0  # type: ignore[misc]
