"""The one table of tolerances for comparing a kernel's output against ``reference_gemm``, per (activation,
weight, output) dtype.

The rule. A kernel computes out[m, n] = sum_k x[m, k] * w[n, k] from the same quantized operands as the
reference, so it differs only by rounding, in three places:

1. operands: with 16-bit activations the dequantized weight (code - zero) * scale is rounded into the MMA
   dtype (f16: u = 2**-11, bf16: u = 2**-8 relative per product); with quantized activations the MMA takes
   the codes exactly and the scales are applied in f32 (u = 2**-22, a few f32 roundings);
2. accumulation: each of the K additions rounds relative to the running sum. With f32 accumulators
   u_acc = 2**-22 (tensor cores may truncate rather than round: two bits of slack over 2**-24); integer MMAs accumulate exactly
   in s32; FP8/FP4 MMAs accumulate with about 14 bits (DeepSeek-V3 technical report, arXiv 2412.19437,
   section 3.3.2 "Increasing Accumulation Precision", measured on H800),
   u_acc = 2**-14;
3. output: one rounding into the output dtype, at most one ulp: out_rtol = 2**-mantissa_bits(out); below the
   smallest normal the ulp stops shrinking, so the output also has an absolute resolution, its smallest
   subnormal: out_atol (f16: 2**-24). Without it a correctly rounded f16 subnormal output can fail.

Products err independently, so terms 1 and 2 grow like a random walk: with mag[m, n] = sqrt(sum_k (x w)^2)
(the root of the sum of squared products, in float64), the accumulated operand error is about u * mag and the
accumulation error about u_acc * sqrt(K) * mag (partial sums grow like sqrt(k)). The check is

    |out - ref| <= out_atol + out_rtol * |ref| + SIGMAS * (u + u_acc * sqrt(K)) * mag,   SIGMAS = 6

six standard deviations (a one-in-10**9 miss for Gaussian-like errors), still below what a real bug costs: a
wrong or dropped scale group moves an output by about mag / sqrt(K / group), 0.18 mag for K = 4096 in groups
of 128, eight times the loosest allowance (bf16: 6 * 2**-8 = 0.023 mag) and hundreds of times the others.

A kernel that leaves a constant zero on its f32 partial sums (dequant/route.cuh kZeroOnSums: the MMA takes the
codes as 128 + c, and the sums lose (128 + zero) x scale x sum(a) afterwards) accumulates products of those carried
weights too, so its accumulation error scales with them: ``check(..., carried=)`` puts their magnitude into the
accumulation term, mag_acc = sqrt(sum_k (x (|w| + |carried|))^2). It matters where w is small beside them: a row
whose codes are all its zero but whose scales are not comes out at ~u_acc * sqrt(K) * mag_acc, not 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from humming.core import dtypes
from humming.core.dtypes import DType
from humming.errors import InvalidInputError

SIGMAS = 6.0
_F32_OPS = 2.0**-22  # a few float32 roundings (scales applied in f32, or f32 accumulation)
_U_16BIT = {dtypes.f16: 2.0**-11, dtypes.bf16: 2.0**-8}  # unit roundoff of the 16-bit MMA operand dtypes
_LOW_PRECISION_ACC = 2.0**-14  # FP8/FP4 tensor-core accumulation keeps about 14 bits (arXiv 2412.19437, 3.3.2)

ACTIVATION_DTYPES: tuple[DType, ...] = (dtypes.f16, dtypes.bf16, dtypes.s8, dtypes.e4m3, dtypes.s4, dtypes.e2m1)
OUTPUT_DTYPES: tuple[DType, ...] = (dtypes.f16, dtypes.bf16, dtypes.f32)


@dataclass(frozen=True)
class Tolerance:
    """How far a kernel may be from the reference (rule in the module docstring)."""

    operand_eps: float  # u: relative error of one product from rounding the operands into the MMA dtype
    accum_eps: float  # u_acc: relative rounding of one accumulator addition
    out_rtol: float  # one ulp of the output dtype, relative
    out_atol: float = 0.0  # the output dtype's smallest subnormal: its resolution near zero

    def bound(self, ref: torch.Tensor, mag: torch.Tensor, k: int, mag_acc: torch.Tensor | None = None) -> torch.Tensor:
        """The allowed |out - ref| per element (float64); ``mag_acc``: the accumulation's magnitude where it is not
        ``mag`` (sums that carry more than the products: the module docstring)."""
        acc = mag if mag_acc is None else mag_acc
        return self.out_atol + self.out_rtol * ref.abs() + SIGMAS * (self.operand_eps * mag + self.accum_eps * math.sqrt(k) * acc)


def _weight_dtypes() -> tuple[DType, ...]:
    ints = tuple(dtypes.DType.parse(f"{s}{b}") for b in range(1, 9) for s in "su" if not (s == "s" and b == 1))
    floats = (dtypes.e2m1, dtypes.e0m3, dtypes.e3m2, dtypes.e2m3, dtypes.e4m3, dtypes.e5m2, dtypes.e3m4)
    return ints + floats


def _rule(act: DType, weight: DType, out: DType) -> Tolerance:
    out_rtol, out_atol = 2.0 ** -out.mantissa_bits, out.smallest_subnormal
    if act in _U_16BIT:
        return Tolerance(_U_16BIT[act], _F32_OPS, out_rtol, out_atol)
    accum = 0.0 if (act.is_int and weight.is_int) else _LOW_PRECISION_ACC
    return Tolerance(_F32_OPS, accum, out_rtol, out_atol)


#: THE table: (activation dtype, weight element dtype, output dtype) -> Tolerance.
TABLE: dict[tuple[DType, DType, DType], Tolerance] = {
    (a, w, o): _rule(a, w, o) for a in ACTIVATION_DTYPES for w in _weight_dtypes() for o in OUTPUT_DTYPES
}


def tolerance(activation: DType, weight: DType, out: DType) -> Tolerance:
    """The table entry; ``activation`` is the MMA's A dtype (f16/bf16 for 16-bit activation formats)."""
    key = (DType.parse(activation), DType.parse(weight), DType.parse(out))
    found = TABLE.get(key)
    if found is None:
        raise InvalidInputError(
            f"no tolerance for activation {key[0]}, weight {key[1]}, output {key[2]}; activations: "
            f"{', '.join(map(str, ACTIVATION_DTYPES))}; outputs: {', '.join(map(str, OUTPUT_DTYPES))}"
        )
    return found


def magnitude(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """mag[m, n] = sqrt(sum_k (x[m, k] * w[n, k])**2), float64: the scale of rounding errors in a dot product."""
    xd, wd = x.to(torch.float64), w.to(torch.float64)
    return torch.sqrt((xd * xd) @ (wd * wd).T)


def check(out: torch.Tensor, ref: torch.Tensor, x: torch.Tensor, w: torch.Tensor, tol: Tolerance, *,
          carried: torch.Tensor | None = None) -> None:
    """Raise AssertionError naming the worst element when ``out`` is outside ``tol`` of ``ref``.

    ``x`` [M, K] and ``w`` [N, K] are the operands the reference used (``reference.reference_operands``).
    ``carried`` [N, K]: weights the kernel's f32 sums carry beside w and take out again (module docstring).
    """
    if out.shape != ref.shape:
        raise AssertionError(f"output shape {list(out.shape)} != reference shape {list(ref.shape)}")
    if carried is not None and carried.shape != w.shape:
        raise InvalidInputError(f"check: carried must be shaped like w {list(w.shape)}, got {list(carried.shape)}")
    diff = (out.to(torch.float64) - ref.to(torch.float64)).abs()
    mag_acc = None if carried is None else magnitude(x, w.to(torch.float64).abs() + carried.to(w.device, torch.float64).abs())
    allowed = tol.bound(ref.to(torch.float64), magnitude(x, w), x.shape[1], mag_acc)
    bad = ~(diff <= allowed)  # NaN in out fails too
    if bool(bad.any()):
        ratio = torch.where(bad, torch.nan_to_num(diff / allowed.clamp_min(1e-300), nan=math.inf), 0.0)
        worst = [int(i) for i in torch.nonzero(ratio == ratio.max())[0]]
        i = tuple(worst)
        raise AssertionError(
            f"{int(bad.sum())} of {out.numel()} outputs outside tolerance; worst at {worst}: out {float(out[i]):.6g}, "
            f"ref {float(ref[i]):.6g}, |diff| {float(diff[i]):.3g} > allowed {float(allowed[i]):.3g} ({tol})"
        )
