// humming/arch/bulk.cuh -- NVIDIA arch layer: sm_90's bulk copy engine (TMA without a tensor map) and the shared-
// memory barriers (mbarrier) its copies complete on.
//
// PTX ISA 8.x: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes copies a contiguous run of global
// memory (16-byte aligned, a multiple of 16 bytes) into shared memory without a thread issuing a load per 16
// bytes; the copy engine decrements the barrier's transaction count by the bytes it wrote. A stage is ready when
// the barrier's phase completes: its one expected arrival (mbarrier.arrive.expect_tx, which also adds the bytes
// to wait for) has happened and every byte has landed. Waiters poll mbarrier.try_wait.parity with the parity of
// the phase they want (0, 1, 0, ... on successive uses of the same barrier).
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE void mbarrier_init(u32 bar, u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// The arriving thread's one arrival, announcing `bytes` of copies that complete on the barrier.
HM_DEVICE void mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

HM_DEVICE bool mbarrier_try_wait(u32 bar, u32 parity) {
  u32 done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

// Until the barrier's phase of this parity has completed (try_wait itself suspends the thread for a while).
HM_DEVICE void mbarrier_wait(u32 bar, u32 parity) {
  while (!mbarrier_try_wait(bar, parity)) {
  }
}

// `bytes` (a multiple of 16) from global `src` to shared `dst` (both 16-byte aligned), completing on `bar`,
// with an L2 cache policy (createpolicy).
HM_DEVICE void bulk_copy_g2s(u32 dst, const void* src, u32 bytes, u32 bar, u64 policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}

}  // namespace arch
}  // namespace humming
