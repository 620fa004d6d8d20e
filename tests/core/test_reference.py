"""reference_gemm by the format definition, and the tolerance table that judges kernels against it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from humming.core import codec, dtypes, presets, tolerances
from humming.core.formats import ActivationFormat, ActScaling, Granularity, QuantFormat, ScaleSpec, WeightFormat, ZeroPointSpec
from humming.core.quantized import dequantize, quantize, quantize_activation
from humming.core.reference import check_gemm, reference_gemm, reference_operands, reference_product
from humming.errors import InvalidInputError


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _quantized(name: str, n: int, k: int, seed: int = 0):  # type: ignore[no-untyped-def]
    fmt = presets.get(name)
    g_idx = None
    if fmt.weight.act_order:
        g_idx = (torch.randperm(k, generator=_gen(seed + 1)) % (k // fmt.weight.scale.group)).int()
    return quantize(torch.randn(n, k, generator=_gen(seed)), fmt, g_idx=g_idx)


def test_gptq_act_order_reference_is_the_formula_written_out() -> None:
    q = _quantized("gptq_int4_act_order", 24, 256)
    x = torch.randn(5, 256, generator=_gen(3)).to(torch.bfloat16)
    bias = torch.randn(24, generator=_gen(4))
    codes, zeros, scales, g = q.codes().numpy(), q.zeros.numpy(), q.scales.numpy(), q.g_idx.numpy()
    w = np.empty((24, 256))
    for k in range(256):  # w[n, k] = (code[n, k] - zero[n, g(k)]) * scale[n, g(k)], with g(k) = g_idx[k]
        w[:, k] = (codes[:, k].astype(np.float64) - zeros[:, g[k]]) * scales[:, g[k]].astype(np.float64)
    expect = x.double().numpy() @ w.T + bias.double().numpy()
    out = reference_gemm(x, q, bias)
    assert out.dtype is torch.float64 and out.shape == (5, 24)
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-13, atol=1e-13)


def test_the_product_of_the_operands_is_reference_gemm() -> None:
    q = _quantized("awq_int4", 40, 256, seed=11)
    x = torch.randn(6, 256, generator=_gen(12)).to(torch.float16)
    bias = torch.randn(40, generator=_gen(13))
    xd, wd = reference_operands(x, q)
    torch.testing.assert_close(reference_product(xd, wd, bias), reference_gemm(x, q, bias), rtol=0, atol=0)
    torch.testing.assert_close(reference_product(xd, wd), reference_gemm(x, q), rtol=0, atol=0)
    with pytest.raises(InvalidInputError, match="bias must be"):
        reference_product(xd, wd, torch.randn(39))


def test_quantized_activation_formats_quantize_x_first() -> None:
    q = _quantized("fp8_block", 130, 256)
    x = torch.randn(3, 256, generator=_gen(5))
    xq = dequantize(quantize_activation(x, q.format.activation), torch.float64)
    assert not torch.equal(xq, x.double())
    torch.testing.assert_close(reference_gemm(x, q), xq @ dequantize(q, torch.float64).T, rtol=0, atol=0)


def test_static_scales_and_global_scales_reach_the_activations() -> None:
    static = QuantFormat(presets.get("w8a8_int8").weight, ActivationFormat(dtypes.s8, ActScaling.STATIC))
    q = quantize(torch.randn(8, 64, generator=_gen(6)), static)
    x = torch.randn(2, 64, generator=_gen(7))
    xd, _ = reference_operands(x, q, input_scale=0.02)
    torch.testing.assert_close(xd, (torch.round(x / 0.02).clamp(-128, 127) * 0.02).double())
    nv = _quantized("nvfp4", 8, 64)
    a, _ = reference_operands(x, nv, input_global_scale=0.001)
    b, _ = reference_operands(x, nv)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("name", presets.names())
def test_every_preset_has_a_reference_close_to_the_float_product(name: str) -> None:
    q = _quantized(name, 40, 512)
    x = torch.randn(7, 512, generator=_gen(8))
    out = reference_gemm(x, q)
    plain = x.double() @ dequantize(q, torch.float64).T
    rel = float((out - plain).norm() / plain.norm())
    if q.format.activation.is_quantized:
        assert 0 < rel < 0.25  # only activation rounding separates them
    else:
        assert rel == 0


def test_bad_operands_raise() -> None:
    q = _quantized("gptq_int4", 16, 128)
    with pytest.raises(InvalidInputError, match=r"x must be a floating-point \[M, 128\] tensor"):
        reference_gemm(torch.randn(2, 64), q)
    with pytest.raises(InvalidInputError, match=r"bias must be \[16\]"):
        reference_gemm(torch.randn(2, 128), q, torch.randn(15))
    with pytest.raises(InvalidInputError, match="activations are 16-bit"):
        reference_gemm(torch.randn(2, 128), q, input_scale=1.0)
    with pytest.raises(InvalidInputError, match="must be a QuantizedTensor"):
        reference_gemm(torch.randn(2, 128), torch.randn(16, 128))  # type: ignore[arg-type]


# ---- tolerances -------------------------------------------------------------------------------------
M, N, K = 16, 48, 2048


def _a16_kernel(x: torch.Tensor, q, scale_bug: float = 1.0) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """What a Marlin-style kernel computes: W dequantized into bf16, f32 accumulation, bf16 output."""
    if scale_bug != 1.0:  # one scale group of one row off: the kind of bug the table must catch
        scales = q.scales.clone()
        scales[3, 5] = (scales[3, 5].float() * scale_bug).to(scales.dtype)
        q = dataclasses.replace(q, scales=scales)
    w = dequantize(q).to(torch.bfloat16).float()
    return (x.float() @ w.T).to(torch.bfloat16)


def test_a_bf16_kernel_passes_and_a_wrong_scale_fails() -> None:
    q = _quantized("gptq_int4", N, K)
    x = torch.randn(M, K, generator=_gen(9)).to(torch.bfloat16)
    ref = reference_gemm(x, q)
    xd, wd = reference_operands(x, q)
    tol = tolerances.tolerance(dtypes.bf16, dtypes.u4, dtypes.bf16)
    tolerances.check(_a16_kernel(x, q), ref, xd, wd, tol)
    with pytest.raises(AssertionError, match=r"outside tolerance; worst at \[\d+, 3\]"):
        tolerances.check(_a16_kernel(x, q, scale_bug=1.25), ref, xd, wd, tol)


def test_check_gemm_judges_a_16_bit_output_by_the_table_and_refuses_other_dtypes() -> None:
    # check_gemm: the reference, its operands and the tolerance rule of x's, the weight's and out's dtypes in one call
    # (the GPU tests, bench_wna16 --verify and profile_wna16 --verify all go through it).
    q = _quantized("gptq_int4", N, K)
    x = torch.randn(M, K, generator=_gen(9)).to(torch.bfloat16)
    bias = torch.randn(N, generator=_gen(12)).to(torch.bfloat16)
    good = (_a16_kernel(x, q).float() + bias.float()).to(torch.bfloat16)
    check_gemm(good, x, q, bias)
    with pytest.raises(AssertionError, match="outside tolerance"):
        check_gemm(_a16_kernel(x, q, scale_bug=1.25), x, q)
    with pytest.raises(AssertionError, match="outside tolerance"):
        check_gemm(_a16_kernel(x, q), x, q, bias)  # the bias left out
    with pytest.raises(InvalidInputError, match="allowed: torch.float16, torch.bfloat16"):
        check_gemm(good.float(), x, q, bias)


def test_an_int8_kernel_with_f32_epilogue_passes_and_a_dropped_group_of_k_fails() -> None:
    q = _quantized("w8a8_int8", N, K)
    x = torch.randn(M, K, generator=_gen(10))
    qa = quantize_activation(x, q.format.activation)
    acc = codec.decode(qa.codes(), dtypes.s8, out_dtype=torch.float64) @ codec.decode(q.codes(), dtypes.s8, out_dtype=torch.float64).T
    out = (acc.float() * qa.scales * q.scales.T).to(torch.float16)  # exact s32 sums, f32 scaling, f16 output
    xd, wd = reference_operands(x, q)
    tol = tolerances.tolerance(dtypes.s8, dtypes.s8, dtypes.f16)
    tolerances.check(out, reference_gemm(x, q), xd, wd, tol)
    short = (xd[:, 128:] @ wd[:, 128:].T).to(torch.float16)  # a kernel that skipped the first K tile
    with pytest.raises(AssertionError, match="outside tolerance"):
        tolerances.check(short, reference_gemm(x, q), xd, wd, tol)


def test_nan_output_fails_and_the_bound_grows_with_k() -> None:
    q = _quantized("fp8_channel_w8a16", 8, 256)
    x = torch.randn(4, 256, generator=_gen(11))
    ref = reference_gemm(x, q)
    xd, wd = reference_operands(x, q)
    tol = tolerances.tolerance(dtypes.f16, dtypes.e4m3, dtypes.f32)
    out = ref.float().clone()
    out[1, 2] = float("nan")
    with pytest.raises(AssertionError, match=r"1 of 32 outputs outside tolerance; worst at \[1, 2\]"):
        tolerances.check(out, ref, xd, wd, tol)
    mag = torch.ones(1)
    assert float(tol.bound(torch.zeros(1), mag, 4096)) > float(tol.bound(torch.zeros(1), mag, 64))


def test_the_table_covers_every_activation_weight_output_triple_and_refuses_others() -> None:
    for act in tolerances.ACTIVATION_DTYPES:
        for name in presets.names():
            for out in tolerances.OUTPUT_DTYPES:
                t = tolerances.tolerance(act, presets.get(name).weight.dtype, out)
                assert 0 < t.out_rtol <= 2**-7 and t.operand_eps > 0
    assert tolerances.tolerance(dtypes.s8, dtypes.s4, dtypes.f16).accum_eps == 0  # integer MMAs sum exactly
    assert tolerances.tolerance(dtypes.e4m3, dtypes.e2m1, dtypes.bf16).accum_eps == 2.0**-14
    with pytest.raises(InvalidInputError, match="no tolerance for activation e5m2"):
        tolerances.tolerance(dtypes.e5m2, dtypes.e4m3, dtypes.f16)


def test_a_correctly_rounded_subnormal_output_passes_and_a_wrong_one_fails() -> None:
    from humming.core import dtypes as dt
    from humming.core.tolerances import check, tolerance

    tol = tolerance(dt.f16, dt.s4, dt.f16)
    x = torch.full((1, 2), 2.0**-14)
    w = torch.tensor([[0.3, -0.2]])
    ref = (x.double() @ w.double().T)  # about 2**-14 / 10: an f16 subnormal
    out = ref.to(torch.float16)  # correctly rounded into f16
    check(out.double(), ref, x, w, tol)
    with pytest.raises(AssertionError):
        check((ref + 50 * 2.0**-24).to(torch.float16).double(), ref, x, w, tol)


def _truncated(t: torch.Tensor) -> torch.Tensor:
    """f32 values with the low two mantissa bits cleared: a sum rounded toward zero at 2**-22, as the table allows
    tensor cores' accumulators (module docstring of humming.core.tolerances)."""
    return (t.contiguous().view(torch.int32) & ~3).view(torch.float32)


def _zero_on_sums_kernel(x: torch.Tensor, q, taken: int = 136) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """What a kernel that leaves the zero on its partial sums computes (dequant/route.cuh kZeroOnSums): the MMA takes
    s4 codes as 128 + (c + 8) and sums them a k16 step at a time into a truncating f32 accumulator; a group's sum
    then loses ``taken`` (right: 136) x the group's exact sum(x) and takes the group's scale."""
    group = q.format.weight.scale.group
    codes = dequantize(dataclasses.replace(q, scales=torch.ones_like(q.scales))).float()  # c - zero, exact
    out = torch.zeros(x.shape[0], codes.shape[0])
    xf = x.float()
    for g in range(codes.shape[1] // group):
        part = torch.zeros_like(out)
        for k0 in range(g * group, (g + 1) * group, 16):
            part = _truncated(part + xf[:, k0:k0 + 16] @ (codes[:, k0:k0 + 16] + 136).T)
        asum = xf[:, g * group:(g + 1) * group].double().sum(1, keepdim=True)
        out += (part - (taken * asum).float()) * q.scales[:, g].float()
    return out.to(torch.bfloat16)


def test_sums_that_carry_the_zero_are_judged_with_it_and_a_wrong_zero_still_fails() -> None:
    # Rows whose codes are all the zero (value 0) but whose scales are not: the reference is exactly 0 there, and a
    # kernel whose sums carry 136 x scale x sum(x) leaves their rounding (the H200's s4 one-token kernel left 2-5e-4,
    # NOTES-wna16 run 23). check(carried=) weighs that; a zero off by one is still far outside it.
    fmt = QuantFormat(WeightFormat(dtypes.s4, ScaleSpec(Granularity.GROUP, dtypes.bf16, 128), ZeroPointSpec.NONE))
    w = torch.randn(N, K, generator=_gen(21))
    q = quantize(w, fmt)
    data = q.data.clone()
    data[:8] = 0  # s4 codes of 0 in rows 0-7 (two's complement nibbles)
    q = dataclasses.replace(q, data=data)
    # Mean 0: small activations' products are finer than the truncated sums (mean 4's come out exact here).
    x = torch.randn(1, K, generator=_gen(22)).to(torch.bfloat16)
    out = _zero_on_sums_kernel(x, q)
    xd, wd = reference_operands(x, q)
    ref = reference_gemm(x, q)
    assert bool((ref[:, :8] == 0).all()) and bool((out[:, :8] != 0).any())  # the residue this is about
    tol = tolerances.tolerance(dtypes.bf16, dtypes.s4, dtypes.bf16)
    carried = (136.0 * q.scales.float()).repeat_interleave(128, dim=1)
    with pytest.raises(AssertionError, match="outside tolerance"):
        tolerances.check(out, ref, xd, wd, tol)
    tolerances.check(out, ref, xd, wd, tol, carried=carried)
    check_gemm(out, x, q, carried=carried)
    with pytest.raises(AssertionError, match="outside tolerance"):  # the zero taken off the sums one too small
        tolerances.check(_zero_on_sums_kernel(x, q, taken=135), ref, xd, wd, tol, carried=carried)
    with pytest.raises(InvalidInputError, match="carried must be shaped like w"):
        tolerances.check(out, ref, xd, wd, tol, carried=carried[:, :64])


def test_clamp_reaches_the_activation_quantization_of_inputs_with_outliers() -> None:
    # One outlier ("massive activation") puts the NVFP4 global scale so high that the ordinary 16-element blocks
    # need e4m3 scales below its smallest value: refused by default, built with clamp=True as quantize_activation does.
    q = _quantized("nvfp4", 16, 256)
    x = torch.randn(4, 256, generator=_gen(21)) * 1e-3
    x[0, 7] = 3000.0
    with pytest.raises(InvalidInputError, match="clamp=True"):
        reference_gemm(x, q)
    xd, wd = reference_operands(x, q, clamp=True)
    assert torch.equal(xd, dequantize(quantize_activation(x, q.format.activation, clamp=True), torch.float64))
    torch.testing.assert_close(reference_gemm(x, q, clamp=True), xd @ wd.T, rtol=0, atol=0)
    assert float((xd - x.double()).norm() / x.double().norm()) < 1e-4
