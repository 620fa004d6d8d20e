// humming/arch/mma.cuh -- NVIDIA arch layer: warp-level tensor-core MMA, one m16n8k16 step with f32 accumulation.
//
// The register layout is the PTX ISA's for mma.m16n8k16 (PTX ISA 9.0, section 9.7.14.5.8, "Matrix fragments
// for mma.m16n8k16 with floating point type"): A 16x16 row-major in 4 x .b32 (a0..a7 as f16x2/bf16x2),
// B 16x8 column-major in 2 x .b32, C/D 16x8 f32 in 4 registers. sm_80+ issues one m16n8k16; sm_75 has only
// m16n8k8 for f16 (and no bf16 MMA at all), so it issues two k8 steps whose fragments are exactly the two
// halves of the k16 fragments (a0,a1 | a2,a3 and b0 | b1).
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE void mma_m16n8k16(f16_t, float (&c)[4], const u32 (&a)[4], const u32 (&b)[2]) {
#if HM_ARCH >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
}

HM_DEVICE void mma_m16n8k16(bf16_t, float (&c)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  // bf16 MMA exists from sm_80; the Python twin never renders bf16 for a target without it.
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace arch
}  // namespace humming
