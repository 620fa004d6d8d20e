// humming/arch/wgmma.cuh -- NVIDIA arch layer: sm_90a's warpgroup MMA with A from registers and B in shared memory.
//
// PTX ISA 9.x, section 9.7.15.5 (wgmma.mma_async, .m64nNk16 with .f16/.bf16 operands and .f32 accumulation):
// - A (64 x 16) comes from registers: warp w of the warpgroup holds rows 16w..16w+15 in exactly the layout of
//   mma.m16n8k16's A fragment (a0..a3), so the dequantised weight pairs of the mma.sync kernels feed it as is.
// - B (16 x N) is read from shared memory through a matrix descriptor; here always K-major (imm-trans-b = 0)
//   with the 128-byte swizzle: 8 rows of 128 bytes (64 elements along K) per 1024-byte atom, the 16-byte chunk c
//   of row r stored at chunk c ^ (r % 8) -- the layout mma/fragments.cuh's a_tile_offset gives a 64-deep tile.
// - D (64 x N, f32): per n8 column block, the m16n8 C fragment of each warp's 16 rows (4 floats a lane).
// The instructions are asynchronous: wgmma.fence before the first one that reads registers written by other
// instructions, commit_group after a batch, wait_group before the accumulators (or the shared B tile) are
// touched by anything else. Shared memory written through the generic proxy (cp.async, st.shared) must be
// made visible to the async proxy with fence.proxy.async before a wgmma reads it.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
HM_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
HM_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Generic-proxy shared-memory writes (cp.async, st.shared) -> visible to wgmma's async-proxy reads.
HM_DEVICE void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address >> 4 in bits 0-13, leading byte offset
// >> 4 in 16-29 (unused by swizzled K-major layouts whose K extent fits one atom: 1 by convention), stride byte
// offset >> 4 in 32-45 (1024: the next 8 rows), base offset 0 (atoms 1024-byte aligned), swizzle mode in 62-63
// (1 = 128-byte). Moving along K inside the atom is a plain add to the start address (32 bytes a k16 step).
HM_DEVICE u64 wgmma_desc_sw128(u32 smem_addr) {
  return static_cast<u64>((smem_addr & 0x3FFFFu) >> 4) | (static_cast<u64>(1) << 16) |
         (static_cast<u64>(1024 >> 4) << 32) | (static_cast<u64>(1) << 62);
}

// D[64 x N] += A[64 x 16] (registers) x B[16 x N] (shared, K-major, 128-byte swizzle), for N = 32 or 64:
// operands are D (N/2 registers), then a0..a3, the B descriptor and the scale-d flag (1: accumulate).
template <int N>
struct WgmmaRS;

template <>
struct WgmmaRS<32> {
  template <class Act>
  static HM_DEVICE void run(Act, float (&d)[16], const u32 (&a)[4], u64 b_desc) {
    constexpr bool f16 = ActTraits<Act>::mantissa == 10;
    if constexpr (f16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
    }
  }
};

template <>
struct WgmmaRS<64> {
  template <class Act>
  static HM_DEVICE void run(Act, float (&d)[32], const u32 (&a)[4], u64 b_desc) {
    constexpr bool f16 = ActTraits<Act>::mantissa == 10;
    if constexpr (f16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
    }
  }
};

template <int N, class Act>
HM_DEVICE void wgmma_rs(Act act, float (&d)[N / 2], const u32 (&a)[4], u64 b_desc) {
  WgmmaRS<N>::run(act, d, a, b_desc);
}

}  // namespace arch
}  // namespace humming
