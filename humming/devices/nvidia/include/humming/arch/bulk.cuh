// humming/arch/bulk.cuh -- NVIDIA arch layer: sm_90's bulk copy engine (TMA without a tensor map), the shared-
// memory barriers (mbarrier, sm_80+) that its copies and tracked cp.async copies complete on, and named barriers.
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

// try_wait (sm_90) suspends the thread for a while when the phase is not complete; test_wait (sm_80) returns at once.
HM_DEVICE bool mbarrier_try_wait(u32 bar, u32 parity) {
  u32 done;
#if HM_ARCH >= 900
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
#endif
  return done != 0;
}

// One arrival of the calling thread (release: its earlier shared-memory reads and writes happen before it).
HM_DEVICE void mbarrier_arrive(u32 bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}

// sm_80: one arrival of the calling thread, made when all of its earlier cp.async copies have landed (.noinc: it
// is one of the arrivals the barrier was initialised to expect), so that waiters see those copies.
HM_DEVICE void cp_async_mbarrier_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// A barrier among `threads` threads (a multiple of 32) of the CTA on hardware barrier `id` (1..15; 0 is
// __syncthreads'): the compute warps of a kernel whose producer warp never joins them.
HM_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
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
