// humming/arch/cluster.cuh -- NVIDIA arch layer: thread-block clusters (sm_90+): a CTA's rank, the cluster-wide
// barrier, arrivals on a peer CTA's mbarrier, and a tensor copy multicast into every CTA of a mask.
//
// PTX ISA 8.0: %cluster_ctarank; barrier.cluster.arrive / wait (every thread of the cluster; .release / .acquire
// order the shared-memory accesses of the cluster around it); mapa.shared::cluster (a CTA-local shared address ->
// the same offset in CTA `rank` of the cluster); mbarrier.arrive.shared::cluster on such an address;
// fence.mbarrier_init.release.cluster (barrier initialisations visible to the cluster before a peer arrives on them
// or a copy completes on them); cp.async.bulk.tensor ... .multicast::cluster (one box read once, written to the same
// shared offset of every CTA in a 16-bit mask, each CTA's mbarrier at that offset credited with the box's bytes).
#pragma once
#include <humming/arch/tma.cuh>
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every CTA in the cluster arrives, then waits for all arrivals (aligned: the whole warp together).
HM_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory"); }
HM_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

HM_DEVICE void fence_mbarrier_init_cluster() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// The semantics of a peer arrival: the default's (.release at CTA scope, the form CUTLASS's ClusterBarrier::arrive
// issues). The slot it hands back was read by this warp's LDS (their values consumed) and wgmma (retired by its
// wait) before it. Timing experiments only (NOTES-wna16 run 43): 1 = .release.cluster, which ptxas compiles to
// MEMBAR.ALL.GPU before each arrival (the pair form ran 1.5x slower than one CTA a tile, H100, 2026-12-06);
// 2 = .relaxed.cluster.
#ifndef HM_CLUSTER_ARRIVE
#define HM_CLUSTER_ARRIVE 0
#endif

// One arrival on the mbarrier at CTA-local shared address `bar`, in CTA `rank` of the cluster.
HM_DEVICE void mbarrier_arrive_cluster(u32 bar, u32 rank) {
#if HM_CLUSTER_ARRIVE == 1
#define HM_ARRIVE_SEM ".release.cluster"
#elif HM_CLUSTER_ARRIVE == 2
#define HM_ARRIVE_SEM ".relaxed.cluster"
#else
#define HM_ARRIVE_SEM ""
#endif
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive" HM_ARRIVE_SEM ".shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
#undef HM_ARRIVE_SEM
}

// tma_load_2d's box, written to `dst` and credited to `bar` (CTA-local offsets) in every CTA of `mask`.
HM_DEVICE void tma_load_2d_multicast(u32 dst, const TensorMap* map, int x, int y, u32 bar, u16 mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
      : "memory");
}

}  // namespace arch
}  // namespace humming
