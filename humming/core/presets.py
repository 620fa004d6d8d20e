"""The named formats users know (GPTQ, AWQ, MXFP4, NVFP4, FP8 ...) as QuantFormat values, and a lookup by name.

Each preset is data built from the parts in ``humming.core.formats``; nothing here branches on a name.
``get("NVFP4")`` finds a preset whatever its case and with ``-`` or ``_``; ``names()`` lists them all.
"""

from __future__ import annotations

from humming.core import dtypes
from humming.core.formats import (
    ActivationFormat,
    ActScaling,
    Granularity,
    QuantFormat,
    ScaleSpec,
    WeightFormat,
    ZeroPointSpec,
)
from humming.errors import InvalidInputError

A16 = ActivationFormat()  # 16-bit activations as given (f16 or bf16)
A8_E4M3_TOKEN = ActivationFormat(dtypes.e4m3, ActScaling.TOKEN)  # FP8, one f32 scale per token
A8_S8_TOKEN = ActivationFormat(dtypes.s8, ActScaling.TOKEN)
A4_S4_TOKEN = ActivationFormat(dtypes.s4, ActScaling.TOKEN)


def gptq(bits: int, group: int = 128, *, act_order: bool = False) -> WeightFormat:
    """GPTQ: unsigned ``bits``-bit codes, f16 scales per group, integer zero points; act order via g_idx."""
    if bits not in (2, 3, 4, 8):
        raise InvalidInputError(f"gptq bits={bits}; allowed: 2, 3, 4, 8")
    return WeightFormat(dtypes.DType.parse(f"u{bits}"), ScaleSpec(Granularity.GROUP, dtypes.f16, group),
                        ZeroPointSpec.INT, act_order=act_order)


def mx_weight(element: dtypes.DType) -> WeightFormat:
    """OCP MX: 32 elements share one ue8m0 (power-of-two) scale (OCP MX v1.0, section 5)."""
    return WeightFormat(element, ScaleSpec(Granularity.GROUP, dtypes.ue8m0, 32))


def mx_activation(element: dtypes.DType) -> ActivationFormat:
    return ActivationFormat(element, ActScaling.GROUP, 32, dtypes.ue8m0)


# NVFP4: e2m1 elements, an e4m3 scale per 16, and an f32 scale per tensor that brings the e4m3 scales into range.
NVFP4_WEIGHT = WeightFormat(dtypes.e2m1, ScaleSpec(Granularity.GROUP, dtypes.e4m3, 16), global_scale=True)
NVFP4_ACTIVATION = ActivationFormat(dtypes.e2m1, ActScaling.GROUP, 16, dtypes.e4m3, global_scale=True)
FP8_CHANNEL_WEIGHT = WeightFormat(dtypes.e4m3, ScaleSpec(Granularity.CHANNEL, dtypes.f32))
# DeepSeek-V3 style: f32 scales per 128 x 128 weight block, activations per token and per 128 columns.
FP8_BLOCK_WEIGHT = WeightFormat(dtypes.e4m3, ScaleSpec(Granularity.BLOCK, dtypes.f32, block=(128, 128)))
FP8_BLOCK_ACTIVATION = ActivationFormat(dtypes.e4m3, ActScaling.GROUP, 128, dtypes.f32)


def _presets() -> dict[str, QuantFormat]:
    table: dict[str, tuple[WeightFormat, ActivationFormat]] = {}
    for bits in (2, 3, 4, 8):
        table[f"gptq_int{bits}"] = (gptq(bits), A16)
        table[f"gptq_int{bits}_act_order"] = (gptq(bits, act_order=True), A16)
    table["awq_int4"] = (WeightFormat(dtypes.u4, ScaleSpec(Granularity.GROUP, dtypes.f16, 128), ZeroPointSpec.INT), A16)
    table["mxfp4"] = (mx_weight(dtypes.e2m1), A16)  # weight-only, as gpt-oss ships it
    table["mxint4"] = (mx_weight(dtypes.s4), A16)
    table["mxfp8"] = (mx_weight(dtypes.e4m3), mx_activation(dtypes.e4m3))
    table["nvfp4"] = (NVFP4_WEIGHT, NVFP4_ACTIVATION)  # W4A4, as NVIDIA ModelOpt exports it
    table["nvfp4_w4a16"] = (NVFP4_WEIGHT, A16)
    table["fp8_channel"] = (FP8_CHANNEL_WEIGHT, A8_E4M3_TOKEN)
    table["fp8_channel_w8a16"] = (FP8_CHANNEL_WEIGHT, A16)
    table["fp8_block"] = (FP8_BLOCK_WEIGHT, FP8_BLOCK_ACTIVATION)
    table["w8a8_int8"] = (WeightFormat(dtypes.s8, ScaleSpec(Granularity.CHANNEL, dtypes.f32)), A8_S8_TOKEN)
    table["w4a8_int4"] = (WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.f16, 128)), A8_E4M3_TOKEN)
    table["w4a8_fp4"] = (mx_weight(dtypes.e2m1), A8_E4M3_TOKEN)
    table["w4a4_int4"] = (WeightFormat(dtypes.s4, ScaleSpec(Granularity.CHANNEL, dtypes.f32)), A4_S4_TOKEN)
    table["w4a4_mxfp4"] = (mx_weight(dtypes.e2m1), mx_activation(dtypes.e2m1))
    table["w4a4_nvfp4"] = table["nvfp4"]
    return {name: QuantFormat(w, a, name) for name, (w, a) in table.items()}


PRESETS: dict[str, QuantFormat] = _presets()


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def names() -> tuple[str, ...]:
    """Every preset name, in definition order."""
    return tuple(PRESETS)


def get(name: str) -> QuantFormat:
    """The preset called ``name`` (case-insensitive; ``-`` and ``_`` alike): ``get("NVFP4")``."""
    if not isinstance(name, str):
        raise InvalidInputError(f"preset name: expected a string, got {type(name).__name__}")
    found = PRESETS.get(_key(name))
    if found is None:
        raise InvalidInputError(f"unknown quantization preset {name!r}; known: {', '.join(PRESETS)}")
    return found


def find(fmt: QuantFormat) -> str | None:
    """The name of the first preset equal to ``fmt`` (names aside), or None."""
    for name, preset in PRESETS.items():
        if preset == fmt:
            return name
    return None
