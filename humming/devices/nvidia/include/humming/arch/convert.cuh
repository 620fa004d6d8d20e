// humming/arch/convert.cuh -- NVIDIA arch layer: paired 16-bit float arithmetic and conversions on raw registers.
//
// Everything works on two 16-bit values packed in one 32-bit register (the MMA operand format), with the
// PTX f16x2 / bf16x2 instructions (PTX ISA 9.7.4: fma.rn.f16x2 from sm_53, fma.rn.bf16x2 from sm_80;
// cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 from sm_80, 9.7.9.21). Only fma is used for bf16, so that sm_80
// (which lacks mul/sub.bf16x2) and sm_90 share one path.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE u32 fma2(f16_t, u32 a, u32 b, u32 c) {
  u32 d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

HM_DEVICE u32 fma2(bf16_t, u32 a, u32 b, u32 c) {
  u32 d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Bit patterns of constants, two per register.
HM_DEVICE constexpr u32 neg_zero2() { return 0x80008000u; }
HM_DEVICE constexpr u32 one2(f16_t) { return 0x3C003C00u; }
HM_DEVICE constexpr u32 one2(bf16_t) { return 0x3F803F80u; }

HM_DEVICE u32 mul2(f16_t t, u32 a, u32 b) { return fma2(t, a, b, neg_zero2()); }
HM_DEVICE u32 mul2(bf16_t t, u32 a, u32 b) { return fma2(t, a, b, neg_zero2()); }

// Two f32 -> packed pair (lo in bits 0..15), round to nearest even.
HM_DEVICE u32 pack2(f16_t, float lo, float hi) {
  u32 d;
#if HM_ARCH >= 800
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
#else
  u16 l, h;
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(l) : "f"(lo));
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(hi));
  d = static_cast<u32>(l) | (static_cast<u32>(h) << 16);
#endif
  return d;
}

HM_DEVICE u32 pack2(bf16_t, float lo, float hi) {
  u32 d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

// One f32 -> 16-bit pattern.
HM_DEVICE u16 pack1(f16_t, float x) {
  u16 d;
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(d) : "f"(x));
  return d;
}

HM_DEVICE u16 pack1(bf16_t, float x) {
  // cvt.rn.bf16.f32 needs sm_80 (the only targets that render bf16).
  u16 d;
  asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(d) : "f"(x));
  return d;
}

HM_DEVICE float unpack_lo(f16_t, u32 x) {
  float f;
  asm("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l;}\n" : "=f"(f) : "r"(x));
  return f;
}

HM_DEVICE float unpack_lo(bf16_t, u32 x) { return __uint_as_float(x << 16); }
// The high half of a bf16 pair as f32: its bits already sit where f32's do.
HM_DEVICE float unpack_hi(bf16_t, u32 x) { return __uint_as_float(x & 0xFFFF0000u); }

// f32 from a 16-bit pattern in the low half.
HM_DEVICE float to_f32(f16_t t, u32 x) { return unpack_lo(t, x); }
HM_DEVICE float to_f32(bf16_t t, u32 x) { return unpack_lo(t, x); }

// Byte permute (PTX prmt.b32, 9.7.8.7): selects 4 bytes of {b, a} by the 4 nibbles of s.
HM_DEVICE u32 prmt(u32 a, u32 b, u32 s) {
  u32 d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(s));
  return d;
}

// Two e4m3 codes (bits 0..7 and 8..15 of x) -> their f16 pair, exact (e4m3 is a subset of f16, subnormals
// included). sm_89 and later: one cvt.rn.f16x2.e4m3x2 (PTX ISA 9.7.9.21); before: the sign and the seven
// exponent-mantissa bits placed into f16 read as the value times 2^-8, fixed by one exact multiply.
HM_DEVICE u32 e4m3x2_to_f16x2(u32 x) {
  u32 d;
#if HM_ARCH >= 890
  asm("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.rn.f16x2.e4m3x2 %0, l;}\n" : "=r"(d) : "r"(x));
#else
  const u32 spread = (x & 0xFFu) | ((x & 0xFF00u) << 8);  // byte 1 to the high half
  d = fma2(f16_t{}, ((spread & 0x00800080u) << 8) | ((spread & 0x007F007Fu) << 7), 0x5C005C00u /* 256 */,
           neg_zero2());
#endif
  return d;
}

// Rotate right by S (PTX shf.r.wrap.b32 with both inputs the same word, 9.7.8.6): one SHF.
template <int S>
HM_DEVICE u32 rotr(u32 x) {
  u32 d;
  asm("shf.r.wrap.b32 %0, %1, %1, %2;\n" : "=r"(d) : "r"(x), "n"(S));
  return d;
}

}  // namespace arch
}  // namespace humming
