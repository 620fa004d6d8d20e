// humming/dequant/pairs.cuh -- the operand pairs of one 16 x 64 block from its code words, by the route its
// configuration takes (dequant/route.cuh): the dense kernels' dequantisation, shared by the mma.sync and wgmma forms.
//
// Sixteen pairs (eight B fragments of mma.m16n8k16, or four m16 A fragments of the swapped form: a B pair (k, n)
// and an A pair (n, k) hold the same two weights). Timing builds HM_ABLATE 2 and 3 (gemm_dense.cuh) pass the raw
// code words through instead.
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/dequant/route.cuh>
#include <humming/dequant/values.cuh>
#include <humming/dequant/zeros.cuh>

namespace humming {
namespace dequant {

// Cfg: a GemmDenseConfig (gemm_dense.cuh).
template <class Cfg>
struct BlockPairs {
  using Act = typename Cfg::Act;
  using R = Route<Cfg>;
  using Zero = ZeroTerms<Act, Cfg::kFragN>;

  // Pair P of the block's sixteen, then the rest up to END. scale: the eight group-scale pairs (used where the
  // scales go onto the pairs, not the partial sums); z: the zero terms of the n64 block fn.
  template <int P, int END = 16>
  static HM_DEVICE void run(const u32 (&w)[Cfg::kWBits], u32 (&b)[8][2], const u32 (&scale)[8], const Zero& z,
                            const Masks& masks, int fn) {
    if constexpr (P < END) {
      constexpr int B = Cfg::kWBits;
      constexpr int j = P / 2;
      const Act act{};
      u32 v;
#if defined(HM_ABLATE) && (HM_ABLATE == 2 || HM_ABLATE == 3)
      v = w[(j + P % 2) % B];
#else
      if constexpr (Cfg::kWKind == kWeightInt) {
        if constexpr (B == 4 && R::kZeroOnSums) {
          v = int4_magic_pair<P>(w, masks);
        } else if constexpr (B == 4 && R::kF16) {
          v = int4_f16_pair<P>(w, masks, z.lo[fn][j], z.hi[fn][j]);
        } else if constexpr (B == 4) {
          v = int4_pair<P>(act, w, masks, z.lo[fn][j]);
        } else if constexpr (B == 8 && R::kF16) {
          v = int8_f16_pair<P>(w, masks, z.lo[fn][j]);
        } else if constexpr (R::kS8Direct) {
          v = s8_bf16_pair<P>(w, masks);
        } else if constexpr (B == 8 && !R::kF16) {
          v = int8_bf16_pair<P>(w, z.f[fn][j]);
        } else {
          v = int_pair<B, P>(act, w, masks, z.lo[fn][j]);
        }
      } else {
        if constexpr (R::kE2m1)
          v = e2m1_pair<P>(act, w);
        else
          v = float_pair_unfixed<B, Cfg::kWE, Cfg::kWM, P>(act, w);
        if constexpr (R::kFixInDequant && Cfg::kWBias != ActTraits<Act>::bias)
          v = arch::mul2(act, v, float_fix(act, Cfg::kWBias));
      }
      if constexpr (Cfg::kSMode == kScaleGroup && !R::kAccScale) v = arch::mul2(act, v, scale[j]);
#endif
      b[j][P % 2] = v;
      run<P + 1, END>(w, b, scale, z, masks, fn);
    }
  }
};

}  // namespace dequant
}  // namespace humming
