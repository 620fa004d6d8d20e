// humming/arch/tma.cuh -- NVIDIA arch layer: sm_90's tensor copies (TMA through a tensor map).
//
// PTX ISA 8.0: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes copies one box of
// a 2-D tensor, described by a tensor map the host encodes (cuTensorMapEncodeTiled), into shared memory, laid
// out with the map's swizzle; coordinates outside the tensor read as zeros, and the copy engine credits the
// whole box's bytes to the barrier's transaction count. The map is a 128-byte, 64-byte aligned object passed as
// a __grid_constant__ kernel parameter; the instruction takes its generic address.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

// The driver's CUtensorMap, opaque.
struct alignas(64) TensorMap {
  u64 opaque[16];
};

// Adds `bytes` to what the barrier's current phase waits for, without an arrival: the thread still makes its
// own arrival (here: its cp.async.mbarrier.arrive), so the phase cannot complete before the copy is issued.
HM_DEVICE void mbarrier_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// The box at element coordinates (x along the inner dimension, y along the outer) into shared `dst` (aligned to
// the swizzle's atom: 1024 bytes for 128-byte swizzling), completing on `bar`.
HM_DEVICE void tma_load_2d(u32 dst, const TensorMap* map, int x, int y, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

}  // namespace arch
}  // namespace humming
