"""The PPU capability tables: their own MMA family (N=16, no s4), their own bulk copy, sources and unknowns."""

from __future__ import annotations

from dataclasses import fields

import pytest

from humming.capabilities.model import Provenance, check_capabilities
from humming.capabilities.query import supports
from humming.core import dtypes as dt
from humming.devices.thead_ppu import archs, skus
from humming.errors import InvalidInputError

TABLES = pytest.mark.parametrize("caps", archs.ALL, ids=lambda c: c.target.arch)

# (a, b, acc, present): the PPU's MMA table, row by row. No INT4 MMA on PPU; no fp8 claimed.
MMA_ROWS = [
    (dt.f16, dt.f16, dt.f32, True),
    (dt.f16, dt.f16, dt.f16, True),
    (dt.bf16, dt.bf16, dt.f32, True),
    (dt.bf16, dt.bf16, dt.f16, True),  # f16 accumulation for bf16 as well
    (dt.s8, dt.s8, dt.s32, True),
    (dt.s4, dt.s4, dt.s32, False),  # PPU: no s4 MMA
    (dt.u4, dt.u4, dt.s32, False),
    (dt.e4m3, dt.e4m3, dt.f32, False),
    (dt.e2m1, dt.e2m1, dt.f32, False),
    (dt.tf32, dt.tf32, dt.f32, False),
]


@TABLES
@pytest.mark.parametrize("a,b,acc,present", MMA_ROWS, ids=lambda v: str(v))
def test_ppu_mma_table_row(caps, a, b, acc, present):
    assert caps.has_mma(a=a, b=b, acc=acc) is present


@TABLES
def test_ppu_has_no_s4_mma_at_all_and_s4_activations_are_unsupported(caps):
    assert not [i for i in caps.mma if dt.s4 in (i.a, i.b) or dt.u4 in (i.a, i.b)]
    verdict = supports(caps, activation="s4", weight="s4")
    assert not verdict.ok and verdict.missing


@TABLES
def test_s4_weights_run_by_widening_to_s8_or_f16_on_ppu(caps):
    w4a8 = supports(caps, activation="s8", weight="s4")
    assert w4a8.ok and w4a8.chosen.weight_conversion is dt.s8 and w4a8.chosen.instruction.family is archs.PPU_MMA
    w4a16 = supports(caps, activation="f16", weight="s4")
    assert w4a16.ok and w4a16.chosen.instruction.a is dt.f16


@TABLES
def test_every_ppu_mma_is_its_own_family_with_n16_fragments_not_sm80s_mma_sync(caps):
    assert caps.families == (archs.PPU_MMA,)
    assert archs.PPU_MMA.name == "ppu.mma.sync" and not archs.PPU_MMA.asynchronous
    for i in caps.mma:
        assert i.n == 16 and i.m == 16, i.describe()
        assert i.k == (32 if i.a.bits == 8 else 16), i.describe()
        assert i.ptx.startswith("ppu.")


@TABLES
def test_ppu_declares_its_own_bulk_tensor_copy(caps):
    assert caps.memory.bulk_tensor_copy is True
    assert caps.memory.bulk_tensor_copy_name == "ppu.cp.async.aiu.bulk.tensor"


def test_810e_has_more_shared_memory_than_sm80():
    sm80_bytes = 164 * 1024  # A100 (CUDA Programming Guide, compute capability 8.0)
    assert archs.CAPS_810E.limits.shared_memory_per_sm > sm80_bytes


def test_810e_sku_is_96_gb_hbm2e_vendor_declared():
    (sku,) = archs.CAPS_810E.skus
    assert sku.name == "Zhenwu 810E" and sku.memory_bytes == 96 * 10**9
    assert sku.source is not None and sku.source.provenance is Provenance.VENDOR_DECLARED
    assert "HBM2e" in sku.source.citation
    assert any("HBM2e" in n for n in archs.CAPS_810E.notes)
    assert sku.memory_bandwidth is None and "memory_bandwidth" in archs.CAPS_810E.unknown


@TABLES
def test_ppu_tables_pass_the_capability_check(caps):
    assert check_capabilities(caps) == []


@TABLES
def test_every_unknown_field_is_none_and_listed_and_every_listed_field_is_none(caps):
    for group, value in (("memory", caps.memory), ("limits", caps.limits)):
        for f in fields(value):
            key = f"{group}.{f.name}"
            if getattr(value, f.name) is None:
                assert key in caps.unknown, key
            else:
                assert key not in caps.unknown, key


@TABLES
def test_every_mma_and_every_known_fact_has_a_source(caps):
    assert all(i.source is not None for i in caps.mma)
    fact_sources = archs.FACT_SOURCES_810E if caps is archs.CAPS_810E else archs.FACT_SOURCES_M890
    for group, value in (("memory", caps.memory), ("limits", caps.limits)):
        for f in fields(value):
            if getattr(value, f.name) in (None, ""):
                continue
            assert f"{group}.{f.name}" in fact_sources, f"{group}.{f.name} has no source"
    assert set(fact_sources.values()) <= set(caps.sources)
    # No PPU has been measured and no PPU ISA document is public: nothing may claim either provenance.
    assert {s.provenance for s in caps.sources} <= {Provenance.REPORTED, Provenance.VENDOR_DECLARED, Provenance.DERIVED}


def test_m890_is_a_preview_whose_facts_are_derived_or_reported_never_documented():
    caps = archs.CAPS_M890
    assert caps.preview and len(caps.unknown) > len(archs.CAPS_810E.unknown)
    assert all(i.source is archs.M890_FROM_810E for i in caps.mma)
    assert all(s.provenance in (Provenance.DERIVED, Provenance.REPORTED) for s in caps.sources)
    (sku,) = caps.skus
    assert "unverified" in sku.source.citation
    assert caps.limits.shared_memory_per_sm is None  # the 810E's budget is not carried over


def test_targets_are_thead_ppu_family_and_skus_point_back_at_their_table():
    assert [c.target.arch for c in archs.ALL] == ["ppu-810e", "ppu-m890"]
    for caps in archs.ALL:
        assert caps.target.vendor == "thead" and caps.target.family == "ppu"
    for sku in skus.ALL:
        assert sku.facts in archs.capabilities_for(sku.arch).skus


def test_an_unknown_ppu_arch_names_the_known_ones():
    with pytest.raises(InvalidInputError) as err:
        archs.capabilities_for("ppu-900")
    assert "ppu-900" in str(err.value) and "ppu-810e" in str(err.value) and "ppu-m890" in str(err.value)
