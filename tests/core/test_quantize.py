"""quantize / dequantize: the canonical layout, scale choices re-derived independently, the error bound, bad input."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

from humming.core import codec, dtypes, presets, quantized
from humming.core.formats import (
    ActivationFormat,
    ActScaling,
    Granularity,
    QuantFormat,
    ScaleSpec,
    WeightFormat,
    ZeroPointSpec,
)
from humming.core.quantized import QuantizedTensor, dequantize, quantize, quantize_activation
from humming.core.reference import quantization_error_bound
from humming.errors import InvalidInputError

# Formats beyond the presets: odd widths, float zero points, every small float, every scale dtype.
EXTRA = {
    "u5_float_zero_bf16": WeightFormat(dtypes.u5, ScaleSpec(Granularity.GROUP, dtypes.bf16, 64), ZeroPointSpec.FLOAT),
    "u3_int_zero_f32_block": WeightFormat(dtypes.u3, ScaleSpec(Granularity.BLOCK, dtypes.f32, block=(16, 64)), ZeroPointSpec.INT),
    "s3_channel": WeightFormat(dtypes.s3, ScaleSpec(Granularity.CHANNEL, dtypes.f16)),
    "s6_group32": WeightFormat(dtypes.s6, ScaleSpec(Granularity.GROUP, dtypes.f32, 32)),
    "u7_int_zero": WeightFormat(dtypes.u7, ScaleSpec(Granularity.GROUP, dtypes.f16, 128), ZeroPointSpec.INT),
    "e3m2_mx": WeightFormat(dtypes.e3m2, ScaleSpec(Granularity.GROUP, dtypes.ue8m0, 32)),
    "e2m3_mx": WeightFormat(dtypes.e2m3, ScaleSpec(Granularity.GROUP, dtypes.ue8m0, 32)),
    "e0m3_group32": WeightFormat(dtypes.e0m3, ScaleSpec(Granularity.GROUP, dtypes.f16, 32)),
    "e5m2_tensor": WeightFormat(dtypes.e5m2, ScaleSpec(Granularity.TENSOR, dtypes.f32)),
    "e3m4_block": WeightFormat(dtypes.e3m4, ScaleSpec(Granularity.BLOCK, dtypes.bf16, block=(32, 32))),
    "e2m1_ue4m3_global": WeightFormat(dtypes.e2m1, ScaleSpec(Granularity.GROUP, dtypes.ue4m3, 16), global_scale=True),
}
ALL = {**{n: presets.get(n) for n in presets.names()}, **{n: QuantFormat(w, name=n) for n, w in EXTRA.items()}}
N, K = 67, 384  # N odd (partial blocks), K divisible by every group size


def _g_idx(fmt: QuantFormat, k: int, seed: int = 0) -> torch.Tensor | None:
    if not fmt.weight.act_order:
        return None
    assert fmt.weight.scale.group is not None
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed))
    g = torch.empty(k, dtype=torch.int32)
    g[perm] = (torch.arange(k) // fmt.weight.scale.group).int()
    return g


@pytest.mark.parametrize("name", list(ALL))
def test_error_is_within_the_theoretical_bound_and_matches_the_rounding_model(name: str) -> None:
    fmt = ALL[name]
    w = torch.randn(N, K, generator=torch.Generator().manual_seed(11))
    q = quantize(w, fmt, g_idx=_g_idx(fmt, K))
    err = dequantize(q, torch.float64) - w.double()
    bound, clamped = quantization_error_bound(w, q)
    # Hard: every element within half a grid step of its scale (or exactly its distance to the grid's end).
    excess = err.abs() - bound * (1 + 2.0**-20)
    assert float(excess.max()) <= 1e-12, f"{name}: element off by {float(excess.max())} beyond its bound"
    # Statistical: errors spread like uniform rounding noise, err^2 ~ bound^2 / 3 where not clamped.
    measured = float(err.norm() / w.double().norm())
    predicted = float(torch.where(clamped, bound**2, bound**2 / 3).sum().sqrt() / w.double().norm())
    print(f"{name:22s} rel rms error {measured:.4f}  uniform-rounding model {predicted:.4f}")
    assert 0.75 * predicted <= measured <= 1.03 * predicted


def test_gptq_codes_scales_and_zeros_match_an_independent_numpy_derivation() -> None:
    w = torch.randn(5, 256, generator=torch.Generator().manual_seed(1)) * 0.05
    q = quantize(w, "gptq_int4")
    g = w.numpy().reshape(5, 2, 128)
    lo, hi = np.minimum(g.min(-1), 0), np.maximum(g.max(-1), 0)
    s = ((hi - lo) / np.float32(15)).astype(np.float16)
    z = np.clip(np.rint(-lo / s.astype(np.float32)), 0, 15)
    codes = np.clip(np.rint(g / s.astype(np.float32)[..., None]) + z[..., None], 0, 15).reshape(5, 256)
    np.testing.assert_array_equal(q.scales.numpy(), s)
    np.testing.assert_array_equal(q.zeros.numpy(), z.astype(np.uint8))
    np.testing.assert_array_equal(q.codes().numpy(), codes.astype(np.uint8))
    assert q.data.shape == (5, 128) and q.data.dtype is torch.uint8  # two 4-bit codes a byte
    expect = (codes.reshape(5, 2, 128) - z[..., None]) * s.astype(np.float64)[..., None]
    np.testing.assert_array_equal(dequantize(q, torch.float64).numpy(), expect.reshape(5, 256))


def test_nvfp4_matches_an_independent_derivation_with_ml_dtypes_casts() -> None:
    w = torch.randn(9, 64, generator=torch.Generator().manual_seed(2))
    q = quantize(w, "nvfp4_w4a16")
    x = w.numpy()
    gs = np.float32(np.abs(x).max()) / np.float32(6 * 448)
    amax = np.abs(x.reshape(9, 4, 16)).max(-1)
    s = ((amax / gs) / np.float32(6)).astype(ml_dtypes.float8_e4m3fn)
    eff = s.astype(np.float32) * gs
    codes = np.clip(x.reshape(9, 4, 16) / eff[..., None], -6, 6).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    assert float(q.global_scale) == gs and q.global_scale.dtype is torch.float32
    np.testing.assert_array_equal(q.scales.numpy(), s.view(np.uint8))
    np.testing.assert_array_equal(q.codes().numpy(), codes.reshape(9, 64))


def test_mxfp4_scale_is_floor_log2_amax_minus_emax_as_ocp_mx_says() -> None:
    w = torch.randn(4, 96, generator=torch.Generator().manual_seed(3)) * 3
    q = quantize(w, "mxfp4")
    amax = np.abs(w.numpy().reshape(4, 3, 32)).max(-1)
    e = np.floor(np.log2(amax)).astype(np.int64) - 2  # emax of e2m1 = 2 (its largest value is 6 = 1.5 * 2**2)
    np.testing.assert_array_equal(q.scales.numpy(), (e + 127).astype(np.uint8))
    t = np.clip(w.numpy().reshape(4, 3, 32) / np.exp2(e)[..., None], -6, 6)  # OCP: beyond the largest, clamp
    np.testing.assert_array_equal(q.codes().numpy(), t.astype(ml_dtypes.float4_e2m1fn).view(np.uint8).reshape(4, 96))


def test_act_order_quantizes_like_contiguous_groups_of_the_permuted_columns() -> None:
    fmt = presets.get("gptq_int3_act_order")
    w = torch.randn(6, 256, generator=torch.Generator().manual_seed(4))
    perm = torch.randperm(256, generator=torch.Generator().manual_seed(5))
    g_idx = torch.empty(256, dtype=torch.int32)
    g_idx[perm] = (torch.arange(256) // 128).int()  # column perm[i] sits in group i // 128
    q = quantize(w, fmt, g_idx=g_idx)
    plain = quantize(w[:, perm], "gptq_int3")
    assert torch.equal(q.scales, plain.scales) and torch.equal(q.zeros, plain.zeros)
    assert torch.equal(q.codes()[:, perm], plain.codes())
    assert torch.equal(dequantize(q)[:, perm], dequantize(plain))
    assert q.g_idx is not None and q.g_idx.dtype is torch.int32


@pytest.mark.parametrize("name", ["u5_float_zero_bf16", "u3_int_zero_f32_block", "s3_channel", "s6_group32", "u7_int_zero"])
def test_odd_widths_pack_densely(name: str) -> None:
    fmt = ALL[name]
    w = torch.randn(3, 128, generator=torch.Generator().manual_seed(6))
    q = quantize(w, fmt)
    bits = fmt.weight.dtype.bits
    assert q.data.shape == (3, (128 * bits + 7) // 8)
    assert torch.equal(codec.pack_codes(q.codes(), bits), q.data)


def test_bf16_input_and_partial_blocks() -> None:
    w = torch.randn(130, 200, generator=torch.Generator().manual_seed(7)).to(torch.bfloat16)
    q = quantize(w, "fp8_block")
    assert q.scales.shape == (2, 2) and q.scales.dtype is torch.float32
    rel = (dequantize(q) - w.float()).norm() / w.float().norm()
    assert float(rel) < 0.04


def test_nan_and_inf_weights_raise_naming_the_first_one() -> None:
    w = torch.randn(4, 128)
    w[2, 5] = float("nan")
    with pytest.raises(InvalidInputError, match=r"w holds 1 NaN or inf values \(first at \[2, 5\]"):
        quantize(w, "gptq_int4")
    w[2, 5] = float("inf")
    with pytest.raises(InvalidInputError, match="finite values only"):
        quantize(w, "mxfp4")


def test_a_group_that_does_not_divide_k_raises() -> None:
    with pytest.raises(InvalidInputError, match="scale.group=128 does not divide K=100"):
        quantize(torch.randn(4, 100), "gptq_int4")


def test_scales_out_of_the_scale_dtype_range_raise_unless_clamped() -> None:
    tiny = torch.randn(4, 64) * 1e-7
    fmt = WeightFormat(dtypes.e4m3, ScaleSpec(Granularity.CHANNEL, dtypes.e4m3))  # e4m3 scales stop at 2**-9
    with pytest.raises(InvalidInputError, match=r"weight.scale.dtype=e4m3 cannot hold the scales: 4 of 4 .*clamp=True"):
        quantize(tiny, fmt)
    q = quantize(tiny, fmt, clamp=True)
    assert torch.equal(codec.decode(q.scales, dtypes.e4m3), torch.full((4, 1), 2.0**-9))
    with pytest.raises(InvalidInputError, match="weight.scale.dtype=f16 cannot hold the scales"):
        quantize(torch.randn(4, 128) * 1e9, "gptq_int4")
    with pytest.raises(InvalidInputError, match=r"ue8m0 cannot hold the scales: .*outside \[-127, 127\]"):
        quantize(torch.randn(4, 32) * 1e-39, "mxfp4")


def test_act_order_needs_g_idx_and_other_formats_refuse_one() -> None:
    with pytest.raises(InvalidInputError, match="g_idx is required"):
        quantize(torch.randn(4, 128), "gptq_int4_act_order")
    with pytest.raises(InvalidInputError, match="g_idx is not taken"):
        quantize(torch.randn(4, 128), "gptq_int4", g_idx=torch.zeros(128, dtype=torch.int32))
    with pytest.raises(InvalidInputError, match=r"groups in \[0, 1\)"):
        quantize(torch.randn(4, 128), "gptq_int4_act_order", g_idx=torch.ones(128, dtype=torch.int32))


def test_quantized_tensor_checks_every_part_of_the_layout() -> None:
    q = quantize(torch.randn(8, 256), "gptq_int4_act_order", g_idx=(torch.arange(256) // 128).int())
    parts = dict(format=q.format, shape=q.shape, data=q.data, scales=q.scales, zeros=q.zeros, g_idx=q.g_idx)
    cases = [
        (dict(data=q.data[:, :-1]), r"data: expected uint8 \[8, 128\] \(u4 codes, 4 bits each\)"),
        (dict(scales=q.scales.float()), r"scales: expected torch.float16 \[8, 2\] for f16 scales per group of 128"),
        (dict(zeros=None), "zeros: zero_point=int needs zeros"),
        (dict(zeros=q.zeros.float()), r"zeros: expected torch.uint8"),
        (dict(zeros=q.zeros + 16), r"zero points of u4 lie in \[0, 15\]"),
        (dict(g_idx=None), "g_idx: the format needs g_idx"),
        (dict(g_idx=q.g_idx.long()), r"g_idx: expected int32 \[256\]"),
        (dict(global_scale=torch.ones(1)), "global_scale: the format takes no global scale"),
        (dict(shape=(8, 255)), r"data: expected uint8 \[8, 128\]|group=128 does not divide"),
    ]
    for patch, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            QuantizedTensor(**{**parts, **patch})


def test_activations_per_token_are_amax_over_max_in_f32() -> None:
    x = torch.randn(5, 96, generator=torch.Generator().manual_seed(8)) * 4
    x[3] = 0  # an all-zero token gets scale 1 and zero codes
    qa = quantize_activation(x, presets.get("fp8_channel"))
    amax = x.abs().amax(1, keepdim=True)
    expect = torch.where(amax > 0, amax / 448, 1.0)
    assert torch.equal(qa.scales, expect)
    assert torch.equal(qa.codes(), (x / expect).to(torch.float8_e4m3fn).view(torch.uint8))
    s8 = quantize_activation(x, presets.get("w8a8_int8"))
    s = torch.where(amax > 0, amax / 127, 1.0)
    assert torch.equal(codec.decode(s8.codes(), dtypes.s8), torch.round(x / s))


def test_nvfp4_activations_use_the_same_two_level_rule_as_weights() -> None:
    x = torch.randn(6, 64, generator=torch.Generator().manual_seed(9))
    qa = quantize_activation(x, presets.get("nvfp4"))
    qw = quantize(x, "nvfp4_w4a16")  # the same numbers treated as a weight
    assert torch.equal(qa.data, qw.data) and torch.equal(qa.scales, qw.scales) and torch.equal(qa.global_scale, qw.global_scale)
    fixed = quantize_activation(x, presets.get("nvfp4"), global_scale=0.01)
    assert float(fixed.global_scale) == pytest.approx(0.01)


def test_static_activation_scale_saturates_and_must_be_given() -> None:
    fmt = ActivationFormat(dtypes.s8, ActScaling.STATIC)
    x = torch.tensor([[0.5, -3.0, 100.0, 0.26]])
    qa = quantize_activation(x, fmt, scale=0.5)
    assert codec.decode(qa.codes(), dtypes.s8).tolist() == [[1.0, -6.0, 127.0, 1.0]]
    assert torch.equal(dequantize(qa), torch.tensor([[0.5, -3.0, 63.5, 0.5]]))
    with pytest.raises(InvalidInputError, match="static activation format needs scale="):
        quantize_activation(x, fmt)
    with pytest.raises(InvalidInputError, match="scale= is for static formats"):
        quantize_activation(x, presets.get("fp8_channel"), scale=1.0)
    with pytest.raises(InvalidInputError, match="expected one positive finite number"):
        quantize_activation(x, fmt, scale=-1.0)
    with pytest.raises(InvalidInputError, match="16-bit"):
        quantize_activation(x, presets.get("gptq_int4"))


@pytest.mark.gpu
def test_cuda_quantizes_exactly_as_cpu() -> None:
    w = torch.randn(64, 256)
    for name in ("gptq_int4", "nvfp4", "mxfp4", "fp8_block", "w4a4_int4"):
        cpu, gpu = quantize(w, name), quantize(w.cuda(), name)
        assert torch.equal(gpu.data.cpu(), cpu.data) and torch.equal(gpu.scales.cpu(), cpu.scales), name
        assert torch.equal(dequantize(gpu).cpu(), dequantize(cpu)), name


@pytest.mark.parametrize("name", [n for n in presets.names() if not presets.get(n).weight.act_order])
def test_cells_by_runs_reduce_and_broadcast_as_the_per_element_index(name: str) -> None:
    # quantize and dequantize take contiguous scale cells (tensor, channel, groups in order) by reshapes; the
    # per-element index (blocks, act order) must give bit for bit the same codes, scales, zeros and values
    wf = presets.get(name).weight
    x = torch.randn(96, 512) * torch.exp2(torch.randint(-8, 8, (96, 1)).float()) + 0.1
    gs = quantized._global_scale(x, wf.dtype, wf.scale.dtype) if wf.global_scale else None
    runs = quantized.CellMap(wf.scale, 96, 512, None, x.device)
    index = quantized.CellMap(wf.scale, 96, 512, None, x.device, use_index=True)
    a = quantized._quantize_cells(x, wf.dtype, wf.scale, wf.zero_point, runs, gs, False, "w")
    b = quantized._quantize_cells(x, wf.dtype, wf.scale, wf.zero_point, index, gs, False, "w")
    for got, want in zip(a, b):
        assert (got is None and want is None) or torch.equal(got, want)
    values = torch.randn(runs.rows * runs.cols, dtype=torch.float64)
    assert torch.equal(runs.expand(values), index.expand(values))
    assert torch.equal(runs.reduce(x, "amin"), index.reduce(x, "amin"))


def test_float64_values_beyond_float32s_range_are_refused_not_turned_into_inf() -> None:
    # quantization computes in float32: 1e39 would become inf after a finiteness check on the float64 input, and
    # mxfp4 would then corrupt the whole block silently
    w = torch.randn(2, 128, dtype=torch.float64)
    w[0, 3] = 1e39
    for name in ("mxfp4", "nvfp4_w4a16", "gptq_int4"):
        with pytest.raises(InvalidInputError, match=r"w holds 1 values beyond float32's range \(first at \[0, 3\]: 1e\+39\)"):
            quantize(w, name)
    with pytest.raises(InvalidInputError, match=r"x holds 1 values beyond float32's range .*allowed: \|values\| <= 3.4"):
        quantize_activation(w, presets.get("nvfp4"))
    w[0, 3] = 3.0e38  # inside float32's range: accepted
    assert torch.isfinite(dequantize(quantize(w, "fp8_channel_w8a16"))).all()


def test_a_floating_point_or_wrapping_g_idx_is_refused_not_truncated() -> None:
    w = torch.randn(4, 256)
    g = (torch.arange(256) // 128).int()
    with pytest.raises(InvalidInputError, match=r"g_idx is torch.float32; expected an integer tensor"):
        quantize(w, "gptq_int4_act_order", g_idx=g.float() * 0.9)  # 0.9 would have become group 0
    with pytest.raises(InvalidInputError, match=r"g_idx is torch.bool; expected an integer tensor"):
        quantize(w, "gptq_int4_act_order", g_idx=g.bool())
    with pytest.raises(InvalidInputError, match=r"groups in \[0, 2\), got \[0, 4294967297\]"):
        quantize(w, "gptq_int4_act_order", g_idx=g.long() + (g.long() << 32))  # would wrap to g under int32
    q = quantize(w, "gptq_int4_act_order", g_idx=g.to(torch.int16))  # any integer dtype, stored as int32
    assert q.g_idx is not None and q.g_idx.dtype is torch.int32 and torch.equal(q.g_idx, g)


def test_nvfp4_blocks_far_below_the_amax_offer_clamp_not_a_global_scale_the_format_has() -> None:
    # The global scale puts the tensor's amax at 6 * 448; a 16-element block more than ~2**-10 / 448 below it needs
    # an e4m3 scale under 2**-10, which rounds to 0. clamp=True raises it to 2**-9 (e4m3's smallest value).
    w = torch.randn(4, 64, generator=torch.Generator().manual_seed(12))
    w[1, 16:32] = torch.randn(16, generator=torch.Generator().manual_seed(13)) * 1e-7
    for call in (lambda c: quantize(w, "nvfp4_w4a16", clamp=c), lambda c: quantize_activation(w, presets.get("nvfp4"), clamp=c)):
        with pytest.raises(InvalidInputError, match=r"1 of 16 fall below its smallest value 0.00195") as info:
            call(False)
        message = str(info.value)
        assert "global scale maps" in message and "clamp=True, which raises such scales to 0.00195" in message
        assert "a global scale," not in message and "or a global scale" not in message
        q = call(True)
        assert int(q.scales[1, 1]) == 0x01  # e4m3 code 1: 2**-9
        assert float((dequantize(q) - w)[1, 16:32].abs().max()) <= 0.25 * 2.0**-9 * float(q.global_scale)
    # formats without a global scale still hear of one
    with pytest.raises(InvalidInputError, match="a global scale, or clamp=True"):
        quantize(torch.randn(4, 64) * 1e-7, WeightFormat(dtypes.e4m3, ScaleSpec(Granularity.CHANNEL, dtypes.e4m3)))


def _round_float64_to(x: np.ndarray, mantissa_bits: int) -> np.ndarray:
    """x (normal float64 values whose result is normal too) rounded once to ``mantissa_bits`` fraction bits, ties to
    even, by integer arithmetic on the bit pattern: an oracle that never passes through float32."""
    shift = 52 - mantissa_bits
    bits = x.view(np.int64)
    bits = (bits + (1 << (shift - 1)) - 1 + ((bits >> shift) & 1)) >> shift << shift
    return bits.view(np.float64)


def test_dequantize_to_16_bits_rounds_the_float64_value_once() -> None:
    # A code times an f32 scale has up to 28 significant bits; cast through float32 it was rounded twice. These
    # scales put 1.125 * s and 1.625 * s a few float32 ulps above or below the f16 / bf16 midpoints 1 + 2**-11 and
    # 1 + 2**-8 (e.g. 1.125 * 0.88932294 = 1.000488303..., which is 1.0009765625 in f16, but 1.0 through float32).
    words = [1063496362, 1063496363, 1058905482, 1063547335, 1063547336, 1058940770, 1058940771]
    scales = torch.tensor(words, dtype=torch.int32).view(torch.float32).reshape(-1, 1)
    values = torch.tensor([1.125, 1.625, -1.125, -1.625, 0.5, 3.0, -448.0, 2.0**-9])
    codes = codec.encode(values.repeat(len(words), 1), dtypes.e4m3)
    q = QuantizedTensor(presets.get("fp8_channel_w8a16"), tuple(codes.shape), codes, scales)
    exact = dequantize(q, torch.float64).numpy()
    np.testing.assert_array_equal(dequantize(q, torch.float16).numpy(), exact.astype(np.float16))  # numpy: direct
    np.testing.assert_array_equal(dequantize(q, torch.bfloat16).double().numpy(), _round_float64_to(exact, 7))
    assert (dequantize(q, torch.float16).double().numpy() != exact.astype(np.float32).astype(np.float16)).any()
