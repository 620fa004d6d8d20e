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
