// humming/scheduler/stream_k.cuh -- which (tile, k-step) iterations each CTA runs, and who shares a tile.
//
// The problem is tiles x k_iters iterations in a row (tile-major, k fastest). CTA g of G runs the contiguous
// range [g*T/G, (g+1)*T/G): every CTA gets the same amount of work (to one iteration), so a decode-sized
// problem with fewer tiles than SMs still keeps every SM streaming weights (Stream-K: Osama et al., "Stream-K:
// Work-centric Parallel Decomposition for Dense Matrix-Matrix Multiplication on the GPU", PPoPP 2023).
// With G = tiles the ranges are exactly one tile each (plain data-parallel tiling, no partial sums).
// A CTA has at most two partial tiles (its first and its last); their fp32 partials go to workspace slots
// 2g and 2g+1, and the last CTA to finish a tile adds them all in CTA order (deterministic) and stores it.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace scheduler {

struct StreamK {
  long long total;  // tiles * k_iters
  int ctas;         // G
  int k_iters;      // iterations per tile

  HM_DEVICE long long begin(int g) const { return static_cast<long long>(g) * total / ctas; }
  HM_DEVICE long long end(int g) const { return static_cast<long long>(g + 1) * total / ctas; }
  // The CTA whose range holds iteration x: the largest g with begin(g) <= x.
  HM_DEVICE int owner(long long x) const {
    int g = static_cast<int>(((x + 1) * ctas + total - 1) / total) - 1;
    // Integer rounding can leave g one off at range edges; settle it exactly.
    while (g + 1 < ctas && begin(g + 1) <= x) ++g;
    while (g > 0 && begin(g) > x) --g;
    return g;
  }
  // Workspace slot of CTA g's partial sum for tile t.
  HM_DEVICE int slot(int g, int t) const { return 2 * g + (begin(g) / k_iters == t ? 0 : 1); }
};

// The split of a launch's tiles x k_iters iterations over its CTAs (gridDim.x).
template <class Args>
HM_DEVICE StreamK stream_k_of(const Args& p, int k_iters) {
  return StreamK{static_cast<long long>(p.m_tiles) * p.n_tiles * k_iters, static_cast<int>(gridDim.x), k_iters};
}

// Tile t -> (m tile, n tile): groups of `group_m` m-tiles walk N together, so that the CTAs running at once
// share both their activation rows and their weight columns in L2.
HM_DEVICE void tile_coords(int t, int m_tiles, int n_tiles, int group_m, int& mt, int& nt) {
  const int per_group = group_m * n_tiles;
  const int first_m = (t / per_group) * group_m;
  const int rows = min(m_tiles - first_m, group_m);
  const int local = t - (t / per_group) * per_group;
  mt = first_m + local % rows;
  nt = local / rows;
}

}  // namespace scheduler
}  // namespace humming
