// humming/epilogue/reduce.cuh -- a CTA's k-warps (or k-warpgroups) summed through shared memory before a tile's finish.
//
// mma.sync tiles with WARP_K > 1 split a stage's k16 steps over warps: reduce_k_warps adds them into warp-k 0's
// accumulators. The wgmma four-fragment form with two k-warpgroups (which take the ring's stages in turn) exchanges
// halves instead, so that each group holds the whole sums of the fragments it finishes (reduce_k_groups).
#pragma once
#include <humming/arch/types.cuh>
#include <humming/epilogue/quads.cuh>
#include <humming/mma/swapped.cuh>

namespace humming {
namespace epilogue {

// Add the other k-warps' accumulators into warp-k 0's (through `red`, (WARP_K-1) * BM * BN floats).
template <class Cfg, class Acc>
HM_DEVICE void reduce_k_warps(char* red_smem, Acc& acc, int wmn, int wk, int lane) {
  constexpr int R = Cfg::kFragM * Cfg::kFragN * 8;  // float4s per lane
  constexpr int WMN = Cfg::kWarpM * Cfg::kWarpN;
  float4* red = reinterpret_cast<float4*>(red_smem);
  if (wk > 0) {
    for_each_quad(acc, [&](float (&c)[4], int r) {
      red[(((wk - 1) * WMN + wmn) * R + r) * 32 + lane] = make_float4(c[0], c[1], c[2], c[3]);
    });
  }
  Cfg::sync_compute();
  if (wk == 0) {
    for (int kk = 1; kk < Cfg::kWarpK; ++kk)
      for_each_quad(acc, [&](float (&c)[4], int r) { add4(c, red[(((kk - 1) * WMN + wmn) * R + r) * 32 + lane]); });
  }
  // With a producer warp no CTA barrier follows in the k-loop, and the other k-warps could run a short next
  // segment on stages already full and write `red` again while warp-k 0 still reads it.
  if constexpr (Cfg::kProducer) Cfg::sync_compute();
}

// The spread form's k-warpgroups (the wgmma four-fragment form with WARP_K > 1, which hands its stages to the groups
// in turn: scheduler/pipeline.cuh StageGroups): m16 fragment f of every block belongs to group f x WARP_K / 4, which
// reduces and stores it. Always true with one group.
template <class Cfg>
HM_DEVICE bool owns_fragment(int f, int wk) {
  if constexpr (Cfg::kWarpK == 1) return true;
  else return f * Cfg::kWarpK / 4 == wk;
}

// Each k-warpgroup's sums of the fragments it owns (owns_fragment): every group writes the others' fragments to
// `red` (WARP_K - 1 f32 tiles: each fragment is written by WARP_K - 1 groups), then adds theirs of its own, in group
// order. The first barrier keeps a group from writing `red` while another still stores the previous tile through
// the staging buffers there; the last, from storing through them while another still reads `red`.
template <class Cfg, int FN, int NB>
HM_DEVICE void reduce_k_groups(char* red_smem, mma::SwapAccumulators<FN, NB>& acc, int wmn, int wk, int lane) {
  constexpr int KG = Cfg::kWarpK;
  static_assert(KG == 2 || KG == 4, "k-warpgroups own whole fragments: 2 or 4 groups");
  constexpr int WMN = Cfg::kWarpM * Cfg::kWarpN;
  constexpr int R = FN * 4 * NB;  // float4s a lane
  float4* red = reinterpret_cast<float4*>(red_smem);
  // Slot of (writer group w, fragment quad r): the writers of a fragment are the groups other than its owner o,
  // numbered w - (w > o) among them.
  const auto at = [&](int w, int o, int r) { return (((w - (w > o ? 1 : 0)) * WMN + wmn) * R + r) * 32 + lane; };
  Cfg::sync_compute();
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int f = 0; f < 4; ++f) {
      const int o = f * KG / 4;
      if (o == wk) continue;
#pragma unroll
      for (int h = 0; h < NB; ++h) {
        const float(&c)[4] = acc.d[fn][f][h];
        red[at(wk, o, (fn * 4 + f) * NB + h)] = make_float4(c[0], c[1], c[2], c[3]);
      }
    }
  Cfg::sync_compute();
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int f = 0; f < 4; ++f) {
      if (f * KG / 4 != wk) continue;
#pragma unroll
      for (int w = 0; w < KG; ++w) {
        if (w == wk) continue;
#pragma unroll
        for (int h = 0; h < NB; ++h) add4(acc.d[fn][f][h], red[at(w, wk, (fn * 4 + f) * NB + h)]);
      }
    }
  Cfg::sync_compute();
}

}  // namespace epilogue
}  // namespace humming
