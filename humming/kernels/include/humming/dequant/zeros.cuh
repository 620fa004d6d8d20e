// humming/dequant/zeros.cuh -- the zero-point terms a lane adds after the magic-number read (dequant/values).
//
// For each of a warp's n64 blocks and the lane's eight n8 fragments (columns g + 8j): lo = -(magic + z) as an
// activation-type pair, hi = -(64 + z) for the odd pairs of 4-bit codes into f16 (read as 1024 + 16c, scaled
// by 1/16), f = -(2^23 + z) for 8-bit codes into bf16 (through f32). A constant zero is set once; zero-point
// rows (stored as activation-type values, dequant/scales.cuh) are loaded once per group.
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/dequant/scales.cuh>

namespace humming {
namespace dequant {

template <class Act, int FN>
struct ZeroTerms {
  static constexpr bool kF16 = ActTraits<Act>::mantissa == 10;
  u32 lo[FN][8];
  u32 hi[FN][8];
  float f[FN][8];

  HM_DEVICE void set_const(int z) {
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        lo[fn][j] = ((kF16 ? 0xE400u : 0xC300u) + z) * 0x00010001u;
        hi[fn][j] = (0xD400u + (z << 4)) * 0x00010001u;
        f[fn][j] = -(8388608.0f + static_cast<float>(z));
      }
  }

  // The zero-point row of block fn at shared address `row`, for codes of B bits.
  template <int B>
  HM_DEVICE void load(u32 row, int g, int fn) {
    u32 z[8];
    load_zero_pairs(row, g, z);
#pragma unroll
    for (int j = 0; j < 8; ++j) set<B>(fn, j, z[j]);
  }

  // The zero points of m16 fragment f only (n8 fragments 2f, 2f + 1) as j = 0, 1 of block fn: the wide wgmma
  // form, whose warps each dequantise one fragment of each of their blocks.
  template <int B>
  HM_DEVICE void load_fragment(u32 row, int g, int f, int fn = 0) {
    const u32 v = arch::lds32(row + g * 16 + 4 * f);
    set<B>(fn, 0, splat_lo(v));
    set<B>(fn, 1, splat_hi(v));
  }

  // The offsets of one zero-point pair z (both halves the same activation-type zero).
  template <int B>
  HM_DEVICE void set(int fn, int j, u32 z) {
    const u32 minus_one = kF16 ? 0xBC00BC00u : 0xBF80BF80u;
    lo[fn][j] = arch::fma2(Act{}, z, minus_one, kF16 ? 0xE400E400u : 0xC300C300u);
    if constexpr (kF16) hi[fn][j] = arch::fma2(Act{}, z, minus_one, 0xD400D400u);
    if constexpr (!kF16 && B == 8) f[fn][j] = -(8388608.0f + arch::to_f32(Act{}, z));
  }
};

}  // namespace dequant
}  // namespace humming
