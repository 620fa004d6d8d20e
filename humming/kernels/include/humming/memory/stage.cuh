// humming/memory/stage.cuh -- one pipeline stage in shared memory, and the cp.async loads that fill it.
//
// A stage holds, for k in [kt*BK, (kt+1)*BK) of one (m, n) tile: the packed weight blocks (as laid out in
// global memory: BK/16 rows of BN/64 blocks of 128*WBITS bytes, each row one contiguous global run), the
// activation tile (swizzled, see mma/fragments.cuh), and the group-scale and zero-point rows it needs.
// Every copy is 16 bytes. Rows past M are not loaded (their results are never stored); activation chunks
// past K are stored as zeros (the packed K is padded with zero weights, and 0 * garbage could be NaN).
#pragma once
#include <humming/arch/bulk.cuh>
#include <humming/arch/memory.cuh>
#include <humming/arch/types.cuh>
#include <humming/mma/fragments.cuh>

// Running pointers a producer's activation loader rotates through (experiment switch; 1 = one pointer, whose
// bump waits for the copy that read it: ncu on the wide producer kernel put its long-scoreboard stalls there).
#ifndef HM_LOADER_POINTERS
#define HM_LOADER_POINTERS 4
#endif

namespace humming {
namespace memory {

HM_DEVICE constexpr int round_up(int x, int m) { return (x + m - 1) / m * m; }

// ALIGN_: alignment of the activation tile and of the stage size (1024 for wgmma's 128-byte swizzle atoms).
template <int BM_, int BN_, int BK_, int WBITS_, int SROWS_, int SBYTES_, int ZROWS_, int ALIGN_ = 128>
struct StageLayout {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, kWBits = WBITS_;
  static constexpr int kBlockBytes = 128 * WBITS_;  // one 16 x 64 packed block: 32 lanes x 4*WBITS bytes
  static constexpr int kRowChunks = (BN_ / 64) * kBlockBytes / 16;  // 16-byte chunks per k16 row of the tile
  static constexpr int kWBytes = (BK_ / 16) * (BN_ / 64) * kBlockBytes;
  static constexpr int kABytes = BM_ * BK_ * 2;
  static constexpr int kSRows = SROWS_, kSBytes = SBYTES_, kZRows = ZROWS_;
  static constexpr int kW = 0;
  static constexpr int kA = round_up(kW + kWBytes, ALIGN_);
  static constexpr int kS = round_up(kA + kABytes, 128);
  static constexpr int kZ = round_up(kS + SROWS_ * BN_ * SBYTES_, 128);
  static constexpr int kBytes = round_up(kZ + ZROWS_ * BN_ * 2, ALIGN_);
};

// The weight copies of one thread for every stage of one n tile, fixed at the tile's start so that the main
// loop does no division. Regular (THREADS a multiple of a row's chunks, every thread a full share): a thread's
// chunks are one column of rows THREADS / RC apart, so a pointer, one stride and one inside-N flag describe
// them. Per-chunk offsets and flags otherwise; the flags are bits of one word, since a flag per chunk held in
// predicate registers ran out of them in the decode kernels (ptxas spilled them and branched around each copy:
// ~25% of the decode loop's stall samples sat in the loader, ncu 2026-12-03).
template <int THREADS, class Stage>
struct WeightLoader {
  static constexpr int RC = Stage::kRowChunks;
  static constexpr int TOTAL = (Stage::BK / 16) * RC;
  static constexpr int PER = (TOTAL + THREADS - 1) / THREADS;
  static constexpr int NB = Stage::BN / 64;
  static constexpr bool kRegular = THREADS % RC == 0 && TOTAL % THREADS == 0;
  // A bit a chunk (at most 64 for any tile the twin allows: 8-bit codes, 256-deep stages, 16 columns a thread).
  using Mask = typename Select<(PER > 32), u64, u32>::type;
  static_assert(kRegular || PER <= 64, "one bit a chunk in `ok`");
  const char* base;       // regular: this thread's first chunk at kt = 0; else the tile's row 0
  long long stage_bytes;  // global bytes between consecutive k stages
  long long step;         // regular: global bytes between this thread's chunks (THREADS / RC rows)
  int off[kRegular ? 1 : PER];  // irregular: chunk i at base + off[i]
  Mask ok;                // regular: nonzero if the column lies inside N; else bit i for chunk i

  HM_DEVICE void set_tile(const void* w, int nt, int nb64) {
    const long long row_stride = static_cast<long long>(nb64) * Stage::kBlockBytes;
    base = static_cast<const char*>(w) + static_cast<long long>(nt) * NB * Stage::kBlockBytes;
    stage_bytes = (Stage::BK / 16) * row_stride;
    const int valid = min(NB, nb64 - nt * NB) * (Stage::kBlockBytes / 16);  // chunks of a row inside N
    if constexpr (kRegular) {
      const int col = threadIdx.x % RC;
      base += (threadIdx.x / RC) * row_stride + col * 16;
      step = (THREADS / RC) * row_stride;
      ok = col < valid;
    } else {
      ok = 0;
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        const int c = threadIdx.x + i * THREADS;
        const int row = c / RC;
        const int col = c - row * RC;
        ok |= static_cast<Mask>((TOTAL % THREADS == 0 || c < TOTAL) && col < valid ? 1 : 0) << i;
        off[i] = row * nb64 * Stage::kBlockBytes + col * 16;
      }
    }
  }

  // bar: unused here (the bulk loader's stage barrier; both loaders take the same arguments).
  HM_DEVICE void load(u32 dst, int kt, u64 pol, u32 /*bar*/) const {
    const char* src = base + kt * stage_bytes;
    if constexpr (kRegular) {
      if (ok) {
#pragma unroll
        for (int i = 0; i < PER; ++i) arch::cp_async16(dst + (threadIdx.x + i * THREADS) * 16, src + i * step, pol);
      }
    } else {
#pragma unroll
      for (int i = 0; i < PER; ++i)
        if ((ok >> i) & 1) arch::cp_async16(dst + (threadIdx.x + i * THREADS) * 16, src + off[i], pol);
    }
  }
};

// The weight rows of a stage through the bulk copy engine (sm_90+, arch/bulk.cuh): each of the BK/16 rows of a
// stage is one contiguous global run, so it is one bulk copy, issued by a lane of warp 0 and completing on the
// stage's barrier; no other thread spends an instruction on weights. Rows of a tile past N copy fewer bytes.
template <class Stage>
struct BulkWeightLoader {
  static constexpr int ROWS = Stage::BK / 16;
  static constexpr int NB = Stage::BN / 64;
  static constexpr int kRowBytes = NB * Stage::kBlockBytes;  // a full row in shared memory
  const char* base;       // the tile's row 0 at kt = 0
  long long stage_bytes;  // global bytes between consecutive k stages
  long long row_stride;   // global bytes between the k16 rows of a stage
  u32 row_bytes;          // bytes copied per row (less than kRowBytes in a tile past N)

  HM_DEVICE void set_tile(const void* w, int nt, int nb64) {
    base = static_cast<const char*>(w) + static_cast<long long>(nt) * NB * Stage::kBlockBytes;
    row_stride = static_cast<long long>(nb64) * Stage::kBlockBytes;
    stage_bytes = ROWS * row_stride;
    row_bytes = static_cast<u32>(min(NB, nb64 - nt * NB) * Stage::kBlockBytes);
  }

  HM_DEVICE void load(u32 dst, int kt, u64 pol, u32 bar) const {
    if (threadIdx.x >= 32) return;
    if (threadIdx.x == 0) arch::mbarrier_arrive_expect_tx(bar, ROWS * row_bytes);
    __syncwarp();
    const char* src = base + kt * stage_bytes;
    for (int r = threadIdx.x; r < ROWS; r += 32)
      arch::bulk_copy_g2s(dst + r * kRowBytes, src + r * row_stride, row_bytes, bar, pol);
  }
};

// The dense kernels' activation rows (gemm_dense.cuh kLoadedRows): 1 = only those a tile serves (one token: row 0;
// 8 an n8 fragment of swapped operands), 0 = all BM rows under a flag each (before 2026-12-05; timing only). ~60 loop
// instructions fewer at M = 1: NVFP4 3.3-4.6%, MXFP4 1.5-2.2% faster, s4 / AWQ / s8 within +-1% (H200, verified;
// RESULTS.md 2026-12-05 17:08).
#ifndef HM_SERVED_A_ROWS
#define HM_SERVED_A_ROWS 1
#endif

// The activation copies of one thread: ROWS rows (BM, or the fewer a tile serves) x BK/8 chunks, swizzled; rows
// past M skipped, K tail zeroed.
// Regular (THREADS a multiple of a row's chunks, every thread a full share): the thread's chunks are one column
// (one K test a stage) of rows THREADS / CPR apart, each row's inside-M flag a bit of one word; per-chunk
// pointers otherwise.
// Spread (SPREAD > 0, one token: ROWS 1): chunk ck of the token's row goes to tile row p x 8 / PARTS, p = (ck / SPREAD)
// % PARTS its group part among a warp's k16 steps, so that each part reaches the MMAs as its own n8 column
// (dequant/route.cuh kGroupColumns); the other places of rows 0-7 stay zero (clear_spread, once before any copy).
template <int THREADS, class Stage, int ROWS = Stage::BM, int SPREAD = 0, int PARTS = 1>
struct ActivationLoader {
  static_assert(ROWS >= 1 && ROWS <= Stage::BM, "the rows copied lie inside the tile");
  static_assert(SPREAD == 0 || ROWS == 1, "a spread row is the one token's (its parts: mma::GroupColumns)");
  static constexpr int CPR = Stage::BK / 8;
  static HM_DEVICE constexpr int row_of(int r, int ck) {  // the tile row of chunk ck of row r
    if constexpr (SPREAD == 0) return r;
    else return mma::GroupColumns<PARTS>::column((ck / SPREAD) % PARTS);
  }

  // Spread: zeros in rows 0-7 of each of the STAGES tiles (the first at shared address a0, the next Stage::kBytes
  // on) wherever no chunk is copied. No copy ever writes those places, so this races with none, and the ring's
  // first barrier orders it before any read.
  template <int STAGES>
  static HM_DEVICE void clear_spread(u32 a0) {
    if constexpr (SPREAD > 0) {
      for (int i = threadIdx.x; i < STAGES * 8 * CPR; i += THREADS) {
        const int ck = i % CPR, r = (i / CPR) % 8, s = i / (8 * CPR);
        if (r != row_of(0, ck)) arch::store_zero16(a0 + s * Stage::kBytes + mma::a_tile_offset<Stage::BK>(r, ck));
      }
    }
  }
  static constexpr int TOTAL = ROWS * CPR;
  static constexpr int PER = (TOTAL + THREADS - 1) / THREADS;
  static constexpr bool kRegular = THREADS % CPR == 0 && TOTAL % THREADS == 0;
  static constexpr int RPP = kRegular ? THREADS / CPR : 1;  // regular: rows between a thread's chunks
  using Mask = typename Select<(PER > 32), u64, u32>::type;  // at most 64 chunks a thread (BM 64, one warp)
  static_assert(PER <= 64, "one bit a chunk in `ok`");
  const char* src[kRegular ? 1 : PER];  // row start + chunk column at kt = 0 (regular: the first chunk's)
  long long step;                       // regular: global bytes between the thread's chunks
  int kk[kRegular ? 1 : PER];           // k of the chunk at kt = 0
  u32 to[kRegular ? PER : 1];           // regular: each chunk's offset in the (swizzled) tile
  Mask ok;                              // bit i: chunk i's row lies inside M
  int k;

  HM_DEVICE void set_tile(const void* a, int m0, int m, int k_, int lda) {
    k = k_;
    ok = 0;
    step = static_cast<long long>(RPP) * lda * 2;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = threadIdx.x + i * THREADS;
      const int r = c / CPR;
      const int ck = c - r * CPR;
      ok |= static_cast<Mask>((TOTAL % THREADS == 0 || c < TOTAL) && m0 + r < m ? 1 : 0) << i;
      if constexpr (kRegular) to[i] = mma::a_tile_offset<Stage::BK>(row_of(r, ck), ck);
      if (!kRegular || i == 0) {
        kk[i] = ck * 8;
        src[i] = static_cast<const char*>(a) + (static_cast<long long>(m0 + r) * lda + ck * 8) * 2;
      }
    }
  }

  HM_DEVICE void load(u32 dst, int kt, u32 /*bar*/ = 0) const {
    if constexpr (kRegular && PER > 1) {
      // One column a thread: one K test a stage, then copies (or zeros past K) predicated on each row's flag.
      // Branching per chunk cost the decode loop four branch regions a stage (static loop 687 -> 664
      // instructions): M = 16 2 us faster on 28672 x 8192 and 8192 x 28672, 0.9 on 28672 x 4096, 1 for MXFP4
      // (H200, 2026-12-03 22:2x, interleaved). One chunk a thread (the 8-bit decode tile) keeps the per-chunk
      // form: this one measured 1 us slower there (s8 M = 1, 62.5-62.7 against 61.3-61.7 us).
      const char* from = src[0] + static_cast<long long>(kt) * Stage::BK * 2;
      if (kt * Stage::BK + kk[0] < k) {
#pragma unroll
        for (int i = 0; i < PER; ++i)
          if ((ok >> i) & 1) arch::cp_async16(dst + to[i], from + i * step);
      } else {
#pragma unroll
        for (int i = 0; i < PER; ++i)
          if ((ok >> i) & 1) arch::store_zero16(dst + to[i]);  // past K (0 * garbage could be NaN)
      }
    } else {
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        if ((ok >> i) & 1) {
          const int c = threadIdx.x + i * THREADS;
          const int r = c / CPR;
          const int ck = c - r * CPR;
          const u32 at = dst + mma::a_tile_offset<Stage::BK>(row_of(r, ck), ck);
          const int j = kRegular ? 0 : i;
          if (kt * Stage::BK + kk[j] < k)
            arch::cp_async16(at, src[j] + (kRegular ? i * step : 0) + static_cast<long long>(kt) * Stage::BK * 2);
          else
            arch::store_zero16(at);  // past K: zeros (the padded weights there are zero codes, but 0 * NaN is NaN)
        }
      }
    }
  }
};

// The producer's copies (the kernel's last THREADS threads, FIRST .. FIRST + THREADS - 1, a warp or a warpgroup,
// which issue every chunk of a stage): one lane covers fixed columns of every row, so a base pointer and strides
// describe all of its chunks (the per-chunk offsets of the loaders above would take ~100 registers for 32
// threads). Every write is a cp.async, zero-filled past K, so that the stage's mbarrier
// (cp.async.mbarrier.arrive) covers all of them.
template <class Stage, int FIRST, int THREADS = 32>
struct WarpWeightLoader {
  static constexpr int RC = Stage::kRowChunks;  // 16-byte chunks per k16 row of the tile
  static constexpr int ROWS = Stage::BK / 16;
  static constexpr int LPR = RC < THREADS ? RC : THREADS;  // lanes per row
  static constexpr int RPP = THREADS / LPR;                // rows per pass of the producer
  static constexpr int CPL = RC / LPR;           // chunks per lane and row
  // Regular: whole rows per lane column (4- and 8-bit codes and most others); else (e.g. 3-bit codes, 48 chunks
  // a row) chunk c = lane + THREADS i of the stage, its row and column computed per copy.
  static constexpr bool kRegular = RC % LPR == 0 && THREADS % LPR == 0 && ROWS % RPP == 0;
  static_assert(!kRegular || RC / LPR <= 32, "one bit a chunk column in `ok`");
  static constexpr int TOTAL = ROWS * RC;
  const char* base;       // regular: the lane's first chunk (row lane / LPR, column lane % LPR); else chunk 0
  long long row_stride;   // global bytes between k16 rows
  long long stage_bytes;  // global bytes between stages
  u32 ok;                 // regular: bit j, column (lane % LPR) + LPR j lies inside N
  int valid;              // chunks of a row inside N

  HM_DEVICE void set_tile(const void* w, int nt, int nb64) {
    const int lane = threadIdx.x - FIRST;
    constexpr int NB = Stage::BN / 64;
    row_stride = static_cast<long long>(nb64) * Stage::kBlockBytes;
    stage_bytes = ROWS * row_stride;
    base = static_cast<const char*>(w) + static_cast<long long>(nt) * NB * Stage::kBlockBytes;
    valid = min(NB, nb64 - nt * NB) * (Stage::kBlockBytes / 16);
    ok = 0;
    if constexpr (kRegular) {
      base += (lane / LPR) * row_stride + (lane % LPR) * 16;
#pragma unroll
      for (int j = 0; j < CPL; ++j) ok |= (lane % LPR + LPR * j < valid ? 1u : 0u) << j;
    }
  }

  HM_DEVICE void load(u32 dst, int kt, u64 pol, u32 /*bar*/) const {
    const int lane = threadIdx.x - FIRST;
    const char* src = base + kt * stage_bytes;
    if constexpr (kRegular) {
      const u32 to = dst + ((lane / LPR) * RC + lane % LPR) * 16;
#pragma unroll
      for (int i = 0; i < ROWS / RPP; ++i)
#pragma unroll
        for (int j = 0; j < CPL; ++j)
          if (ok & (1u << j))
            arch::cp_async16(to + (i * RPP * RC + LPR * j) * 16, src + i * RPP * row_stride + LPR * j * 16, pol);
    } else {
#pragma unroll
      for (int i = 0; i < (TOTAL + THREADS - 1) / THREADS; ++i) {
        const int c = lane + THREADS * i;
        const int row = c / RC, col = c - row * RC;
        if ((TOTAL % THREADS == 0 || c < TOTAL) && col < valid)
          arch::cp_async16(dst + c * 16, src + row * row_stride + col * 16, pol);
      }
    }
  }
};

template <class Stage, int FIRST, int THREADS = 32>
struct WarpActivationLoader {
  static constexpr int CPR = Stage::BK / 8;  // 16-byte chunks per row (8, 16 or 32)
  static constexpr int RPP = THREADS / CPR;  // rows per pass of the producer
  static_assert(Stage::BM % RPP == 0, "activation rows must split evenly over the producer's threads");
  const char* base;  // the lane's chunk of row r0 = lane / CPR at kt = 0
  long long pass_stride;  // global bytes between the lane's rows (RPP rows apart)
  int rows_left;          // rows of the tile from r0 on inside M
  int kk;                 // k of the lane's chunk at kt = 0
  int k;

  HM_DEVICE void set_tile(const void* a, int m0, int m, int k_, int lda) {
    const int lane = threadIdx.x - FIRST;
    const int r0 = lane / CPR, ck = lane % CPR;
    k = k_;
    kk = ck * 8;
    base = static_cast<const char*>(a) + (static_cast<long long>(m0 + r0) * lda + kk) * 2;
    pass_stride = static_cast<long long>(RPP) * lda * 2;
    rows_left = m - m0 - r0;
  }

  HM_DEVICE void load(u32 dst, int kt, u32 /*bar*/ = 0) const {
    const int lane = threadIdx.x - FIRST;
    const int r0 = lane / CPR, ck = lane % CPR;
    const bool in_k = kt * Stage::BK + kk < k;
    // Running pointers (the compiler would otherwise keep, or spill, all BM / RPP row offsets across the loop),
    // HM_LOADER_POINTERS of them in turn: a cp.async reads its address registers late, so bumping the one pointer
    // it used right after it would wait for that.
    constexpr int N = Stage::BM / RPP;
    constexpr int P = N < HM_LOADER_POINTERS ? N : HM_LOADER_POINTERS;
    const char* src[P];
    src[0] = base + (in_k ? static_cast<long long>(kt) * Stage::BK * 2 : 0);  // past K: a valid address
#pragma unroll
    for (int j = 1; j < P; ++j) src[j] = src[j - 1] + pass_stride;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (i * RPP < rows_left)  // rows past M are never read back (their results are not stored)
        arch::cp_async16_zfill(dst + mma::a_tile_offset<Stage::BK>(r0 + i * RPP, ck), src[i % P], in_k ? 16u : 0u);
      src[i % P] += P * pass_stride;
    }
  }
};

// ROWS rows of ROW_BYTES (scales or zero points of one n tile): row r of stage kt is source row
// kt * BK / ROW_K + r (ROW_K: k per row; 0 for a single row covering all of K).
// FIRST: the loader's threads are threadIdx.x = FIRST .. FIRST + THREADS - 1 (a producer warp's: FIRST > 0).
template <int THREADS, int ROWS, int ROW_BYTES, int BK, int ROW_K, int FIRST = 0>
struct RowLoader {
  static constexpr int CH = ROW_BYTES / 16;
  static constexpr int TOTAL = ROWS * CH;
  static constexpr int PER = (TOTAL + THREADS - 1) / THREADS;
  static_assert(ROW_BYTES % 16 == 0, "scale rows must be whole 16-byte chunks");
  const char* src[PER];
  bool ok[PER];
  int stride;

  HM_DEVICE void set_tile(const void* base, int stride_, int col_off, int valid) {
    stride = stride_;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = (threadIdx.x - FIRST) + i * THREADS;
      const int r = c / CH;
      const int ch = c - r * CH;
      ok[i] = (TOTAL % THREADS == 0 || c < TOTAL) && col_off + ch * 16 < valid;
      src[i] = static_cast<const char*>(base) + static_cast<long long>(r) * stride_ + col_off + ch * 16;
    }
  }

  HM_DEVICE void load(u32 dst, int kt, u64 pol) const {
    const int row0 = ROW_K == 0 ? 0 : (ROW_K >= BK ? kt / (ROW_K / BK) : kt * (BK / ROW_K));
#pragma unroll
    for (int i = 0; i < PER; ++i)
      if (ok[i])
        arch::cp_async16(dst + ((threadIdx.x - FIRST) + i * THREADS) * 16, src[i] + static_cast<long long>(row0) * stride,
                         pol);
  }
};

// The lane's 4*B bytes of one packed block: 16-byte chunks for each 4 bits of B, then 8 and 4 bytes for the
// 2- and 1-bit planes; each chunk is 32 lanes side by side, so every read is conflict-free.
template <int B>
HM_DEVICE void load_block_words(u32 (&w)[B], u32 block, int lane) {
  int off = 0;
#pragma unroll
  for (int q = 0; q < B / 4; ++q) {
    const uint4 v = arch::lds128(block + off + lane * 16);
    w[4 * q + 0] = v.x;
    w[4 * q + 1] = v.y;
    w[4 * q + 2] = v.z;
    w[4 * q + 3] = v.w;
    off += 512;
  }
  if constexpr ((B & 2) != 0) {
    const uint2 v = arch::lds64(block + off + lane * 8);
    w[(B / 4) * 4 + 0] = v.x;
    w[(B / 4) * 4 + 1] = v.y;
    off += 256;
  }
  if constexpr ((B & 1) != 0) w[B - 1] = arch::lds32(block + off + lane * 4);
}

// Fragment f (pairs 4f..4f+3, the m16 rows 16f..16f+15 of the block) of the lane's codes, placed where pairs
// 0..3 sit, so that every dequant path reading pairs 0..3 reads fragment f: per plane, the one word (two for
// 8-bit codes) that holds those pairs, shifted down to their slots. The wide wgmma form's warps read only
// their own fragment: a quarter of the block's words.
template <int B>
HM_DEVICE void load_fragment_words(u32 (&w)[B], u32 block, int lane, int f) {
#pragma unroll
  for (int i = 0; i < B; ++i) w[i] = 0;
  if constexpr (B == 8) {  // one 8-bit plane: pairs 4f..4f+3 are words 2f, 2f+1 (chunk f/2, bytes 8(f%2)..)
    const uint2 v = arch::lds64(block + (f >> 1) * 512 + lane * 16 + (f & 1) * 8);
    w[0] = v.x;
    w[1] = v.y;
  } else {
    int off = 0;
    if constexpr (B >= 4) {  // the 4-bit plane: word f
      w[0] = arch::lds32(block + lane * 16 + 4 * f);
      off = 512;
    }
    if constexpr ((B & 2) != 0) {  // the 2-bit plane: word f/2, pairs at bits 8(f%2)..
      w[(B / 4) * 4] = arch::lds32(block + off + lane * 8 + 4 * (f >> 1)) >> (8 * (f & 1));
      off += 256;
    }
    if constexpr ((B & 1) != 0) w[B - 1] = arch::lds32(block + off + lane * 4) >> (4 * f);  // 1-bit plane
  }
}

}  // namespace memory
}  // namespace humming
