"""Encoding and decoding of every DType on torch tensors (values <-> codes), and the canonical code bit stream.

Pure torch ops, no Python loop over elements, so the same code runs on CPU and CUDA tensors.

- ``encode(x, dtype)``: values -> codes. Dtypes of up to 8 bits give ``torch.uint8`` codes holding the low
  ``bits`` bits (two's complement for signed ints, the bit pattern for floats); f16/bf16/f32/f64 give a tensor
  of that torch dtype. Rounding is to nearest, ties to even (for exponent-only types such as ue8m0, which have
  no mantissa bit to be even, ties go to the larger value, as torch and ml_dtypes do).
  f16/bf16 from float64 are rounded once too (``cast_rounded_once``; torch's cast goes through float32).
- ``decode(codes, dtype)``: codes -> values (float32 by default; exact for every dtype of up to 8 bits).
- ``pack_codes`` / ``unpack_codes``: the canonical row layout, an LSB-first bit stream per row.

Out-of-range values (after rounding) follow the format:
- integers and the FINITE floats (e2m1, e2m3, e3m2, e0m3 ...) have nothing else to become, so they saturate to
  the largest magnitude (OCP MX v1.0 section 6.3 does the same for FP6/FP4);
- IEEE floats (e5m2, e3m4, f16 ...) overflow to inf, FN floats (e4m3) and ue8m0/ue4m3 to NaN, unless
  ``saturate=True`` (the OCP OFP8 "saturating" mode, PTX ``cvt ... .satfinite``), which clamps to the largest
  finite value (infinities included).
NaN input becomes NaN where the format has one and raises where it has none; negative input into an unsigned
float (ue8m0, ue4m3) raises. Exponent-only types (ue8m0) have no zero: 0 rounds to the smallest value, 2**-127.
"""

from __future__ import annotations

import functools

import torch

from humming.core.dtypes import DType, DTypeKind, SpecialValues, bf16, f16, f32, f64
from humming.errors import InternalError, InvalidInputError

_WIDE: dict[DType, torch.dtype] = {f16: torch.float16, bf16: torch.bfloat16, f32: torch.float32, f64: torch.float64}


def storage_dtype(dtype: DType) -> torch.dtype:
    """The torch dtype that holds codes of ``dtype``: uint8 for dtypes of up to 8 bits, else the float itself."""
    if dtype in _WIDE:
        return _WIDE[dtype]
    if dtype.kind is not DTypeKind.BINARY and dtype.bits <= 8:
        return torch.uint8
    raise InvalidInputError(f"dtype {dtype} has no code storage here; allowed: dtypes of 1..8 bits, f16, bf16, f32, f64")


def pow2(e: torch.Tensor) -> torch.Tensor:
    """2.0**e as float64, built from the bit pattern, so it is exact without relying on libm (|e| <= 1022)."""
    return ((e.to(torch.int64) + 1023) << 52).view(torch.float64)


def floor_log2(a: torch.Tensor) -> torch.Tensor:
    """floor(log2(a)) for a > 0 as int64, exact (from frexp: a = m * 2**ex with m in [0.5, 1))."""
    _, ex = torch.frexp(a)
    return ex.to(torch.int64) - 1


def _layout(d: DType) -> tuple[int, int, int]:
    """(mantissa bits, exponent of the smallest binade, all-ones exponent field) of a small float."""
    m = d.mantissa_bits
    # With no mantissa bit (ue8m0) every field is a power of two and field 0 is 2**-bias, not a zero.
    emin = -d.bias if m == 0 else 1 - d.bias
    return m, emin, (1 << d.exponent_bits) - 1


def _max_code(d: DType) -> int:
    """The code of the largest finite value (without the sign bit)."""
    m, _, all_ones = _layout(d)
    mant = (1 << m) - 1
    if d.special in (SpecialValues.FN, SpecialValues.NAN_ONLY_MAX) and d.max_exponent_field == all_ones and m > 0:
        mant -= 1  # e4m3: 0x7F is NaN, so 0x7E (448) is the largest
    return (d.max_exponent_field << m) | mant


def _nan_code(d: DType) -> int | None:
    m, _, all_ones = _layout(d)
    if d.special is SpecialValues.FINITE or (d.special is SpecialValues.IEEE and m == 0):
        return None  # every pattern is a number (or the all-ones field is inf only)
    return (all_ones << m) | ((1 << m) - 1)


def encode(x: torch.Tensor, dtype: DType, *, saturate: bool = False) -> torch.Tensor:
    """Round ``x`` to ``dtype`` (nearest, ties to even) and return its codes (see the module docstring).

    :param x: any real tensor, any shape, CPU or CUDA.
    :param saturate: clamp out-of-range values to the largest finite value instead of inf/NaN (IEEE and FN
        floats only; the other dtypes always saturate).
    :return: ``torch.uint8`` codes of the same shape for dtypes of up to 8 bits, else a tensor of that float.
    """
    dtype = DType.parse(dtype)
    if x.is_complex():
        raise InvalidInputError(f"encode takes real tensors, got {x.dtype}")
    if dtype in _WIDE:
        xf = x.to(torch.float64)
        if saturate:
            big = dtype.max_finite
            xf = torch.where(torch.isnan(xf), xf, xf.clamp(-big, big))
        return cast_rounded_once(xf, _WIDE[dtype])
    storage_dtype(dtype)  # raises for dtypes without a code form
    if dtype.is_int:
        return _encode_int(x, dtype)
    if x.dtype in (torch.float32, torch.float16, torch.bfloat16):
        return _encode_small_float_by_table(x, dtype, saturate)
    return _encode_small_float(x, dtype, saturate)


def cast_rounded_once(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` cast to the torch float ``dtype`` with one rounding, to nearest, ties to even.

    torch casts float64 to float16/bfloat16 through float32, which rounds twice (1 + 2**-11 + 2**-40 becomes 1.0
    instead of 1 + 2**-10 in float16). Here float64 goes to float32 rounded to odd first; rounding that to nearest
    even is then exact for any target at least two bits narrower (Boldo & Melquiond, IEEE TC 2008): float16 and
    bfloat16 keep 11 and 8 of float32's 24 bits, and their subnormal grids are coarser than float32's too.
    """
    if x.dtype is not torch.float64 or dtype not in (torch.float16, torch.bfloat16):
        return x.to(dtype)
    return _float32_rounded_to_odd(x).to(dtype)


def _float32_rounded_to_odd(x: torch.Tensor) -> torch.Tensor:
    """float64 -> float32 rounded to odd: truncated toward zero, with the last bit set where that dropped anything.
    inf, NaN and signed zeros stay; finite values beyond float32's range become its largest (an odd pattern)."""
    y = x.to(torch.float32)  # to nearest even
    away = y.to(torch.float64).abs() > x.abs()  # rounded up in magnitude (to inf included)
    bits = y.view(torch.int32) - away.to(torch.int32)  # sign and magnitude: one pattern less is one step toward 0
    inexact = (bits.view(torch.float32).to(torch.float64) != x) & ~torch.isnan(x)
    return (bits | inexact.to(torch.int32)).view(torch.float32)


def _encode_int(x: torch.Tensor, d: DType) -> torch.Tensor:
    xf = x.to(torch.float64)
    if bool(torch.isnan(xf).any()):
        raise InvalidInputError(f"cannot encode NaN as {d}: integers have no NaN")
    q = torch.round(xf).clamp(d.int_min, d.int_max).to(torch.int64)  # torch.round: half to even
    return (q & ((1 << d.bits) - 1)).to(torch.uint8)


def _check_encodable(xf: torch.Tensor, nan: torch.Tensor, d: DType) -> None:
    if _nan_code(d) is None and bool(nan.any()):
        raise InvalidInputError(f"cannot encode NaN as {d}: every {d} bit pattern is a finite number")
    if not d.signed and bool((xf < 0).any()):
        raise InvalidInputError(f"cannot encode negative values as {d}: it holds nonnegative values only")


def _special_codes(code: torch.Tensor, overflow: torch.Tensor, nan: torch.Tensor, negative: torch.Tensor,
                   d: DType, saturate: bool) -> torch.Tensor:
    """Magnitude codes with the out-of-range, NaN and sign rules of the module docstring applied, as uint8."""
    m, _, all_ones = _layout(d)
    nan_code = _nan_code(d)
    if saturate or d.special is SpecialValues.FINITE:
        over_code = _max_code(d)
    elif d.special is SpecialValues.IEEE:
        over_code = all_ones << m  # inf
    else:  # FN, NAN_ONLY_MAX: no inf, so an out-of-range value becomes the NaN pattern
        if nan_code is None:
            raise InternalError(f"{d} ({d.special.value} specials) has no NaN code for out-of-range values")
        over_code = nan_code
    code = torch.where(overflow, torch.full_like(code, over_code), code)
    if nan_code is not None:
        code = torch.where(nan, torch.full_like(code, nan_code), code)
    if d.signed:
        code = code | (negative.to(code.dtype) << (d.bits - 1))
    return code.to(torch.uint8)


@functools.lru_cache(maxsize=None)
def _rounding_table(d: DType, device: torch.device = torch.device("cpu")) -> tuple[torch.Tensor, torch.Tensor]:
    """(midpoints, up): float32 midpoints[i] between the magnitudes of codes i and i + 1 for every finite code i
    (the last, to the value one step past the largest, where rounding overflows), and whether a tie at midpoint i
    goes up to code i + 1 (ties to even; up for exponent-only types, as _encode_small_float rounds them)."""
    m, _, _ = _layout(d)
    top = _max_code(d)
    values = decode(torch.arange(top + 1, dtype=torch.int64, device="cpu").to(torch.uint8), d, out_dtype=torch.float64)
    _, ex = torch.frexp(values[-1:])
    step = 2.0 ** (int(ex) - 1 - m)  # the spacing of the largest value's binade
    grid = torch.cat([values, values[-1:] + step])
    if not bool((grid[1:] > grid[:-1]).all()):
        raise InternalError(f"{d}: the magnitudes of its codes do not increase with the code")
    mids = (grid[1:] + grid[:-1]) / 2
    mids32 = mids.to(torch.float32)
    if not torch.equal(mids32.to(torch.float64), mids):
        raise InternalError(f"{d}: a rounding midpoint is not a float32")
    up = torch.ones(top + 1, dtype=torch.bool, device="cpu") if m == 0 else torch.arange(top + 1, device="cpu") % 2 == 1
    return mids32.to(device), up.to(device)  # cached per device: one copy, not one a call


def _encode_small_float_by_table(x: torch.Tensor, d: DType, saturate: bool) -> torch.Tensor:
    """_encode_small_float's codes for 32-bit (or narrower) input, by a search of the rounding midpoints: the same
    rounding (each midpoint is a float32, so the comparisons are exact), in float32 and int32, several times faster."""
    xf = x.to(torch.float32)
    nan = torch.isnan(xf)
    _check_encodable(xf, nan, d)
    mids, up = _rounding_table(d, xf.device)
    a = xf.abs()
    code = torch.bucketize(a, mids, out_int32=True)  # mids[code - 1] < a <= mids[code]
    inside = code < mids.numel()
    at = code.clamp(max=mids.numel() - 1).long()
    code = code + (inside & (a == mids[at]) & up[at]).to(torch.int32)  # a tie: to the even code (or up)
    overflow = (code > _max_code(d)) & ~nan
    return _special_codes(code, overflow, nan, torch.signbit(xf) & d.signed, d, saturate)


def _encode_small_float(x: torch.Tensor, d: DType, saturate: bool) -> torch.Tensor:
    xf = x.to(torch.float64)
    nan = torch.isnan(xf)
    _check_encodable(xf, nan, d)
    m, emin, all_ones = _layout(d)
    negative = torch.signbit(xf) & d.signed
    a = xf.abs()
    finite = torch.isfinite(a)
    # Keep inf/NaN out of the integer arithmetic below; 2**130 already overflows every dtype of up to 8 bits.
    a = torch.where(finite, a, torch.zeros_like(a)).clamp(max=2.0**130)

    # Round on the grid of the binade that holds a: step 2**(e - m), e clamped at the smallest binade so that
    # values below it land on the subnormal grid. a / step is exact (a power-of-two division).
    e = torch.where(a > 0, floor_log2(torch.where(a > 0, a, torch.ones_like(a))), emin).clamp(min=emin)
    q = torch.round(a * pow2(m - e)).to(torch.int64)  # half to even
    carry = q >> (m + 1)  # rounding up to the next binade: q == 2**(m+1)
    e, q = e + carry, torch.where(carry > 0, q >> 1, q)
    if m == 0:
        q = torch.ones_like(q)  # no zero exists: 0 and tiny values go to the smallest value, 2**emin
    normal = q >= (1 << m)
    field = torch.where(normal, e - emin + (1 if m > 0 else 0), torch.zeros_like(e))
    code = (field << m) | torch.where(normal, q - (1 << m), q)

    value = q.to(torch.float64) * pow2(e - m)
    overflow = (value > d.max_finite) | ~finite & ~nan
    return _special_codes(code, overflow, nan, negative, d, saturate)


def decode(codes: torch.Tensor, dtype: DType, *, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Values of ``codes`` (as ``encode`` returns them) in ``out_dtype``.

    Only the low ``dtype.bits`` bits of each code are read, so codes with stray high bits decode as if masked.
    """
    dtype = DType.parse(dtype)
    if dtype in _WIDE:
        if codes.dtype is not _WIDE[dtype]:
            raise InvalidInputError(f"codes of {dtype} are {_WIDE[dtype]} tensors, got {codes.dtype}")
        return codes.to(out_dtype)
    storage_dtype(dtype)
    if codes.dtype.is_floating_point or codes.is_complex():
        raise InvalidInputError(f"codes of {dtype} are integer tensors (torch.uint8), got {codes.dtype}")
    c = codes.to(torch.int64) & ((1 << dtype.bits) - 1)
    if dtype.is_int:
        if dtype.signed:
            c = c - (((c >> (dtype.bits - 1)) & 1) << dtype.bits)
        return c.to(out_dtype)
    return _decoded_codes(dtype, out_dtype, c.device)[c]  # a lookup: at most 256 codes


@functools.lru_cache(maxsize=None)
def _decoded_codes(d: DType, out_dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Every code's value, indexed by code: _decode_small_float's float64 values, each cast once to ``out_dtype``
    (cached per device)."""
    codes = torch.arange(1 << d.bits, dtype=torch.int64, device="cpu")  # not the ambient default device
    return _decode_small_float(codes, d).to(out_dtype).to(device)


def _decode_small_float(c: torch.Tensor, d: DType) -> torch.Tensor:
    m, emin, all_ones = _layout(d)
    field = (c >> m) & all_ones
    mant = c & ((1 << m) - 1)
    if m == 0:
        mag = pow2(field + emin)
    else:
        normal = field > 0
        significand = torch.where(normal, mant + (1 << m), mant).to(torch.float64)
        mag = significand * pow2(torch.where(normal, field - 1, torch.zeros_like(field)) + emin - m)
    if d.special is SpecialValues.IEEE and d.exponent_bits > 0:
        top = field == all_ones
        mag = torch.where(top & (mant == 0), torch.full_like(mag, float("inf")), mag)
        mag = torch.where(top & (mant != 0), torch.full_like(mag, float("nan")), mag)
    elif d.special is not SpecialValues.FINITE:
        nan = (field == all_ones) & (mant == (1 << m) - 1)
        mag = torch.where(nan, torch.full_like(mag, float("nan")), mag)
    if d.signed:
        mag = torch.where(((c >> (d.bits - 1)) & 1).bool(), -mag, mag)
    return mag


def representable_values(dtype: DType) -> torch.Tensor:
    """Every code of a dtype of up to 8 bits, decoded to float64, indexed by code (NaN/inf included)."""
    dtype = DType.parse(dtype)
    if storage_dtype(dtype) is not torch.uint8:
        raise InvalidInputError(f"representable_values lists dtypes of up to 8 bits, not {dtype}")
    return decode(torch.arange(1 << dtype.bits, dtype=torch.int64, device="cpu").to(torch.uint8), dtype, out_dtype=torch.float64)


def packed_size(count: int, bits: int) -> int:
    """Bytes that ``count`` codes of ``bits`` bits take in the canonical bit stream: ceil(count * bits / 8)."""
    return (count * bits + 7) // 8


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack the last dimension of uint8 ``codes`` [..., K] into the LSB-first bit stream [..., ceil(K*bits/8)].

    Element k occupies bits [k*bits, (k+1)*bits) of the row, bit 0 being the least significant bit of byte 0;
    the unused high bits of the last byte are zero.
    """
    if codes.dtype is not torch.uint8:
        raise InvalidInputError(f"pack_codes takes torch.uint8 codes, got {codes.dtype}")
    if not 1 <= bits <= 8:
        raise InvalidInputError(f"pack_codes: bits={bits}; allowed: 1..8")
    if bits == 8:
        return codes.clone()
    if bool((codes >> bits).any()):
        raise InvalidInputError(f"pack_codes: some codes do not fit in {bits} bits (largest {int(codes.max())})")
    *lead, k = codes.shape
    nbytes = packed_size(k, bits)
    if 8 % bits == 0:  # whole codes a byte (1, 2, 4 bits): no code crosses a byte, so no bit stream is needed
        per = 8 // bits
        whole = torch.nn.functional.pad(codes, (0, nbytes * per - k)).reshape(*lead, nbytes, per)
        at = torch.arange(0, 8, bits, device=codes.device, dtype=torch.uint8)
        return (whole << at).sum(-1, dtype=torch.int32).to(torch.uint8)
    shifts = torch.arange(bits, device=codes.device, dtype=torch.uint8)
    stream = ((codes.unsqueeze(-1) >> shifts) & 1).reshape(*lead, k * bits)
    stream = torch.nn.functional.pad(stream, (0, nbytes * 8 - k * bits))
    weights = torch.arange(8, device=codes.device, dtype=torch.uint8)
    return (stream.reshape(*lead, nbytes, 8) << weights).sum(-1, dtype=torch.int32).to(torch.uint8)


def unpack_codes(data: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """Inverse of ``pack_codes``: uint8 [..., ceil(count*bits/8)] -> uint8 codes [..., count]."""
    if data.dtype is not torch.uint8:
        raise InvalidInputError(f"unpack_codes takes torch.uint8 data, got {data.dtype}")
    if not 1 <= bits <= 8:
        raise InvalidInputError(f"unpack_codes: bits={bits}; allowed: 1..8")
    if data.shape[-1] != packed_size(count, bits):
        raise InvalidInputError(
            f"unpack_codes: {count} codes of {bits} bits take {packed_size(count, bits)} bytes a row, "
            f"got rows of {data.shape[-1]}"
        )
    if bits == 8:
        return data.clone()
    *lead, nbytes = data.shape
    if 8 % bits == 0:  # whole codes a byte (pack_codes' fast form)
        at = torch.arange(0, 8, bits, device=data.device, dtype=torch.uint8)
        codes = ((data.unsqueeze(-1) >> at) & ((1 << bits) - 1)).reshape(*lead, nbytes * (8 // bits))
        return codes if codes.shape[-1] == count else codes[..., :count].contiguous()
    shifts = torch.arange(8, device=data.device, dtype=torch.uint8)
    stream = ((data.unsqueeze(-1) >> shifts) & 1).reshape(*lead, nbytes * 8)[..., : count * bits]
    weights = torch.arange(bits, device=data.device, dtype=torch.uint8)
    return (stream.reshape(*lead, count, bits) << weights).sum(-1, dtype=torch.int32).to(torch.uint8)
