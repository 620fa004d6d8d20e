// humming/dequant/codes.cuh -- the packed weight layout seen from one lane: raw words -> pairs of b-bit codes.
//
// A packed block covers 16 (k) x 64 (n) weights. Each lane owns 32 of them: the B fragments of eight
// m16n8k16 MMAs (n8 tiles j = 0..7), 4 values each (k = 2t, 2t+1, 2t+8, 2t+9 of column g + 8j; PTX ISA
// "Matrix fragments for mma.m16n8k16"). They form 16 pairs p = 2j + r (r: register b0 or b1); a pair is
// the two 16-bit halves of one MMA operand register.
//
// A b-bit code is split into bit planes of power-of-two widths (the binary digits of b: 8 -> 8; 7 -> 4+2+1;
// 6 -> 4+2; 5 -> 4+1; 3 -> 2+1). A plane of width w takes w words of the lane; pair p lives in word
// p / (16/w), at bits [w*i, w*i + w) of each 16-bit half (i = p % (16/w)), low half = first element.
// Lining pairs up on both halves is what makes one mask + one "magic number" OR turn them into f16x2.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace dequant {

// Width of plane `idx` of a b-bit code (widest first), and the code bit where it starts.
template <int B>
struct Planes {
  static constexpr int count = ((B >> 3) & 1) + ((B >> 2) & 1) + ((B >> 1) & 1) + (B & 1);
  HM_DEVICE static constexpr int width(int idx) {
    int seen = 0;
    for (int w = 8; w >= 1; w >>= 1) {
      if (B & w) {
        if (seen == idx) return w;
        ++seen;
      }
    }
    return 0;
  }
  // Plane idx holds code bits [bit_offset(idx), bit_offset(idx) + width(idx)): the widest plane the low bits.
  HM_DEVICE static constexpr int bit_offset(int idx) {
    int off = 0;
    for (int i = 0; i < idx; ++i) off += width(i);
    return off;
  }
  // The first lane word of plane idx (planes are stored one after another, w words each).
  HM_DEVICE static constexpr int word_offset(int idx) { return bit_offset(idx); }
};

HM_DEVICE constexpr u32 pair_mask(int w) { return ((1u << w) - 1u) * 0x00010001u; }

// Codes of pair P, at bits [0, B) of each half (the rest zero), shifted left by SHIFT (SHIFT + B <= 16).
template <int B, int P, int SHIFT = 0>
HM_DEVICE u32 code_pair(const u32 (&w)[B]) {
  u32 out = 0;
#pragma unroll
  for (int idx = 0; idx < Planes<B>::count; ++idx) {
    const int pw = Planes<B>::width(idx);
    const int per_word = 16 / pw;
    const u32 word = w[Planes<B>::word_offset(idx) + P / per_word];
    const int src = pw * (P % per_word);          // where the plane bits sit in the word
    const int dst = Planes<B>::bit_offset(idx) + SHIFT;  // where they belong in the code
    const u32 m = pair_mask(pw) << dst;
    out |= (dst >= src ? (word << (dst - src)) : (word >> (src - dst))) & m;
  }
  return out;
}

}  // namespace dequant
}  // namespace humming
