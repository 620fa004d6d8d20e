"""Group scales kept inside the range a kernel's activation dtype holds, by a power of two moved into the global scale.

A kernel that multiplies scales into its operands (not into its f32 sums) turns each scale into the activation dtype
(f16 or bf16) first. bf16 / f32 scales of a tiny or huge layer, and ue8m0 codes, can leave f16's range there: they
would be read as zeros, subnormals or inf with no error. pack stores them times 2^-e instead and puts 2^e into the
global scale, which every epilogue applies in f32 (exact: a power of two).
"""

from __future__ import annotations

import math

import torch

from humming.core import codec, dtypes
from humming.core.dtypes import DType
from humming.errors import InvalidInputError


def largest_element(element: DType) -> float:
    """The largest magnitude a weight element (a code less its zero point, as the kernel dequantises it) takes."""
    values = codec.representable_values(element)
    return float(values[torch.isfinite(values)].abs().max())


def _shifts(lo: float, hi: float, activation: DType, element: DType) -> tuple[int, int]:
    """(least, most): the e with lo x 2^-e normal and the largest element x hi x 2^-e finite in ``activation``."""
    most = math.floor(math.log2(lo / activation.smallest_normal))
    least = math.ceil(math.log2(hi * largest_element(element) / activation.max_finite))
    return least, most


def _chosen(lo: float, hi: float, least: int, most: int) -> int:
    """0 where it fits (least <= 0 <= most), else the shift that centres [lo, hi] on 1, held inside [least, most]."""
    if least <= 0 <= most:
        return 0
    return min(max(round((math.log2(lo) + math.log2(hi)) / 2), least), most)


def fit_scales(scales: torch.Tensor, activation: DType, source: DType, element: DType) -> int:
    """The power of two e such that scales x 2^-e lie in the activation dtype's normal range, and the largest
    ``element`` times the largest of them stays finite there: 0 where that holds already (nearly always), else the
    shift that centres their range on 1, as far as it fits. The factor is exact, and the kernel's epilogue takes 2^e
    with the global scale, so an f16 kernel keeps every bit bf16 or f32 scales of a tiny or huge layer have instead
    of storing zeros, subnormals or inf. Zero scales stay zero. Scales already of the activation dtype (``source``)
    are exact as stored, subnormals included: too wide a range keeps them as they are (e = 0).

    :raises InvalidInputError: a scale that is not finite, or scales of another dtype whose range is wider than the
        activation dtype holds with these elements at any power-of-two offset.
    """
    a = scales.abs()
    if not bool(torch.isfinite(a).all()):
        raise InvalidInputError(f"pack: the weight's scales hold {int((~torch.isfinite(a)).sum())} values that are not "
                                "finite (inf or NaN); every output they touch would be too")
    nonzero = a[a > 0]
    if nonzero.numel() == 0:
        return 0
    lo, hi = float(nonzero.min()), float(nonzero.max())
    least, most = _shifts(lo, hi, activation, element)
    if least <= most:
        return _chosen(lo, hi, least, most)
    if source is activation:
        return 0
    raise InvalidInputError(f"pack: the weight's scales span {lo:.3g} .. {hi:.3g}, wider than {activation}'s normal "
                            f"range ({activation.smallest_normal:.3g} .. {activation.max_finite:.3g}, with "
                            f"{element} elements up to {largest_element(element):g}) at any power-of-two offset; "
                            "pack it for bf16 activations, or quantize it with a scale per channel or smaller groups")


def fit_scale_codes(codes: torch.Tensor, decoded: torch.Tensor, activation: DType, source: DType,
                    element: DType) -> int:
    """For ue8m0 scale codes [N, groups] (powers of two 2^(code-127)), the e such that codes - e keep the weights a
    kernel dequantises into the activation dtype in range: each scale inside its normal range, and the largest
    element times the largest scale finite. 0 where that holds already (MXFP4 / MXINT4 of any usual layer), else
    chosen as fit_scales chooses. Kernels that scale the operands (not the f32 sums) turn a code into an
    activation-dtype scale, so an f16 kernel would otherwise read scales past 2^15 as inf and under 2^-24 as 0.

    Where no shift holds every scale, the largest is put at the top of the range provided each output channel's
    largest scale stays inside it: a block whose scale is then under the range is more than 2^27 (f16, e2m1) under
    another block of its own channel, so losing it is far inside the tolerance of that channel's outputs. Code 0
    (2^-127, an all-zero block's scale) is 0 in every kernel, is kept as it is and bounds nothing. e4m3 / ue4m3
    codes fit f16 and bf16 as they are (0).

    :raises InvalidInputError: a code that is not finite (ue8m0's NaN, e4m3's), or a channel whose largest scale
        cannot be kept in range with the layer's largest.
    """
    if not bool(torch.isfinite(decoded).all()):
        raise InvalidInputError(f"pack: the weight's {source} scales hold {int((~torch.isfinite(decoded)).sum())} "
                                "NaN codes; every output they touch would be NaN")
    if source is not dtypes.ue8m0:
        return 0
    used = codes[codes > 0]
    if used.numel() == 0:
        return 0
    lo, hi = int(used.min()) - 127, int(used.max()) - 127
    least, most = _shifts(2.0**lo, 2.0**hi, activation, element)
    if least <= most:
        return _chosen(2.0**lo, 2.0**hi, least, most)
    channel_max = codes.max(dim=1).values
    weakest = int(channel_max[channel_max > 0].min()) - 127  # the smallest of the channels' largest scales
    if least > weakest - math.ceil(math.log2(activation.smallest_normal)):
        raise InvalidInputError(f"pack: the weight's ue8m0 scales span 2^{lo} .. 2^{hi}, and some channel's largest is "
                                f"2^{weakest}: wider than {activation} holds with {element} elements (up to "
                                f"{largest_element(element):g}) at any power-of-two offset; pack it for bf16 "
                                "activations")
    return least


def shift_codes(codes: torch.Tensor, e: int) -> torch.Tensor:
    """ue8m0 codes times 2^e (code 0, a zero scale in every kernel, stays 0), held to 1 .. 254: fit_scale_codes keeps
    every code in range but those more than 2^126 under the largest (negligible in any kernel's f32 sums)."""
    return torch.where(codes == 0, codes, (codes.to(torch.int16) + e).clamp(1, 254).to(torch.uint8))
