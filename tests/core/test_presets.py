"""presets: the formats users know, as data that round-trips through JSON and is found by name."""

from __future__ import annotations

import json

import pytest

from humming.core import dtypes, presets
from humming.core.formats import ActScaling, Granularity, QuantFormat, ZeroPointSpec
from humming.errors import InvalidInputError


@pytest.mark.parametrize("name", presets.names())
def test_every_preset_round_trips_through_a_json_dict(name: str) -> None:
    fmt = presets.get(name)
    text = json.dumps(fmt.to_dict())
    back = QuantFormat.from_dict(json.loads(text))
    assert back == fmt and back.name == name
    assert presets.find(back) is not None


def test_lookup_ignores_case_and_dashes_and_lists_names_when_unknown() -> None:
    assert presets.get("NVFP4") is presets.get("nvfp4")
    assert presets.get("GPTQ-INT4") is presets.PRESETS["gptq_int4"]
    with pytest.raises(InvalidInputError, match=r"unknown quantization preset 'fp5'; known: gptq_int2, .*nvfp4"):
        presets.get("fp5")
    with pytest.raises(InvalidInputError, match="gptq bits=5; allowed: 2, 3, 4, 8"):
        presets.gptq(5)


def test_gptq_and_awq_are_unsigned_codes_with_integer_zeros_per_group_of_128() -> None:
    for bits in (2, 3, 4, 8):
        w = presets.get(f"gptq_int{bits}").weight
        assert w.dtype is dtypes.DType.parse(f"u{bits}") and w.zero_point is ZeroPointSpec.INT
        assert (w.scale.granularity, w.scale.group, w.scale.dtype) == (Granularity.GROUP, 128, dtypes.f16)
        assert not w.act_order and presets.get(f"gptq_int{bits}_act_order").weight.act_order
    assert presets.get("awq_int4").weight == presets.get("gptq_int4").weight


def test_microscaling_presets_follow_ocp_mx() -> None:
    for name, elem in (("mxfp4", dtypes.e2m1), ("mxint4", dtypes.s4), ("mxfp8", dtypes.e4m3)):
        w = presets.get(name).weight
        assert (w.dtype, w.scale.dtype, w.scale.group, w.zero_point) == (elem, dtypes.ue8m0, 32, ZeroPointSpec.NONE)
    act = presets.get("mxfp8").activation
    assert (act.dtype, act.scaling, act.group, act.scale_dtype) == (dtypes.e4m3, ActScaling.GROUP, 32, dtypes.ue8m0)


def test_nvfp4_has_e4m3_scales_per_16_and_an_f32_global_scale_on_both_operands() -> None:
    fmt = presets.get("nvfp4")
    assert (fmt.weight.dtype, fmt.weight.scale.dtype, fmt.weight.scale.group, fmt.weight.global_scale) == (
        dtypes.e2m1, dtypes.e4m3, 16, True)
    assert (fmt.activation.dtype, fmt.activation.group, fmt.activation.global_scale) == (dtypes.e2m1, 16, True)
    assert not presets.get("nvfp4_w4a16").activation.is_quantized


def test_fp8_int8_and_mixed_presets() -> None:
    block = presets.get("fp8_block")
    assert block.weight.scale.block == (128, 128) and block.activation.group == 128
    assert presets.get("fp8_channel").weight.scale.granularity is Granularity.CHANNEL
    assert presets.get("w8a8_int8").activation.dtype is dtypes.s8
    for name, elem in (("w4a8_int4", dtypes.s4), ("w4a8_fp4", dtypes.e2m1)):
        fmt = presets.get(name)
        assert fmt.weight.dtype is elem
        assert (fmt.activation.dtype, fmt.activation.scaling) == (dtypes.e4m3, ActScaling.TOKEN)
    assert presets.get("w4a4_int4").activation.dtype is dtypes.s4
    assert presets.get("w4a4_mxfp4").activation.dtype is dtypes.e2m1


def test_every_preset_describes_itself() -> None:
    for name in presets.names():
        text = presets.get(name).describe()
        assert text.startswith(f"{name}: ") and "weights" in text and "activations" in text
