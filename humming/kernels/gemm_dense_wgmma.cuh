// humming/kernels/gemm_dense_wgmma.cuh -- dense WnA16 GEMM on warpgroup MMAs (wgmma, sm_90a) for M past decode.
//
// The same problem, packed weights, stages, loaders, dequantisation and epilogue as gemm_dense.cuh; only the
// MMA changes. Operands are swapped as in the decode path: D^T = W x A^T, with the dequantised weights as the
// register A operand of wgmma.m64nNk16 and TOK = N activation rows as its shared-memory B operand. Warp w of a
// warpgroup dequantises its own packed 16 x 64 block into the four m16 fragments f = 0..3 (the mma.sync A
// layout) and the warpgroup issues one wgmma per f, so instruction f computes weight rows 16f..16f+15 of each of
// the group's four blocks against all TOK rows of A. Per k16 step a warp thus reads one 16-byte word per lane
// and dequantises 16 pairs, and the tensor cores do 4 x 64 x TOK x 16 MACs per warpgroup.
// - Tile: WARP_N/4 warpgroups along N (256 weight columns each), WARP_M along M (TOK = 16 FRAG_M rows each);
//   BK = 64, so one stage of activations is exactly one 128-byte-swizzle atom column per 8 rows (the ldmatrix
//   swizzle of mma/fragments.cuh is that layout), read by wgmma through a descriptor.
// - Pipeline: the cp.async ring of gemm_dense.cuh; after each wait, fence.proxy.async makes the stage's
//   generic-proxy writes visible to wgmma. One wgmma group stays in flight across stage boundaries, so the
//   ring keeps one stage of slack: a stage is refilled only after the group reading it has been waited for.
//   With PRODUCER = 1 one more warpgroup issues every copy and hands stages over on mbarriers
//   (scheduler/pipeline.cuh), moving its registers to the MMA warpgroups with setmaxnreg (WgmmaConfig).
// - Epilogue: the swapped accumulators are stored directly (epilogue/store.cuh), Stream-K / split-K partial
//   tiles reduced through the workspace as in the mma.sync kernel.
#pragma once
#include <gemm_dense.cuh>
#include <humming/arch/wgmma.cuh>

#if defined(HM_ARCH) && HM_ARCH < 900
#error "the wgmma kernels take sm_90a's code paths only (HM_ARCH names an older architecture)"
#endif

// wgmma groups a warpgroup leaves in flight after each k16 step's commit (experiment switch for
// benchmarks/profile_wna16.py --define; 1 = the measured default). Each stage holds four k16 steps, so any value
// up to 3 has retired a stage's groups by the end of the next compute(), which is when the ring reuses it.
#ifndef HM_WGMMA_PENDING
#define HM_WGMMA_PENDING 1
#endif

// When a k16 step's packed words are read from shared memory: 0 after the previous step's wgmma wait (on the
// dequant chain), 1 all four steps' at the top of compute() (the compiler then dequantises them all before the
// stage's first wgmma). Measured (H200, 28672 x 8192 s4 g128, 2026-12-03): 1 for the four-fragment form (M = 64:
// 91.0 against 93.8 us), 0 for the wide form (M = 1024: 804 against 816 with 1; reading one step ahead, before
// the wait, ran 808 and was dropped). Codes wider than 4 bits preload too: reading per step instead ran s8 and
// e4m3 at M = 64 / 128 0.5-1.5% slower (H100 SXM, 2026-12-05, interleaved, verified). The exception is f16 with
// 8-bit codes and group zero points: its four preloaded steps spill 22 LDL / STL into the loop at the 168-register
// cap, and reading per step (no spill) ran M = 64 / 128 0.8 / 2.9% faster, where bf16 u8 with zero points still
// gained 1.5 / 0.8% from the preload (H100 SXM, 2026-12-05 14:05). An experiment switch sets one mode for both
// forms (-1: each form's measured mode).
#ifndef HM_WGMMA_PRELOAD
#define HM_WGMMA_PRELOAD -1
#endif

// Registers the producer warpgroup keeps, for both forms (experiment switch; a multiple of 8 in 24..256; -1:
// each form's measured count, kWgmmaProducerRegs / kWideProducerRegs).
#ifndef HM_PRODUCER_REGS
#define HM_PRODUCER_REGS -1
#endif

namespace humming {

// Dynamic shared memory is aligned up to this in the kernel (128-byte swizzle atoms are 1024-byte aligned).
constexpr int kWgmmaSmemAlign = 1024;

// The producer warpgroup's registers (setmaxnreg.dec), measured on the H200 (2026-12-03, 28672 x 8192 s4 g128):
// the four-fragment form keeps 56 (104 ran M = 64 in 90.9 us against 84.0: its MMA warps spill at 200), the wide
// form 104 (M = 1024 788 against 796 us, M = 4096 3116 against 3156; its MMA warps need no more than 200).
constexpr int kWgmmaProducerRegs = 56;
constexpr int kWideProducerRegs = 104;

// gemm_dense's configuration with stages laid out on 1024-byte boundaries, plus the alignment slack.
// STAGED_BLOCKS: n8 row blocks a pass of the tile's store through a staging buffer for each compute warp
// (epilogue/store.cuh store_swapped_group_staged), after the stages (the k-warp reduction's place, which no wgmma
// form has); 0: stored directly. The four-fragment form's spread finish (wgmma N >= 32) takes 4, the wide form 1.
template <class Base, int PRODUCER_REGS = kWgmmaProducerRegs, int STAGED_BLOCKS = (Base::kFragM > 1 ? 4 : 0)>
struct WgmmaConfig : Base {
  using BaseStage = typename Base::Stage;
  using Stage = memory::StageLayout<Base::kBM, Base::kBN, Base::kBK, Base::kWBits, BaseStage::kSRows,
                                    BaseStage::kSBytes, BaseStage::kZRows, kWgmmaSmemAlign>;
  static constexpr int kStagedBlocks = STAGED_BLOCKS;
  // The staging buffers of the tile's store, and before them (k-warpgroups) the groups' reduction: the same space.
  static constexpr int kStagingBytes = Base::kWarps * epilogue::kStagedGroupBytes<STAGED_BLOCKS>;
  static constexpr int kRedBytes = Base::kRedBytes > kStagingBytes ? Base::kRedBytes : kStagingBytes;
  static constexpr int kSmemBytes =
      Base::kStages * Stage::kBytes + kRedBytes + Base::kBarrierBytes + kWgmmaSmemAlign;

  // The producer form takes a whole warpgroup (setmaxnreg works on warpgroups): its four warps share the copies
  // (one warp alone cannot issue a large stage in time) and give registers back for the compute warpgroups'
  // accumulators. The launch caps every thread at kLaunchRegs (65536 / threads per SM, in units of 8, as ptxas
  // derives it from the launch bounds).
  static constexpr int kProducerWarps = Base::kProducer ? 4 : 0;
  static constexpr int kCtaThreads = Base::kThreads + 32 * kProducerWarps;
  static constexpr int kLaunchRegs0 = 65536 / (kCtaThreads * Base::kMinBlocks) / 8 * 8;
  static constexpr int kLaunchRegs = kLaunchRegs0 < 255 ? kLaunchRegs0 : 255;
  // The producer keeps PRODUCER_REGS (its loaders' pointers: fewer spill, or serialise the copies), the compute
  // warps split the rest of the CTA's launch allocation, up to 240: setmaxnreg.inc waits until the pool holds
  // what it asks for, so asking for more than the producer gave back would hang.
  // A CTA of many warpgroups launches at fewer registers than PRODUCER_REGS; its producer keeps the
  // four-fragment form's count then, so that the MMA warps still gain.
  static constexpr int kProducerRegs0 = PRODUCER_REGS < kLaunchRegs ? PRODUCER_REGS : kWgmmaProducerRegs;
  static constexpr int kProducerRegs = HM_PRODUCER_REGS < 0 ? kProducerRegs0 : HM_PRODUCER_REGS;
  static constexpr int kComputeRegs0 = (kLaunchRegs * kCtaThreads - 128 * kProducerRegs) / Base::kThreads / 8 * 8;
  static constexpr int kComputeRegs = kComputeRegs0 < 240 ? kComputeRegs0 : 240;
  static constexpr bool kSplitRegs = Base::kProducer && kComputeRegs > kLaunchRegs;
  static HM_DEVICE void producer_registers() {
    if constexpr (kSplitRegs) arch::setmaxnreg_dec<kProducerRegs>();
  }
  static HM_DEVICE void compute_registers() {
    if constexpr (kSplitRegs) arch::setmaxnreg_inc<kComputeRegs>();
  }
};

// The packed-word slots a compute() keeps under preload mode MODE (HM_WGMMA_PRELOAD), and the slot of step ks.
template <int MODE>
struct WordPreload {
  static constexpr int kMode = HM_WGMMA_PRELOAD < 0 ? MODE : HM_WGMMA_PRELOAD;
  static constexpr int kSlots = kMode == 1 ? 4 : 1;
  static HM_DEVICE constexpr int slot(int ks) { return kMode == 1 ? ks : 0; }
};

// The wide form's configuration: its producer keeps kWideProducerRegs.
template <class Base>
struct WgmmaWideConfig : WgmmaConfig<Base, kWideProducerRegs, 1> {};

// The wide form with the activation tile copied by TMA (memory/tma.cuh): one producer thread issues it.
template <class Base>
struct WgmmaWideTmaConfig : WgmmaWideConfig<Base> {
  static_assert(Base::kProducer, "the tensor copy is issued by the producer warpgroup");
  static constexpr bool kTmaA = true;
};

// The TMA form launched as clusters of two CTAs on adjacent n tiles of one m tile (one CTA a tile), each copying
// half of every stage's activation tile into both (memory/tma.cuh): a 256-row tile's 32 KiB a stage crosses from L2
// once per pair.
template <class Base>
struct WgmmaWideTmaPairConfig : WgmmaWideTmaConfig<Base> {
  static constexpr int kClusterN = 2;
};

// HM_ABLATE (gemm_dense.cuh; timing experiments only, wrong values): 1 and 3 drop the MMAs (their operands are
// still consumed); 2 and 3 take the raw code words in dequant::BlockPairs (dequant/pairs.cuh).
template <int TOK, class Act>
HM_DEVICE void wgmma_or_consume(Act act, float (&d)[TOK / 2], const u32 (&a)[4], u64 desc) {
#if HM_ABLATE == 1 || HM_ABLATE == 3
  asm volatile("" ::"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
#else
  arch::wgmma_rs<TOK>(act, d, a, desc);
#endif
}

// The shared pipeline with an MMA body, on the dynamic shared memory aligned up to kWgmmaSmemAlign.
template <class Dense, class Body>
HM_DEVICE void run_on_aligned_smem(const GemmDenseArgs& p) {
  extern __shared__ __align__(128) char smem_raw[];
  const u32 raw = arch::smem_u32(smem_raw);
  const u32 pad = (kWgmmaSmemAlign - (raw & (kWgmmaSmemAlign - 1))) & (kWgmmaSmemAlign - 1);
  Dense::template pipeline<Body>(p, smem_raw + pad);
}

template <class Cfg>
struct GemmDenseWgmma {
  using Dense = GemmDense<Cfg>;
  using Act = typename Cfg::Act;
  using Stage = typename Cfg::Stage;
  static constexpr int BN = Cfg::kBN, BK = Cfg::kBK;
  static constexpr int TOK = Cfg::kFragM * 16;  // activation rows per warpgroup: wgmma's N
  static constexpr int NB = TOK / 8;            // n8 column blocks of each wgmma's D
  using Acc = mma::SwapAccumulators<1, NB>;
  static constexpr bool kSpreadsSplitTiles = epilogue::SpreadsSplitTiles<Cfg, Acc>::value;  // exported

  static_assert(!Cfg::kSwapAB && Cfg::kFragN == 1, "the wgmma kernel takes one n64 block per warp (swapping is built in)");
  // k-warpgroups take the stages in turn (scheduler/pipeline.cuh StageGroups) and share a tile's columns: half the
  // columns of one warpgroup a stage, so half the f32 partials a split tile's sharers exchange.
  static_assert(Cfg::kWarpK == 1 || (Cfg::kWarpK == 2 && Cfg::kProducer && kSpreadsSplitTiles),
                "two k-warpgroups need the producer's ring and the spread finish (wgmma N >= 32)");
  static_assert(Cfg::kWarpN % 4 == 0, "warps along N come in warpgroups of four");
  static_assert(TOK == 16 || TOK == 32 || TOK == 64, "wgmma N (activation rows per warpgroup) is 16, 32 or 64");
  static_assert(BK == 64, "one 128-byte swizzle atom along K per stage");
  static_assert(Stage::kA % kWgmmaSmemAlign == 0 && Stage::kBytes % kWgmmaSmemAlign == 0,
                "activation tiles must start on 1024-byte boundaries");

  struct Body {
    // Preloaded, but per step for f16 8-bit codes with group zero points (see HM_WGMMA_PRELOAD).
    using Preload = WordPreload<(Dense::Route::kF16 && Cfg::kWBits == 8 && Stage::kZRows > 0) ? 0 : 1>;
    // The last k16 step's wgmmas still read the stage after compute() returns; the next load goes to the stage
    // read two iterations ago, whose groups the first wait of the current compute() has retired.
    static constexpr int kLagStages = 1;
    static constexpr int kStageGroups = Cfg::kWarpK;  // k-warpgroups take the ring's stages in turn
    Acc acc;
    typename Dense::Zero zero;
    dequant::Masks masks;

    HM_DEVICE explicit Body(const GemmDenseArgs& p) {
      acc.zero();
      zero.set_const(Cfg::kZConst);
      masks = dequant::pinned_masks(Act{}, static_cast<u32>(p.k) >> 31);  // see GemmDense::SyncBody
    }

    // cp.async and the K-tail zero stores write through the generic proxy; wgmma reads through the async one.
    HM_DEVICE void after_wait() const { arch::fence_proxy_async_smem(); }
    HM_DEVICE void drain() const { arch::wgmma_wait<0>(); }  // the segment's last stage is read

    HM_DEVICE void compute(const char* base, int wm, int wn, int /*wk*/, int lane) {
      constexpr int B = Cfg::kWBits;
      const int g = lane >> 2;
      const u32 sW = arch::smem_u32(base + Stage::kW);
      const u32 sA = arch::smem_u32(base + Stage::kA) + wm * TOK * (BK * 2);
      u32 scale[1][8];
      u32 words[Preload::kSlots][B];
      auto load_step = [&](int ks) {
        memory::load_block_words<B>(words[Preload::slot(ks)], sW + (ks * (BN / 64) + wn) * Stage::kBlockBytes, lane);
      };
      if constexpr (Preload::kMode == 1) {
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) load_step(ks);
      }
      // The ring reuses a stage once the next compute() has returned: its groups must be retired by then.
      static_assert(HM_WGMMA_PENDING <= BK / 16, "HM_WGMMA_PENDING exceeds the commit groups of a stage");
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        if constexpr (Stage::kSRows > 0) {
          if (ks == 0 || (ks * 16) % Cfg::kGS == 0) Dense::Terms::load_scales(base, ks, wn, g, scale);
        }
        if constexpr (Stage::kZRows > 0) {
          if (ks == 0 || (ks * 16) % Dense::Terms::kZGroup == 0) Dense::Terms::load_zeros(base, ks, wn, g, zero);
        }
        if constexpr (Preload::kMode == 0) load_step(ks);
        u32 b[8][2];
        dequant::BlockPairs<Cfg>::template run<0>(words[Preload::slot(ks)], b, scale[0], zero, masks, 0);
        const u64 desc = arch::wgmma_desc_sw128(sA + ks * 32);  // 16 elements along K = 32 bytes
        arch::wgmma_fence();  // the A registers were just written by ordinary instructions
#pragma unroll
        for (int f = 0; f < 4; ++f) {
          const u32 wa[4] = {b[2 * f][0], b[2 * f + 1][0], b[2 * f][1], b[2 * f + 1][1]};
          wgmma_or_consume<TOK>(Act{}, reinterpret_cast<float(&)[TOK / 2]>(acc.d[0][f]), wa, desc);
        }
        arch::wgmma_commit();
        // The previous step's group is done with its A registers (and, at ks = 0, with the stage before this
        // one): at most two steps' 32 registers stay live, and the tensor pipe never drains between stages.
        arch::wgmma_wait<HM_WGMMA_PENDING>();
      }
    }

    HM_DEVICE void finish(const GemmDenseArgs& p, const scheduler::StreamK& sk, char* red, int tile, int mt, int nt,
                          long long seg_begin, long long seg_end, int wm, int wn, int wk,
                          int lane) {
      arch::wgmma_wait<0>();  // the tile's last group writes the accumulators the epilogue reads
      epilogue::finish_tile<Cfg>(p, sk, red, acc, tile, mt, nt, seg_begin, seg_end, wm, wn, wk, lane,
                                 Dense::epilogue_fix());
      acc.zero();
    }
  };

  static HM_DEVICE void run(const GemmDenseArgs& p) { run_on_aligned_smem<Dense, Body>(p); }
};

// ---- the wide form: one m64 fragment per warp, wgmma N = 64..256 activation rows -----------------------------
// Warp f of a warpgroup dequantises only m16 fragment f (weight columns 16f..16f+15) of the group's 16 x 64
// block: 4 of its lane's 16 pairs, from one word per bit plane (memory::load_fragment_words), and the group
// issues one wgmma.m64nTOKk16 per k16 step for the whole block. Per MAC that is a quarter of the four-fragment
// form's dequantisation and one large wgmma instead of four of N = 64; the price is TOK = 64 FRAG_M rows per
// warpgroup (M >= 64 to fill it). Config mapping: WARP_M = 4 x (warpgroups along M), the warp's rank in its
// group being its fragment; WARP_N = warpgroups along N; FRAG_N = n64 blocks per warpgroup (1 or 2: two blocks
// issue two wgmmas per k16 step against the same activations, halving the activation bytes per MAC);
// FRAG_M = TOK / 64.
template <class Cfg>
struct GemmDenseWgmmaWide {
  using Dense = GemmDense<Cfg>;
  using Act = typename Cfg::Act;
  using Stage = typename Cfg::Stage;
  static constexpr int BN = Cfg::kBN, BK = Cfg::kBK;
  static constexpr int TOK = Cfg::kFragM * 64;  // activation rows per warpgroup: wgmma's N
  static constexpr int NB = TOK / 8;
  static constexpr int FN = Cfg::kFragN;
  using Acc = mma::FragAccumulators<NB, FN>;
  static constexpr bool kSpreadsSplitTiles = epilogue::SpreadsSplitTiles<Cfg, Acc>::value;  // exported

  static_assert(!Cfg::kSwapAB && (FN == 1 || FN == 2) && Cfg::kWarpK == 1 && Cfg::kWarpM % 4 == 0,
                "the wide wgmma form takes warpgroups of four fragment warps, one or two n64 blocks each");
  static_assert(TOK == 64 || TOK == 128 || TOK == 256, "wgmma N (activation rows per warpgroup) is 64, 128 or 256");
  static_assert(BK == 64, "one 128-byte swizzle atom along K per stage");

  struct Body {
    using Preload = WordPreload<0>;
    static constexpr int kLagStages = 1;  // as GemmDenseWgmma::Body
    Acc acc;
    typename Dense::Zero zero;
    dequant::Masks masks;
    int frag, wgm, wgn;  // the warp's fragment, its warpgroup's row block and column block (FN x 64)

    HM_DEVICE explicit Body(const GemmDenseArgs& p) {
      acc.zero();
      zero.set_const(Cfg::kZConst);
      masks = dequant::pinned_masks(Act{}, static_cast<u32>(p.k) >> 31);  // see GemmDense::SyncBody
      // Broadcast from lane 0, as the pipeline's warp index (scheduler/pipeline.cuh): ptxas then keeps sA, and
      // with it each wgmma's activation descriptor, in uniform registers (8 R2UR a stage otherwise). H200,
      // 2026-12-04 16:04, verified, both broadcasts against neither, us: M = 1024 28672 x 8192 753 -> 720, 8192 x
      // 28672 705 -> 685-694, 28672 x 4096 385 -> 366, 8192 x 8192 206 -> 195; M = 256 195 -> 187, M = 4096
      // 3133 -> 2973-3060; MXFP4 749 -> 699-702, s8 761 -> 735-739 (M = 1024, 28672 x 8192).
      const int warp = scheduler::uniform_warp_index(threadIdx.x);
      frag = warp & 3;
      wgn = (warp >> 2) % Cfg::kWarpN;
      wgm = (warp >> 2) / Cfg::kWarpN;
    }

    // Also in the TMA form, whose cp.async data wgmma does not read: dropping it there measured no faster
    // (H200, 2026-12-03: 726.3 against 728.3 us at M = 1024).
    HM_DEVICE void after_wait() const { arch::fence_proxy_async_smem(); }
    HM_DEVICE void drain() const { arch::wgmma_wait<0>(); }  // the segment's last stage is read

    HM_DEVICE void compute(const char* base, int /*wm*/, int /*wn*/, int /*wk*/, int lane) {
      constexpr int B = Cfg::kWBits;
      const int g = lane >> 2;
      const u32 sW = arch::smem_u32(base + Stage::kW);
      const u32 sA = arch::smem_u32(base + Stage::kA) + wgm * TOK * (BK * 2);
      u32 scale[FN][8];
      u32 words[Preload::kSlots][FN][B];
      auto load_step = [&](int ks) {
#pragma unroll
        for (int fn = 0; fn < FN; ++fn)
          memory::load_fragment_words<B>(words[Preload::slot(ks)][fn],
                                         sW + (ks * (BN / 64) + wgn * FN + fn) * Stage::kBlockBytes, lane, frag);
      };
      if constexpr (Preload::kMode == 1) {
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) load_step(ks);
      }
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        u32 wa[FN][4];
        if constexpr (Preload::kMode == 0) load_step(ks);
#pragma unroll
        for (int fn = 0; fn < FN; ++fn) {
          const int blk = wgn * FN + fn;
          if constexpr (Stage::kSRows > 0) {
            if (ks == 0 || (ks * 16) % Cfg::kGS == 0) {
              const int row = Cfg::kGS >= BK ? 0 : (ks * 16) / Cfg::kGS;
              dequant::load_scale_pairs_of_fragment<Cfg::kSDT>(
                  Act{}, arch::smem_u32(base + Stage::kS) + (row * BN + blk * 64) * Stage::kSBytes, g, frag,
                  scale[fn]);
            }
          }
          if constexpr (Stage::kZRows > 0) {
            constexpr int zgs = Dense::Terms::kZGroup;
            if (ks == 0 || (ks * 16) % zgs == 0) {
              const int row = zgs >= BK ? 0 : (ks * 16) / zgs;
              zero.template load_fragment<B>(arch::smem_u32(base + Stage::kZ) + (row * BN + blk * 64) * 2, g, frag,
                                             fn);
            }
          }
          u32 b[8][2];
          // pairs 0..3: fragment `frag`
          dequant::BlockPairs<Cfg>::template run<0, 4>(words[Preload::slot(ks)][fn], b, scale[fn], zero, masks, fn);
          wa[fn][0] = b[0][0], wa[fn][1] = b[1][0], wa[fn][2] = b[0][1], wa[fn][3] = b[1][1];
        }
        arch::wgmma_fence();
#pragma unroll
        for (int fn = 0; fn < FN; ++fn)
          wgmma_or_consume<TOK>(Act{}, reinterpret_cast<float(&)[TOK / 2]>(acc.d[fn]), wa[fn],
                                arch::wgmma_desc_sw128(sA + ks * 32));
        arch::wgmma_commit();
        arch::wgmma_wait<HM_WGMMA_PENDING>();
      }
    }

    HM_DEVICE void finish(const GemmDenseArgs& p, const scheduler::StreamK& sk, char* red, int tile, int mt, int nt,
                          long long seg_begin, long long seg_end, int /*wm*/, int /*wn*/,
                          int wk, int lane) {
      arch::wgmma_wait<0>();
      epilogue::finish_tile<Cfg>(p, sk, red, acc, tile, mt, nt, seg_begin, seg_end, 4 * wgm + frag, wgn,
                                 wk, lane, Dense::epilogue_fix());
      acc.zero();
    }
  };

  static HM_DEVICE void run(const GemmDenseArgs& p) { run_on_aligned_smem<Dense, Body>(p); }
};

// The kernels the twins instantiate: gemm_dense's template arguments and parameters (HM_GEMM_DENSE_*); the
// producer form adds a warpgroup (WgmmaConfig::kCtaThreads).
template <HM_GEMM_DENSE_TEMPLATE>
__global__ void HM_GEMM_DENSE_BOUNDS(WgmmaConfig<HM_GEMM_DENSE_CONFIG>) gemm_dense_wgmma(HM_GEMM_DENSE_PARAMS) {
  const arch::KernelSpan span(counters);
  GemmDenseWgmma<WgmmaConfig<HM_GEMM_DENSE_CONFIG>>::run(HM_GEMM_DENSE_ARGS);
}

template <HM_GEMM_DENSE_TEMPLATE>
__global__ void HM_GEMM_DENSE_BOUNDS(WgmmaWideConfig<HM_GEMM_DENSE_CONFIG>) gemm_dense_wgmma_wide(HM_GEMM_DENSE_PARAMS) {
  const arch::KernelSpan span(counters);
  GemmDenseWgmmaWide<WgmmaWideConfig<HM_GEMM_DENSE_CONFIG>>::run(HM_GEMM_DENSE_ARGS);
}

// The TMA forms: the tensor map of the activations [M, K] (box BK x BM, 128-byte swizzle; BK x BM / 2 for the pair)
// comes as a parameter, and its address travels in GemmDenseArgs::a, which the tensor-copy loader reads (`a` itself is
// unused). NAME: the kernel; CONFIG: its configuration template (WgmmaWideTmaConfig, WgmmaWideTmaPairConfig).
#define HM_GEMM_DENSE_WIDE_TMA_KERNEL(NAME, CONFIG)                                                              \
  template <HM_GEMM_DENSE_TEMPLATE>                                                                            \
  __global__ void HM_GEMM_DENSE_BOUNDS(CONFIG<HM_GEMM_DENSE_CONFIG>)                                           \
      NAME(HM_GEMM_DENSE_PARAMS, const __grid_constant__ arch::TensorMap act_map) {                           \
    const arch::KernelSpan span(counters);                                                                     \
    GemmDenseArgs args = HM_GEMM_DENSE_ARGS;                                                                   \
    args.a = &act_map;                                                                                         \
    GemmDenseWgmmaWide<CONFIG<HM_GEMM_DENSE_CONFIG>>::run(args);                                               \
  }
HM_GEMM_DENSE_WIDE_TMA_KERNEL(gemm_dense_wgmma_wide_tma, WgmmaWideTmaConfig)
HM_GEMM_DENSE_WIDE_TMA_KERNEL(gemm_dense_wgmma_wide_tma_pair, WgmmaWideTmaPairConfig)
#undef HM_GEMM_DENSE_WIDE_TMA_KERNEL

}  // namespace humming
