"""codec: every encoding checked against torch's float8 dtypes, ml_dtypes, or a table derived from the definition."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

from humming.core import codec, dtypes
from humming.core.dtypes import DType, SpecialValues
from humming.errors import InvalidInputError

# Our dtype -> ml_dtypes' independent implementation (names checked in the installed ml_dtypes 0.7).
ML = {
    dtypes.e2m1: ml_dtypes.float4_e2m1fn,
    dtypes.e2m3: ml_dtypes.float6_e2m3fn,
    dtypes.e3m2: ml_dtypes.float6_e3m2fn,
    dtypes.e3m4: ml_dtypes.float8_e3m4,
    dtypes.e4m3: ml_dtypes.float8_e4m3fn,
    dtypes.e5m2: ml_dtypes.float8_e5m2,
    dtypes.ue8m0: ml_dtypes.float8_e8m0fnu,
}
TORCH = {dtypes.e4m3: torch.float8_e4m3fn, dtypes.e5m2: torch.float8_e5m2, dtypes.ue8m0: torch.float8_e8m0fnu}
# Splits that no library has: any eXmY that fits in 8 bits must follow the same rules.
GENERIC = [dtypes.small_float(e, m) for e, m in [(1, 2), (2, 2), (3, 1), (1, 6), (3, 3), (4, 2), (5, 1), (6, 1), (2, 5), (4, 1)]]


def _ml_values(d: DType) -> np.ndarray:
    return np.arange(1 << d.bits, dtype=np.uint8).view(ML[d]).astype(np.float64)


def _scalar_value(code: int, d: DType) -> float:
    """An independent scalar decoder, straight from the definition in dtypes.py."""
    e_bits, m_bits, bias = d.exponent_bits, d.mantissa_bits, d.bias
    sign = -1.0 if d.signed and code >> (d.bits - 1) & 1 else 1.0
    field, mant = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    if d.special is SpecialValues.IEEE and e_bits and field == top:
        return sign * float("inf") if mant == 0 else float("nan")
    if d.special is SpecialValues.FN and field == top and mant == (1 << m_bits) - 1:
        return float("nan")
    if m_bits == 0:
        return sign * 2.0 ** (field - bias)
    if field == 0:
        return sign * mant * 2.0 ** (1 - bias - m_bits)
    return sign * (1 + mant / 2**m_bits) * 2.0 ** (field - bias)


def _rne_oracle(x: np.ndarray, d: DType) -> np.ndarray:
    """Brute force: the nearest finite value, ties to the even code; beyond the largest, saturate (FINITE)."""
    vals = np.array([_scalar_value(c, d) for c in range(1 << d.bits)])
    codes = np.arange(1 << d.bits)
    ok = np.isfinite(vals)
    vals, codes = vals[ok], codes[ok]
    dist = np.abs(x[:, None] - vals[None, :])
    best = dist.min(axis=1, keepdims=True)
    tie_rank = np.where(dist == best, (codes[None, :] & 1) * 2 + (np.signbit(vals)[None, :] != np.signbit(x)[:, None]), 99)
    return vals[np.argmin(tie_rank, axis=1)]


def _ties_and_randoms(d: DType, n: int = 4000, seed: int = 0) -> np.ndarray:
    """Every midpoint between neighbouring values (the ties), the values themselves, and random numbers."""
    vals = np.unique(np.abs(codec.representable_values(d).numpy()))
    vals = vals[np.isfinite(vals)]
    mids = (vals[1:] + vals[:-1]) / 2
    rng = np.random.default_rng(seed)
    rand = rng.standard_normal(n) * d.max_finite / 3
    near = rng.choice(mids, n) * (1 + rng.uniform(-1e-3, 1e-3, n))
    out = np.concatenate([vals, mids, rand, near])
    if d.signed:
        out = np.concatenate([out, -out])
    return np.abs(out).astype(np.float32) if not d.signed else out.astype(np.float32)


@pytest.mark.parametrize("d", list(ML), ids=str)
def test_every_code_decodes_like_ml_dtypes(d: DType) -> None:
    np.testing.assert_array_equal(codec.representable_values(d).numpy(), _ml_values(d))


@pytest.mark.parametrize("d", list(TORCH), ids=str)
def test_every_code_decodes_like_torch_float8(d: DType) -> None:
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    expect = codes.view(TORCH[d]).to(torch.float64)
    torch.testing.assert_close(codec.decode(codes, d, out_dtype=torch.float64), expect, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("d", list(ML), ids=str)
def test_encode_rounds_like_ml_dtypes_on_ties_and_random_values(d: DType) -> None:
    x = _ties_and_randoms(d)
    if d is dtypes.ue8m0:
        # float32 subnormal inputs (below 2**-126) round differently across ml_dtypes versions (0.5 up, 0.7 to
        # nearest); test_ue8m0_rounds_to_the_nearest_power_of_two_with_ties_up covers them.
        x = x[x >= 2.0**-126]
    ours = codec.decode(codec.encode(torch.from_numpy(x), d), d, out_dtype=torch.float64).numpy()
    theirs = x.astype(ML[d]).astype(np.float64)
    np.testing.assert_array_equal(ours, theirs)


def test_ue8m0_rounds_to_the_nearest_power_of_two_with_ties_up() -> None:
    e = np.random.default_rng(5).integers(-127, 126, 3000)
    frac = np.concatenate([np.random.default_rng(6).uniform(1, 2, 2000), np.full(1000, 1.5)])  # 1.5: the ties
    x = frac * np.exp2(e.astype(np.float64))
    expect = np.exp2(e + (frac >= 1.5))  # linear midpoint 1.5 * 2**e; no mantissa bit to be even, so up
    ours = codec.decode(codec.encode(torch.from_numpy(x), dtypes.ue8m0), dtypes.ue8m0, out_dtype=torch.float64).numpy()
    np.testing.assert_array_equal(ours, expect)
    tiny = torch.tensor([0.0, 1e-45, 2.0**-128])  # no zero exists: the nearest value is 2**-127
    assert codec.encode(tiny, dtypes.ue8m0).tolist() == [0, 0, 0]


@pytest.mark.parametrize("d", [dtypes.e4m3, dtypes.e5m2, dtypes.e3m4], ids=str)
def test_saturating_encode_matches_ml_dtypes_on_clipped_input(d: DType) -> None:
    x = np.concatenate([_ties_and_randoms(d), np.array([1e9, -1e9, np.inf, -np.inf], dtype=np.float32)])
    x = np.concatenate([x, x * 3])
    ours = codec.decode(codec.encode(torch.from_numpy(x), d, saturate=True), d, out_dtype=torch.float64).numpy()
    theirs = np.clip(x, -d.max_finite, d.max_finite).astype(ML[d]).astype(np.float64)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("d", list(TORCH), ids=str)
def test_encode_gives_torch_float8_bit_patterns_in_range(d: DType) -> None:
    x = torch.from_numpy(_ties_and_randoms(d, seed=1))
    x = x[x.abs() <= d.max_finite]
    if d is dtypes.ue8m0:
        # torch rounds float32 subnormal inputs (below 2**-126) up where nearest is 2**-127; ml_dtypes and we agree.
        x = x[x >= 2.0**-126]
    ours = codec.encode(x, d)
    theirs = x.to(TORCH[d]).view(torch.uint8)
    assert torch.equal(ours, theirs)


def test_e0m3_values_are_k_over_8_and_round_to_the_even_code() -> None:
    # e0m3: sign + 3 mantissa bits, no exponent field: value = +-k/8, k = 0..7 (derived from the definition).
    table = np.array([k / 8 for k in range(8)] + [-k / 8 for k in range(8)])
    np.testing.assert_array_equal(codec.representable_values(dtypes.e0m3).numpy(), table)
    x = np.concatenate([np.arange(-16, 17) / 16, np.random.default_rng(2).uniform(-1.2, 1.2, 2000)]).astype(np.float32)
    ours = codec.decode(codec.encode(torch.from_numpy(x), dtypes.e0m3), dtypes.e0m3, out_dtype=torch.float64).numpy()
    expect = np.clip(np.rint(x.astype(np.float64) * 8), -7, 7) / 8  # rint: half to even == even code here
    np.testing.assert_array_equal(ours, expect)


@pytest.mark.parametrize("d", GENERIC + [dtypes.e0m3, dtypes.e2m1, dtypes.e3m2, dtypes.e2m3], ids=str)
def test_any_split_matches_a_brute_force_nearest_even_oracle(d: DType) -> None:
    vals = codec.representable_values(d).numpy()
    expect = np.array([_scalar_value(c, d) for c in range(1 << d.bits)])
    np.testing.assert_array_equal(vals, expect)
    x = _ties_and_randoms(d, n=500, seed=3).astype(np.float64)
    x = x[np.abs(x) <= d.max_finite * 1.2] if d.special is SpecialValues.FINITE else x[np.abs(x) <= d.max_finite]
    ours = codec.decode(codec.encode(torch.from_numpy(x), d), d, out_dtype=torch.float64).numpy()
    np.testing.assert_array_equal(ours, _rne_oracle(x, d))


@pytest.mark.parametrize("d", GENERIC + list(ML) + [dtypes.e0m3, dtypes.ue4m3], ids=str)
def test_every_number_code_round_trips(d: DType) -> None:
    codes = torch.arange(1 << d.bits, dtype=torch.int32).to(torch.uint8)
    vals = codec.decode(codes, d, out_dtype=torch.float64)
    keep = ~torch.isnan(vals)
    assert torch.equal(codec.encode(vals[keep], d), codes[keep])


def test_ue4m3_is_the_nonnegative_half_of_e4m3() -> None:
    codes = torch.arange(128, dtype=torch.int32).to(torch.uint8)
    torch.testing.assert_close(codec.decode(codes, dtypes.ue4m3), codec.decode(codes, dtypes.e4m3), equal_nan=True)
    x = torch.rand(3000) * 500
    assert torch.equal(codec.encode(x, dtypes.ue4m3), codec.encode(x, dtypes.e4m3))


@pytest.mark.parametrize("d", [dtypes.DType.parse(f"{s}{b}") for b in range(2, 9) for s in "su"] + [dtypes.u1], ids=str)
def test_integers_round_half_even_and_saturate(d: DType) -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(d.int_min - 3, d.int_max + 3, 3000), np.arange(d.int_min - 2, d.int_max + 2) + 0.5])
    codes = codec.encode(torch.from_numpy(x), d)
    assert codes.dtype is torch.uint8 and int(codes.max()) < (1 << d.bits)
    ours = codec.decode(codes, d, out_dtype=torch.float64).numpy()
    np.testing.assert_array_equal(ours, np.clip(np.rint(x), d.int_min, d.int_max))


@pytest.mark.parametrize("d,ml", [(dtypes.s4, ml_dtypes.int4), (dtypes.u4, ml_dtypes.uint4), (dtypes.s2, ml_dtypes.int2),
                                  (dtypes.u2, ml_dtypes.uint2)], ids=str)
def test_integer_codes_are_ml_dtypes_bit_patterns(d: DType, ml: type) -> None:
    v = np.arange(d.int_min, d.int_max + 1)
    ours = codec.encode(torch.from_numpy(v.astype(np.float32)), d).numpy()
    theirs = v.astype(ml).view(np.uint8) & ((1 << d.bits) - 1)
    np.testing.assert_array_equal(ours, theirs)


def test_overflow_follows_the_format_unless_saturating() -> None:
    big = torch.tensor([500.0, -1e6, float("inf")])
    assert torch.isnan(codec.decode(codec.encode(big, dtypes.e4m3), dtypes.e4m3)).all()  # FN: NaN
    assert torch.equal(codec.decode(codec.encode(big, dtypes.e4m3, saturate=True), dtypes.e4m3), torch.tensor([448.0, -448.0, 448.0]))
    assert torch.isinf(codec.decode(codec.encode(torch.tensor([61440.0]), dtypes.e5m2), dtypes.e5m2)).all()  # tie to even: inf
    assert torch.equal(codec.decode(codec.encode(big, dtypes.e2m1), dtypes.e2m1), torch.tensor([6.0, -6.0, 6.0]))  # FINITE saturates
    assert float(codec.decode(codec.encode(torch.tensor([464.0]), dtypes.e4m3), dtypes.e4m3)) == 448.0  # tie: even mantissa


def test_sixteen_and_thirty_two_bit_floats_are_torch_casts() -> None:
    # torch casts once from float32 (float64 -> 16 bits rounds twice in torch: the test below)
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0)) * 1e3
    for d, t in ((dtypes.f16, torch.float16), (dtypes.bf16, torch.bfloat16), (dtypes.f32, torch.float32)):
        assert torch.equal(codec.encode(x, d), x.to(t))
        assert torch.equal(codec.encode(x.double(), d), x.to(t))  # float32 values: one rounding either way
        assert torch.equal(codec.decode(x.to(t), d), x.to(t).float())
    assert float(codec.encode(torch.tensor([1e6]), dtypes.f16, saturate=True)) == 65504.0


def test_unrepresentable_inputs_raise_naming_the_dtype() -> None:
    with pytest.raises(InvalidInputError, match="NaN as e2m1"):
        codec.encode(torch.tensor([1.0, float("nan")]), dtypes.e2m1)
    with pytest.raises(InvalidInputError, match="NaN as s4"):
        codec.encode(torch.tensor([float("nan")]), dtypes.s4)
    with pytest.raises(InvalidInputError, match="negative values as ue8m0"):
        codec.encode(torch.tensor([-1.0]), dtypes.ue8m0)
    with pytest.raises(InvalidInputError, match="1..8 bits"):
        codec.encode(torch.tensor([1.0]), dtypes.s32)
    with pytest.raises(InvalidInputError, match="integer tensors"):
        codec.decode(torch.tensor([1.0]), dtypes.e4m3)
    assert torch.isnan(codec.decode(codec.encode(torch.tensor([float("nan")]), dtypes.e4m3), dtypes.e4m3)).all()


def _pack_oracle(codes: np.ndarray, bits: int) -> np.ndarray:
    """Bit by bit, in plain Python: element k occupies bits [k*bits, (k+1)*bits), LSB first."""
    out = np.zeros((codes.shape[0], (codes.shape[1] * bits + 7) // 8), dtype=np.uint8)
    for r in range(codes.shape[0]):
        for k, c in enumerate(codes[r]):
            for b in range(bits):
                pos = k * bits + b
                out[r, pos // 8] |= ((int(c) >> b) & 1) << (pos % 8)
    return out


@pytest.mark.parametrize("bits", range(1, 9))
def test_pack_codes_is_the_lsb_first_bit_stream_and_unpack_inverts_it(bits: int) -> None:
    rng = np.random.default_rng(bits)
    codes = rng.integers(0, 1 << bits, size=(3, 13), dtype=np.uint8)  # 13: rows end mid-byte for most widths
    packed = codec.pack_codes(torch.from_numpy(codes), bits)
    np.testing.assert_array_equal(packed.numpy(), _pack_oracle(codes, bits))
    np.testing.assert_array_equal(codec.unpack_codes(packed, bits, 13).numpy(), codes)


def test_pack_layout_by_hand_for_three_bits() -> None:
    # 1 = 001 in bits 0-2, 2 = 010 in bits 3-5, 3 = 011 in bits 6-8: byte 0 = 1 + (2 << 3) + (3 << 6 & 0xFF) = 209.
    assert codec.pack_codes(torch.tensor([[1, 2, 3]], dtype=torch.uint8), 3).tolist() == [[209, 0]]


def test_pack_rejects_codes_wider_than_bits_and_wrong_row_lengths() -> None:
    with pytest.raises(InvalidInputError, match="do not fit in 4 bits"):
        codec.pack_codes(torch.tensor([[16]], dtype=torch.uint8), 4)
    with pytest.raises(InvalidInputError, match="take 2 bytes a row"):
        codec.unpack_codes(torch.zeros(1, 3, dtype=torch.uint8), 4, 4)


@pytest.mark.gpu
def test_cuda_encodes_and_decodes_exactly_as_cpu() -> None:
    x = torch.randn(4096) * 100
    for d in list(ML) + [dtypes.e0m3, dtypes.s4, dtypes.u8]:
        xd = x.abs() if not d.signed else x
        cpu = codec.encode(xd, d, saturate=True)
        gpu = codec.encode(xd.cuda(), d, saturate=True)
        assert torch.equal(gpu.cpu(), cpu), d
        torch.testing.assert_close(codec.decode(gpu, d).cpu(), codec.decode(cpu, d), rtol=0, atol=0, equal_nan=True)


def _every_small_float() -> list[DType]:
    return [d for d in dtypes.all_dtypes() if d.is_float and d.bits <= 8 and d not in codec._WIDE] + GENERIC


@pytest.mark.parametrize("d", _every_small_float(), ids=str)
def test_the_table_search_encodes_as_the_float64_arithmetic(d: DType) -> None:
    # encode takes 32-bit (and narrower) input by a search of the rounding midpoints; float64 input keeps the
    # arithmetic path. The two must give the same codes for every input: each midpoint and the floats on either
    # side of it, every value, random bit patterns over the whole float32 range, and the specials.
    mids, _ = codec._rounding_table(d)
    near = torch.cat([mids, torch.nextafter(mids, torch.tensor(0.0)), torch.nextafter(mids, torch.tensor(float("inf")))])
    values = codec.decode(torch.arange(1 << d.bits, dtype=torch.int32).to(torch.uint8), d)
    bits = torch.randint(-(2**31), 2**31 - 1, (200_000,), generator=torch.Generator().manual_seed(7), dtype=torch.int32)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, 3.4e38, d.max_finite * 1.5])
    x = torch.cat([near, -near, values, bits.view(torch.float32), special * 1.0, d.max_finite * torch.rand(1000)])
    if not d.signed:
        x = x[~torch.signbit(x)]
    if codec._nan_code(d) is None:
        x = x[~torch.isnan(x)]
    for saturate in (False, True):
        fast = codec._encode_small_float_by_table(x, d, saturate)
        exact = codec._encode_small_float(x, d, saturate)
        differ = (fast != exact).nonzero().flatten()
        assert differ.numel() == 0, f"{d} saturate={saturate}: {x[differ[:5]].tolist()} -> {fast[differ[:5]].tolist()}" \
            f" against {exact[differ[:5]].tolist()}"
    assert torch.equal(codec.encode(x.to(torch.float64), d), codec.encode(x, d))


def _nearest_even_exactly(v: float, mantissa_bits: int, emin: int, max_finite: float) -> float:
    """float64 ``v`` rounded once to a binary float (``mantissa_bits`` fraction bits, smallest normal 2**emin,
    subnormals below it), ties to even, in exact rational arithmetic; inf beyond the rounding of max_finite."""
    if not math.isfinite(v) or v == 0:
        return v
    a = abs(Fraction(v))
    e = max(math.frexp(abs(v))[1] - 1, emin)  # the binade of v, or the subnormal grid
    step = Fraction(2) ** (e - mantissa_bits)
    r = round(a / step) * step  # Fraction.__round__: half to even
    return math.copysign(math.inf if r > max_finite else float(r), v)


@pytest.mark.parametrize("d, t, mantissa_bits, emin", [(dtypes.f16, torch.float16, 10, -14),
                                                        (dtypes.bf16, torch.bfloat16, 7, -126)], ids=str)
def test_float64_rounds_once_to_16_bits_not_twice_through_float32(d: DType, t: torch.dtype, mantissa_bits: int,
                                                                  emin: int) -> None:
    # Every midpoint between neighbouring 16-bit values (subnormals, the overflow threshold), one float64 ulp
    # either side of it and 2**-40 relatively off it: through float32 the off-midpoint ones fall onto the midpoint
    # and tie to even. Checked against exact rational arithmetic.
    every = torch.arange(0, 0x7C00 if t is torch.float16 else 0x7F80, dtype=torch.int16).view(t).double()
    # the step past the largest, so that the last midpoint is the overflow threshold
    every = torch.cat([every, torch.tensor([d.max_finite * 2], dtype=torch.float64)])
    mids = (every[1:] + every[:-1]) / 2
    up, down = torch.full_like(mids, math.inf), torch.full_like(mids, -math.inf)
    x = torch.cat([every[:-1], mids, torch.nextafter(mids, up), torch.nextafter(mids, down),
                   mids * (1 + 2.0**-40), mids * (1 - 2.0**-40),
                   torch.tensor([1e39, 1e300, 5e-324, 1e-300, 2.0**-150, 0.0, math.inf], dtype=torch.float64)])
    x = torch.cat([x, -x])
    x = x[torch.randperm(x.numel(), generator=torch.Generator().manual_seed(0))[:60000]]  # a few seconds of Fractions
    x = torch.cat([x, torch.tensor([1 + 2.0**-(mantissa_bits + 1) + 2.0**-40, 1 + 2.0**-(mantissa_bits + 1) - 2.0**-40],
                                dtype=torch.float64)])
    got = codec.encode(x, d).double()
    expect = torch.tensor([_nearest_even_exactly(v, mantissa_bits, emin, d.max_finite) for v in x.tolist()], dtype=torch.float64)
    assert torch.equal(got, expect) and torch.equal(torch.signbit(got), torch.signbit(expect))
    if t is torch.float16:  # numpy casts float64 -> float16 directly: a second, independent oracle
        with np.errstate(over="ignore"):  # 1e39 and the like: inf, as expected
            np.testing.assert_array_equal(expect.numpy().astype(np.float16), x.numpy().astype(np.float16))
    assert got[-2] == 1 + 2.0**-mantissa_bits and got[-1] == 1.0  # torch's x.to(t) gives 1.0 for both
    assert torch.isnan(codec.encode(torch.tensor([math.nan], dtype=torch.float64), d)).all()
    big = torch.tensor([1e39, -1e300, d.max_finite * (1 + 2.0**-30)], dtype=torch.float64)
    assert codec.encode(big, d, saturate=True).double().tolist() == [d.max_finite, -d.max_finite, d.max_finite]
