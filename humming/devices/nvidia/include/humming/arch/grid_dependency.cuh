// humming/arch/grid_dependency.cuh -- NVIDIA arch layer: programmatic dependent launch (PTX ISA "griddepcontrol",
// sm_90+).
//
// A grid launched with the programmatic stream serialization attribute may start while the grid before it in the
// stream still runs, once every CTA of that grid has asked for it (launch_dependents) or exited. Such a grid must
// read nothing the earlier grid may write, and write nothing it may read, before wait_prior_grids(): that call
// returns once the earlier grids have completed and their memory operations are visible (at once for a grid
// launched without the attribute). HM_GRID_DEPENDENCY says whether this target has the instructions; a kernel
// exports it, and the host sets the attribute only for a kernel that says it waits (ops.launch).
#pragma once
#include <humming/arch/types.cuh>

#if defined(HM_ARCH) && HM_ARCH >= 900
#define HM_GRID_DEPENDENCY 1
#else
#define HM_GRID_DEPENDENCY 0
#endif

namespace humming {
namespace arch {

// Wait for the grids this one depends on (complete, memory visible). Every thread that touches memory those grids
// may touch calls it first.
HM_DEVICE void wait_prior_grids() {
#if HM_GRID_DEPENDENCY
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Let the next grid in the stream launch (its CTAs take SM slots as this grid's free up and run up to their own
// wait_prior_grids()). Called once this CTA has passed its own wait, so at most two grids overlap.
HM_DEVICE void release_dependent_grids() {
#if HM_GRID_DEPENDENCY
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace arch
}  // namespace humming
