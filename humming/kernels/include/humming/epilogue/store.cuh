// humming/epilogue/store.cuh -- storing a finished tile: scales, bias, one rounding to the output type.
//
// Each output element goes through out = acc * chscale[n] * gscale * FIX + bias[n] in f32, then one rounding
// to the output type. FIX is the exponent-bias factor of float weights when it was left out of the operands.
// One form per accumulator layout: mma.sync fragments (pairs of columns a lane); the swapped wgmma forms (a column a
// lane) through a shared-memory buffer that turns columns into rows (store_swapped_group_staged), or for wgmma N =
// 16, which no plan takes, paired through a shuffle. epilogue/finish.cuh decides when a tile is stored.
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/arch/memory.cuh>
#include <humming/arch/types.cuh>
#include <humming/mma/swapped.cuh>

// Timing experiments only: 0 stores the wgmma N = 16 form's outputs element by element even where pairs apply.
#ifndef HM_SWAPPED_STORE_PAIRS
#define HM_SWAPPED_STORE_PAIRS 1
#endif

namespace humming {
namespace epilogue {

// `staging`: the wgmma forms' shared-memory store buffer (WgmmaConfig::kRedBytes); the mma.sync form writes its
// pairs directly and takes none.
template <class Cfg, class Acc, class Args>
HM_DEVICE void store_tile(const Args& p, const Acc& acc, char* /*staging*/, int mt, int nt, int wm, int wn, int lane,
                          float fix) {
  using Out = typename Cfg::Out;
  const int g = lane >> 2, t = lane & 3;
  const float gs = (p.gscale != nullptr ? __ldg(p.gscale) : 1.0f) * fix;
  const bool pairs = ((p.ldc | p.n) & 1) == 0;
  const unsigned short* bias = static_cast<const unsigned short*>(p.bias);
  unsigned short* c = static_cast<unsigned short*>(p.c);
#pragma unroll
  for (int fn = 0; fn < Cfg::kFragN; ++fn) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = nt * Cfg::kBN + (wn * Cfg::kFragN + fn) * 64 + 8 * j + 2 * t;
      if (col >= p.n) continue;
      const bool has1 = col + 1 < p.n;
      float s0 = gs, s1 = gs;
      if (p.chscale != nullptr) {
        s0 *= __ldg(p.chscale + col);
        s1 *= __ldg(p.chscale + col + 1);  // chscale is padded to N_pad (even): col + 1 is in bounds
      }
      float b0 = 0.0f, b1 = 0.0f;
      if (bias != nullptr) {
        b0 = arch::to_f32(Out{}, bias[col]);
        if (has1) b1 = arch::to_f32(Out{}, bias[col + 1]);
      }
#pragma unroll
      for (int fm = 0; fm < Cfg::kFragM; ++fm) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = mt * Cfg::kBM + (wm * Cfg::kFragM + fm) * 16 + g + 8 * h;
          if (row >= p.m) continue;
          const float v0 = acc.c[fm][fn][j][2 * h] * s0 + b0;
          const float v1 = acc.c[fm][fn][j][2 * h + 1] * s1 + b1;
          const long long off = static_cast<long long>(row) * p.ldc + col;
          if (pairs) {
            *reinterpret_cast<u32*>(c + off) = arch::pack2(Out{}, v0, v1);
          } else {
            c[off] = arch::pack1(Out{}, v0);
            if (has1) c[off + 1] = arch::pack1(Out{}, v1);
          }
        }
      }
    }
  }
}

// Output column col's factor and addend (chscale x gs, bias) in f32; gs alone and 0 for a column past N.
template <class Cfg, class Args>
HM_DEVICE void column_scale_bias(const Args& p, int col, float gs, float& s, float& b) {
  const unsigned short* bias = static_cast<const unsigned short*>(p.bias);
  const bool in = col < p.n;
  s = in && p.chscale != nullptr ? gs * __ldg(p.chscale + col) : gs;
  b = in && bias != nullptr ? arch::to_f32(typename Cfg::Out{}, bias[col]) : 0.0f;
}

// One output column of the wgmma N = 16 form (the others stage theirs): rows row0 + 8h + e (h < NB, e < 2) take
// d[h][2 half + e] of an accumulator row set d (a wgmma D fragment: column g + 8 half of its 16 rows; col's parity
// is g's). Neighbouring columns sit in lanes g and g ^ 1 (lane ^ 4) with the same rows, so with an even N and row
// stride the two swap one value per row pair and each stores two columns of one row as one 32-bit word: the even
// lane rows row0 + 8h, the odd lane rows row0 + 8h + 1. Every lane of the warp calls this with its own column (the
// shuffles need them all). (The element-by-element form below, kept for odd N or row strides, costs a 64-bit row
// offset and a bounds branch per element.)
template <class Cfg, class Args, int NB>
HM_DEVICE void store_swapped_column(const Args& p, const float (&d)[NB][4], int half, int col, int row0, float gs) {
  using Out = typename Cfg::Out;
  unsigned short* c = static_cast<unsigned short*>(p.c);
  const bool in = col < p.n;
  float s, b;
  column_scale_bias<Cfg>(p, col, gs, s, b);
  // Warp-uniform; with an even N both columns of a pair lie inside or both outside.
  if (HM_SWAPPED_STORE_PAIRS && (!Cfg::kOddN || ((p.ldc | p.n) & 1) == 0)) {
    const int odd = col & 1;
    const int row = row0 + odd;
    u32* out = reinterpret_cast<u32*>(c + (static_cast<long long>(row) * p.ldc + (col - odd)));
    const long long step = 4LL * p.ldc;  // 8 rows, in 32-bit words
#pragma unroll
    for (int h = 0; h < NB; ++h) {
      const float v0 = d[h][2 * half] * s + b, v1 = d[h][2 * half + 1] * s + b;
      const float other = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
      if (in && row + 8 * h < p.m) out[h * step] = odd ? arch::pack2(Out{}, other, v1) : arch::pack2(Out{}, v0, other);
    }
    return;
  }
  // Compiled only where a row may be odd: unrolled over every column and row of a tile, these stores were ~30% of a
  // wgmma kernel's PTX and ~1 s of its compile (NOTES-wna16 run 39).
  if constexpr (Cfg::kOddN || !HM_SWAPPED_STORE_PAIRS) {
    if (!in) return;
#pragma unroll
    for (int h = 0; h < NB; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = row0 + 8 * h + e;
        if (row < p.m) c[static_cast<long long>(row) * p.ldc + col] = arch::pack1(Out{}, d[h][2 * half + e] * s + b);
      }
  }
}

// The shared memory a warp stages PB n8 row blocks of a 16-column group in (store_swapped_group_staged): 32-byte
// rows. The four-fragment form takes 4 (1 KiB a warp: 2 KiB cost u8 with zero points its fifth 43 KiB stage at
// M = 33..128 on sm_90a), the wide form 1 (its TMA tile's six stages leave 2.8 KiB for 8 warps).
template <int PB>
constexpr int kStagedGroupBytes = 8 * PB * 32;

// Warp `warp`'s staging buffer in `staging` (the kernel's kRedBytes after its stages), as a shared address.
template <class Cfg>
HM_DEVICE u32 warp_staging(char* staging, int warp) {
  static_assert(Cfg::kRedBytes >= Cfg::kWarps * kStagedGroupBytes<Cfg::kStagedBlocks>, "a buffer for every warp");
  return arch::smem_u32(staging) + warp * kStagedGroupBytes<Cfg::kStagedBlocks>;
}

// One 16-column group of the swapped accumulators, d[h][e] = column col0 + g + 8 (e / 2), row row0 + 8 h + 2 t +
// (e % 2) (a wgmma D fragment), stored through `buf`, the warp's kStagedGroupBytes<PB> of shared memory (16-byte
// aligned), PB row blocks at a time: stmatrix.trans turns each lane's column pairs into rows of 16 output elements
// (32 bytes a token row), and the lanes then write chunks of whole rows, 16 bytes (PB >= 2) or 8 (PB = 1: 256
// bytes a pass). Against store_swapped_column's pair per shuffle, bounds test and 64-bit address, that is one
// stmatrix and one chunk store a lane per two row blocks (PB >= 2). Rows past M are not written; a group past N,
// or an output whose rows do not align to the chunks, goes element by element from the buffer (any N and row
// stride: no odd-N form is compiled). Every lane of the warp calls this (stmatrix and __syncwarp are warp-wide).
template <class Cfg, int PB, class Args, int NB>
HM_DEVICE void store_swapped_group_staged(const Args& p, const float (&d)[NB][4], int col0, int row0, float gs,
                                          u32 buf, int lane) {
  static_assert((PB == 1 || PB % 2 == 0) && NB % PB == 0, "row blocks a pass: 1, or pairs (stmatrix.x4)");
  constexpr int kChunk = PB == 1 ? 8 : 16;  // bytes a lane writes at once
  constexpr int kRowShift = PB == 1 ? 2 : 1;  // log2 of the chunks a row
  using Out = typename Cfg::Out;
  unsigned short* c = static_cast<unsigned short*>(p.c);
  float s[2], b[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) column_scale_bias<Cfg>(p, col0 + (lane >> 2) + 8 * half, gs, s[half], b[half]);
  // Row block q's two tokens of the lane's column col0 + g + 8 half, scaled, as one 32-bit pair.
  const auto pack = [&](const float(&q)[4], int half) {
    return arch::pack2(Out{}, q[2 * half] * s[half] + b[half], q[2 * half + 1] * s[half] + b[half]);
  };
  const bool chunks = ((p.ldc & (kChunk / 2 - 1)) == 0) &&
                      (reinterpret_cast<unsigned long long>(c) & (kChunk - 1)) == 0 && col0 + 16 <= p.n;
  // Matrix i of an x4 is row block h + i / 2, columns 8 (i % 2) of the group (of an x2: row block h): lane 8i + j
  // addresses its row j (an x2 reads lanes 0-15's).
  const u32 at = buf + ((PB > 1 ? (lane >> 4) * 8 : 0) + (lane & 7)) * 32 + ((lane >> 3) & 1) * 16;
#pragma unroll
  for (int h0 = 0; h0 < NB; h0 += PB) {
    if constexpr (PB == 1) {
      const u32 r[2] = {pack(d[h0], 0), pack(d[h0], 1)};
      arch::stmatrix_x2_trans(at, r);
    } else {
#pragma unroll
      for (int h = h0; h < h0 + PB; h += 2) {
        const u32 r[4] = {pack(d[h], 0), pack(d[h], 1), pack(d[h + 1], 0), pack(d[h + 1], 1)};
        arch::stmatrix_x4_trans(at + (h - h0) * 8 * 32, r);
      }
    }
    __syncwarp();
    const int rows = row0 + 8 * h0;
    if (chunks) {  // chunk k is row k >> kRowShift: the warp writes 32 chunks of consecutive rows at once
#pragma unroll
      for (int i = 0; i < (8 * PB << kRowShift) / 32; ++i) {
        const int k = 32 * i + lane;
        const int row = rows + (k >> kRowShift);
        if (row < p.m) {
          unsigned short* to =
              c + static_cast<long long>(row) * p.ldc + col0 + (k & ((1 << kRowShift) - 1)) * (kChunk / 2);
          if constexpr (kChunk == 16) *reinterpret_cast<uint4*>(to) = arch::lds128(buf + 16 * k);
          else *reinterpret_cast<uint2*>(to) = arch::lds64(buf + 8 * k);
        }
      }
    } else {
#pragma unroll 1
      for (int k = lane; k < 8 * PB * 16; k += 32) {
        const int row = rows + (k >> 4), col = col0 + (k & 15);
        if (row < p.m && col < p.n) c[static_cast<long long>(row) * p.ldc + col] = arch::lds16(buf + 2 * k);
      }
    }
    __syncwarp();  // the reads before the buffer's next writes
  }
}

// Swapped accumulators kept as they are (the wgmma kernel): d[fn][f][h][e] is column 64 (wn FN + fn) + 16 f +
// g + 8 (e / 2) and row 8 h + 2 t + (e % 2) of the warp's 16 FRAG_M rows.
template <class Cfg, class Args, int FN, int NB>
HM_DEVICE void store_tile(const Args& p, const mma::SwapAccumulators<FN, NB>& acc, char* /*staging*/, int mt, int nt,
                          int wm, int wn, int lane, float fix) {
  const int g = lane >> 2, t = lane & 3;
  const float gs = (p.gscale != nullptr ? __ldg(p.gscale) : 1.0f) * fix;
  const int row0 = mt * Cfg::kBM + wm * Cfg::kFragM * 16 + 2 * t;
#pragma unroll
  for (int fn = 0; fn < FN; ++fn)
#pragma unroll
    for (int f = 0; f < 4; ++f)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        store_swapped_column<Cfg>(p, acc.d[fn][f], half, nt * Cfg::kBN + (wn * FN + fn) * 64 + 16 * f + g + 8 * half,
                                  row0, gs);
}

// One wgmma fragment per warp and n64 block (the wide wgmma form): the warp's wm is 4 x (its warpgroup's row
// block) + (its fragment f), wn its warpgroup's column block of FN x 64; rows per warpgroup 8 NB. Each block's
// 16 columns go through the warp's staging buffer (store_swapped_group_staged).
template <class Cfg, class Args, int NB, int FN>
HM_DEVICE void store_tile(const Args& p, const mma::FragAccumulators<NB, FN>& acc, char* staging, int mt, int nt,
                          int wm, int wn, int lane, float fix) {
  const float gs = (p.gscale != nullptr ? __ldg(p.gscale) : 1.0f) * fix;
  const int row0 = mt * Cfg::kBM + (wm >> 2) * NB * 8;
  const u32 buf = warp_staging<Cfg>(staging, wm * Cfg::kWarpN + wn);
#pragma unroll
  for (int fn = 0; fn < FN; ++fn) {
    const int col0 = nt * Cfg::kBN + (wn * FN + fn) * 64 + 16 * (wm & 3);
    store_swapped_group_staged<Cfg, Cfg::kStagedBlocks>(p, acc.d[fn], col0, row0, gs, buf, lane);
  }
}

}  // namespace epilogue
}  // namespace humming
