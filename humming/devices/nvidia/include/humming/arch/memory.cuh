// humming/arch/memory.cuh -- NVIDIA arch layer: asynchronous global->shared copies, ldmatrix / stmatrix, L2 cache
// policies.
//
// cp.async (PTX ISA 9.7.9.25, sm_80+) with an L2 cache-policy operand made by createpolicy (9.7.9.18, sm_80+).
// sm_75 has neither: the copy becomes a synchronous 16-byte load and store, and the group operations do
// nothing, so the same multi-stage pipeline code runs (without overlap) on Turing.
#pragma once
#include <humming/arch/types.cuh>

namespace humming {
namespace arch {

HM_DEVICE u32 smem_u32(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }

// An L2 policy that evicts these lines first: for weights, which each CTA streams exactly once.
HM_DEVICE u64 policy_evict_first() {
  u64 p = 0;
#if HM_ARCH >= 800
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
#endif
  return p;
}

// An L2 policy that keeps these lines: for activations, which every CTA of a column of tiles re-reads.
HM_DEVICE u64 policy_evict_last() {
  u64 p = 0;
#if HM_ARCH >= 800
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
#endif
  return p;
}

// 16 bytes global -> shared, with an L2 cache policy. Tails are not zero-filled through cp.async's src-size
// operand: the first H200 run (NVRTC 13.0, 2026-12-02) hit "illegal instruction" in the only kernels that
// executed that zero-fill form together with a cache policy; tails are plain shared stores of zeros instead.
HM_DEVICE void cp_async16(u32 dst, const void* src, u64 policy) {
#if HM_ARCH >= 800
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n"
               :: "r"(dst), "l"(src), "l"(policy) : "memory");
#else
  const uint4 v = *reinterpret_cast<const uint4*>(src);
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" :: "r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
#endif
}

// 16 bytes global -> shared with the default L2 policy (activations: small and re-read by every CTA).
HM_DEVICE void cp_async16(u32 dst, const void* src) {
#if HM_ARCH >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
#else
  const uint4 v = *reinterpret_cast<const uint4*>(src);
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" :: "r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
#endif
}

// 16 bytes global -> shared of which the first `bytes` (16 or 0) are read and the rest zero-filled (cp.async's
// src-size operand): a chunk past K that an mbarrier tracking cp.async completions covers too. With bytes = 0
// nothing is read, but src must still be a valid address (callers pass one inside the tensor).
HM_DEVICE void cp_async16_zfill(u32 dst, const void* src, u32 bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}

HM_DEVICE void store_zero16(u32 dst) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};\n" :: "r"(dst), "r"(0u) : "memory");
}

HM_DEVICE void cp_async_commit() {
#if HM_ARCH >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N>
HM_DEVICE void cp_async_wait() {
#if HM_ARCH >= 800
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
#endif
}

// Four 8x8 b16 matrices from shared memory; lane i gives the row address of matrix i/8, row i%8 (PTX 9.7.9.24).
HM_DEVICE void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// Four 8x8 b16 matrices to shared memory, each transposed (PTX stmatrix, ISA 7.8, sm_90+): lane 4r + w holds
// word w (elements 2w, 2w + 1) of row r of matrix i in r[i], as an mma fragment does, and lane 8i + j gives the
// 16-byte address that receives column j of matrix i. A template so that targets without the instruction compile
// this header, and refuse only a kernel that calls it.
template <int kArch = HM_ARCH>
HM_DEVICE void stmatrix_x4_trans(u32 addr, const u32 (&r)[4]) {
  static_assert(kArch >= 900, "stmatrix needs sm_90");
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};\n"
               ::"r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

// The same for two matrices (lanes 0-15 give the addresses).
template <int kArch = HM_ARCH>
HM_DEVICE void stmatrix_x2_trans(u32 addr, const u32 (&r)[2]) {
  static_assert(kArch >= 900, "stmatrix needs sm_90");
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1,%2};\n" ::"r"(addr), "r"(r[0]), "r"(r[1])
               : "memory");
}

HM_DEVICE u16 lds16(u32 addr) {
  u16 v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
  return v;
}

HM_DEVICE uint4 lds128(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

HM_DEVICE uint2 lds64(u32 addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}

HM_DEVICE u32 lds32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// A relaxed GPU-scope 16-byte load (it bypasses L1 and is not merged with an earlier one): a word another CTA may
// be writing during this launch (the split-tile partials of epilogue/finish.cuh).
HM_DEVICE float4 ld_relaxed_f4(const float4* p) {
  float4 v;
  asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
  return v;
}

// Reads that bypass L1, for data other CTAs wrote during this launch (split-K partial sums).
HM_DEVICE float4 ldcg_f4(const float4* p) { return __ldcg(p); }

// Add to a counter that CTAs meet at (Stream-K's tile counters), returning the old value, with release and
// acquire semantics at GPU scope: the writes this thread's CTA made before a barrier that precedes the add are
// visible to whoever later reads the count, and those released by earlier adds are visible to this CTA after a
// barrier that follows it. One thread's fence replaces every thread's __threadfence (a sequentially consistent
// fence), which the tile fix-up at the end of a launch waits on.
HM_DEVICE int atomic_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// Wait until a counter other CTAs add to (atomic_add_acq_rel_gpu) reaches `target`, with acquire semantics at GPU
// scope (what those adds released is visible to this CTA after a barrier that follows). Only for CTAs that are
// resident together (a cooperative launch): the adds it waits for come from CTAs that never wait themselves first.
HM_DEVICE void wait_count_acquire_gpu(const int* p, int target) {
  int v;
  while (true) {
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    if (v >= target) return;
    __nanosleep(64);
  }
}

}  // namespace arch
}  // namespace humming
