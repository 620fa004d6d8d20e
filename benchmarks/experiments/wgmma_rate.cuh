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
#include <humming/arch/bulk.cuh>
#include "wgmma_ss.cuh"

namespace wgrate {
using namespace humming;

// Pair q (0..3) of one packed word: shift, mask | magic, fma2 for the zero, mul2 for the group scale.
__device__ __forceinline__ u32 s4_word_pair(u32 word, int q, u32 mask, u32 magic, u32 negz, u32 scale) {
  const u32 x = ((word >> (4 * q)) & mask) | magic;
  return arch::mul2(bf16_t{}, arch::fma2(bf16_t{}, x, arch::one2(bf16_t{}), negz), scale);
}

// Pair P (0..15) of a lane's four words.
template <int P>
__device__ __forceinline__ u32 s4_pair(const u32 (&w)[4], u32 mask, u32 magic, u32 negz, u32 scale) {
  return s4_word_pair(w[P / 4], P % 4, mask, magic, negz, scale);
}

template <int Q, int G>
__device__ __forceinline__ void dequant(const u32 (&w)[4], u32 (&a)[G][4], u32 mask, u32 magic, u32 negz, u32 scale) {
  if constexpr (Q < 4 * G) {
    // pairs 4f .. 4f + 3 of the 16 a lane holds make fragment f's a0..a3 (the kernel's b[2f][0], b[2f+1][0], ...)
    a[Q / 4][Q % 4] = s4_pair<Q>(w, mask, magic, negz, scale);
    dequant<Q + 1, G>(w, a, mask, magic, negz, scale);
  }
}

// The same dequantisation folded into one word (DEQ = 2: the ALU work without writing A).
template <int G>
__device__ __forceinline__ u32 dequant_to_sink(const u32 (&w)[4], u32 mask, u32 magic, u32 negz, u32 scale) {
  u32 t[G][4];
  dequant<0, G>(w, t, mask, magic, negz, scale);
  u32 x = 0;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int r = 0; r < 4; ++r) x ^= t[g][r];
  return x;
}

// Fragment g's four pairs (pairs 4g .. 4g + 3) alone.
template <int Q = 0>
__device__ __forceinline__ void dequant_fragment(const u32 (&w)[4], u32 (&a)[4], int g, u32 mask, u32 magic, u32 negz,
                                                 u32 scale) {
  if constexpr (Q < 16) {
    if (Q / 4 == g) a[Q % 4] = s4_pair<Q>(w, mask, magic, negz, scale);
    dequant_fragment<Q + 1>(w, a, g, mask, magic, negz, scale);
  }
}

// DEQ: 0 A fixed; 1 A dequantised before each step's wgmmas (the kernel's order); 2 the same work into a sink, A
// fixed (is it the ALU work or the A registers' rewrite that the tensor pipe waits for?); 3 interleaved, three A
// buffers; 4 as 1 with the next step's words read before the current step's wgmmas; 5 / 6 as 1 with B moving
// between two places each stage (see the loop).
// S > 1: S k16 steps a commit group, each accumulator's wgmmas back to back (see the loop).
// W: warpgroups a CTA (the launch's blockDim is 128 W). out[0]: a sink; out[2..3]: the longest warpgroup span in
// cycles (atomicMax, int64). Shared memory: a 256 x 64 bf16 B tile (32 KB, 128-byte swizzle; only its first N rows
// are read) and 32 KB of packed words.
template <int N, int G, int P, int DEQ, int W, int S = 1>
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
  u32 sink = 0;
  struct Words {
    u32 w[4];
  };
  auto words = [&](int step) {  // one LDS.128 of packed words a lane, as the kernel's load_block_words
    const uint4 v = arch::lds128(sW + ((step * 16 + (tid >> 5)) & 63) * 512 + lane * 16);
    return Words{{v.x, v.y, v.z, v.w}};
  };
  const long long t0 = clock64();
  if constexpr (DEQ == 3) {
    // Interleaved: fragment g of the next step is dequantised right after the current step's wgmma g is issued,
    // into the third of three A buffers (the current step's group reads one, the previous step's may still read
    // another with P = 1).
    u32 buf[3][G][4];
    dequant<0, G>(words(0).w, buf[0], mask, magic, negz, scale);
    for (int i = 0; i < iters / 3; ++i) {
#pragma unroll
      for (int ks = 0; ks < 12; ++ks) {
        const Words next = words(i * 12 + ks + 1);
        const u64 desc = arch::wgmma_desc_sw128(sB + (ks % 4) * 32);
        arch::wgmma_fence();
#pragma unroll
        for (int g = 0; g < G; ++g) {
          arch::wgmma_rs<N>(bf16_t{}, d[g], buf[ks % 3][g], desc);
          // a copy, not a direct write: the variant as measured (08:38; a direct write schedules differently)
          u32 one[4];
          dequant_fragment(next.w, one, g, mask, magic, negz, scale);
#pragma unroll
          for (int r = 0; r < 4; ++r) buf[(ks + 1) % 3][g][r] = one[r];
        }
        arch::wgmma_commit();
        arch::wgmma_wait<P>();
      }
    }
  } else if constexpr (S > 1) {
    // Chained: S k16 steps dequantised first, then each accumulator takes its S wgmmas back to back (g outer, step
    // inner) in one commit group. DEQ 0: A fixed; 1: dequantised; 2: the same work into a sink.
    u32 as[S][G][4];
#pragma unroll
    for (int s = 0; s < S; ++s)
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int r = 0; r < 4; ++r) as[s][g][r] = a[g][r] + s;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
      for (int c = 0; c < 4 / S; ++c) {
        if constexpr (DEQ != 0) {
#pragma unroll
          for (int s = 0; s < S; ++s) {
            const Words ws = words(i * 4 + c * S + s);
            if constexpr (DEQ == 1) dequant<0, G>(ws.w, as[s], mask, magic, negz, scale);
            else sink ^= dequant_to_sink<G>(ws.w, mask, magic, negz, scale);
          }
        }
        arch::wgmma_fence();
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
          for (int s = 0; s < S; ++s)
            arch::wgmma_rs<N>(bf16_t{}, d[g], as[s][g], arch::wgmma_desc_sw128(sB + (c * S + s) * 32));
        arch::wgmma_commit();
        arch::wgmma_wait<P>();
      }
    }
  } else {
    Words next = words(0);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        if constexpr (DEQ == 1 || DEQ == 4 || DEQ >= 5) {
          dequant<0, G>((DEQ == 4 ? next : words(i * 4 + ks)).w, a, mask, magic, negz, scale);
        } else if constexpr (DEQ == 2) {  // the same work into a sink: A stays fixed
          sink ^= dequant_to_sink<G>(words(i * 4 + ks).w, mask, magic, negz, scale);
        }
        if constexpr (DEQ == 4) next = words(i * 4 + ks + 1);  // the next step's words before this step's wgmmas
        // DEQ 5 / 6: the B tile alternates between two places from one stage to the next, as the kernels' rings do;
        // 5 also makes its address a per-thread value to the compiler (lane & z, z = 0 at run time), as the
        // kernels' stage addresses are: each wgmma's descriptor is then moved to uniform registers (R2UR).
        const u32 sBi = DEQ == 5 ? (sB + ((i & 1) << 13)) ^ (lane & z) : DEQ == 6 ? sB + ((i & 1) << 13) : sB;
        const u64 desc = arch::wgmma_desc_sw128(sBi + ks * 32);
        arch::wgmma_fence();
#pragma unroll
        for (int g = 0; g < G; ++g) arch::wgmma_rs<N>(bf16_t{}, d[g], a[g], desc);
        arch::wgmma_commit();
        arch::wgmma_wait<P>();
      }
    }
  }
  arch::wgmma_wait<0>();
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int e = 0; e < N / 2; ++e) s += d[g][e];
  if (s == 1234.5f || sink == 0x12345u) out[0] = 1u;
  if ((tid & 127) == 0) atomicMax(reinterpret_cast<unsigned long long*>(out + 2), static_cast<unsigned long long>(t1 - t0));
}

// ---- both operands in shared memory: the weights dequantised to shared memory (NOTES-wna16 run 18) -------------
// A transposed M = 64 form: the activations are A (64 tokens x 16, shared), the weights B (16 x N columns, shared),
// so each wgmma is m64nNk16 with N up to 256 whatever M is, and the dequantisation writes bf16 pairs to a two-stage
// ring (stage = 64 k x N, K-major, 128-byte swizzle) instead of registers. Per MAC the ALU work is the same as the
// register-A form at M = 64 (each weight feeds 64 tokens either way); what changes is that the tensor pipe issues
// a quarter as many wgmmas, and that every weight is stored to and read back from shared memory once.
// C consumer warpgroups issue the wgmmas (one N-column block each); DEQ: 0 B fixed (the tensor pipe alone); 1 each
// consumer dequantises its own next stage while its previous group runs (a warpgroup barrier per stage); 2 P
// producer warpgroups dequantise (P / C a consumer, each a share of the stage) and hand stages over on named
// barriers (full: producers arrive, consumer waits; empty: the reverse; one producer serves every consumer); 3 as 2
// with the words stored as read (the stores and the handshake without the ALU work). N = 256 needs more than 128
// registers for one wgmma (ptxas refuses it even under setmaxnreg), so such CTAs have at most three warpgroups.
template <int N>
__device__ __forceinline__ u32 ss_stage(u32 ring, int c, int s) {
  return ring + (c * 2 + s) * (N * 128);
}

__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void sts128(u32 addr, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// Stage i's share `part` of `parts` for thread t (0..127): N / 16 words a thread for the whole stage, each word's
// four pairs one 16-byte store at row t + 128 (j / 8), chunk j % 8 of the 128-byte swizzle (conflict-free: eight
// consecutive lanes write eight rows, so eight different chunks). ALU = false stores the words as read.
template <int N, bool ALU>
__device__ __forceinline__ void ss_fill(u32 sW, u32 buf, int i, int t, int part, int parts, u32 mask, u32 magic,
                                        u32 negz, u32 scale) {
  constexpr int kWords = N / 16;
  const int per = kWords / parts;
#pragma unroll
  for (int v = 0; v < kWords / 4; ++v) {
    if (v * 4 < part * per || v * 4 >= (part + 1) * per) continue;
    const uint4 x = arch::lds128(sW + ((i * (kWords / 4) + v) & 15) * 2048 + t * 16);
    const u32 w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int j = v * 4 + k, row = t + 128 * (j / 8);
      const u32 addr = buf + row * 128 + (((j % 8) ^ (row & 7)) * 16);
      if constexpr (ALU) {
        sts128(addr, s4_word_pair(w[k], 0, mask, magic, negz, scale), s4_word_pair(w[k], 1, mask, magic, negz, scale),
               s4_word_pair(w[k], 2, mask, magic, negz, scale), s4_word_pair(w[k], 3, mask, magic, negz, scale));
      } else {
        sts128(addr, w[k], w[(k + 1) & 3], w[(k + 2) & 3], w[(k + 3) & 3]);
      }
    }
  }
}

// out as wgmma_rate's (consumers' spans only). Shared memory: A (64 x 64 bf16, 8 KB), 32 KB of words, then C
// two-stage rings of N x 128 bytes a stage.
template <int N, int DEQ, int C, int P>
__global__ void __launch_bounds__(128 * (C + P), 1) wgmma_ss_rate(int iters, unsigned* out) {
  static_assert((DEQ < 2) == (P == 0) && (P == 0 || P == 1 || P % C == 0), "producers only with DEQ 2 / 3");
  extern __shared__ __align__(1024) char smem_raw[];
  const u32 raw = arch::smem_u32(smem_raw);
  char* smem = smem_raw + ((1024 - (raw & 1023)) & 1023);
  const int tid = threadIdx.x, wg = tid >> 7, t = tid & 127;
  constexpr int kStage = N * 128, kBytes = 8192 + 32768 + C * 2 * kStage;
  for (int i = tid; i < kBytes / 4; i += blockDim.x)  // small bf16 values, random words in the word area
    reinterpret_cast<u32*>(smem)[i] =
        (i >= 2048 && i < 10240) ? 0x9e5b7a31u * i : (0x3c003c00u | ((i & 63) * 0x00010001u));
  __syncthreads();
  arch::fence_proxy_async_smem();
  const u32 sA = arch::smem_u32(smem), sW = sA + 8192, ring = sW + 32768;
  const u32 z = static_cast<u32>(iters) >> 31;
  const u32 mask = 0x000F000Fu | z, magic = 0x43004300u | z, negz = 0xC308C308u | z, scale = 0x3F803F80u | z;
  constexpr int PP = P >= C ? P / C : 1, kHand = 128 * (PP + 1);
  auto full = [](int c, int s) { return 1 + 4 * c + s; };
  auto empty = [](int c, int s) { return 3 + 4 * c + s; };
  if (wg >= C) {  // producer: P >= C: consumer p % C, share p / C of its stage; P = 1: every consumer's stage
    const int p = wg - C;
    for (int i = 0; i < iters; ++i) {
      const int s = i & 1;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (P >= C ? c != p % C : false) continue;
        if (i >= 2) arch::named_barrier_sync(empty(c, s), kHand);
        ss_fill<N, DEQ == 2>(sW, ss_stage<N>(ring, c, s), i, t, P >= C ? p / C : 0, PP, mask, magic, negz, scale);
        arch::fence_proxy_async_smem();
        named_barrier_arrive(full(c, s), kHand);
      }
    }
    return;
  }
  const int c = wg;
  float d[N / 2];
#pragma unroll
  for (int e = 0; e < N / 2; ++e) d[e] = 0.0f;
  if constexpr (DEQ == 1) {  // stage 0 before the loop; the loop fills stage i + 1 while group i runs
    ss_fill<N, true>(sW, ss_stage<N>(ring, c, 0), 0, t, 0, 1, mask, magic, negz, scale);
    arch::fence_proxy_async_smem();
    arch::named_barrier_sync(1 + c, 128);
  }
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    const int s = DEQ == 0 ? 0 : i & 1;
    if constexpr (DEQ >= 2) arch::named_barrier_sync(full(c, s), kHand);
    const u32 b = ss_stage<N>(ring, c, s);
    arch::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      WgmmaSS<N>::run(d, arch::wgmma_desc_sw128(sA + ks * 32), arch::wgmma_desc_sw128(b + ks * 32));
    arch::wgmma_commit();
    if constexpr (DEQ == 1) {
      // stage i + 1 goes to the buffer group i - 1 read: retire it first (group i stays in flight)
      arch::wgmma_wait<1>();
      if (i + 1 < iters) {
        ss_fill<N, true>(sW, ss_stage<N>(ring, c, s ^ 1), i + 1, t, 0, 1, mask, magic, negz, scale);
        arch::fence_proxy_async_smem();
        arch::named_barrier_sync(1 + c, 128);
      }
    } else {
      arch::wgmma_wait<1>();
      // group i - 1 is retired: its stage may be refilled (with the producers' matching waits: stages up to iters - 3)
      if constexpr (DEQ >= 2) {
        if (i >= 1 && i + 1 < iters) named_barrier_arrive(empty(c, s ^ 1), kHand);
      }
    }
  }
  arch::wgmma_wait<0>();
  const long long t1 = clock64();
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < N / 2; ++e) sum += d[e];
  if (sum == 1234.5f) out[0] = 1u;
  if (t == 0) atomicMax(reinterpret_cast<unsigned long long*>(out + 2), static_cast<unsigned long long>(t1 - t0));
}

}  // namespace wgrate
