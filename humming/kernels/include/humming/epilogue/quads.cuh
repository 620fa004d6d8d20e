// humming/epilogue/quads.cuh -- a lane's accumulator quads: visiting them in a fixed order, and their output rows.
//
// A quad is the four f32 accumulators a lane holds of one n8 tile of one m16 fragment. The tile finishes
// (epilogue/finish.cuh) move partials through the workspace a quad at a time, and only the quads with a row inside M.
#pragma once
#include <humming/arch/types.cuh>
#include <humming/mma/swapped.cuh>

namespace humming {
namespace epilogue {

// Visit every accumulator quad (one n8 tile of one m16 fragment) with its index r, in a fixed order.
template <class Acc, class F>
HM_DEVICE void for_each_quad(Acc& acc, F&& f) {
  constexpr int FM = sizeof(acc.c) / sizeof(acc.c[0]);
  constexpr int FN = sizeof(acc.c[0]) / sizeof(acc.c[0][0]);
#pragma unroll
  for (int fm = 0; fm < FM; ++fm)
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int j = 0; j < 8; ++j) f(acc.c[fm][fn][j], (fm * FN + fn) * 8 + j);
}

// The same for swapped accumulators: one quad per (block, m16 fragment, n8 fragment), FM * FN * 8 in all.
template <int FN, int NB, class F>
HM_DEVICE void for_each_quad(mma::SwapAccumulators<FN, NB>& acc, F&& f) {
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int h = 0; h < NB; ++h) f(acc.d[fn][q][h], (fn * 4 + q) * NB + h);
}

template <int NB, int FN, class F>
HM_DEVICE void for_each_quad(mma::FragAccumulators<NB, FN>& acc, F&& f) {
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int h = 0; h < NB; ++h) f(acc.d[fn][h], fn * NB + h);
}

// The first output row of quad r in this lane (a quad's rows are that row and rows 8 or 1 past it, as the
// accumulator type lays them out): quads whose first row lies past M hold nothing a tile's fixup needs.
template <class Cfg, int FM, int FN>
HM_DEVICE int quad_row(const mma::Accumulators<FM, FN>&, int r, int mt, int wm, int lane) {
  return mt * Cfg::kBM + (wm * FM + r / (FN * 8)) * 16 + (lane >> 2);
}
template <class Cfg, int FN, int NB>
HM_DEVICE int quad_row(const mma::SwapAccumulators<FN, NB>&, int r, int mt, int wm, int lane) {
  return mt * Cfg::kBM + wm * Cfg::kFragM * 16 + 8 * (r % NB) + 2 * (lane & 3);
}
template <class Cfg, int NB, int FN>
HM_DEVICE int quad_row(const mma::FragAccumulators<NB, FN>&, int r, int mt, int wm, int lane) {
  return mt * Cfg::kBM + (wm >> 2) * NB * 8 + 8 * (r % NB) + 2 * (lane & 3);
}

HM_DEVICE void add4(float (&c)[4], const float4& o) {
  c[0] += o.x;
  c[1] += o.y;
  c[2] += o.z;
  c[3] += o.w;
}

}  // namespace epilogue
}  // namespace humming
