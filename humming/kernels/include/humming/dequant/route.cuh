// humming/dequant/route.cuh -- which dequantisation route a dense kernel's configuration takes.
//
// The weight kinds, zero modes and scale modes the dense templates take (humming/kernels/gemm_dense.py mirrors
// them), and, per configuration: whether group scales go onto f32 partial sums; where float weights' exponent fix
// goes (every operand pair, the activations, or the f32 epilogue); whether a one-token kernel leaves the zero to the
// partial sums; whether s8 codes go straight into bf16. Each choice says what it measured (benchmarks/RESULTS.md).
// Cfg: a GemmDenseConfig (gemm_dense.cuh).
#pragma once
#include <humming/arch/types.cuh>

// s8 codes into bf16: 1 = straight into bf16 pairs where kS8Direct (below) takes it (dequant::s8_bf16_pair), 0 =
// through f32 everywhere (the form before 2026-12-04; timing only).
#ifndef HM_S8_BF16_DIRECT
#define HM_S8_BF16_DIRECT 1
#endif
// One-token 4-bit integer kernels: 1 = zero offsets on the partial sums (kZeroOnSums), 0 = on every pair.
#ifndef HM_ZERO_ON_SUMS
#define HM_ZERO_ON_SUMS 1
#endif
// bf16 float weights in the swapped form: 1 = the exponent fix on the activations once a k16 step where
// kFixOnActivations (below) takes it, 0 = on every weight pair everywhere (the form before 2026-12-04; timing only).
#ifndef HM_FIX_ON_ACT
#define HM_FIX_ON_ACT 1
#endif

// One-token kernels whose warp's k16 steps of a stage hold several group parts: 1 = each part into its own n8
// column (kGroupColumns), 0 = every part onto column 0 with its scales applied by each lane (timing only).
#ifndef HM_GROUP_COLUMNS
#define HM_GROUP_COLUMNS 1
#endif
// Float weights in such kernels: 1 = their exponent fix on the activations (kFixOnActivations) there too, 0 = only
// where the rule before group columns takes it.
#ifndef HM_FIX_ON_ACT_COLUMNS
#define HM_FIX_ON_ACT_COLUMNS 0
#endif

// 1 when every route switch above is at its default: a timing build that switches one off says 0 (exported, so
// that the twin's mirrors of the routes are checked only against kernels that take them; GemmDenseSpec.check_compiled).
#define HM_ROUTES_DEFAULT                                                                          \
  (HM_S8_BF16_DIRECT == 1 && HM_ZERO_ON_SUMS == 1 && HM_FIX_ON_ACT == 1 && HM_GROUP_COLUMNS == 1 && \
   HM_FIX_ON_ACT_COLUMNS == 0)

namespace humming {

enum WeightKind : int { kWeightInt = 0, kWeightFloat = 1 };
enum ZeroMode : int { kZeroConst = 0, kZeroGroup = 1 };
enum ScaleMode : int { kScaleNone = 0, kScaleChannel = 1, kScaleGroup = 2 };

namespace dequant {

template <class Cfg>
struct Route {
  using Act = typename Cfg::Act;
  static constexpr bool kF16 = ActTraits<Act>::mantissa == 10;
  static constexpr int NB = Cfg::kSwapN8 > 0 ? Cfg::kSwapN8 : 1;  // n8 fragments of M in the swapped form

  // Group scales applied to f32 partial sums once per group instead of to every operand pair: integer codes
  // dequantise to the exact small integers c - z, float codes to their exact values (bf16) or to their values
  // times a power of two (f16, below); a warp's k16 steps of a stage hold whole groups or lie inside one (their k
  // range is aligned to its length); the swapped form has half the accumulators (one FFMA each per group part).
  static constexpr bool kAccScale = Cfg::kSwapAB && Cfg::kSMode == kScaleGroup &&
                                    ((Cfg::kKStepsPerWarp * 16) % Cfg::kGS == 0 || Cfg::kGS % (Cfg::kKStepsPerWarp * 16) == 0);

  // The k16 steps one unscaled part sums (kAccScale): a group, or the warp's share of a stage inside one.
  static constexpr int kPartSteps = Cfg::kGS / 16 < Cfg::kKStepsPerWarp ? Cfg::kGS / 16 : Cfg::kKStepsPerWarp;
  // 4-bit codes with a constant zero, bf16, one token (M = 1), group scales on the partial sums: the operands stay
  // the magic read 128 + c (no paired FMA a pair) and each part's token-0 sums take -(128 + zero) x the activations'
  // sum over the part (GroupTerms::row0_sum, one warp reduction a part). The sums then carry 136 x sum(a), which
  // cancels ~5 of f32's 24 bits, inside bf16's own operand rounding. s4 g128 M = 1 1.5-3.5% faster (H200, RESULTS.md
  // 2026-12-04 17:07). Not f16: its magic 1024 cancels ~8 bits more, and activations with a common offset (mean 4)
  // failed the tolerance there, the tensor cores' f32 sums being truncated.
  // Zero-point rows (AWQ) on the sums, each row its own -(128 + z), measured no faster (NOTES-wna16 run 22,
  // experiments/wna16-awq-zero-on-sums.patch).
  static constexpr bool kZeroOnSums = HM_ZERO_ON_SUMS && Cfg::kOneToken && kAccScale && !kF16 &&
                                      Cfg::kWKind == kWeightInt && Cfg::kWBits == 4 && Cfg::kZMode == kZeroConst &&
                                      (kPartSteps == 4 || kPartSteps == 8);
  // The parts a warp's k16 steps of a stage hold (kAccScale).
  static constexpr int kParts = kPartSteps > 0 ? Cfg::kKStepsPerWarp / kPartSteps : 1;
  // One token (M = 1) with 2, 4 or 8 parts a stage (groups of 16 or 32 k: NVFP4, MXFP4, MXINT4, integer codes in
  // groups of 32 whose scales go on the partial sums): part p's activations go to n8 column p x 8 / parts (the
  // loader's spread rows) instead of all to column 0, whose seven neighbours the token leaves unused. The MMAs then
  // sum every part of the stage into one set of accumulators, each part in its own column, and a lane scales only the
  // sums in its own two columns, once a stage (GroupTerms::apply_columns): NVFP4 16 FFMA and 16 scale conversions a
  // stage and n64 block where every lane scaled every part's column-0 sums (64 each). The columns are added across
  // the lanes once a tile (GroupTerms::fold_columns). Each part's sum is the same f32 sum of the same products as
  // before (the other parts' columns add exact zeros).
  static constexpr bool kGroupColumns = HM_GROUP_COLUMNS && Cfg::kOneToken && kAccScale && !kZeroOnSums &&
                                        (kParts == 2 || kParts == 4 || kParts == 8) && !Cfg::kProducer &&
                                        !Cfg::kTmaA;
  // The 16-byte chunks of the token's row a part holds (the activation loader's spread), 0 without group columns.
  static constexpr int kSpreadChunks = kGroupColumns ? 2 * kPartSteps : 0;

  // Operand values of float weights carry 2^-(target bias - weight bias) unless fixed in the dequant: fixed for
  // bf16 (whose tiny operands would make f32 products subnormal, which the tensor cores may flush) and for
  // group scales multiplied into f16 operands (the product could underflow); otherwise the f32 epilogue takes
  // the factor (f16 with group scales on the partial sums, channel scales or none), one multiply a pair less.
  //
  // bf16 in the swapped form with group scales on the partial sums may fix nothing a pair either: the n8 operands
  // (the activations) take 2^kActShift once a k16 step, so that the products of the unfixed weights (e2m1's 0.5 is
  // a bf16 subnormal) stay normal in f32, and the f32 epilogue takes 2^(127 - weight bias - kActShift). Exact for
  // activations under 2^64; the sums carry 2^-62 (e2m1) to 2^-48 (e5m2), so results under ~2^-64 would lose bits
  // (the fix on the pairs: under 2^-126). Taken where the group scales' FFMAs already load the FMA pipe, which the
  // pairs' HMUL2 share (two n8 fragments of M, or groups of 16): MXFP4 / NVFP4 M = 16 4-7% faster, NVFP4 M = 1
  // 1-2%; MXFP4 M = 1 and channel-scaled e4m3 lost 0.5-2% with it (H200, RESULTS.md 2026-12-04 17:07). One token
  // with group columns (above) is taken as well where HM_FIX_ON_ACT_COLUMNS says so.
  static constexpr int kActShift = 64;
  static constexpr bool kFixOnActivations = HM_FIX_ON_ACT && Cfg::kSwapAB && !kF16 &&
                                            Cfg::kWKind == kWeightFloat &&
                                            Cfg::kWBias != ActTraits<Act>::bias && kAccScale &&
                                            (NB == 2 || Cfg::kGS <= 16 || (HM_FIX_ON_ACT_COLUMNS && kGroupColumns));
  static constexpr bool kFixInDequant =
      Cfg::kWKind == kWeightFloat && !kFixOnActivations && (!kF16 || (Cfg::kSMode == kScaleGroup && !kAccScale));
  // s8 codes straight into bf16 pairs (dequant::s8_bf16_pair) where the MMAs wait for the dequant, the wgmma
  // kernels and M > 16: 28672 x 8192 M = 64 5-7% faster, M = 1024 1-4%. The decode form, which streams its 8-bit
  // weights at 83-90% of the roofline, timed the same or slower with it and keeps the f32 route.
  static constexpr bool kS8Direct = HM_S8_BF16_DIRECT && !Cfg::kSwapAB && !kF16 && Cfg::kWKind == kWeightInt &&
                                    Cfg::kWBits == 8 && Cfg::kZMode == kZeroConst && Cfg::kZConst == 128;
  static constexpr bool kE2m1 = Cfg::kWKind == kWeightFloat && Cfg::kWBits == 4 && Cfg::kWE == 2 && Cfg::kWM == 1;

  static HM_DEVICE float epilogue_fix() {
    if constexpr (kFixOnActivations)
      return __uint_as_float(static_cast<u32>(127 + ActTraits<Act>::bias - Cfg::kWBias - kActShift) << 23);
    else if constexpr (Cfg::kWKind == kWeightFloat && !kFixInDequant)
      return __uint_as_float(static_cast<u32>(127 + ActTraits<Act>::bias - Cfg::kWBias) << 23);
    return 1.0f;
  }
};

}  // namespace dequant
}  // namespace humming
