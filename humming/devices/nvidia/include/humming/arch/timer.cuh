// humming/arch/timer.cuh -- a kernel's run span on the device clock, for timing experiments only.
//
// Built with HM_TIMESTAMPS=I (benchmarks/profile_wna16.py --span), a kernel entry's KernelSpan leaves two
// %globaltimer readings (ns) in the u64 slots at int index I of the tile-counter buffer: the earliest start of any
// warp (atomicMin) and the latest finish (atomicMax, on every return path). A timer's event interval minus that span
// is what a launch costs around the kernel's own run. Without HM_TIMESTAMPS it is empty and compiles to nothing.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE u64 global_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

#ifdef HM_TIMESTAMPS
// HM_TIMESTAMP_CTAS=C (with HM_TIMESTAMPS): CTAs 0..C-1 also leave their own record after the two slots, three u64
// a CTA: its first warp's start, its last warp's finish, and the SM it ran on (how the span splits: launch ramp,
// per-CTA run time, the slowest SM).
#ifndef HM_TIMESTAMP_CTAS
#define HM_TIMESTAMP_CTAS 0
#endif
struct KernelSpan {
  unsigned long long* slot;
  HM_DEVICE explicit KernelSpan(int* counters)
      : slot(reinterpret_cast<unsigned long long*>(counters + HM_TIMESTAMPS)) {
    if ((threadIdx.x & 31) == 0) {
      const u64 now = global_ns();
      atomicMin(slot, now);
      if (blockIdx.x < HM_TIMESTAMP_CTAS) {
        unsigned long long* cta = slot + 2 + 3 * blockIdx.x;
        atomicMin(cta, now);
        u32 sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        cta[2] = sm;
      }
    }
  }
  HM_DEVICE ~KernelSpan() {
    if ((threadIdx.x & 31) == 0) {
      const u64 now = global_ns();
      atomicMax(slot + 1, now);
      if (blockIdx.x < HM_TIMESTAMP_CTAS) atomicMax(slot + 3 + 3 * blockIdx.x, now);
    }
  }
};
#else
struct KernelSpan {
  HM_DEVICE explicit KernelSpan(int*) {}
};
#endif

}  // namespace arch
}  // namespace humming
