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

// The widest power of two in x <= 15 (0 for 0). Outside Planes: a constant initialiser inside a class may not
// call the class's own member functions (they are defined only once the class is complete).
HM_DEVICE constexpr int widest_plane(int x) { return x & 8 ? 8 : x & 4 ? 4 : x & 2 ? 2 : x & 1; }

// Width of plane `idx` of a b-bit code (widest first), and the code bit where it starts. Written without loops:
// code_pair's loop over the planes must unroll to constants, and with these two as loops (a search over the
// bits, a sum) NVRTC 13.5 left the 7-bit code's three-plane loop rolled on every target (sm_75 / sm_80 / sm_90a):
// the lane's words went to local memory and the plane arithmetic ran in every k-step (an sm_90a decode loop of
// ~3270 instructions with 80 LDL / STL, against ~810 and none now). The other widths compile as before.
template <int B>
struct Planes {
  static constexpr int count = ((B >> 3) & 1) + ((B >> 2) & 1) + ((B >> 1) & 1) + (B & 1);
  static constexpr int w0 = widest_plane(B), w1 = widest_plane(B - w0), w2 = widest_plane(B - w0 - w1),
                       w3 = B - w0 - w1 - w2;
  HM_DEVICE static constexpr int width(int idx) { return idx == 0 ? w0 : idx == 1 ? w1 : idx == 2 ? w2 : w3; }
  // Plane idx holds code bits [bit_offset(idx), bit_offset(idx) + width(idx)): the widest plane the low bits.
  HM_DEVICE static constexpr int bit_offset(int idx) {
    return idx == 0 ? 0 : idx == 1 ? w0 : idx == 2 ? w0 + w1 : w0 + w1 + w2;
  }
  // The first lane word of plane idx (planes are stored one after another, w words each).
  HM_DEVICE static constexpr int word_offset(int idx) { return bit_offset(idx); }
};

static_assert(Planes<7>::count == 3 && Planes<7>::width(0) == 4 && Planes<7>::width(1) == 2 &&
                  Planes<7>::width(2) == 1 && Planes<7>::bit_offset(2) == 6 && Planes<5>::width(1) == 1 &&
                  Planes<3>::bit_offset(1) == 2 && Planes<8>::count == 1 && Planes<8>::width(0) == 8,
              "bit planes: the binary digits of b, widest first, at the low code bits");

HM_DEVICE constexpr u32 pair_mask(int w) { return ((1u << w) - 1u) * 0x00010001u; }

// Codes of pair P, at bits [0, B) of each half, shifted left by SHIFT (SHIFT + B <= 16), OR-ed onto `base`: 0 for
// the small floats; the integer path passes its magic exponent pair, held in a register, so that each plane's
// mask-and-merge is one LOP3 with it rather than a separate OR after the planes.
template <int B, int P, int SHIFT = 0>
HM_DEVICE u32 code_pair(const u32 (&w)[B], u32 base = 0) {
  u32 out = base;
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
