// humming/memory/tma.cuh -- the activation tile of a stage by one tensor copy.
//
// With a producer, one thread of it copies a stage's whole BM x BK activation tile with a single TMA instruction
// (instead of BM * BK / 8 16-byte cp.async spread over the producer's lanes): the host's tensor map has the
// activation matrix [M, K] (row stride lda), a box of BK x BM elements and 128-byte swizzling, which is the
// layout of mma::a_tile_offset (16-byte chunk c of row r at c ^ (r % 8), rows of 128 bytes, 1024-byte aligned
// tiles), and zero fill outside [M, K]. The copy completes on the stage's full barrier through its transaction
// count (mbarrier.expect_tx by the same thread, before its own arrival).
#pragma once
#include <humming/arch/tma.cuh>
#include <humming/memory/stage.cuh>

namespace humming {
namespace memory {

template <class Stage, int FIRST>
struct TmaActivationLoader {
  static_assert(Stage::BK * 2 == 128, "one 128-byte swizzle span per row: BK = 64 16-bit elements");
  static_assert(Stage::BM <= 256, "a tensor copy's box has at most 256 rows");
  const arch::TensorMap* map;  // the kernel's tensor-map parameter (GemmDenseArgs::a of the TMA kernels)
  int m0;

  HM_DEVICE void set_tile(const void* a, int m0_, int /*m*/, int /*k*/, int /*lda*/) {
    map = static_cast<const arch::TensorMap*>(a);
    m0 = m0_;
  }

  HM_DEVICE void load(u32 dst, int kt, u32 bar) const {
    if (threadIdx.x == FIRST) {
      arch::mbarrier_expect_tx(bar, Stage::BM * Stage::BK * 2);
      arch::tma_load_2d(dst, map, kt * Stage::BK, m0, bar);
    }
  }
};

}  // namespace memory
}  // namespace humming
