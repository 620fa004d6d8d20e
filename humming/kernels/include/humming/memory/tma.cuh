// humming/memory/tma.cuh -- the activation tile of a stage by one tensor copy.
//
// With a producer, one thread of it copies a stage's whole BM x BK activation tile with a single TMA instruction
// (instead of BM * BK / 8 16-byte cp.async spread over the producer's lanes): the host's tensor map has the
// activation matrix [M, K] (row stride lda), a box of BK x BM elements and 128-byte swizzling, which is the
// layout of mma::a_tile_offset (16-byte chunk c of row r at c ^ (r % 8), rows of 128 bytes, 1024-byte aligned
// tiles), and zero fill outside [M, K]. The copy completes on the stage's full barrier through its transaction
// count (mbarrier.expect_tx by the same thread, before its own arrival).
// With CLUSTER > 1 (one CTA a tile, the cluster's CTAs on adjacent n tiles of one m tile: scheduler/stream_k.cuh
// tile_coords) each CTA copies BM / CLUSTER rows of the tile, multicast into the same stage of every CTA of the
// cluster: the activations cross from L2 once per cluster instead of once per CTA. The host's box is then
// BK x (BM / CLUSTER). Each CTA's barrier expects the whole tile, its parts credited by whichever CTA copied them
// (a peer's part may land before the expect_tx: the count goes below zero until then, and the phase cannot
// complete before this thread's own arrival). The ring then refills a slot only once every CTA's compute warps
// released it (scheduler/pipeline.cuh).
#pragma once
#include <humming/arch/cluster.cuh>
#include <humming/arch/tma.cuh>
#include <humming/memory/stage.cuh>

// Timing experiments only (NOTES-wna16 run 43): 0 = a cluster's CTAs each copy their own whole tile (two boxes of
// BM / CLUSTER rows), nothing multicast.
#ifndef HM_CLUSTER_MULTICAST
#define HM_CLUSTER_MULTICAST 1
#endif

namespace humming {
namespace memory {

template <class Stage, int FIRST, int CLUSTER = 1>
struct TmaActivationLoader {
  static_assert(Stage::BK * 2 == 128, "one 128-byte swizzle span per row: BK = 64 16-bit elements");
  static_assert(Stage::BM <= 256, "a tensor copy's box has at most 256 rows");
  static constexpr int kPartRows = Stage::BM / CLUSTER;  // the rows this CTA copies for the cluster
  static_assert(CLUSTER == 1 || (CLUSTER == 2 && kPartRows % 8 == 0),
                "a pair of CTAs, each part whole 1024-byte swizzle atoms (8 rows of 128 bytes)");
  const arch::TensorMap* map;  // the kernel's tensor-map parameter (GemmDenseArgs::a of the TMA kernels)
  int m0;
  int part;  // this CTA's rank in its cluster: the part of the tile it copies

  HM_DEVICE void set_tile(const void* a, int m0_, int /*m*/, int /*k*/, int /*lda*/) {
    map = static_cast<const arch::TensorMap*>(a);
    m0 = m0_;
    part = CLUSTER > 1 ? static_cast<int>(arch::cluster_ctarank()) : 0;
  }

  HM_DEVICE void load(u32 dst, int kt, u32 bar) const {
    if (threadIdx.x == FIRST) {
      arch::mbarrier_expect_tx(bar, Stage::BM * Stage::BK * 2);
      if constexpr (CLUSTER == 1) {
        arch::tma_load_2d(dst, map, kt * Stage::BK, m0, bar);
      } else if constexpr (!HM_CLUSTER_MULTICAST) {
        for (int r = 0; r < CLUSTER; ++r)
          arch::tma_load_2d(dst + r * kPartRows * Stage::BK * 2, map, kt * Stage::BK, m0 + r * kPartRows, bar);
      } else {
        arch::tma_load_2d_multicast(dst + part * kPartRows * Stage::BK * 2, map, kt * Stage::BK, m0 + part * kPartRows,
                                    bar, static_cast<u16>((1u << CLUSTER) - 1u));
      }
    }
  }
};

}  // namespace memory
}  // namespace humming
