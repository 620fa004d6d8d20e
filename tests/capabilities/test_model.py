"""The capability vocabulary: consistency checks fire on broken tables, queries filter correctly."""

from __future__ import annotations

import dataclasses

from humming.capabilities.model import ExecutionLimits, MemoryFeatures, check_capabilities
from humming.core import dtypes as dt
from tests.capabilities.synthetic import FAST, NEW, OLD, caps, instr


def test_synthetic_tables_are_consistent():
    assert check_capabilities(OLD) == [] and check_capabilities(NEW) == []


def test_smem_per_block_above_smem_per_sm_is_caught():
    bad = dataclasses.replace(OLD, limits=ExecutionLimits(shared_memory_per_sm=64 * 1024,
                                                           shared_memory_per_block_optin=100 * 1024))
    assert any("shared_memory_per_block_optin" in p for p in check_capabilities(bad))


def test_async_smem_family_without_bulk_copy_is_caught():
    bad = caps("bad", (instr(FAST, dt.f16, dt.f16, dt.f32),), memory=MemoryFeatures(bulk_tensor_copy=False))
    assert any("bulk tensor copy" in p for p in check_capabilities(bad))


def test_duplicate_instruction_and_unlisted_hidden_format_are_caught():
    hidden = dataclasses.replace(instr(FAST, dt.e3m4, dt.e3m4, dt.f32), hidden=True)
    bad = caps("bad", (instr(FAST, dt.f16, dt.f16, dt.f32), instr(FAST, dt.f16, dt.f16, dt.f32), hidden))
    problems = check_capabilities(bad)
    assert any("declared twice" in p for p in problems)
    assert any("hidden" in p for p in problems)


def test_preview_targets_must_list_their_unknowns():
    assert any("unknown" in p for p in check_capabilities(dataclasses.replace(OLD, preview=True)))
    assert check_capabilities(dataclasses.replace(OLD, preview=True, unknown=("sm_count",))) == []


def test_instructions_sorts_fastest_family_first_and_filters():
    assert NEW.instructions(a=dt.f16)[0].family == FAST
    assert NEW.primary_family == FAST and OLD.primary_family.name == "slow.sync"
    assert NEW.has_mma(a=dt.e4m3, b=dt.e2m1) and not NEW.has_mma(a=dt.e2m1, b=dt.e4m3)
    assert all(i.block_scale for i in NEW.instructions(block_scaled=True))
