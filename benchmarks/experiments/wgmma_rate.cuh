// The wgmma rate of this device for the register-A form the WnA16 kernels issue (m64nNk16, bf16, f32 accumulators):
// each warpgroup runs ITERS stages of four k16 steps; a step issues G wgmmas (G accumulator sets) as one commit
// group and waits until at most P groups are pending, as gemm_dense_wgmma.cuh's four-fragment body does. With
// DEQ = 1 each wgmma's A operand is dequantised first from words read out of shared memory with the s4 bf16
// kernel's instructions (shift, mask | magic, fma2 for the zero, mul2 for the group scale), so the loop is the
// kernel's k-loop without its global loads; DEQ = 0 keeps A in fixed registers (the tensor pipe alone).
// wgmma_rate.py divides the MACs by the longest warpgroup's clock64 span (per SM: one CTA an SM).
#pragma once
#include <humming/arch/convert.cuh>
#include <humming/arch/memory.cuh>
#include <humming/arch/wgmma.cuh>

namespace wgrate {
using namespace humming;

template <int P>
__device__ __forceinline__ u32 s4_pair(const u32 (&w)[4], u32 mask, u32 magic, u32 negz, u32 scale) {
  const u32 x = ((w[P / 4] >> (4 * (P % 4))) & mask) | magic;
  return arch::mul2(bf16_t{}, arch::fma2(bf16_t{}, x, arch::one2(bf16_t{}), negz), scale);
}

template <int Q, int G>
__device__ __forceinline__ void dequant(const u32 (&w)[4], u32 (&a)[G][4], u32 mask, u32 magic, u32 negz, u32 scale) {
  if constexpr (Q < 4 * G) {
    // pairs 4f .. 4f + 3 of the 16 a lane holds make fragment f's a0..a3 (the kernel's b[2f][0], b[2f+1][0], ...)
    a[Q / 4][Q % 4] = s4_pair<Q>(w, mask, magic, negz, scale);
    dequant<Q + 1, G>(w, a, mask, magic, negz, scale);
  }
}

// W: warpgroups a CTA (the launch's blockDim is 128 W). out[0]: a sink; out[2..3]: the longest warpgroup span in cycles (atomicMax, int64). Shared memory: a 256 x 64 bf16
// B tile (32 KB, 128-byte swizzle; only its first N rows are read) and 32 KB of packed words.
template <int N, int G, int P, int DEQ, int W>
__global__ void __launch_bounds__(128 * W, 1) wgmma_rate(int iters, unsigned* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  const u32 raw = arch::smem_u32(smem_raw);
  char* smem = smem_raw + ((1024 - (raw & 1023)) & 1023);
  const int tid = threadIdx.x, lane = tid & 31;
  for (int i = tid; i < 16384; i += blockDim.x)  // 64 KB: small bf16 values (0x3c00 + i: ~0.0078..) and words
    reinterpret_cast<u32*>(smem)[i] = i < 8192 ? (0x3c003c00u | ((i & 63) * 0x00010001u)) : 0x9e5b7a31u * i;
  __syncthreads();
  arch::fence_proxy_async_smem();
  const u32 sB = arch::smem_u32(smem), sW = sB + 32768;
  // masks the compiler cannot fold (iters > 0), as the kernel's pinned masks
  const u32 z = static_cast<u32>(iters) >> 31;
  const u32 mask = 0x000F000Fu | z, magic = 0x43004300u | z, negz = 0xC308C308u | z, scale = 0x3F803F80u | z;
  u32 a[G][4];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int r = 0; r < 4; ++r) a[g][r] = 0x3c003c00u + lane + 7 * g + r;
  float d[G][N / 2];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int e = 0; e < N / 2; ++e) d[g][e] = 0.0f;
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if constexpr (DEQ) {
        const uint4 v = arch::lds128(sW + (((i * 4 + ks) * 16 + (tid >> 5)) & 63) * 512 + lane * 16);
        const u32 w[4] = {v.x, v.y, v.z, v.w};
        dequant<0, G>(w, a, mask, magic, negz, scale);
      }
      const u64 desc = arch::wgmma_desc_sw128(sB + ks * 32);
      arch::wgmma_fence();
#pragma unroll
      for (int g = 0; g < G; ++g) arch::wgmma_rs<N>(bf16_t{}, d[g], a[g], desc);
      arch::wgmma_commit();
      arch::wgmma_wait<P>();
    }
  }
  arch::wgmma_wait<0>();
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int e = 0; e < N / 2; ++e) s += d[g][e];
  if (s == 1234.5f) out[0] = 1u;
  if ((tid & 127) == 0) atomicMax(reinterpret_cast<unsigned long long*>(out + 2), static_cast<unsigned long long>(t1 - t0));
}

}  // namespace wgrate
