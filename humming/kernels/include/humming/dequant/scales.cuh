// humming/dequant/scales.cuh -- per-group scales and zero points from shared memory to operand pairs.
//
// A scale row holds, for each 64-column block, 64 entries permuted to [g][j] (column g + 8j at g*8 + j) so
// that a lane (groupID g) finds the eight scales of its eight n8 fragments side by side: one 16-byte read for
// 16-bit scales (four lanes of a group read the same address: a broadcast), 8 bytes for 8-bit codes.
// Both halves of each returned pair hold the same value: the two elements of a B register share a column.
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/arch/memory.cuh>

namespace humming {
namespace dequant {

enum ScaleDtype : int { kScaleAct = 0, kScaleUe8m0 = 1, kScaleE4m3 = 2 };

template <int SDT>
struct ScaleBytes {
  static constexpr int value = SDT == kScaleAct ? 2 : 1;
};

HM_DEVICE u32 splat_lo(u32 x) { return arch::prmt(x, x, 0x1010u); }
HM_DEVICE u32 splat_hi(u32 x) { return arch::prmt(x, x, 0x3232u); }

// One 8-bit scale code b (ue8m0 or e4m3) as an activation-type pair.
template <int SDT, class Act>
HM_DEVICE u32 scale_pair_of_code(Act act, u32 b) {
  if constexpr (SDT == kScaleUe8m0) {
    if constexpr (ActTraits<Act>::mantissa == 7) {
      return b * 0x00800080u;  // 2^(b-127) is exactly the bf16 with exponent field b
    } else {
      const float f = __uint_as_float(b << 23);
      return arch::pack2(act, f, f);
    }
  } else {  // e4m3: place the fields into f16, fix the bias in f32, round once into the activation type
    const u32 h = ((b & 0x80u) << 8) | ((b & 0x7Fu) << 7);
    const float f = arch::to_f32(f16_t{}, h) * 256.0f;
    return arch::pack2(act, f, f);
  }
}

// Scale code byte J of `word` as a pair. ue8m0 on bf16: one PRMT puts the byte under both halves (b | b << 16)
// and one multiply shifts it into the exponent fields (instead of a shift, a mask and the multiply).
template <int SDT, class Act, int J>
HM_DEVICE u32 scale_pair_of_byte(Act act, u32 word) {
  if constexpr (SDT == kScaleUe8m0 && ActTraits<Act>::mantissa == 7) {
    return arch::prmt(word, 0u, 0x4040u | J | (J << 8)) * 0x80u;
  } else {
    return scale_pair_of_code<SDT>(act, (word >> (8 * J)) & 0xFFu);
  }
}

// Eight scale pairs for the lane's n8 fragments, from the scale row at shared address `row` (this n64 block).
template <int SDT, class Act>
HM_DEVICE void load_scale_pairs(Act act, u32 row, int g, u32 (&s)[8]) {
  if constexpr (SDT == kScaleAct) {
    const uint4 v = arch::lds128(row + g * 16);
    s[0] = splat_lo(v.x); s[1] = splat_hi(v.x);
    s[2] = splat_lo(v.y); s[3] = splat_hi(v.y);
    s[4] = splat_lo(v.z); s[5] = splat_hi(v.z);
    s[6] = splat_lo(v.w); s[7] = splat_hi(v.w);
  } else {
    const uint2 v = arch::lds64(row + g * 8);
    s[0] = scale_pair_of_byte<SDT, Act, 0>(act, v.x); s[1] = scale_pair_of_byte<SDT, Act, 1>(act, v.x);
    s[2] = scale_pair_of_byte<SDT, Act, 2>(act, v.x); s[3] = scale_pair_of_byte<SDT, Act, 3>(act, v.x);
    s[4] = scale_pair_of_byte<SDT, Act, 0>(act, v.y); s[5] = scale_pair_of_byte<SDT, Act, 1>(act, v.y);
    s[6] = scale_pair_of_byte<SDT, Act, 2>(act, v.y); s[7] = scale_pair_of_byte<SDT, Act, 3>(act, v.y);
  }
}

// The two scale pairs of m16 fragment f (n8 fragments j = 2f, 2f + 1) into s[0], s[1]: the wide wgmma form,
// whose warps each dequantise one fragment. 16-bit scales: one 4-byte read; 8-bit: the two bytes of a word.
template <int SDT, class Act>
HM_DEVICE void load_scale_pairs_of_fragment(Act act, u32 row, int g, int f, u32 (&s)[8]) {
  if constexpr (SDT == kScaleAct) {
    const u32 v = arch::lds32(row + g * 16 + 4 * f);
    s[0] = splat_lo(v);
    s[1] = splat_hi(v);
  } else {
    const u32 v = arch::lds32(row + g * 8 + 4 * (f >> 1)) >> (16 * (f & 1));
    s[0] = scale_pair_of_byte<SDT, Act, 0>(act, v);
    s[1] = scale_pair_of_byte<SDT, Act, 1>(act, v);
  }
}

// Eight 8-bit group scales as f32 bit patterns, for scales applied to f32 partial sums (gemm_dense.cuh).
// ue8m0: the byte is the f32 exponent field, 2^(b-127) exactly for b = 1..254 (b = 0, 2^-127, reads as 0 and
// the NaN code 255 as inf, as in the activation-type pairs above). e4m3: two at a time through an exact f16
// pair (arch::e4m3x2_to_f16x2), then f16 -> f32, exact.
template <int SDT>
HM_DEVICE void load_scales_f32(u32 row, int g, u32 (&s)[8]) {
  static_assert(SDT != kScaleAct, "16-bit scales come as activation-type pairs (load_scale_pairs)");
  const uint2 v = arch::lds64(row + g * 8);
  if constexpr (SDT == kScaleUe8m0) {
#pragma unroll
    for (int j = 0; j < 8; ++j) s[j] = (((j < 4 ? v.x : v.y) >> (8 * (j % 4))) & 0xFFu) << 23;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) {  // bytes 2q and 2q + 1
      const u32 word = q < 2 ? v.x : v.y;
      const u32 h2 = arch::e4m3x2_to_f16x2(q % 2 ? word >> 16 : word);
      s[2 * q] = __float_as_uint(arch::to_f32(f16_t{}, h2));
      s[2 * q + 1] = __float_as_uint(arch::to_f32(f16_t{}, h2 >> 16));
    }
  }
}

// The f32 value of a group scale for the partial-sum path: 16-bit scales come as activation-type pairs,
// 8-bit ones as f32 bit patterns already (load_scales_f32).
template <int SDT, class Act>
HM_DEVICE float scale_f32(Act act, u32 s) {
  if constexpr (SDT == kScaleAct) return arch::to_f32(act, s);
  return __uint_as_float(s);
}

// The lane's eight zero points (stored as activation-type values), each splat to a pair.
HM_DEVICE void load_zero_pairs(u32 row, int g, u32 (&z)[8]) {
  const uint4 v = arch::lds128(row + g * 16);
  z[0] = splat_lo(v.x); z[1] = splat_hi(v.x);
  z[2] = splat_lo(v.y); z[3] = splat_hi(v.y);
  z[4] = splat_lo(v.z); z[5] = splat_hi(v.z);
  z[6] = splat_lo(v.w); z[7] = splat_hi(v.w);
}

}  // namespace dequant
}  // namespace humming
