// toy_axpy.cuh: the toy kernel that tests the JIT alone: out = alpha * x + y, staged through shared memory.
//
// Each block handles TILE = VEC * BLOCK elements per step of a grid-stride loop. It stages the x and y tiles
// in dynamic shared memory -- with plain loads, or with cp.async and zero fill when ASYNC -- and then each
// thread computes VEC outputs in f32. Staging is pointless for an axpy; it is here so that the smallest
// kernel exercises what the JIT must get right: the dynamic shared memory opt-in (tiles over 48 KiB), an
// instruction that only some targets have (cp.async: PTX ISA 7.0, sm_80 and later), and constants the
// launcher reads back from the cubin (kSmemBytes, kTile).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace humming {
namespace toy {

// f32 arithmetic on every element type; round-to-nearest-even on the way back.
template <typename T> struct Scalar;
template <> struct Scalar<float> {
  static __device__ __forceinline__ float load(float v) { return v; }
  static __device__ __forceinline__ float store(float v) { return v; }
};
template <> struct Scalar<__half> {
  static __device__ __forceinline__ float load(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half store(float v) { return __float2half_rn(v); }
};
template <> struct Scalar<__nv_bfloat16> {
  static __device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <typename T, int VEC, int BLOCK>
struct AxpyTraits {
  static constexpr int kTile = VEC * BLOCK;                 // elements one block handles per step
  static constexpr int kTileBytes = kTile * int(sizeof(T)); // bytes of one staged tile
  static constexpr int kWords = kTileBytes / 4;             // 4-byte words of one tile
  static constexpr int kSmemBytes = 2 * kTileBytes;         // the x tile, then the y tile
  static_assert(kTileBytes % 4 == 0, "tiles are staged as whole 4-byte words");
};

// Copy the first `valid` bytes of a tile (4-byte aligned) into `dst`, zero-filling the rest of its words.
template <int BLOCK, int WORDS, bool ASYNC>
__device__ __forceinline__ void stage(unsigned* dst, const unsigned char* src, long long valid) {
  for (int w = threadIdx.x; w < WORDS; w += BLOCK) {
    const long long left = valid - 4LL * w;
    const int n = left >= 4 ? 4 : (left > 0 ? int(left) : 0);  // in-bounds bytes of this word
    if constexpr (ASYNC) {
      // src-size n < cp-size 4 zero-fills the rest (PTX ISA, cp.async); n == 0 reads nothing, so the
      // address of the tile's first word, which is in bounds, stands in.
      const unsigned char* from = n > 0 ? src + 4 * w : src;
      const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst + w));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(from), "r"(n) : "memory");
    } else if (n == 4) {
      dst[w] = *reinterpret_cast<const unsigned*>(src + 4 * w);
    } else {
      unsigned v = 0;
      for (int b = 0; b < n; ++b) v |= unsigned(src[4 * w + b]) << (8 * b);
      dst[w] = v;
    }
  }
}

template <typename T, int VEC, int BLOCK, bool ASYNC>
__global__ void __launch_bounds__(BLOCK)
axpy(T* __restrict__ out,      // [n] result
     const T* __restrict__ x,  // [n], 4-byte aligned
     const T* __restrict__ y,  // [n], 4-byte aligned
     float alpha,              // the scale of x
     long long n) {            // elements
  using Traits = AxpyTraits<T, VEC, BLOCK>;
  extern __shared__ __align__(16) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  T* ys = reinterpret_cast<T*>(smem + Traits::kTileBytes);
  const long long step = (long long)gridDim.x * Traits::kTile;
  for (long long base = (long long)blockIdx.x * Traits::kTile; base < n; base += step) {
    const long long valid = (n - base) * (long long)sizeof(T);  // bytes of this tile inside the tensors
    stage<BLOCK, Traits::kWords, ASYNC>(reinterpret_cast<unsigned*>(xs),
                                        reinterpret_cast<const unsigned char*>(x + base), valid);
    stage<BLOCK, Traits::kWords, ASYNC>(reinterpret_cast<unsigned*>(ys),
                                        reinterpret_cast<const unsigned char*>(y + base), valid);
    if constexpr (ASYNC) {
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    }
    __syncthreads();
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
      const int i = v * BLOCK + int(threadIdx.x);  // neighbouring threads touch neighbouring elements
      if (base + i < n) out[base + i] = Scalar<T>::store(alpha * Scalar<T>::load(xs[i]) + Scalar<T>::load(ys[i]));
    }
    __syncthreads();  // the next step overwrites the tiles
  }
}

}  // namespace toy
}  // namespace humming
