// humming/dequant/values.cuh -- codes -> MMA operand pairs: integers by magic-number floats, small floats by
// moving their bit fields, all in registers.
//
// Integers: a code c (0 <= c < 2^b) ORed into the mantissa of 1024.0 (f16 0x6400) reads as 1024 + c, exact
// for c < 1024; one paired fma then subtracts 1024 + z (the zero point, or 2^(b-1) for signed codes stored
// with that bias). bf16 has 8 significant bits, so 128.0 (0x4300) works for b <= 7; s8 codes take their top
// bit on the subtrahend's exponent (s8_bf16_pair), other 8-bit codes go through f32 (8388608.0 = 2^23,
// 0x4B000000) and one paired convert.
// Floats eXmY: sign to bit 15, exponent and mantissa just under it so that the mantissa lines up with the
// target's; the value is then the code's times 2^(bias - target bias), fixed by one exact multiply.
// Zero points and scales come in as pairs already (both halves of a register share a column).
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/dequant/codes.cuh>

// Timing experiments only: 1 = 4-bit integer codes keep the magic offset (no zero subtraction; wrong values), to
// weigh what the subtraction's paired FMA costs the decode loop.
#ifndef HM_NO_ZERO_SUB
#define HM_NO_ZERO_SUB 0
#endif

// 8-bit float codes (e4m3, e3m4; e5m2 into bf16): 1 = each pair by one sign-replicating byte permute, a shift and a
// mask (float_pair_unfixed); 0 = the sign and the other bits moved apart (the form before 2026-12-05). Measured
// (H100 SXM, 2026-12-05, e4m3 per channel, interleaved, verified): 1 is 0.3-1.5% faster on every line (M = 1 / 16
// on three shapes, M = 64), and the check matrix's 8-bit float formats pass with it; the default since then.
#ifndef HM_F8_PRMT
#define HM_F8_PRMT 1
#endif

namespace humming {
namespace dequant {

HM_DEVICE constexpr u32 magic_int(f16_t) { return 0x64006400u; }  // 1024.0, 1024.0
HM_DEVICE constexpr u32 magic_int(bf16_t) { return 0x43004300u; }  // 128.0, 128.0
HM_DEVICE constexpr float magic_int_value(f16_t) { return 1024.0f; }
HM_DEVICE constexpr float magic_int_value(bf16_t) { return 128.0f; }

// Bit masks held in registers. LOP3 takes one immediate, so (word & mask) | magic needs the mask in a
// register; left to itself ptxas rematerialises it with an IMAD.MOV before every use (one wasted issue
// slot per pair: 28 of ~137 instructions per k16 step of the decode kernel, seen in its SASS). Built once
// from a value the compiler cannot see through (pinned_masks), they stay in registers.
struct Masks {
  u32 nib_lo;  // 0x000F000F
  u32 nib_hi;  // 0x00F000F0
  u32 byte;    // 0x00FF00FF
  u32 magic;   // the activation type's integer magic pair
  u32 low7;    // 0x007F007F
  u32 top1;    // 0x00800080
  u32 neg256;  // 0xC380C380: -256.0 as bf16 pairs
};

template <class Act>
HM_DEVICE Masks pinned_masks(Act act, u32 zero) {
  return Masks{0x000F000Fu | zero, 0x00F000F0u | zero, 0x00FF00FFu | zero, magic_int(act) | zero,
               0x007F007Fu | zero, 0x00800080u | zero, 0xC380C380u | zero};
}

// Integer codes with an additive offset per pair: returns (c - z) as act pairs, exact.
// `negz` is the pair -(magic + z), prepared once per group (see offset_pair). The codes go onto the masks' magic
// pair (a register): with the magic as an immediate OR after the planes, ptxas spent a LOP3 a pair on it (3-bit
// codes: three a pair where two do) or an IMAD.MOV a pair rematerialising it (2-bit codes).
template <int B, int P, class Act>
HM_DEVICE u32 int_pair(Act act, const u32 (&w)[B], const Masks& m, u32 negz) {
  return arch::fma2(act, code_pair<B, P>(w, m.magic), arch::one2(act), negz);
}

// 4-bit codes: pair P of the single plane as the magic read M + c (M the masks' activation type's magic), the
// zero not yet subtracted; on its own where the zero goes onto the partial sums (kZeroOnSums).
template <int P>
HM_DEVICE u32 int4_magic_pair(const u32 (&w)[4], const Masks& m) {
  return ((w[P / 4] >> (4 * (P % 4))) & m.nib_lo) | m.magic;
}

// 4-bit codes, any activation type: pair P of the single plane, (c - z) exact.
template <int P, class Act>
HM_DEVICE u32 int4_pair(Act act, const u32 (&w)[4], const Masks& m, u32 negz) {
  const u32 x = int4_magic_pair<P>(w, m);
  if constexpr (HM_NO_ZERO_SUB != 0) return x;
  return arch::fma2(act, x, arch::one2(act), negz);
}

// 8-bit codes into f16: pair P, (c - z) exact.
template <int P>
HM_DEVICE u32 int8_f16_pair(const u32 (&w)[8], const Masks& m, u32 negz) {
  const u32 x = ((w[P / 2] >> (8 * (P % 2))) & m.byte) | m.magic;
  return arch::fma2(f16_t{}, x, arch::one2(f16_t{}), negz);
}

// 4-bit f16 special case for odd pairs of the single plane: bits 4..7 of each half are read in place as
// 1024 + 16c, then scaled by 1/16 while 64 + z is subtracted -- one shift saved per two pairs.
template <int P>
HM_DEVICE u32 int4_f16_pair(const u32 (&w)[4], const Masks& m, u32 negz_lo, u32 negz_hi) {
  const u32 word = w[P / 4];
  constexpr int i = P % 4;
  if constexpr ((i & 1) != 0) {
    const u32 x = ((word >> (4 * (i - 1))) & m.nib_hi) | m.magic;
    return arch::fma2(f16_t{}, x, 0x2C002C00u /* 1/16 */, negz_hi);
  } else {
    const u32 x = ((word >> (4 * i)) & m.nib_lo) | m.magic;
    return arch::fma2(f16_t{}, x, arch::one2(f16_t{}), negz_lo);
  }
}

// 8-bit codes stored with the bias 128 (s8: c = 128 + x) into bf16 pairs, exact, without f32: the low seven bits
// under 128.0 read as 128 + (c & 127), and x = that - 256 where c < 128 (x < 0), - 128 otherwise. The subtrahend's
// bf16 pattern is 0x4380 (256) or 0x4300 (128): the code's top bit lands on the exponent's lowest bit, so -s is
// (c & 0x80) ^ 0xC380. Pair P is bytes i and 2 + i (i = P % 2) of its word: both pairs of a word take one shift.
// Four instructions a pair, against five through f32 (two PRMT, two FADD, one pack).
template <int P>
HM_DEVICE u32 s8_bf16_pair(const u32 (&w)[8], const Masks& m) {
  const u32 x = w[P / 2] >> (8 * (P % 2));
  const u32 v = (x & m.low7) | m.magic;  // magic: 128.0 pairs (the masks are made for bf16 here)
  const u32 neg_s = (x & m.top1) ^ m.neg256;
  return arch::fma2(bf16_t{}, v, arch::one2(bf16_t{}), neg_s);
}

// 8-bit codes to bf16 pairs via f32. `negz_f` is -(2^23 + z) for the two columns' zero (one column here).
template <int P>
HM_DEVICE u32 int8_bf16_pair(const u32 (&w)[8], float negz_f) {
  const u32 word = w[P / 2];
  const int i = P % 2;
  // bytes i (low half) and 2 + i (high half) under the exponent byte 0x4B of 2^23.
  const float lo = __uint_as_float(arch::prmt(word, 0x4B000000u, 0x7650u + i));
  const float hi = __uint_as_float(arch::prmt(word, 0x4B000000u, 0x7652u + i));
  return arch::pack2(bf16_t{}, lo + negz_f, hi + negz_f);
}

// Float codes eXmY (B = 1 + E + M bits): the pair in the target format times 2^-(fix), see float_fix().
template <int B, int E, int M, int P, class Act>
HM_DEVICE u32 float_pair_unfixed(Act, const u32 (&w)[B]) {
  constexpr int tm = ActTraits<Act>::mantissa;
  static_assert(M <= tm, "a weight float with more mantissa bits than the activation type");
  static_assert(E >= 1, "e0mY weights are not supported");
  constexpr u32 em_mask = ((1u << (B - 1)) - 1u) * 0x00010001u << (tm - M);
  if constexpr (16 - B == tm - M) {
    return code_pair<B, P, tm - M>(w);  // the sign lands on bit 15 with the same shift (e5m2 -> f16)
  } else if constexpr (B == 8 && HM_F8_PRMT != 0) {
    // Bytes i and 2 + i, each under a byte of its own sign (PRMT's sign-replicating selectors 8 + i, 10 + i):
    // shifted left by tm - M (<= 7), the code's exponent and mantissa sit where the target's do and bit 15 is a
    // copy of the sign; one mask keeps those. Three instructions a pair against three or four (two shifts, one
    // or two masks) for the sign and the rest moved apart.
    constexpr int i = P % 2;
    const u32 x = arch::prmt(w[P / 2], 0u, i == 0 ? 0xA280u : 0xB391u);
    return (x << (tm - M)) & (em_mask | 0x80008000u);
  } else {
    const u32 em = code_pair<B, P, tm - M>(w) & em_mask;
    const u32 sign = code_pair<B, P, 16 - B>(w) & 0x80008000u;
    return em | sign;
  }
}

// e2m1 codes as packed with core/packing.py's e2m1_swizzle (E2M1_SLOTS there lists the same operations):
// pair P from slot P % 4 of its word, with the three magnitude bits (e1 e0 m) moved onto the activation
// type's lowest exponent bits and top mantissa bit (bf16 bits 8..6, f16 bits 11..9) and the sign onto bit 15
// of each half. Read in the activation type, that is the e2m1 value times 2^-126 (bf16) or 2^-14 (f16) for
// every code, the subnormal 0.5 included (it lands on the target's subnormal 2^-1 x 2^-126 or 2^-1 x 2^-14),
// so float_fix(act, 1) makes it exact. bf16: 9 instructions a word; f16: 11.
template <int P>
HM_DEVICE u32 e2m1_pair(bf16_t, const u32 (&w)[4]) {
  constexpr u32 kEm = 0x01C001C0u, kSign = 0x80008000u;
  const u32 x = w[P / 4];
  if constexpr (P % 4 == 0) return (arch::prmt(x, x, 0x2200u) & kEm) | (x & kSign);
  else if constexpr (P % 4 == 1) return arch::rotr<2>(x) & (kEm | kSign);
  else if constexpr (P % 4 == 2) return (x << 4) & (kEm | kSign);
  else return arch::rotr<6>(x) & (kEm | kSign);
}

template <int P>
HM_DEVICE u32 e2m1_pair(f16_t, const u32 (&w)[4]) {
  constexpr u32 kEm = 0x0E000E00u, kSign = 0x80008000u;
  const u32 x = w[P / 4];
  if constexpr (P % 4 == 0) return arch::rotr<1>(x) & (kEm | kSign);
  else if constexpr (P % 4 == 1) return (arch::rotr<8>(x) & kEm) | (x & kSign);
  else if constexpr (P % 4 == 2) return ((x << 5) & kEm) | ((x << 1) & kSign);
  else return (x << 2) & (kEm | kSign);
}

// 2^(target bias - source bias) as a pair: the exact factor float_pair_unfixed leaves out.
template <class Act>
HM_DEVICE constexpr u32 float_fix(Act, int src_bias) {
  return ActTraits<Act>::mantissa == 10 ? ((30u - src_bias) << 10) * 0x00010001u
                                        : ((254u - src_bias) << 7) * 0x00010001u;
}

}  // namespace dequant
}  // namespace humming
