// How many cycles does one mma.sync take a SM sub-partition on this device? Each warp runs CHAINS independent
// accumulators through ITERS dependent MMAs with register operands (no memory), and records its clock64 span;
// mma_rate.py divides the longest span by the MMAs each sub-partition issued. This bounds the decode kernels,
// whose weights enter the tensor pipe once each whatever M is (M <= 8: one m16n8k16 per 256 weights).
#pragma once

namespace mmarate {

// KIND 0: bf16 m16n8k16 -> f32; 1: f16 m16n8k16 -> f32; 2: f16 m16n8k16 -> f16; 3: s8 m16n8k32 -> s32;
// 4: e4m3 m16n8k32 -> f32 (sm_89+).
template <int KIND>
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (KIND == 0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (KIND == 1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (KIND == 2) {
    unsigned* h = reinterpret_cast<unsigned*>(c);  // two f16x2 accumulator registers in c[0], c[1]
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
                 : "+r"(h[0]), "+r"(h[1])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (KIND == 3) {
    int* s = reinterpret_cast<int*>(c);
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+r"(s[0]), "+r"(s[1]), "+r"(s[2]), "+r"(s[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// out[0]: a sink for the accumulators; out[2..3]: the longest warp span in cycles (atomicMax, int64).
template <int KIND, int CHAINS>
__global__ void mma_rate(int iters, unsigned* out) {
  // Small operand values that differ by lane, so nothing folds and the sums stay finite.
  const unsigned lane = threadIdx.x & 31;
  const unsigned v = KIND == 0 ? 0x3c003c00u + lane : (KIND == 3 || KIND == 4 ? 0x01010101u * (lane & 3) : 0x2c002c00u + lane);
  const unsigned a[4] = {v, v ^ 1u, v ^ 2u, v ^ 3u};
  const unsigned b[2] = {v ^ 4u, v ^ 5u};
  float c[CHAINS][4] = {};
  __syncwarp();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) mma<KIND>(c[k], a, b);
  }
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
  if (s == 1234.5f) out[0] = 1u;
  if (lane == 0) atomicMax(reinterpret_cast<unsigned long long*>(out + 2), static_cast<unsigned long long>(t1 - t0));
}

}  // namespace mmarate
