"""Group scales kept inside the range a kernel's activation dtype holds, by a power of two moved into the global scale.

A kernel that multiplies scales into its operands (not into its f32 sums) turns each scale into the activation dtype
(f16 or bf16) first, and each weight it dequantises is an element times that scale, in that dtype. bf16 / f32 scales
of a tiny or huge layer, and ue8m0 codes, can leave f16's range there: they would be read as zeros, subnormals or inf
with no error. pack stores them times 2^-e instead and puts 2^e into the global scale, which every epilogue applies
in f32 (exact: a power of two).

The shift e keeps every scale normal and the largest element times the largest scale finite (the scale as the kernel
holds it, rounded to the activation dtype). Where no shift does both, the largest products are kept finite provided
each output channel's largest scale stays normal: the smaller scales of a channel then lose bits as any f16
arithmetic of them would, and a channel is never lost whole. Beyond that, pack refuses.
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


def _shift(lo: float, hi: float, weakest: float, activation: DType, element: DType, *, rounded: bool,
           exact_as_stored: bool) -> int | None:
    """The shift for nonzero scale magnitudes lo .. hi whose channels' largest are at least ``weakest``, or None.

    ``rounded``: the scales are rounded into the activation dtype (bf16 / f32 scales under f16), which can raise the
    largest by half an ulp. ``exact_as_stored``: they are of the activation dtype already, so subnormals are exact
    and e = 0 needs no normal range.
    """
    top = _rounded(hi, activation.mantissa_bits) if rounded else hi  # the largest scale as the kernel holds it
    most = math.floor(math.log2(lo / activation.smallest_normal))  # lo x 2^-e stays normal
    least = math.ceil(math.log2(top * largest_element(element) / activation.max_finite))  # products finite
    # |e| <= 126 keeps 2^e a normal float32 for the global scale (and the stored scales' ldexp finite)
    least, most = max(least, -_MAX_SHIFT), min(most, _MAX_SHIFT)
    if least <= 0 <= most:
        return 0
    if least <= most:  # centre [lo, hi] on 1, as far as the bounds allow
        return min(max(round((math.log2(lo) + math.log2(hi)) / 2), least), most)
    if exact_as_stored and least <= 0:
        return 0  # nothing overflows; the smallest stay the subnormals they are
    if least <= _MAX_SHIFT and weakest * 2.0 ** -least >= activation.smallest_normal:
        return least  # the largest at the top of the range; each channel's largest stays normal
    return None


_MAX_SHIFT = 126


def _rounded(x: float, mantissa_bits: int) -> float:
    """x rounded to ``mantissa_bits`` + 1 significant bits, to nearest even (a normal number of that precision)."""
    fraction, exponent = math.frexp(x)  # x = fraction * 2^exponent, fraction in [0.5, 1)
    steps = 2 ** (mantissa_bits + 1)
    return round(fraction * steps) / steps * 2.0**exponent  # Python's round: half to even


def _refuse(what: str, activation: DType, element: DType) -> InvalidInputError:
    wider = "pack it for bf16 activations, or " if activation is dtypes.f16 else ""
    return InvalidInputError(f"pack: the weight's {what}: wider than {activation} holds with {element} elements (up "
                             f"to {largest_element(element):g}; {activation}'s normal range "
                             f"{activation.smallest_normal:.3g} .. {activation.max_finite:.3g}) at any power-of-two "
                             f"offset, even leaving each channel only its largest scale; {wider}quantize it so that "
                             "its channels' scales span a narrower range")


def fit_scales(scales: torch.Tensor, activation: DType, source: DType, element: DType) -> int:
    """The power of two e for 16-bit / f32 group scales [N, groups] of ``source`` dtype stored for ``activation``
    (module docstring): 0 where they fit already (nearly always). Zero scales stay zero.

    :raises InvalidInputError: a scale that is not finite, or a range no shift holds (module docstring).
    """
    a = scales.abs()
    if not bool(torch.isfinite(a).all()):
        raise InvalidInputError(f"pack: the weight's scales hold {int((~torch.isfinite(a)).sum())} values that are not "
                                "finite (inf or NaN); every output they touch would be too")
    nonzero = a[a > 0]
    if nonzero.numel() == 0:
        return 0
    lo, hi = float(nonzero.min()), float(nonzero.max())
    channel_max = a.reshape(a.shape[0], -1).amax(dim=1)
    weakest = float(channel_max[channel_max > 0].min())
    same = source is activation
    e = _shift(lo, hi, weakest, activation, element, rounded=not same, exact_as_stored=same)
    if e is None:
        raise _refuse(f"scales span {lo:.3g} .. {hi:.3g} and some channel's largest is {weakest:.3g}", activation,
                      element)
    return e


def fit_scale_codes(codes: torch.Tensor, decoded: torch.Tensor, activation: DType, source: DType,
                    element: DType) -> int:
    """For ue8m0 scale codes [N, groups] (powers of two 2^(code-127)), the e to take off the codes (module
    docstring): 0 where they fit already (MXFP4 / MXINT4 of any usual layer). Code 0 (2^-127, an all-zero block's
    scale) is 0 in every kernel, is kept as it is and bounds nothing. e4m3 / ue4m3 codes are not shifted: their
    scales are normal in f16 and bf16, and a product of element and scale past the activation dtype is refused.

    :raises InvalidInputError: a code that is not finite (ue8m0's NaN, e4m3's), a range no shift holds, or e4m3 /
        ue4m3 scales whose products with the largest element overflow the activation dtype.
    """
    if not bool(torch.isfinite(decoded).all()):
        raise InvalidInputError(f"pack: the weight's {source} scales hold {int((~torch.isfinite(decoded)).sum())} "
                                "NaN codes; every output they touch would be NaN")
    if source is not dtypes.ue8m0:
        hi = float(decoded.abs().max()) if decoded.numel() else 0.0
        if hi * largest_element(element) > activation.max_finite:
            raise InvalidInputError(f"pack: the weight's {source} scales reach {hi:g}, and {element} elements up to "
                                    f"{largest_element(element):g} times them pass {activation}'s largest value "
                                    f"({activation.max_finite:g}); pack it for bf16 activations")
        return 0
    used = codes[codes > 0]
    if used.numel() == 0:
        return 0
    lo, hi = int(used.min()) - 127, int(used.max()) - 127
    channel_max = codes.reshape(codes.shape[0], -1).amax(dim=1)
    weakest = int(channel_max[channel_max > 0].min()) - 127
    e = _shift(2.0**lo, 2.0**hi, 2.0**weakest, activation, element, rounded=False, exact_as_stored=False)
    if e is None:
        raise _refuse(f"ue8m0 scales span 2^{lo} .. 2^{hi} and some channel's largest is 2^{weakest}", activation,
                      element)
    return e


def shift_codes(codes: torch.Tensor, e: int) -> torch.Tensor:
    """ue8m0 codes times 2^e. Code 0 (a zero scale in every kernel) stays 0; fit_scale_codes keeps every other code
    in range but those more than 2^126 under the largest, which become 0 too (as every kernel would read them), and
    so do not come back through unpack."""
    shifted = codes.to(torch.int16) + e
    return torch.where((codes == 0) | (shifted < 1), 0, shifted.clamp(max=254)).to(torch.uint8)
