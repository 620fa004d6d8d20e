"""supports() and instruction_paths() read only the table: native, converted, block-scaled, slow-path warnings."""

from __future__ import annotations

import pytest

from humming.capabilities.model import BlockScale
from humming.capabilities.query import combination_name, instruction_paths, supports
from humming.core import dtypes as dt
from humming.errors import UnsupportedError
from tests.capabilities.synthetic import FAST, NEW, OLD, SLOW


def test_wna16_runs_by_widening_int4_weights_to_the_activation_dtype():
    v = supports(OLD, activation="bf16", weight="s4")
    assert v.ok and v.combination == "W4A16"
    assert v.chosen.weight_conversion is dt.bf16 and v.chosen.instruction.a is dt.bf16
    assert v.accumulator is dt.f32


def test_int_activations_accumulate_in_s32_by_default():
    v = supports(OLD, activation=dt.s8, weight=dt.s4)
    assert v.accumulator is dt.s32
    assert v.chosen.weight_conversion is dt.s8  # s4 -> s8 is exact


def test_native_pairing_beats_conversion_and_fast_family_beats_slow():
    v = supports(NEW, activation="e4m3", weight="e2m1")
    assert v.chosen.instruction.family == FAST and v.chosen.weight_conversion is None
    assert any(p.weight_conversion is dt.e4m3 for p in v.paths)  # the converted path is still listed


def test_block_scaled_form_is_chosen_only_with_matching_weight_scales():
    mx = BlockScale(dt.ue8m0, 32)
    assert supports(NEW, activation="e2m1", weight="e2m1", weight_block_scale=mx).chosen.block_scaled
    # Without matching scales the block-scaled form is unusable; the mixed e4m3 x e2m1 form remains, with the
    # weights widened to e4m3 and fed as operand A.
    for scale in (None, BlockScale(dt.ue4m3, 16)):
        v = supports(NEW, activation="e2m1", weight="e2m1", weight_block_scale=scale)
        assert not any(p.block_scaled for p in v.paths)
        assert v.chosen.weight_conversion is dt.e4m3 and v.chosen.swapped


def test_int8_falling_back_to_the_slow_family_warns_and_names_the_fast_family():
    v = supports(NEW, activation="s8", weight="s8")
    assert v.ok and v.chosen.instruction.family == SLOW
    assert any("fast.async" in w and "slow.sync" in w and "lower" in w for w in v.warnings)
    assert not supports(NEW, activation="bf16", weight="s4").warnings  # the fast family serves bf16


def test_w4a4_fp4_on_an_old_chip_names_the_missing_mma_and_offers_w4a8_or_w4a16():
    v = supports(OLD, activation="e2m1", weight="e2m1", catalog=[OLD, NEW])
    assert not v.ok
    assert "e2m1" in v.missing[0] and "none takes e2m1" in v.missing[0]
    assert any(a.startswith("W4A16 with bf16") for a in v.alternatives)
    assert not any(a.startswith("W4A8 with e4m3") for a in v.alternatives)  # OLD has no e4m3 MMA
    with pytest.raises(UnsupportedError) as err:
        v.raise_if_unsupported()
    assert "missing:" in str(err.value) and "would work instead" in str(err.value)
    assert err.value.missing == v.missing


def test_the_catalog_names_targets_that_would_run_a_request():
    v = supports(OLD, activation="e4m3", weight="e2m1", catalog=[OLD, NEW])
    assert not v.ok and any("runs on: new" in a for a in v.alternatives)


def test_weights_that_do_not_convert_exactly_are_not_silently_rounded():
    # s8 weights do not fit e4m3 exactly (e4m3 has 3 mantissa bits), so no e4m3 path exists for them.
    assert not instruction_paths(NEW, dt.e4m3, dt.s8)
    v = supports(NEW, activation="e4m3", weight="s8")
    assert not v.ok and "exact conversion" in v.missing[0]


def test_combination_names_follow_element_widths():
    assert combination_name(dt.s4, dt.f16) == "W4A16"
    assert combination_name(dt.e4m3, dt.e4m3) == "W8A8"
    assert combination_name(dt.e2m1, dt.s8) == "W4A8"


def test_verdict_json_uses_ptx_spelling():
    js = supports(NEW, activation="bf16", weight="u4").to_json()
    assert js["weights"] == "u4" and js["activations"] == "bf16" and js["chosen"]["instruction"]["a"] == "bf16"


def test_an_emulated_form_ranks_after_every_real_one_and_warns():
    import dataclasses

    from tests.capabilities.synthetic import caps, instr

    fake = dataclasses.replace(instr(FAST, dt.s8, dt.s8, dt.s32, k=32), emulated=True, emulation="lowered to f16 HMMA")
    table = caps("emu", (fake, instr(SLOW, dt.s8, dt.s8, dt.s32, k=32)))
    v = supports(table, activation="s8", weight="s8")
    assert not v.chosen.instruction.emulated and v.paths[-1].instruction.emulated
    only = caps("emu1", (fake,))
    w = supports(only, activation="s8", weight="s8")
    assert w.ok and any("emulated" in x and "lowered to f16 HMMA" in x for x in w.warnings)


def test_the_targets_named_as_running_a_request_accumulate_as_it_asks():
    from tests.capabilities.synthetic import caps, instr

    half = caps("half", (instr(SLOW, dt.f16, dt.f16, dt.f16),))  # the only table that accumulates f16 into f16
    v = supports(OLD, activation="f16", weight="s4", accumulator="f16", catalog=[OLD, NEW, half])
    assert not v.ok
    (runs_on,) = [a for a in v.alternatives if "runs on:" in a]
    assert runs_on.endswith("runs on: half"), runs_on  # NEW has f16 only into f32
    assert "f16 accumulation" in runs_on
    none = supports(OLD, activation="bf16", weight="s4", accumulator="f16", catalog=[OLD, NEW, half])
    assert not any("runs on:" in a for a in none.alternatives), none.alternatives  # nothing accumulates bf16 in f16


def test_the_targets_named_as_running_a_request_see_its_weight_block_scales():
    from tests.capabilities.synthetic import caps, instr

    mx = BlockScale(dt.ue8m0, 32)
    scaled = caps("scaled", (instr(FAST, dt.e2m1, dt.e2m1, dt.f32, k=64, scale=mx),))  # usable only with mx scales
    v = supports(OLD, activation="e2m1", weight="e2m1", weight_block_scale=mx, catalog=[OLD, scaled])
    assert not v.ok and any(a.endswith("runs on: scaled") for a in v.alternatives), v.alternatives
    plain = supports(OLD, activation="e2m1", weight="e2m1", catalog=[OLD, scaled])
    assert not any("runs on:" in a for a in plain.alternatives)

