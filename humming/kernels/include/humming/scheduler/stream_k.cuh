// humming/scheduler/stream_k.cuh -- which (tile, k-step) iterations each CTA runs, and who shares a tile.
//
// The problem is tiles x k_iters iterations in a row (tile-major, k fastest). CTA g of G runs the contiguous
// range [g*T/G, (g+1)*T/G): every CTA gets the same amount of work (to one iteration), so a decode-sized
// problem with fewer tiles than SMs still keeps every SM streaming weights (Stream-K: Osama et al., "Stream-K:
// Work-centric Parallel Decomposition for Dense Matrix-Matrix Multiplication on the GPU", PPoPP 2023).
// With G = tiles the ranges are exactly one tile each (plain data-parallel tiling, no partial sums).
// A CTA has at most two partial tiles: its first segment, which lacks the tile's first k-step when the range starts
// inside a tile, and its last, which holds a tile's first k-step when the range ends inside one. Their f32 partials
// go to workspace slots 2g and 2g + 1 (epilogue/finish.cuh reduces them).
#pragma once
#include <humming/arch/types.cuh>

// Timing experiments only (NOTES-wna16 run 43): 1 = every CTA's range rounded to whole tiles (CTA g of G runs tiles
// [g T / G, (g + 1) T / G) of T, all their k-steps): one CTA an SM walking its tiles without partial ones, under a
// Stream-K plan's grid.
#ifndef HM_WHOLE_TILES
#define HM_WHOLE_TILES 0
#endif

namespace humming {
namespace scheduler {

struct StreamK {
  long long total;  // tiles * k_iters
  int ctas;         // G
  int k_iters;      // iterations per tile
  double per_cta;   // total / G, rounded: the estimate begin() corrects to the exact quotient
  double per_iter;  // G / total, rounded: the same for owner()

  // g * total / G rounded down. A 64-bit division is a ~70-instruction dependent call, and a tile's fix-up asks
  // for several at the very end of the launch, where nothing hides their latency: instead a double estimate
  // (its relative error a few 2^-53, so within one of the quotient for any total under 2^50, far past any
  // launch) and one exact integer correction.
  HM_DEVICE long long begin(int g) const {
    if constexpr (HM_WHOLE_TILES != 0) return static_cast<long long>(g) * (total / k_iters) / ctas * k_iters;
    const long long num = static_cast<long long>(g) * total;
    long long q = __double2ll_rd(static_cast<double>(g) * per_cta);
    if (q * ctas > num) --q;
    else if ((q + 1) * ctas <= num) ++q;
    return q;
  }
  HM_DEVICE long long end(int g) const { return begin(g + 1); }
  // The CTA whose range holds iteration x: the largest g with begin(g) <= x.
  HM_DEVICE int owner(long long x) const {
    int g = min(max(__double2int_rd(static_cast<double>(x) * per_iter), 0), ctas - 1);
    // The estimate can be one off at range edges; settle it exactly.
    while (g + 1 < ctas && begin(g + 1) <= x) ++g;
    while (g > 0 && begin(g) > x) --g;
    return g;
  }
  // Workspace slot of CTA g's partial for the tile whose first iteration is t0 (g shares it): 2g when the tile holds
  // g's first iteration, else 2g + 1 (the tile is g's last segment).
  HM_DEVICE int slot(int g, long long t0) const { return 2 * g + (begin(g) >= t0 ? 0 : 1); }
};

// The split of a launch's tiles x k_iters iterations over its CTAs (gridDim.x).
template <class Args>
HM_DEVICE StreamK stream_k_of(const Args& p, int k_iters) {
  const long long total = static_cast<long long>(p.m_tiles) * p.n_tiles * k_iters;
  const int ctas = static_cast<int>(gridDim.x);
  // Reciprocals rather than divisions (a division is a call); begin() and owner() tolerate their rounding.
  return StreamK{total, ctas, k_iters, static_cast<double>(total) * __drcp_rn(static_cast<double>(ctas)),
                 static_cast<double>(ctas) * __drcp_rn(static_cast<double>(total))};
}

// Tile t -> (m tile, n tile): groups of `group_m` m-tiles walk N together, so that the CTAs running at once
// share both their activation rows and their weight columns in L2. CLUSTER_N consecutive tiles (one cluster's CTAs,
// one CTA a tile) take adjacent n tiles of one m tile, so that they share its activations (n_tiles % CLUSTER_N == 0).
template <int CLUSTER_N = 1>
HM_DEVICE void tile_coords(int t, int m_tiles, int n_tiles, int group_m, int& mt, int& nt) {
  const int part = t % CLUSTER_N;
  t /= CLUSTER_N;
  n_tiles /= CLUSTER_N;
  const int per_group = group_m * n_tiles;
  const int first_m = (t / per_group) * group_m;
  const int rows = min(m_tiles - first_m, group_m);
  const int local = t - (t / per_group) * per_group;
  mt = first_m + local % rows;
  nt = (local / rows) * CLUSTER_N + part;
}

}  // namespace scheduler
}  // namespace humming
