// humming/dequant/group_terms.cuh -- a warp's group scales and zero points for one stage of the dense kernels,
// and the group scales on f32 partial sums of the swapped decode form.
//
// Scale and zero-point rows sit in the stage (memory/stage.cuh: kS, kZ), one row per group of GS (ZGS) k, 64
// permuted entries per n64 block (dequant/scales.cuh). Partial sums: a warp's k16 steps of a stage hold whole
// groups or lie inside one, so each group's unscaled sum takes its scale once (one FFMA an accumulator) instead of
// every operand pair taking it.
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/arch/memory.cuh>
#include <humming/dequant/scales.cuh>
#include <humming/dequant/values.cuh>
#include <humming/dequant/zeros.cuh>
#include <humming/mma/fragments.cuh>

namespace humming {
namespace dequant {

// Cfg: the kernel's GemmDenseConfig; Stage: its StageLayout; FN: n64 blocks a warp; NB: n8 fragments of M
// (swapped form); ACC_SCALE: GemmDense's kAccScale.
template <class Cfg, class Stage, int FN, int NB, bool ACC_SCALE>
struct GroupTerms {
  using Act = typename Cfg::Act;
  using Zero = ZeroTerms<Act, FN>;
  // k between zero-point rows (ZGS; all of K in one row when ZGS is 0).
  static constexpr int kZGroup = Cfg::kZGS == 0 ? (1 << 30) : Cfg::kZGS;

  // The group-scale pairs of k16 step ks for this warp's n64 blocks: row ks*16/GS of the stage's scale rows
  // (one row when a group spans the stage); 8-bit codes straight to f32 for partial sums.
  static HM_DEVICE void load_scales(const char* base, int ks, int wn, int g, u32 (&scale)[FN][8]) {
    const int row = Cfg::kGS >= Stage::BK ? 0 : (ks * 16) / Cfg::kGS;
#pragma unroll
    for (int fn = 0; fn < FN; ++fn) {
      const u32 at = arch::smem_u32(base + Stage::kS) + (row * Stage::BN + (wn * FN + fn) * 64) * Stage::kSBytes;
      if constexpr (ACC_SCALE && Cfg::kSDT != kScaleAct)
        load_scales_f32<Cfg::kSDT>(at, g, scale[fn]);
      else
        load_scale_pairs<Cfg::kSDT>(Act{}, at, g, scale[fn]);
    }
  }

  // The zero points of k16 step ks (row ks*16/ZGS; one row for all of K when ZGS is 0).
  static HM_DEVICE void load_zeros(const char* base, int ks, int wn, int g, Zero& zero) {
    const int row = kZGroup >= Stage::BK ? 0 : (ks * 16) / kZGroup;
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
      zero.template load<Cfg::kWBits>(arch::smem_u32(base + Stage::kZ) + (row * Stage::BN + (wn * FN + fn) * 64) * 2,
                                      g, fn);
  }

  // Token 0's activations summed over STEPS k16 steps from ks (row 0 of the stage's bf16 tile; each lane reads
  // STEPS / 2 consecutive values, inside one 16-byte chunk), reduced over the warp in f32: what a one-token part
  // whose operands kept the magic read owes its zero (GemmDense::kZeroOnSums).
  template <int STEPS>
  static HM_DEVICE float row0_sum(u32 sA, int ks, int lane) {
    constexpr int PER = STEPS / 2;  // 16 * STEPS values over 32 lanes
    static_assert(PER == 2 || PER == 4, "parts of 4 or 8 k16 steps");
    const int k = ks * 16 + lane * PER;
    const u32 at = sA + mma::a_tile_offset<Stage::BK>(0, k / 8) + (k % 8) * 2;
    float s;
    if constexpr (PER == 4) {
      const uint2 v = arch::lds64(at);
      s = (arch::unpack_lo(bf16_t{}, v.x) + arch::unpack_hi(bf16_t{}, v.x)) +
          (arch::unpack_lo(bf16_t{}, v.y) + arch::unpack_hi(bf16_t{}, v.y));
    } else {
      const u32 v = arch::lds32(at);
      s = arch::unpack_lo(bf16_t{}, v) + arch::unpack_hi(bf16_t{}, v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
  }

  // The operands were M + c (the magic integer read, no zero subtracted): token column 0's sums (elements 0 and 2 of
  // each fragment, the only ones a one-token kernel stores) take -(M + zero) x its activation sum.
  template <class Part>
  static HM_DEVICE void take_zero_offset(Part& part, float asum) {
    const float off = -(magic_int_value(Act{}) + static_cast<float>(Cfg::kZConst)) * asum;
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int f = 0; f < 4; ++f) {
        part.d[fn][f][0][0] += off;
        part.d[fn][f][0][2] += off;
      }
  }

  // acc += scale x part, swapped accumulators. A one-token kernel (Cfg::kOneToken, M = 1) scales only token column
  // 0's sums (elements 0 and 2 of the first n8 fragment), the only column it stores: 8 FFMA fewer a group and n64
  // block, which MXFP4 (g32) and NVFP4 (g16) pay often enough to run 2-5% faster at M = 1 (NOTES-wna16 run 20).
  template <class Acc, class Part>
  static HM_DEVICE void apply(Acc& acc, const Part& part, const u32 (&scale)[FN][8]) {
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int f = 0; f < 4; ++f)
#pragma unroll
        for (int e = 0; e < 4; ++e) {  // d[f][.][e] is column 16f + g + 8(e/2): the pair j = 2f + e/2
          if (Cfg::kOneToken && (e & 1) != 0) continue;  // token column 2t + 1: never stored at M = 1
          const float sc = scale_f32<Cfg::kSDT>(Act{}, scale[fn][2 * f + e / 2]);
#pragma unroll
          for (int h = 0; h < NB; ++h)  // one token: NB is 1 (GemmDenseConfig asserts SWAP_N8 1)
            acc.d[fn][f][h][e] = fmaf(sc, part.d[fn][f][h][e], acc.d[fn][f][h][e]);
        }
  }

  // kGroupColumns (dequant/route.cuh), once a stage: acc += scale x part for the sums of the parts lane (g, t)
  // holds. Part p sits in n8 column p x 8 / PARTS (mma::GroupColumns), so the lane's columns 2t and 2t + 1
  // (elements e % 2 = 0, 1) hold parts 2t and 2t + 1 (8 parts), part t in column 2t (4), or part t / 2 in
  // column 2t for even t (2); a column without a part is all zero and takes no FFMA, or the scale 0 (two parts:
  // a NaN or infinite scale times its zeros would make NaN).
  template <int PARTS, int PART_STEPS, class Acc, class Part>
  static HM_DEVICE void apply_columns(Acc& acc, const Part& part, const char* base, int wn, int wk, int lane) {
    using Columns = mma::GroupColumns<PARTS>;
    constexpr int STRIDE = Columns::kStride;
    constexpr int NQ = STRIDE == 1 ? 2 : 1;     // parts a lane holds
    const int g = lane >> 2, t = lane & 3;
    u32 scale[NQ][FN][8];
#pragma unroll
    for (int q = 0; q < NQ; ++q)
      load_scales(base, wk * Cfg::kKStepsPerWarp + Columns::part(2 * t + q) * PART_STEPS, wn, g, scale[q]);
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int f = 0; f < 4; ++f)
#pragma unroll
        for (int e = 0; e < 4; ++e) {  // output column 16f + g + 8(e/2): the pair j = 2f + e/2; n8 column 2t + e%2
          if (STRIDE > 1 && (e & 1) != 0) continue;
          float sc = scale_f32<Cfg::kSDT>(Act{}, scale[(e & 1) % NQ][fn][2 * f + e / 2]);
          if (STRIDE == 4 && (t & 1) != 0) sc = 0.0f;
          acc.d[fn][f][0][e] = fmaf(sc, part.d[fn][f][0][e], acc.d[fn][f][0][e]);
        }
  }

  // kGroupColumns, once a tile: each output column's scaled sums over the eight n8 columns (a lane's two, then the
  // four lanes of its quad) into elements 0 and 2, column 0's places: the one token an M = 1 GEMM stores.
  template <class Acc>
  static HM_DEVICE void fold_columns(Acc& acc) {
#pragma unroll
    for (int fn = 0; fn < FN; ++fn)
#pragma unroll
      for (int f = 0; f < 4; ++f)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          float v = acc.d[fn][f][0][e] + acc.d[fn][f][0][e + 1];
          v += __shfl_xor_sync(0xffffffffu, v, 1);
          v += __shfl_xor_sync(0xffffffffu, v, 2);
          acc.d[fn][f][0][e] = v;
          acc.d[fn][f][0][e + 1] = 0.0f;
        }
  }
};

}  // namespace dequant
}  // namespace humming
