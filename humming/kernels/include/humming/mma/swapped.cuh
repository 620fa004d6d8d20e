// humming/mma/swapped.cuh -- accumulators of the swapped-operand form, and their way back to the m16n8 layout.
//
// With swapped operands a warp computes D^T = W x A^T: the weights are mma.m16n8k16's m16 operand (16 output
// columns) and up to NB = 2 blocks of 8 activation rows its n8 operand. Per n64 weight block that is four m16
// fragments by NB n8 fragments of four f32 each: d[fn][f][h][e] is output column 64 fn + 16 f + g + 8 (e / 2)
// and row 8 h + 2 t + (e % 2) of lane (g = lane / 4, t = lane % 4).
#pragma once
#include <humming/arch/types.cuh>
#include <humming/mma/fragments.cuh>

namespace humming {
namespace mma {

template <int FN, int NB>
struct SwapAccumulators {
  float d[FN][4][NB][4];

  HM_DEVICE void zero() {
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int f = 0; f < 4; ++f)
#pragma unroll
        for (int h = 0; h < NB; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) d[fn][f][h][e] = 0.0f;
  }
};

// The n8 operands of the swapped form, rows [0, 16) of the activation tile at k16 step ks, from one
// ldmatrix.x4 whose lanes address rows 0-7 at k low / high (lanes 0-15), then rows 8-15 (lanes 16-31): x[h] is
// then registers 2h and 2h + 1, adjacent as mma wants its B operand (load_a's order, rows before k, made the
// compiler copy a[0] and a[2] into a pair: about seven moves a k16 step).
template <int BK>
HM_DEVICE void load_n8_operands(u32 (&x)[2][2], u32 tile, int ks, int lane) {
  u32 d[4];
  const int r = (lane & 7) + ((lane >> 4) << 3);
  const int ck = ks * 2 + ((lane >> 3) & 1);
  arch::ldmatrix_x4(d, tile + a_tile_offset<BK>(r, ck));
  x[0][0] = d[0], x[0][1] = d[1], x[1][0] = d[2], x[1][1] = d[3];
}

// One m64 wgmma fragment per warp and n64 block (the wide wgmma form): d[fn][h][e] is weight column
// 16 f + g + 8 (e / 2) of the warpgroup's block fn (f: the warp's rank in its warpgroup) and activation row
// 8 h + 2 t + (e % 2).
template <int NB, int FN = 1>
struct FragAccumulators {
  float d[FN][NB][4];

  HM_DEVICE void zero() {
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int h = 0; h < NB; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) d[fn][h][e] = 0.0f;
  }
};

// D^T fragments back into the m16n8 layout the epilogue takes: lane (g, t) needs rows m = g (+8: the second
// n8 fragment) and columns n = 8j + 2t (+1), held by lane 8t + g/2 (+4) in register 2(j&1) + (g&1) of
// fragment j/2. Rows of a missing second fragment (M <= 8) are zero.
template <int FN, int NB>
HM_DEVICE void unswap(const SwapAccumulators<FN, NB>& s, Accumulators<1, FN>& acc, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const int src0 = 8 * t + (g >> 1), src1 = src0 + 4;
  const bool odd = (g & 1) != 0;
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h < NB) {
          const float(&d)[4] = s.d[fn][j >> 1][h < NB ? h : 0];
          const int e = 2 * (j & 1);
          const float x0 = __shfl_sync(0xffffffffu, d[e], src0), y0 = __shfl_sync(0xffffffffu, d[e + 1], src0);
          const float x1 = __shfl_sync(0xffffffffu, d[e], src1), y1 = __shfl_sync(0xffffffffu, d[e + 1], src1);
          acc.c[0][fn][j][2 * h] = odd ? y0 : x0;
          acc.c[0][fn][j][2 * h + 1] = odd ? y1 : x1;
        } else {
          acc.c[0][fn][j][2 * h] = 0.0f;
          acc.c[0][fn][j][2 * h + 1] = 0.0f;
        }
      }
}

}  // namespace mma
}  // namespace humming
