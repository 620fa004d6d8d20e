// humming/kernels/gemm_dense.cuh -- dense WnA16 GEMM: C[M,N] = A[M,K] (f16/bf16) x dequant(W[N,K])^T.
//
// One template for every weight format (ints of 1..8 bits with or without zero points, small floats eXmY),
// specialised by the Python twin humming/kernels/gemm_dense.py, which checks every parameter and renders
// `using Cfg = GemmDenseConfig<...>`. Design (docs/kernels.md has the long form):
// - mma.sync m16n8k16 with f32 accumulators; A (activations) through ldmatrix from an XOR-swizzled tile;
// - W pre-packed in fragment order (humming/core/packing.py): one 16-byte shared load per lane per
//   16x64 block of 4-bit weights feeds eight MMAs; dequantisation in registers (humming/dequant);
// - a STAGES-deep cp.async pipeline of (A, W, scales, zeros) tiles, weights with an L2 evict-first policy;
// - Stream-K over (tile, k-step) iterations so that small M fills every SM (humming/scheduler);
// - epilogue: channel scale, global scale, bias, f16/bf16 output; split tiles reduced deterministically;
// - for M <= 16, swapped operands (SWAP_N8 = 1 or 2 n8 fragments of M): D^T = W x A^T with the weights as the
//   m16 operand and the activations as the n8 one, so a 16 x 64 weight block costs four MMAs per 8 rows of M
//   (M <= 8: four instead of eight). The same dequantised pairs feed either form (a B pair (k, n) and an A
//   pair (n, k) hold the same two weights); the codes then take their group scales on f32 partial sums.
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/arch/memory.cuh>
#include <humming/arch/mma.cuh>
#include <humming/arch/timer.cuh>
#include <humming/arch/types.cuh>
#include <humming/dequant/codes.cuh>
#include <humming/dequant/group_terms.cuh>
#include <humming/dequant/pairs.cuh>
#include <humming/dequant/route.cuh>
#include <humming/dequant/scales.cuh>
#include <humming/dequant/values.cuh>
#include <humming/dequant/zeros.cuh>
#include <humming/epilogue/finish.cuh>
#include <humming/mma/fragments.cuh>
#include <humming/mma/swapped.cuh>
#include <humming/memory/tma.cuh>
#include <humming/scheduler/pipeline.cuh>
#include <humming/scheduler/stream_k.cuh>

// Ablation switch for timing experiments only (benchmarks/profile_wna16.py --ablate): 0 = the real kernel.
// 1: no MMAs; 2: no dequantisation (raw words into the MMAs); 3: neither (loads and the pipeline only); 4: no
// reads of a stage either (the copies and the ring alone); 5: as 4 with the weights' copies only; 6: as 5 without
// the tile finish (no k-warp reduction, partial tile, counter or store: what a Stream-K segment change costs).
#ifndef HM_ABLATE
#define HM_ABLATE 0
#endif
// Timing experiments only: 1 = no activation copies (the stage's A tile keeps whatever it held), to weigh the
// activations' share of an SM's traffic (every n tile re-reads them).
#ifndef HM_NO_A_LOADS
#define HM_NO_A_LOADS 0
#endif
// Timing experiments only: N > 0 = every tile copies the weights, scales and zero points of n tile nt % N, so that
// they stream from L2 instead of DRAM: the same instruction stream as a GPU with more memory bandwidth would run
// (the H200's decode, which its SMs hold, timed on an H100). Wrong values by design.
#ifndef HM_L2_WEIGHTS
#define HM_L2_WEIGHTS 0
#endif

namespace humming {

template <class Act_,        // f16_t | bf16_t: activation and MMA operand type
          class Out_,        // f16_t | bf16_t: output type
          int WBITS_,        // bits per weight code, 1..8
          int WKIND_,        // kWeightInt (unsigned code minus zero) | kWeightFloat (sign, E, M)
          int WE_, int WM_,  // exponent and mantissa bits of float weights (0 for ints)
          int WBIAS_,        // exponent bias of float weights (0 for ints)
          int ZMODE_,        // kZeroConst: subtract ZCONST | kZeroGroup: zero points from the zero rows
          int ZCONST_,       // the constant zero for kZeroConst (2^(b-1) for signed codes stored biased)
          int ZGS_,          // k per zero-point row (0: one row for all of K)
          int SMODE_,        // kScaleNone | kScaleChannel (f32 in the epilogue) | kScaleGroup
          int SDT_,          // group scale storage: dequant::kScaleAct | kScaleUe8m0 | kScaleE4m3
          int GS_,           // k per group scale row (group size)
          int WARP_M_, int FRAG_M_,  // warps along M, m16 fragments per warp
          int WARP_N_, int FRAG_N_,  // warps along N, n64 blocks per warp
          int WARP_K_,               // warps splitting the k16 steps of a stage (reduced through smem)
          int BK_,                   // k per pipeline stage
          int STAGES_,               // pipeline depth
          int GROUP_M_,              // m tiles that walk N together (L2 reuse at large M)
          int MIN_BLOCKS_,           // CTAs per SM the register budget is made for
          int SWAP_N8_,              // 0: plain operands | 1, 2: swapped, this many n8 fragments of M
          int BULK_W_,               // 1: weights through the bulk copy engine (sm_90+) | 0: per-thread cp.async
          int PRODUCER_,             // 1: one extra warp issues every copy; stages hand over on mbarriers (sm_80+)
          int ONE_TOKEN_,            // 1: M = 1 only (SWAP_N8 1): group scales onto token column 0's sums alone
          int ODD_N_>                // 1: N or the output's row stride may be odd | 0: both even (pairs only)
struct GemmDenseConfig {
  using Act = Act_;
  using Out = Out_;
  static constexpr int kWBits = WBITS_, kWKind = WKIND_, kWE = WE_, kWM = WM_, kWBias = WBIAS_;
  static constexpr int kZMode = ZMODE_, kZConst = ZCONST_, kZGS = ZGS_;
  static constexpr int kSMode = SMODE_, kSDT = SDT_, kGS = GS_;
  static constexpr int kWarpM = WARP_M_, kFragM = FRAG_M_, kWarpN = WARP_N_, kFragN = FRAG_N_, kWarpK = WARP_K_;
  static constexpr int kBK = BK_, kStages = STAGES_, kGroupM = GROUP_M_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kSwapN8 = SWAP_N8_;
  static constexpr bool kSwapAB = SWAP_N8_ > 0;
  static_assert(SWAP_N8_ >= 0 && SWAP_N8_ <= 2, "SWAP_N8 is 0, 1 or 2");
  static_assert(!kSwapAB || (WARP_M_ == 1 && FRAG_M_ == 1), "swapped operands serve one m16 block (M <= 16)");
  // One token: the only output column an M = 1 GEMM stores is token column 0, so the swapped form's group scales
  // skip the other columns' partial sums (dequant/group_terms.cuh); wrong for M > 1, which the twin refuses.
  static constexpr bool kOneToken = ONE_TOKEN_ != 0;
  static_assert(!kOneToken || SWAP_N8_ == 1, "one token needs swapped operands with one n8 fragment of M");
  // Whether an output row may hold an odd count of elements (N or the row stride odd): only then does the wgmma
  // N = 16 form compile its element-by-element store (epilogue/store.cuh store_swapped_column; the twin's odd_n).
  // The mma.sync store keeps its small run-time choice either way, and the staged stores (the other wgmma forms)
  // take any row.
  static constexpr bool kOddN = ODD_N_ != 0;
  static constexpr int kWarps = kWarpM * kWarpN * kWarpK;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBM = kWarpM * kFragM * 16;
  static constexpr int kBN = kWarpN * kFragN * 64;
  static constexpr int kKSteps = kBK / 16;
  static constexpr int kKStepsPerWarp = kKSteps / kWarpK;
  static_assert(kKSteps % kWarpK == 0, "k16 steps of a stage must split evenly over WARP_K");
  static_assert(kBK % 64 == 0, "BK must be a multiple of 64 (the A tile swizzle needs 8 chunks a row)");
  static_assert(kSMode != kScaleGroup || (kGS % 16 == 0 && (kGS % kBK == 0 || kBK % kGS == 0)),
                "group size must be a multiple of 16 and divide or be divided by BK");

  using Stage = memory::StageLayout<kBM, kBN, kBK, kWBits,
                                    (kSMode == kScaleGroup ? (kGS >= kBK ? 1 : kBK / kGS) : 0),
                                    dequant::ScaleBytes<kSDT>::value,
                                    (kZMode == kZeroGroup ? (kZGS == 0 || kZGS >= kBK ? 1 : kBK / kZGS) : 0)>;
  // The k-warp reduction's buffer, after the stages.
  static constexpr int kRedBytes = kWarpK > 1 ? (kWarpK - 1) * kBM * kBN * 4 : 0;
  // Weights through the bulk copy engine: one 8-byte mbarrier per stage after the reduction buffer.
  static constexpr bool kBulkWeights = BULK_W_ != 0;
#if defined(HM_ARCH) && HM_ARCH < 900
  static_assert(!kBulkWeights, "bulk weight copies need cp.async.bulk (sm_90+)");
#endif
  // A producer warp after the compute warps issues every copy; stages hand over on mbarriers (pipeline.cuh).
  static constexpr bool kProducer = PRODUCER_ != 0;
  static constexpr bool kTmaA = false;  // activations by tensor copy (gemm_dense_wgmma.cuh's TMA configuration)
  static constexpr int kClusterN = 1;   // CTAs a cluster sharing each stage's activation tile (the TMA pair form)
  static_assert(!(kProducer && kBulkWeights), "the producer warp copies the weights itself");
#if defined(HM_ARCH) && HM_ARCH < 800
  static_assert(!kProducer, "the producer warp needs cp.async and mbarriers (sm_80+)");
  static_assert(ActTraits<Act>::mantissa == 10 && ActTraits<Out>::mantissa == 10,
                "bf16 operands and outputs need sm_80's MMA and conversions");
#endif
  static constexpr int kProducerWarps = kProducer ? 1 : 0;
  static constexpr int kCtaThreads = kThreads + 32 * kProducerWarps;
  static constexpr int kBarrierBytes = kBulkWeights ? 8 * kStages : (kProducer ? 16 * kStages : 0);
  static constexpr int kSmemBytes = kStages * Stage::kBytes + kRedBytes + kBarrierBytes;
  // Register split between the producer and the compute warps (setmaxnreg, wgmma kernels): none here.
  static HM_DEVICE void producer_registers() {}
  static HM_DEVICE void compute_registers() {}
  // A barrier among the compute warps (epilogue), without the producer warp, which never reaches it.
  static HM_DEVICE void sync_compute() {
    if constexpr (kProducer) arch::named_barrier_sync(1, kThreads);
    else __syncthreads();
  }
};

// Kernel arguments, in launch order (also the extern "C" signature the twin renders).
struct GemmDenseArgs {
  const void* a;          // [M, K] activations, row stride lda (elements)
  const void* w;          // packed weights [K_pad/16][N_pad/64][128*WBITS bytes]
  const void* scales;     // group scales [K_pad/GS][N_pad], 64-column permuted (or null)
  const void* zeros;      // zero points [rows][N_pad] as activation values, permuted (or null)
  const float* chscale;   // [N_pad] f32 channel scales (or null)
  const float* gscale;    // [1] f32 global scale (or null)
  const void* bias;       // [N] output-type bias (or null)
  void* c;                // [M, N] output, row stride ldc
  float* ws;              // Stream-K partial sums: [2 * ctas][BM * BN] f32
  int* counters;          // [tiles] zero-initialised; each finished tile resets its own
  int m, n, k, lda, ldc;  // sizes (k: logical K; k_pad below is the packed one)
  int nb64, k_pad;        // packed N / 64, packed K
  int m_tiles, n_tiles;   // tile grid
};

template <class Cfg>
struct GemmDense {
  using Config = Cfg;
  using Act = typename Cfg::Act;
  using Out = typename Cfg::Out;
  using Stage = typename Cfg::Stage;
  static constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, S = Cfg::kStages;
  static constexpr int FM = Cfg::kFragM, FN = Cfg::kFragN;
  using Acc = mma::Accumulators<FM, FN>;
  // Swapped form (SWAP_N8 > 0): per n64 block, four m16 fragments of NB n8 fragments (mma/swapped.cuh).
  static constexpr int NB = Cfg::kSwapN8 > 0 ? Cfg::kSwapN8 : 1;
  using SwapAcc = mma::SwapAccumulators<FN, NB>;
  using MainAcc = typename Select<Cfg::kSwapAB, SwapAcc, Acc>::type;
  // Split tiles reach finish_tile as Acc (swapped ones unswapped first): never the spread form (exported).
  static constexpr bool kSpreadsSplitTiles = epilogue::SpreadsSplitTiles<Cfg, Acc>::value;

  // ---- loads -------------------------------------------------------------------------------------------
  static constexpr int kZRowK = Cfg::kZGS;  // 0: one zero row for all of K
  // The threads that copy: all of them, or the producer's warps (threads kThreads .. kCtaThreads - 1).
  static constexpr int kLoadThreads = Cfg::kProducer ? 32 * Cfg::kProducerWarps : Cfg::kThreads;
  static constexpr int kFirst = Cfg::kProducer ? Cfg::kThreads : 0;
  using WLoader = typename Select<Cfg::kBulkWeights, memory::BulkWeightLoader<Stage>,
                                  typename Select<Cfg::kProducer, memory::WarpWeightLoader<Stage, kFirst, kLoadThreads>,
                                                  memory::WeightLoader<Cfg::kThreads, Stage>>::type>::type;
  // The activation rows a stage copies: those the tile can serve (one token, 8 per swapped n8 fragment, BM;
  // memory/stage.cuh HM_SERVED_A_ROWS).
  static constexpr int kLoadedRows =
      !HM_SERVED_A_ROWS ? BM : Cfg::kOneToken ? 1 : Cfg::kSwapN8 > 0 ? 8 * Cfg::kSwapN8 : BM;
  // Which dequantisation route this configuration takes (dequant/route.cuh); with group columns the one token's row
  // is spread over the tile's rows, a part each.
  using Route = dequant::Route<Cfg>;
  using SyncALoader = memory::ActivationLoader<Cfg::kThreads, Stage, kLoadedRows, Route::kSpreadChunks, Route::kParts>;
  using ALoader = typename Select<Cfg::kTmaA, memory::TmaActivationLoader<Stage, kFirst, Cfg::kClusterN>,
                                  typename Select<Cfg::kProducer, memory::WarpActivationLoader<Stage, kFirst, kLoadThreads>,
                                                  SyncALoader>::type>::type;
  using SLoader = memory::RowLoader<kLoadThreads, (Stage::kSRows > 0 ? Stage::kSRows : 1), BN * Stage::kSBytes, BK,
                                    (Cfg::kSMode == kScaleGroup ? Cfg::kGS : 0), kFirst>;
  using ZLoader = memory::RowLoader<kLoadThreads, (Stage::kZRows > 0 ? Stage::kZRows : 1), BN * 2, BK, kZRowK, kFirst>;

  struct Loaders {
    WLoader w;
    ALoader a;
    SLoader s;
    ZLoader z;

    // Once, before the first copy: the zero places of a spread token row (group columns).
    static HM_DEVICE void prepare(char* smem) { SyncALoader::template clear_spread<S>(arch::smem_u32(smem + Stage::kA)); }

    HM_DEVICE void set_tile(const GemmDenseArgs& p, int tile) {
      int mt, nt;
      scheduler::tile_coords<Cfg::kClusterN>(tile, p.m_tiles, p.n_tiles, Cfg::kGroupM, mt, nt);
#if HM_L2_WEIGHTS > 0
      nt %= HM_L2_WEIGHTS;  // after the tile's own coordinates: only the copies' sources move
#endif
      w.set_tile(p.w, nt, p.nb64);
      a.set_tile(p.a, mt * BM, p.m, p.k, p.lda);
      const int row_bytes_s = p.nb64 * 64 * Stage::kSBytes;
      if constexpr (Stage::kSRows > 0) s.set_tile(p.scales, row_bytes_s, nt * BN * Stage::kSBytes, row_bytes_s);
      if constexpr (Stage::kZRows > 0) z.set_tile(p.zeros, p.nb64 * 64 * 2, nt * BN * 2, p.nb64 * 64 * 2);
    }

    // bar: the stage's mbarrier (bulk weight copies, tensor copies of activations).
    HM_DEVICE void load(char* smem, int stage, int kt, u64 pol_w, u32 bar) const {
      const u32 base = arch::smem_u32(smem + stage * Stage::kBytes);
      w.load(base + Stage::kW, kt, pol_w, bar);
      if constexpr (HM_ABLATE >= 5) return;
      if constexpr (HM_NO_A_LOADS == 0) a.load(base + Stage::kA, kt, bar);
      if constexpr (Stage::kSRows > 0) s.load(base + Stage::kS, kt, pol_w);
      if constexpr (Stage::kZRows > 0) z.load(base + Stage::kZ, kt, pol_w);
    }
  };

  // ---- one stage of MMAs for this warp ------------------------------------------------------------------
  using Zero = dequant::ZeroTerms<Act, FN>;

  static constexpr bool kAccScale = Route::kAccScale, kFixOnActivations = Route::kFixOnActivations;
  static constexpr bool kZeroOnSums = Route::kZeroOnSums, kGroupColumns = Route::kGroupColumns;
  static constexpr int kActShift = Route::kActShift, kPartSteps = Route::kPartSteps;
  // A warp's group scales and zero points, and the scales on partial sums (dequant/group_terms.cuh).
  using Terms = dequant::GroupTerms<Cfg, Stage, FN, NB, kAccScale>;
  static HM_DEVICE float epilogue_fix() { return Route::epilogue_fix(); }

  static HM_DEVICE void compute_stage(const char* base, MainAcc& acc, Zero& zero, const dequant::Masks& masks, int wm,
                                      int wn, int wk, int lane) {
    if constexpr (HM_ABLATE >= 4) return;
    constexpr int B = Cfg::kWBits;
    const int g = lane >> 2;
    const u32 sW = arch::smem_u32(base + Stage::kW);
    const u32 sA = arch::smem_u32(base + Stage::kA);
    u32 scale[FN][8];
    SwapAcc part;  // kAccScale: this group's unscaled sums
    float asum = 0.0f;  // kZeroOnSums: token 0's activations summed over the part's k16 steps
    if constexpr (kGroupColumns) part.zero();  // every part of the stage, each in its own column
#pragma unroll
    for (int i = 0; i < Cfg::kKStepsPerWarp; ++i) {
      const int ks = wk * Cfg::kKStepsPerWarp + i;
      if constexpr (Stage::kSRows > 0 && !kGroupColumns) {
        if (i == 0 || (ks * 16) % Cfg::kGS == 0) {
          if constexpr (kAccScale) {
            if (i > 0) {
              if constexpr (kZeroOnSums) Terms::take_zero_offset(part, asum);
              Terms::apply(acc, part, scale);
            }
            part.zero();
            if constexpr (kZeroOnSums) asum = Terms::template row0_sum<kPartSteps>(sA, ks, lane);
          }
          Terms::load_scales(base, ks, wn, g, scale);
        }
      }
      if constexpr (Stage::kZRows > 0) {
        if (i == 0 || (ks * 16) % Terms::kZGroup == 0) Terms::load_zeros(base, ks, wn, g, zero);
      }
      u32 a[FM][4];
      u32 x[2][2];  // swapped form: the n8 operands (rows 0-7, 8-15)
      if constexpr (Cfg::kSwapAB) mma::load_n8_operands<BK>(x, sA, ks, lane);
      if constexpr (kFixOnActivations) {
        constexpr u32 kShift2 = (static_cast<u32>(127 + kActShift) << 7) * 0x00010001u;  // 2^kActShift, a bf16 pair
#pragma unroll
        for (int h = 0; h < NB; ++h)
#pragma unroll
          for (int r = 0; r < 2; ++r) x[h][r] = arch::mul2(Act{}, x[h][r], kShift2);
      }
#pragma unroll
      for (int fm = 0; fm < (Cfg::kSwapAB ? 0 : FM); ++fm) mma::load_a<BK>(a[fm], sA, (wm * FM + fm) * 16, ks, lane);
#pragma unroll
      for (int fn = 0; fn < FN; ++fn) {
        u32 w[B];
        memory::load_block_words<B>(w, sW + (ks * (BN / 64) + wn * FN + fn) * Stage::kBlockBytes, lane);
        u32 b[8][2];
        dequant::BlockPairs<Cfg>::template run<0>(w, b, scale[fn], zero, masks, fn);
#if HM_ABLATE == 1 || HM_ABLATE == 3
#pragma unroll
        for (int j = 0; j < 8; ++j)
          asm volatile("" ::"r"(b[j][0]), "r"(b[j][1]), "r"(Cfg::kSwapAB ? x[(j / 2) % 2][j % 2] : a[0][j % 4]));
#else
        if constexpr (Cfg::kSwapAB) {
#pragma unroll
          for (int f = 0; f < 4; ++f) {
            const u32 wa[4] = {b[2 * f][0], b[2 * f + 1][0], b[2 * f][1], b[2 * f + 1][1]};
#pragma unroll
            for (int h = 0; h < NB; ++h) arch::mma_m16n8k16(Act{}, kAccScale ? part.d[fn][f][h] : acc.d[fn][f][h], wa, x[h]);
          }
        } else {
#pragma unroll
          for (int fm = 0; fm < FM; ++fm)
#pragma unroll
            for (int j = 0; j < 8; ++j) arch::mma_m16n8k16(Act{}, acc.c[fm][fn][j], a[fm], b[j]);
        }
#endif
      }
    }
    if constexpr (kGroupColumns) {
      Terms::template apply_columns<Route::kParts, kPartSteps>(acc, part, base, wn, wk, lane);
    } else if constexpr (kAccScale) {
      if constexpr (kZeroOnSums) Terms::take_zero_offset(part, asum);
      Terms::apply(acc, part, scale);
    }
  }

  // ---- the mma.sync body: per-stage MMAs and the per-tile finish the pipeline below calls -----------------
  struct SyncBody {
    static constexpr int kLagStages = 0;  // mma.sync has read its stage when compute() returns
    MainAcc acc;
    Zero zero;
    dequant::Masks masks;

    HM_DEVICE explicit SyncBody(const GemmDenseArgs& p) {
      acc.zero();
      zero.set_const(Cfg::kZConst);
      // p.k > 0, so this is zero; the compiler cannot know it and keeps the masks in registers.
      masks = dequant::pinned_masks(Act{}, static_cast<u32>(p.k) >> 31);
    }
    HM_DEVICE void after_wait() const {}
    HM_DEVICE void compute(const char* base, int wm, int wn, int wk, int lane) {
      compute_stage(base, acc, zero, masks, wm, wn, wk, lane);
    }
    HM_DEVICE void finish(const GemmDenseArgs& p, const scheduler::StreamK& sk, char* red, int tile, int mt, int nt,
                          long long seg_begin, long long seg_end, int wm, int wn, int wk,
                          int lane) {
      if constexpr (HM_ABLATE == 6) return;
      if constexpr (Cfg::kSwapAB) {
        if constexpr (kGroupColumns) Terms::fold_columns(acc);
        Acc full;
        mma::unswap(acc, full, lane);
        epilogue::finish_tile<Cfg>(p, sk, red, full, tile, mt, nt, seg_begin, seg_end, wm, wn, wk, lane,
                                   epilogue_fix());
      } else {
        epilogue::finish_tile<Cfg>(p, sk, red, acc, tile, mt, nt, seg_begin, seg_end, wm, wn, wk, lane,
                                   epilogue_fix());
      }
      acc.zero();
    }
  };

  // The cp.async ring over this CTA's Stream-K range, with an MMA body (scheduler/pipeline.cuh).
  template <class Body>
  static HM_DEVICE void pipeline(const GemmDenseArgs& p, char* smem) {
    scheduler::pipeline<GemmDense, Body>(p, smem);
  }

  static HM_DEVICE void run(const GemmDenseArgs& p) {
    extern __shared__ __align__(128) char smem[];
    pipeline<SyncBody>(p, smem);
  }
};

}  // namespace humming

namespace humming {

// Every dense kernel entry (this one, gemm_dense_wgmma.cuh's) has the same template arguments, in
// GemmDenseSpec's declaration order, and the same parameters, in GemmDenseArgs' order; these spell them once.
#define HM_GEMM_DENSE_TEMPLATE                                                                                      \
  class Act, class Out, int WBITS, int WKIND, int WE, int WM, int WBIAS, int ZMODE, int ZCONST, int ZGS, int SMODE, \
      int SDT, int GS, int WARP_M, int FRAG_M, int WARP_N, int FRAG_N, int WARP_K, int BK, int STAGES, int GROUP_M,  \
      int MIN_BLOCKS, int SWAP_N8, int BULK_W, int PRODUCER, int ONE_TOKEN, int ODD_N
#define HM_GEMM_DENSE_CONFIG                                                                                     \
  GemmDenseConfig<Act, Out, WBITS, WKIND, WE, WM, WBIAS, ZMODE, ZCONST, ZGS, SMODE, SDT, GS, WARP_M, FRAG_M, WARP_N, \
                  FRAG_N, WARP_K, BK, STAGES, GROUP_M, MIN_BLOCKS, SWAP_N8, BULK_W, PRODUCER, ONE_TOKEN, ODD_N>
// The launch bounds of a kernel whose configuration is CFG: its CTA's threads (producer included).
#define HM_GEMM_DENSE_BOUNDS(CFG) __launch_bounds__(CFG::kCtaThreads, MIN_BLOCKS)
#define HM_GEMM_DENSE_PARAMS                                                                                          \
  const void *__restrict__ a, const void *__restrict__ w, const void *__restrict__ scales,                         \
      const void *__restrict__ zeros, const float *__restrict__ chscale, const float *__restrict__ gscale,         \
      const void *__restrict__ bias, void *__restrict__ c, float *__restrict__ ws, int *__restrict__ counters, int m, \
      int n, int k, int lda, int ldc, int nb64, int k_pad, int m_tiles, int n_tiles
#define HM_GEMM_DENSE_ARGS                                                                                   \
  GemmDenseArgs {                                                                                            \
    a, w, scales, zeros, chscale, gscale, bias, c, ws, counters, m, n, k, lda, ldc, nb64, k_pad, m_tiles, n_tiles \
  }

// The kernel the twin instantiates.
template <HM_GEMM_DENSE_TEMPLATE>
__global__ void HM_GEMM_DENSE_BOUNDS(HM_GEMM_DENSE_CONFIG) gemm_dense(HM_GEMM_DENSE_PARAMS) {
  const arch::KernelSpan span(counters);  // timing experiments only (arch/timer.cuh)
  GemmDense<HM_GEMM_DENSE_CONFIG>::run(HM_GEMM_DENSE_ARGS);
}

}  // namespace humming
