// How fast can an SM kernel only read? Three ways of streaming one buffer, each CTA a contiguous chunk, the
// data folded by XOR so nothing is optimised away (one word is written if the fold hits a magic value).
// benchmarks/experiments/read_ceiling.py times them the way bench_wna16 times the GEMMs (graph replay, L2
// flushed, median), which gives the ceiling a weight-streaming kernel of that size can reach on this device.
#pragma once
// Every reader records its run span in out[2..5] (the first warp's start, the last warp's finish: arch/timer.cuh),
// and each CTA its own start, finish and SM after them (read_ceiling.py's CTAS).
#define HM_TIMESTAMPS 2
#define HM_TIMESTAMP_CTAS 1100
#include <humming/arch/timer.cuh>

namespace ceiling {

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

__device__ __forceinline__ void publish(unsigned acc, unsigned* out) {
  if (acc == 0x9e3779b9u) out[0] = acc;  // practically never: keeps the loads alive
}

__device__ __forceinline__ unsigned long long evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// The consumer side of a cp.async ring of S stages of stage16 uint4 (issue(s) copies stage s, if any, and commits
// one group): S - 1 stages in flight, one CTA barrier a stage, a neighbour's word read from each, as a consumer
// of the whole stage would.
template <int S, class Issue>
__device__ __forceinline__ unsigned run_ring(const uint4* ring, int stage16, long long stages, Issue issue) {
  for (int s = 0; s < S - 1; ++s) issue(s);
  unsigned acc = 0;
  for (long long s = 0; s < stages; ++s) {
    asm volatile("cp.async.wait_group %0;" ::"n"(S - 2));
    __syncthreads();
    acc ^= fold(ring[(int)(s % S) * stage16 + (threadIdx.x ^ 32)]);
    issue(s + S - 1);
  }
  return acc;
}

// Plain loads: U independent 16-byte loads per thread in flight, L1 bypassed.
template <int U>
__global__ void read_ldg(const uint4* __restrict__ src, long long chunk16, unsigned* out) {
  const humming::arch::KernelSpan span(reinterpret_cast<int*>(out));
  const uint4* p = src + blockIdx.x * chunk16;
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < chunk16; i += (long long)blockDim.x * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      long long j = i + (long long)u * blockDim.x;
      if (j < chunk16) {
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + j));
      } else {
        v[u] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= fold(v[u]);
  }
  publish(acc, out);
}

// cp.async (16 bytes a thread, evict-first when HINT) into a ring of S stages of U loads a thread, a CTA-wide
// barrier a stage: the structure of gemm_dense.cuh's loaders without the arithmetic.
template <int S, int U, bool HINT>
__global__ void read_cp_async(const uint4* __restrict__ src, long long chunk16, unsigned* out) {
  const humming::arch::KernelSpan span(reinterpret_cast<int*>(out));
  extern __shared__ uint4 ring[];
  const uint4* p = src + blockIdx.x * chunk16;
  const int stage16 = U * blockDim.x;
  const long long stages = chunk16 / stage16;
  const unsigned long long policy = evict_first_policy();
  auto issue = [&](long long s) {
    if (s < stages) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int slot = (int)(s % S) * stage16 + u * blockDim.x + threadIdx.x;
        unsigned dst = (unsigned)__cvta_generic_to_shared(ring + slot);
        const uint4* g = p + s * stage16 + u * blockDim.x + threadIdx.x;
        if (HINT) {
          asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(g), "l"(policy));
        } else {
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(g));
        }
      }
    }
    asm volatile("cp.async.commit_group;");
  };
  publish(run_ring<S>(ring, stage16, stages, issue), out);
}

// The packed weights' order: gridDim.x column tiles side by side in rows of RUN bytes a tile, so that CTA c reads
// RUN bytes of every row, rows gridDim.x * RUN bytes apart (the decode kernel's WeightLoader: 16 k16 rows of
// two 512-byte blocks a stage); the same ring as read_cp_async, S stages of 16 rows. SKEW > 0: CTA c starts at
// stage (c * SKEW) % stages and wraps around, so that the CTAs no longer read the same rows at the same time
// (does the decode kernel's speed depend on its CTAs staying in step?).
template <int S, int RUN, int SKEW = 0>
__global__ void read_rows(const uint4* __restrict__ src, long long rows, unsigned* out) {
  const humming::arch::KernelSpan span(reinterpret_cast<int*>(out));
  extern __shared__ uint4 ring[];
  constexpr int kRowChunks = RUN / 16;
  const int per = 16 * kRowChunks / blockDim.x;  // chunks a thread a stage
  const long long row_stride = (long long)gridDim.x * kRowChunks;  // in uint4
  const uint4* p = src + blockIdx.x * kRowChunks + (threadIdx.x / kRowChunks) * row_stride + threadIdx.x % kRowChunks;
  const long long step = (long long)(blockDim.x / kRowChunks) * row_stride;
  const long long stages = rows / 16;
  const unsigned long long policy = evict_first_policy();
  const long long first = SKEW > 0 ? (static_cast<long long>(blockIdx.x) * SKEW) % stages : 0;
  auto issue = [&](long long s) {
    if (s < stages) {
      const long long r = s + first < stages ? s + first : s + first - stages;
      const uint4* g = p + r * 16 * row_stride;
      for (int u = 0; u < per; ++u) {
        unsigned dst = (unsigned)__cvta_generic_to_shared(ring + (int)(s % S) * 16 * kRowChunks + u * blockDim.x + threadIdx.x);
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(g + u * step), "l"(policy));
      }
    }
    asm volatile("cp.async.commit_group;");
  };
  publish(run_ring<S>(ring, 16 * kRowChunks, stages, issue), out);
}

// The same rows of TILES 1 KB-wide columns (the decode kernel's 224 tiles of 128 columns) under a Stream-K
// schedule: gridDim.x CTAs (two an SM) share the tiles x stages iterations in equal contiguous ranges, as the
// decode kernel's Stream-K grid does. Q > 1 orders the iterations part-major (K split in Q parts: every tile's
// first part, then every tile's second ...), so that the CTAs streaming at once stay within one part of K;
// FENCE adds a __threadfence() where a CTA's range moves to another tile's segment, as its partial-tile
// epilogue does. Why does the decode kernel's Stream-K build read 13% slower than data-parallel (RESULTS.md
// 2026-12-03 15:25)?
template <int S, int RUN, int Q, bool FENCE>
__global__ void read_sk(const uint4* __restrict__ src, long long rows, int tiles, unsigned* out) {
  const humming::arch::KernelSpan span(reinterpret_cast<int*>(out));
  extern __shared__ uint4 ring[];
  constexpr int kRowChunks = RUN / 16;
  const int per = 16 * kRowChunks / blockDim.x;
  const long long row_stride = static_cast<long long>(tiles) * kRowChunks;  // in uint4
  const long long k_iters = rows / 16, kq = k_iters / Q;
  const long long total = static_cast<long long>(tiles) * k_iters;
  const long long begin = blockIdx.x * total / gridDim.x, end = (blockIdx.x + 1) * total / gridDim.x;
  const uint4* p = src + (threadIdx.x / kRowChunks) * row_stride + threadIdx.x % kRowChunks;
  const long long step = static_cast<long long>(blockDim.x / kRowChunks) * row_stride;
  const unsigned long long policy = evict_first_policy();
  auto issue = [&](long long s) {
    const long long it = begin + s;
    if (it < end) {
      const long long part = it / (tiles * kq), rem = it - part * tiles * kq;
      const long long tile = rem / kq, stage = part * kq + rem % kq;
      if (FENCE && s > 0 && rem % kq == 0) __threadfence();
      const uint4* g = p + tile * kRowChunks + stage * 16 * row_stride;
      for (int u = 0; u < per; ++u) {
        unsigned dst = (unsigned)__cvta_generic_to_shared(ring + (int)(s % S) * 16 * kRowChunks + u * blockDim.x + threadIdx.x);
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(g + u * step), "l"(policy));
      }
    }
    asm volatile("cp.async.commit_group;");
  };
  publish(run_ring<S>(ring, 16 * kRowChunks, end - begin, issue), out);
}

// One thread copies each stage in bulk (cp.async.bulk, completing on the stage's mbarrier); the CTA waits on it,
// reads, syncs, and the thread refills the slot: the TMA-style pipeline with BYTES a stage.
template <int S, int BYTES>
__global__ void read_bulk(const uint4* __restrict__ src, long long chunk16, unsigned* out) {
  const humming::arch::KernelSpan span(reinterpret_cast<int*>(out));
  extern __shared__ uint4 ring[];
  __shared__ alignas(8) unsigned long long full[S];
  const char* p = reinterpret_cast<const char*>(src + blockIdx.x * chunk16);
  const long long stages = chunk16 * 16 / BYTES;
  const unsigned long long policy = evict_first_policy();
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s)
      asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"((unsigned)__cvta_generic_to_shared(full + s)));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  auto issue = [&](long long s) {
    if (threadIdx.x == 0 && s < stages) {
      unsigned bar = (unsigned)__cvta_generic_to_shared(full + s % S);
      unsigned dst = (unsigned)__cvta_generic_to_shared(reinterpret_cast<char*>(ring) + (s % S) * BYTES);
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar), "n"(BYTES));
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                   ::"r"(dst), "l"(p + s * BYTES), "n"(BYTES), "r"(bar), "l"(policy) : "memory");
    }
  };
  for (int s = 0; s < S; ++s) issue(s);
  unsigned acc = 0;
  for (long long s = 0; s < stages; ++s) {
    unsigned bar = (unsigned)__cvta_generic_to_shared(full + s % S);
    unsigned parity = (unsigned)((s / S) & 1);
    asm volatile("{\n .reg .pred done;\n wait: mbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
                 " @!done bra wait;\n}" ::"r"(bar), "r"(parity) : "memory");
    acc ^= fold(ring[(s % S) * (BYTES / 16) + threadIdx.x % (BYTES / 16)]);
    __syncthreads();
    issue(s + S);
  }
  publish(acc, out);
}

}  // namespace ceiling
