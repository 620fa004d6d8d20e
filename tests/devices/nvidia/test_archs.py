"""The NVIDIA capability tables pin the facts a GPU engineer checks first, each row a sentence."""

from __future__ import annotations

import json

import pytest

from humming.capabilities.model import BlockScale, Provenance, check_capabilities
from humming.capabilities.query import supports
from humming.core import dtypes as dt
from humming.core.dtypes import DType
from humming.devices.nvidia import archs, skus
from humming.devices.nvidia.families import MMA_SYNC, TCGEN05, WGMMA
from humming.errors import InvalidInputError

T = archs.BY_ARCH
ALL_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_107a", "sm_110a",
             "sm_120a", "sm_121a"]
#: PTX spellings every dtype in the tables' output must use.
PTX_NAMES = {"f16", "bf16", "tf32", "f32", "f64", "s32", "s8", "u8", "s4", "u4", "b1", "e4m3", "e5m2", "e2m1", "e3m2",
             "e2m3", "e3m4", "e0m3", "ue8m0", "ue4m3"}


def has(arch: str, family, a: DType, b: DType, acc: DType, k: int | None = None, m: int | None = None,
        scale: BlockScale | None = None) -> bool:
    return any(i.family == family and i.a is a and i.b is b and i.acc is acc and (k is None or i.k == k)
               and (m is None or i.m == m) and i.block_scale == scale for i in T[arch].mma)


# ---- (arch, family, a, b, acc, k, present) ------------------------------------------------------------------------
MMA_FACTS = [
    # Turing: the first mma.sync shapes, no bf16 and no tf32 (PTX ISA: .bf16/.tf32 mma require sm_80).
    ("sm_75", MMA_SYNC, dt.f16, dt.f16, dt.f32, 8, True),
    ("sm_75", MMA_SYNC, dt.f16, dt.f16, dt.f16, 8, True),
    ("sm_75", MMA_SYNC, dt.f16, dt.f16, dt.f32, 16, False),
    ("sm_75", MMA_SYNC, dt.bf16, dt.bf16, dt.f32, None, False),
    ("sm_75", MMA_SYNC, dt.tf32, dt.tf32, dt.f32, None, False),
    ("sm_75", MMA_SYNC, dt.s8, dt.u8, dt.s32, 16, True),
    ("sm_75", MMA_SYNC, dt.s4, dt.s4, dt.s32, 32, True),
    ("sm_75", MMA_SYNC, dt.b1, dt.b1, dt.s32, 128, True),
    ("sm_75", MMA_SYNC, dt.s8, dt.s8, dt.s32, 32, False),
    # Ampere adds bf16/f16 k16, tf32 k4/k8, s8 k16/k32, s4 k32/k64, f64 m8n8k4.
    ("sm_80", MMA_SYNC, dt.bf16, dt.bf16, dt.f32, 16, True),
    ("sm_80", MMA_SYNC, dt.bf16, dt.bf16, dt.f16, None, False),  # bf16 accumulates into f32 only
    ("sm_80", MMA_SYNC, dt.tf32, dt.tf32, dt.f32, 4, True),
    ("sm_80", MMA_SYNC, dt.tf32, dt.tf32, dt.f32, 8, True),
    ("sm_80", MMA_SYNC, dt.s8, dt.s8, dt.s32, 32, True),
    ("sm_80", MMA_SYNC, dt.s4, dt.u4, dt.s32, 64, True),
    ("sm_80", MMA_SYNC, dt.f64, dt.f64, dt.f64, 4, True),
    ("sm_80", MMA_SYNC, dt.e4m3, dt.e4m3, dt.f32, None, False),
    ("sm_86", MMA_SYNC, dt.bf16, dt.bf16, dt.f32, 16, True),
    ("sm_87", MMA_SYNC, dt.s4, dt.s4, dt.s32, 64, True),
    # Ada: FP8 mma.sync m16n8k32 (PTX 8.4), mixed e4m3 x e5m2, f16 accumulation and k16 (PTX 8.7).
    ("sm_89", MMA_SYNC, dt.e4m3, dt.e4m3, dt.f32, 32, True),
    ("sm_89", MMA_SYNC, dt.e4m3, dt.e5m2, dt.f32, 32, True),
    ("sm_89", MMA_SYNC, dt.e5m2, dt.e4m3, dt.f16, 16, True),
    ("sm_89", MMA_SYNC, dt.e2m1, dt.e2m1, dt.f32, None, False),
    ("sm_89", MMA_SYNC, dt.f64, dt.f64, dt.f64, 16, False),  # f64 m16n8k16 needs sm_90
    ("sm_89", WGMMA, dt.f16, dt.f16, dt.f32, None, False),
    # Hopper: wgmma for f16/bf16 k16, tf32 k8, fp8 k32, s8/u8 k32, b1 k256, and no s4/u4 at all.
    ("sm_90a", WGMMA, dt.f16, dt.f16, dt.f16, 16, True),
    ("sm_90a", WGMMA, dt.bf16, dt.bf16, dt.f32, 16, True),
    ("sm_90a", WGMMA, dt.tf32, dt.tf32, dt.f32, 8, True),
    ("sm_90a", WGMMA, dt.e4m3, dt.e5m2, dt.f16, 32, True),
    ("sm_90a", WGMMA, dt.u8, dt.s8, dt.s32, 32, True),
    ("sm_90a", WGMMA, dt.b1, dt.b1, dt.s32, 256, True),
    ("sm_90a", WGMMA, dt.s4, dt.s4, dt.s32, None, False),
    ("sm_90a", WGMMA, dt.u4, dt.u4, dt.s32, None, False),
    ("sm_90a", MMA_SYNC, dt.s4, dt.s4, dt.s32, 64, True),  # int4 remains on mma.sync
    ("sm_90a", MMA_SYNC, dt.f64, dt.f64, dt.f64, 16, True),
    ("sm_90a", TCGEN05, dt.f16, dt.f16, dt.f32, None, False),
    ("sm_90a", MMA_SYNC, dt.e2m1, dt.e2m1, dt.f32, None, False),
    # Blackwell datacenter: tcgen05 kinds; kind::i8 on sm_100a and sm_110a, not on sm_103a (B300) nor Rubin.
    ("sm_100a", TCGEN05, dt.s8, dt.s8, dt.s32, 32, True),
    ("sm_100a", TCGEN05, dt.e2m1, dt.e4m3, dt.f32, 32, True),
    ("sm_100a", TCGEN05, dt.e3m2, dt.e2m3, dt.f16, 32, True),
    ("sm_100a", TCGEN05, dt.tf32, dt.tf32, dt.f32, 8, True),
    ("sm_100a", TCGEN05, dt.bf16, dt.bf16, dt.f16, None, False),  # bf16 accumulates into f32 only
    ("sm_100a", WGMMA, dt.f16, dt.f16, dt.f32, None, False),  # wgmma is sm_90a only
    ("sm_103a", TCGEN05, dt.s8, dt.s8, dt.s32, None, False),
    ("sm_103a", TCGEN05, dt.u8, dt.s8, dt.s32, None, False),
    ("sm_103a", MMA_SYNC, dt.s8, dt.s8, dt.s32, 32, True),
    ("sm_103a", TCGEN05, dt.e4m3, dt.e4m3, dt.f32, 32, True),
    ("sm_107a", TCGEN05, dt.s8, dt.s8, dt.s32, None, False),
    ("sm_107a", TCGEN05, dt.bf16, dt.bf16, dt.f32, 16, True),
    ("sm_110a", TCGEN05, dt.s8, dt.u8, dt.s32, 32, True),
    # Blackwell client: FP4/FP6 through mma.sync kind::f8f6f4 and the block-scaled kinds; no wgmma, no tcgen05.
    ("sm_120a", MMA_SYNC, dt.e2m1, dt.e2m1, dt.f32, 32, True),
    ("sm_120a", MMA_SYNC, dt.e2m1, dt.e4m3, dt.f16, 32, True),
    ("sm_120a", MMA_SYNC, dt.e3m2, dt.e2m3, dt.f32, 32, True),
    ("sm_120a", WGMMA, dt.f16, dt.f16, dt.f32, None, False),
    ("sm_120a", TCGEN05, dt.f16, dt.f16, dt.f32, None, False),
    ("sm_121a", MMA_SYNC, dt.e2m1, dt.e2m1, dt.f32, 32, True),
    ("sm_121a", TCGEN05, dt.e2m1, dt.e2m1, dt.f32, None, False),
]


@pytest.mark.parametrize("arch, family, a, b, acc, k, present", MMA_FACTS,
                         ids=[f"{f[0]}-{f[1].name}-{f[2]}x{f[3]}-{f[4]}-k{f[5]}-{'yes' if f[6] else 'no'}"
                              for f in MMA_FACTS])
def test_mma_instruction_table(arch, family, a, b, acc, k, present):
    assert has(arch, family, a, b, acc, k) is present


MX, NV = BlockScale(dt.ue8m0, 32), BlockScale(dt.ue4m3, 16)
BLOCK_SCALE_FACTS = [
    ("sm_120a", MMA_SYNC, dt.e2m1, dt.e2m1, 64, MX, True),  # kind::mxf4
    ("sm_120a", MMA_SYNC, dt.e2m1, dt.e2m1, 64, NV, True),  # kind::mxf4nvf4 scale_vec::4X ue4m3 (NVFP4)
    ("sm_120a", MMA_SYNC, dt.e4m3, dt.e2m1, 32, MX, True),  # kind::mxf8f6f4
    ("sm_121a", MMA_SYNC, dt.e2m1, dt.e2m1, 64, NV, True),
    ("sm_100a", TCGEN05, dt.e2m1, dt.e2m1, 64, NV, True),
    ("sm_100a", TCGEN05, dt.e5m2, dt.e3m2, 32, MX, True),
    ("sm_103a", TCGEN05, dt.e2m1, dt.e2m1, 64, MX, True),
    ("sm_90a", WGMMA, dt.e4m3, dt.e4m3, 32, MX, False),  # Hopper has no block-scaled MMA
    ("sm_89", MMA_SYNC, dt.e4m3, dt.e4m3, 32, MX, False),
    ("sm_100a", MMA_SYNC, dt.e2m1, dt.e2m1, 64, MX, False),  # block-scaled mma.sync is sm_120a/121a only
]


@pytest.mark.parametrize("arch, family, a, b, k, scale, present", BLOCK_SCALE_FACTS)
def test_block_scaled_table(arch, family, a, b, k, scale, present):
    assert has(arch, family, a, b, dt.f32, k, scale=scale) is present


def test_wgmma_n_choices_follow_the_ptx_isa_table():
    by = {(i.a, i.acc): i for i in T["sm_90a"].instructions(family=WGMMA)}
    assert by[(dt.bf16, dt.f32)].n_values == tuple(range(8, 257, 8))
    assert by[(dt.s8, dt.s32)].n_values == (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
                                            240, 256)
    assert all(i.m == 64 for i in by.values())


def test_tcgen05_forms_are_m128_with_n_from_8_to_256():
    # The N sets per kind are pinned in test_review7_facts.py (steps of 8; kind::i8 8 or multiples of 16).
    for arch in ("sm_100a", "sm_103a", "sm_107a", "sm_110a"):
        forms = T[arch].instructions(family=TCGEN05)
        assert forms and all(i.m == 128 and min(i.n_values) in (8, 16) and max(i.n_values) == 256 for i in forms)


@pytest.mark.parametrize("arch, primary", [("sm_75", MMA_SYNC), ("sm_89", MMA_SYNC), ("sm_90a", WGMMA),
                                           ("sm_100a", TCGEN05), ("sm_103a", TCGEN05), ("sm_120a", MMA_SYNC)])
def test_primary_family(arch, primary):
    assert T[arch].primary_family == primary


def test_b300_int8_is_derivably_a_slow_fallback():
    b300 = T["sm_103a"]
    assert b300.primary_family == TCGEN05
    assert not b300.instructions(a=dt.s8, family=TCGEN05) and b300.instructions(a=dt.s8, family=MMA_SYNC)
    verdict = supports(b300, activation="s8", weight="s8")
    assert verdict.ok and verdict.chosen.instruction.family == MMA_SYNC
    assert any("mma.sync" in w and "tcgen05" in w for w in verdict.warnings), verdict.warnings
    assert any("kind::i8" in n for n in b300.notes)
    b200 = supports(T["sm_100a"], activation="s8", weight="s8")
    assert b200.chosen.instruction.family == TCGEN05 and not b200.warnings


# ---- memory features and limits (Programming Guide table; PTX ISA target notes) --------------------------------
FEATURES = {  # arch: (ldmatrix, stmatrix, cp_async, tma, multicast, clusters, setmaxnreg, tmem, griddepcontrol)
    "sm_75": (True, False, False, False, False, False, False, False, False),
    "sm_80": (True, False, True, False, False, False, False, False, False),
    "sm_86": (True, False, True, False, False, False, False, False, False),
    "sm_89": (True, False, True, False, False, False, False, False, False),
    "sm_90a": (True, True, True, True, True, True, True, False, True),
    "sm_100a": (True, True, True, True, True, True, True, True, True),
    "sm_103a": (True, True, True, True, True, True, True, True, True),
    "sm_110a": (True, True, True, True, True, True, True, True, True),
    "sm_120a": (True, True, True, True, False, True, True, False, True),  # multicast: a driver syscall
    "sm_121a": (True, True, True, True, False, True, True, False, True),
}


@pytest.mark.parametrize("arch", FEATURES)
def test_memory_features(arch):
    m = T[arch].memory
    got = (m.ldmatrix, m.stmatrix, m.cp_async, m.bulk_tensor_copy, m.tma_multicast, m.clusters, m.setmaxnreg,
           m.tensor_memory, m.programmatic_launch)
    assert got == FEATURES[arch]


LIMITS = {  # arch: (smem per SM KiB, smem per block opt-in KiB, max threads per SM)
    "sm_75": (64, 64, 1024), "sm_80": (164, 163, 2048), "sm_86": (100, 99, 1536), "sm_87": (164, 163, 1536),
    "sm_89": (100, 99, 1536), "sm_90a": (228, 227, 2048), "sm_100a": (228, 227, 2048), "sm_103a": (228, 227, 2048),
    "sm_110a": (228, 227, 1536), "sm_120a": (100, 99, 1536), "sm_121a": (100, 99, 1536),
}


@pytest.mark.parametrize("arch", LIMITS)
def test_limits(arch):
    lim = T[arch].limits
    assert (lim.shared_memory_per_sm // 1024, lim.shared_memory_per_block_optin // 1024,
            lim.max_threads_per_sm) == LIMITS[arch]
    assert lim.warp_size == 32 and lim.registers_per_sm == 65536 and lim.max_registers_per_thread == 255


def test_tensor_memory_is_256_kib_per_sm_on_tcgen05_targets():
    for arch in ("sm_100a", "sm_103a", "sm_110a"):
        assert T[arch].memory.tensor_memory_bytes == 256 * 1024


# ---- hidden formats ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, hidden", [("sm_100a", True), ("sm_103a", True), ("sm_120a", True),
                                          ("sm_121a", True), ("sm_107a", False), ("sm_110a", False),
                                          ("sm_90a", False), ("sm_89", False)])
def test_e3m4_and_e0m3_are_hidden_on_blackwell_only(arch, hidden):
    for d in (dt.e3m4, dt.e0m3):
        h = T[arch].hidden(d)
        assert (h is not None) is hidden
        if h is not None:
            assert arch in h.verified_on and h.source is not None and h.source.provenance is Provenance.REPORTED


def test_no_declared_instruction_uses_a_hidden_format():
    # Their encodings are not public, so no instruction form (and no probe) is declared for them.
    assert not [i for c in archs.ALL for i in c.mma if i.hidden or i.a in (dt.e3m4, dt.e0m3)]


# ---- Rubin, preview ---------------------------------------------------------------------------------------------
def test_rubin_is_a_preview_whose_unknowns_are_listed_not_guessed():
    rubin = T["sm_107a"]
    assert rubin.preview and rubin.unknown and "skus" in rubin.unknown
    assert rubin.limits.shared_memory_per_sm is None and rubin.limits.max_threads_per_sm is None
    assert rubin.skus == ()
    assert all(i.source.provenance is Provenance.DERIVED for i in rubin.instructions(family=TCGEN05))
    assert any("illegal instruction" in n for n in rubin.notes)


# ---- the catalog as a whole ----------------------------------------------------------------------------------
def test_every_target_is_declared_once_and_validates():
    declared = [c.target.arch for c in archs.ALL]
    assert len(declared) == len(set(declared)) and sorted(declared) == sorted(ALL_ARCHS)
    for caps in archs.ALL:
        assert caps.target.vendor == "nvidia"
        assert check_capabilities(caps) == [], caps.target.arch


def test_every_instruction_and_part_cites_a_source():
    for caps in archs.ALL:
        for i in caps.mma:
            assert i.source is not None and i.source.citation and i.ptx, i.describe()
            if i.source.provenance is Provenance.DOCUMENTED:
                assert "PTX ISA" in i.source.citation
        for s in caps.skus:
            assert s.source is not None and s.source.citation, s.name


def test_json_output_spells_dtypes_as_ptx():
    for caps in archs.ALL:
        data = caps.to_json()
        json.dumps(data)  # serialisable as is
        names = {i[k] for i in data["mma"] for k in ("a", "b", "acc")}
        names |= {i["block_scale"]["scale"] for i in data["mma"] if i["block_scale"]}
        names |= {h["dtype"] for h in data["hidden_formats"]}
        names |= {d for s in data["skus"] for d in s["peak_dense_tflops"]}
        assert names <= PTX_NAMES, names - PTX_NAMES


@pytest.mark.parametrize("cc, arch", [((7, 5), "sm_75"), ((8, 0), "sm_80"), ((8, 6), "sm_86"), ((8, 7), "sm_87"),
                                      ((8, 9), "sm_89"), ((9, 0), "sm_90a"), ((10, 0), "sm_100a"),
                                      ((10, 3), "sm_103a"), ((10, 7), "sm_107a"), ((11, 0), "sm_110a"),
                                      ((10, 1), "sm_110a"), ((12, 0), "sm_120a"), ((12, 1), "sm_121a")])
def test_compute_capability_to_target(cc, arch):
    assert archs.BY_CC[cc] == arch


def test_unknown_arch_is_an_error_naming_the_declared_ones():
    with pytest.raises(InvalidInputError, match="sm_90a"):
        archs.capabilities("sm_91")


def test_arch_specific_instructions_are_the_a_target_ones():
    assert not [i for i in T["sm_89"].mma if archs.is_arch_specific(i)]
    assert all(archs.is_arch_specific(i) for i in T["sm_90a"].instructions(family=WGMMA))
    assert any(archs.is_arch_specific(i) for i in T["sm_120a"].mma)


def test_no_nvidia_target_is_named_for_bf16_into_f16_accumulation():
    # PTX ISA mma / wgmma / tcgen05: bf16 accumulates into .f32 only.
    v = supports(T["sm_90a"], activation="bf16", weight="s4", accumulator="f16", catalog=archs.ALL)
    assert not v.ok and not any("runs on:" in a for a in v.alternatives), v.alternatives
    w = supports(T["sm_90a"], activation="f16", weight="s4", accumulator="s32", catalog=archs.ALL)
    assert not w.ok and not any("runs on:" in a for a in w.alternatives), w.alternatives


# ---- parts -------------------------------------------------------------------------------------------------------
SKU_FACTS = [  # (arch, driver name, table name, SMs, memory GiB, bandwidth TB/s)
    ("sm_75", "Tesla T4", "T4", 40, 16, 0.32),
    ("sm_80", "NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 108, 80, 2.039),
    ("sm_80", "NVIDIA A100-PCIE-40GB", "A100 40GB", 108, 40, 1.555),
    ("sm_86", "NVIDIA A10", "A10", 72, 24, 0.6),
    ("sm_89", "NVIDIA L40S", "L40S", 142, 48, 0.864),
    ("sm_89", "NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 128, 24, 1.008),
    ("sm_90a", "NVIDIA H100 80GB HBM3", "H100 SXM", 132, 80, 3.35),
    ("sm_90a", "NVIDIA H100 PCIe", "H100 PCIe", 114, 80, 2.0),
    ("sm_90a", "NVIDIA H200", "H200 SXM", 132, 141, 4.8),
    ("sm_90a", "NVIDIA H20", "H20", 78, 96, 4.0),
    ("sm_100a", "NVIDIA B200", "B200", 148, 180, 8.0),
    ("sm_103a", "NVIDIA B300 SXM6 AC", "B300", 148, 288, 8.0),
    ("sm_120a", "NVIDIA GeForce RTX 5090", "GeForce RTX 5090", 170, 32, 1.792),
    ("sm_121a", "NVIDIA GB10", "DGX Spark (GB10)", 48, 128, 0.273),
]


@pytest.mark.parametrize("arch, driver_name, name, sms, gib, tbps", SKU_FACTS)
def test_parts(arch, driver_name, name, sms, gib, tbps):
    sku = T[arch].sku(driver_name)
    assert sku is not None and sku.name == name
    assert sku.sm_count == sms and sku.memory_bytes == gib * 2**30
    assert sku.memory_bandwidth == pytest.approx(tbps * 1e12)


def test_parts_are_matched_by_exact_name_only():
    hopper = T["sm_90a"]
    assert hopper.sku("NVIDIA H20").name == "H20" and hopper.sku("NVIDIA H200").name == "H200 SXM"
    for near_miss in ("NVIDIA H200 NVL", "H200", "nvidia h200", "NVIDIA H2", "NVIDIA H200 "):
        assert hopper.sku(near_miss) is None, near_miss
    names = [n for s in skus.all_skus() for n in s.match_names]
    assert len(names) == len(set(names))  # no driver name belongs to two parts


def test_peak_rates_are_dense_and_per_dtype():
    h100 = T["sm_90a"].sku("NVIDIA H100 80GB HBM3")
    assert h100.peak_dense_tflops[dt.bf16] == 989.5 and h100.peak_dense_tflops[dt.e4m3] == 1979.0
    assert dt.s4 not in h100.peak_dense_tflops  # Hopper datasheets give int4 no tensor rate
    b300 = T["sm_103a"].sku("NVIDIA B300 SXM6 AC")
    assert dt.s8 not in b300.peak_dense_tflops and b300.peak_dense_tflops[dt.e2m1] > 2 * b300.peak_dense_tflops[dt.e4m3]
    rtx4090 = T["sm_89"].sku("NVIDIA GeForce RTX 4090")
    assert rtx4090.peak_dense_tflops[dt.f16] * 2 == pytest.approx(rtx4090.peak_dense_tflops[dt.e4m3], rel=1e-3)


def test_the_driver_name_orin_claims_only_facts_every_orin_module_shares():
    # Every Jetson Orin module's GPU reports "Orin": AGX Orin 64GB (16 SMs, 64 GB, 204.8 GB/s) as well as Orin NX
    # (8 SMs, 8-16 GB, 102.4 GB/s) and Orin Nano (4-8 SMs, 4-8 GB, 34-68 GB/s).
    orin = T["sm_87"].sku("Orin")
    assert orin is not None
    assert (orin.sm_count, orin.memory_bytes, orin.memory_bandwidth, orin.l2_bytes) == (None, None, None, None)
    assert "Orin NX" in orin.source.citation and "Orin Nano" in orin.source.citation
    agx = next(s for s in T["sm_87"].skus if s.name == "Jetson AGX Orin 64GB")
    assert agx.match_names == () and agx.sm_count == 16 and agx.memory_bytes == 64 * 2**30
    assert T["sm_87"].largest_sm_count == 16  # a plan for sm_87 (no device present) still assumes the largest
