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
struct KernelSpan {
  unsigned long long* slot;
  HM_DEVICE explicit KernelSpan(int* counters)
      : slot(reinterpret_cast<unsigned long long*>(counters + HM_TIMESTAMPS)) {
    if ((threadIdx.x & 31) == 0) atomicMin(slot, global_ns());
  }
  HM_DEVICE ~KernelSpan() {
    if ((threadIdx.x & 31) == 0) atomicMax(slot + 1, global_ns());
  }
};
#else
struct KernelSpan {
  HM_DEVICE explicit KernelSpan(int*) {}
};
#endif

}  // namespace arch
}  // namespace humming
