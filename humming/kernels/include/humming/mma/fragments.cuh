// humming/mma/fragments.cuh -- a warp's accumulators and its A fragments from the swizzled activation tile.
//
// The activation tile is BM rows of BK f16/bf16 (2*BK bytes, BK/8 16-byte chunks a row). Chunk c of row r is
// stored at chunk position c ^ (r % 8), so that the eight rows one ldmatrix 8x8 reads land in eight different
// 16-byte bank groups (row strides are multiples of 128 bytes: without the XOR all eight hit the same banks).
#pragma once
#include <humming/arch/memory.cuh>
#include <humming/arch/types.cuh>

namespace humming {
namespace mma {

template <int FM, int FN>
struct Accumulators {
  float c[FM][FN][8][4];  // [m16 fragment][n64 block][n8 tile][c0..c3 of mma.m16n8k16]

  HM_DEVICE void zero() {
#pragma unroll
    for (int fm = 0; fm < FM; ++fm)
#pragma unroll
      for (int fn = 0; fn < FN; ++fn)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) c[fm][fn][j][e] = 0.0f;
  }
};

// Byte offset of 16-byte chunk `ck` of row `r` in a tile of BK-element rows.
template <int BK>
HM_DEVICE int a_tile_offset(int r, int ck) {
  return r * (BK * 2) + ((ck ^ (r & 7)) << 4);
}

// The m16 x k16 A fragment at rows [row0, row0 + 16), k16 step ks: one ldmatrix.x4.
// Lanes 0-15 address rows 0-15 at k 0..7, lanes 16-31 the same rows at k 8..15, which yields a0..a3 in the
// order mma.m16n8k16 expects (rows g / g+8, k low / high).
template <int BK>
HM_DEVICE void load_a(u32 (&a)[4], u32 tile, int row0, int ks, int lane) {
  const int r = row0 + (lane & 15);
  const int ck = ks * 2 + (lane >> 4);
  arch::ldmatrix_x4(a, tile + a_tile_offset<BK>(r, ck));
}

// One token's group parts as n8 columns (dequant/route.cuh kGroupColumns): part p of PARTS (2, 4 or 8) sits in n8
// column p x 8 / PARTS. The activation loader puts it there (memory/stage.cuh, ActivationLoader::row_of) and
// GroupTerms::apply_columns reads it back: this is the one place that says where.
template <int PARTS>
struct GroupColumns {
  static_assert(PARTS == 2 || PARTS == 4 || PARTS == 8, "2, 4 or 8 parts in n8 columns 0..7");
  static constexpr int kStride = 8 / PARTS;  // n8 columns from one part to the next
  static HM_DEVICE constexpr int column(int part) { return part * kStride; }
  static HM_DEVICE constexpr int part(int column) { return column / kStride; }
};

}  // namespace mma
}  // namespace humming
