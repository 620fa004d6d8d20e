"""CPU reference from the format definition: dequantize both operands, float64 matmul; and the rounding bound.

``reference_gemm`` is what every kernel is compared against (through ``humming.core.tolerances``). It works on
CPU and CUDA tensors alike; float64 holds every product of the presets exactly.
"""

from __future__ import annotations

import math

import torch

from humming.core import codec, dtypes, tolerances
from humming.core.quantized import CellMap, QuantizedTensor, dequantize, quantize_activation
from humming.core.formats import ZeroPointSpec
from humming.errors import InvalidInputError


def reference_operands(x: torch.Tensor, qweight: QuantizedTensor, *, input_scale: torch.Tensor | float | None = None,
                       input_global_scale: torch.Tensor | float | None = None,
                       clamp: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, W) as the GEMM sees them, float64: x [M, K] quantized by the activation format (if any), W [N, K].

    ``clamp`` goes to quantize_activation (e.g. NVFP4 blocks far below an outlier, whose scales underflow)."""
    if not isinstance(qweight, QuantizedTensor):
        raise InvalidInputError(f"reference: qweight must be a QuantizedTensor, got {type(qweight).__name__}")
    n, k = qweight.shape
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.dtype.is_floating_point or x.shape[1] != k:
        got = f"{x.dtype} {list(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise InvalidInputError(f"reference: x must be a floating-point [M, {k}] tensor (K of the weight), got {got}")
    act = qweight.format.activation
    if act.is_quantized:
        xq = quantize_activation(x, act, scale=input_scale, global_scale=input_global_scale, clamp=clamp)
        xd = dequantize(xq, torch.float64)
    else:
        if input_scale is not None or input_global_scale is not None:
            raise InvalidInputError("reference: input scales given, but the format's activations are 16-bit")
        xd = x.to(torch.float64)
    return xd, dequantize(qweight, torch.float64).to(xd.device)


def reference_gemm(x: torch.Tensor, qweight: QuantizedTensor, bias: torch.Tensor | None = None, *,
                   input_scale: torch.Tensor | float | None = None,
                   input_global_scale: torch.Tensor | float | None = None, clamp: bool = False) -> torch.Tensor:
    """out[m, n] = sum_k x'[m, k] * W[n, k] + bias[n], float64 [M, N].

    x' is x itself for 16-bit activation formats, else x quantized and dequantized by the activation format
    (``input_scale``: the static scale; ``input_global_scale``: NVFP4's, dynamic when not given; ``clamp``:
    quantize_activation's, for activation scales out of the scale dtype's range).
    """
    xd, wd = reference_operands(x, qweight, input_scale=input_scale, input_global_scale=input_global_scale,
                                clamp=clamp)
    return reference_product(xd, wd, bias)


def reference_product(xd: torch.Tensor, wd: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """xd [M, K] @ wd [N, K]^T (+ bias [N]) in float64: reference_gemm from operands already dequantized
    (``reference_operands``), for callers that need both and would otherwise dequantize the weight twice."""
    out = xd @ wd.T
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != wd.shape[0]:
            raise InvalidInputError(f"reference: bias must be [{wd.shape[0]}] (N), got {list(bias.shape)}")
        out = out + bias.to(device=out.device, dtype=torch.float64)
    return out


def check_gemm(out: torch.Tensor, x: torch.Tensor, qweight: QuantizedTensor, bias: torch.Tensor | None = None, *,
               carried: torch.Tensor | None = None) -> None:
    """Raise AssertionError (tolerances.check's message, naming the worst element) where ``out`` [M, N] lies outside
    the tolerance of the float64 reference of 16-bit ``x`` [M, K] and ``qweight`` (+ ``bias``): the rule of x's dtype,
    the weight dtype and out's dtype, written down once in humming.core.tolerances (``carried``: tolerances.check's)."""
    act, out_dt = dtypes.DType.parse(x.dtype), dtypes.DType.parse(out.dtype)
    if act not in (dtypes.f16, dtypes.bf16) or out_dt not in (dtypes.f16, dtypes.bf16):
        raise InvalidInputError(f"check_gemm: x is {x.dtype} and out {out.dtype}; allowed: torch.float16, "
                                "torch.bfloat16 (formats with 16-bit activations)")
    xd, wd = reference_operands(x, qweight)
    tol = tolerances.tolerance(act, qweight.format.weight.dtype, out_dt)
    tolerances.check(out, reference_product(xd, wd, bias), xd, wd, tol, carried=carried)


def quantization_error_bound(w: torch.Tensor, q: QuantizedTensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The theoretical bound of |w - dequantize(q)| per element, given q's stored scales: (bound, clamped).

    An element in range is off by at most half a step of the element grid where it lies, times its scale:
    1/2 for integers, 2**(e - mantissa_bits - 1) for a float in the binade 2**e (subnormals: the smallest
    binade's step). An element beyond the grid (``clamped``) is off by exactly its distance to the grid's end.
    Computed from w and the scales alone, never from the codes, so it checks them.
    """
    wf = q.format.weight
    elem, spec = wf.dtype, wf.scale
    n, k = q.shape
    cmap = CellMap(spec, n, k, q.g_idx, q.data.device)
    eff = cmap.expand(codec.decode(q.scales, spec.dtype, out_dtype=torch.float64))
    if q.global_scale is not None:
        eff = eff * q.global_scale.to(torch.float64)
    t = w.to(torch.float64) / eff
    if elem.is_int:
        if q.zeros is not None:
            zdtype = elem if wf.zero_point is ZeroPointSpec.INT else spec.dtype
            t = t + cmap.expand(codec.decode(q.zeros, zdtype, out_dtype=torch.float64))
        lo, hi = float(elem.int_min), float(elem.int_max)
        beyond = torch.clamp(lo - t, min=0) + torch.clamp(t - hi, min=0)
        clamped = beyond > 0.5
        return torch.where(clamped, beyond, 0.5) * eff, clamped
    m = elem.mantissa_bits
    emin = 1 - elem.bias
    etop = max(math.floor(math.log2(elem.max_finite)), emin)  # e0m3: one binade, the subnormal grid k/8
    a = t.abs()
    e = codec.floor_log2(torch.where(a > 0, a, 1.0)).clamp(emin, etop)
    half_step = codec.pow2(e - m - 1)
    beyond = a - elem.max_finite
    clamped = beyond > codec.pow2(torch.full_like(e, etop - m - 1))
    return torch.where(clamped, beyond, half_step) * eff, clamped
