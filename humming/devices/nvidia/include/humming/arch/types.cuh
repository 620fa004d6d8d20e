// humming/arch/types.cuh -- NVIDIA arch layer: the scalar types every kernel block uses, and a type selector.
//
// NVRTC has no <cstdint> without extra headers, and humming kernels include no CUDA toolkit headers
// (no cuda_fp16.h): 16-bit floats travel as raw bits in 32-bit registers, two per register.
#pragma once

// The architecture whose code paths the arch layer and the kernels take, numbered as __CUDA_ARCH__ (750, 800, 900):
// the compile target's own unless the unit defines it first. A test build sets an older one to run that target's
// paths (sm_75's m16n8k8 MMAs and synchronous copies, the software e4m3 conversion before sm_89, no programmatic
// launch before sm_90) on a newer GPU (humming.devices.nvidia.emulation); dense kernels export it as code_paths.
// Newer paths than the target's own may use instructions the target lacks, so they are refused.
#ifndef HM_ARCH
#define HM_ARCH __CUDA_ARCH__
#elif HM_ARCH > __CUDA_ARCH__
#error "HM_ARCH names a newer architecture than the compile target: its code paths may use instructions the target lacks"
#endif

namespace humming {

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;
typedef int s32;

// Activation / MMA operand tags. The kernel is written once for both; the arch layer picks the instruction.
struct f16_t {};
struct bf16_t {};

#define HM_DEVICE __device__ __forceinline__

template <class T>
struct ActTraits;
template <>
struct ActTraits<f16_t> {
  static constexpr int mantissa = 10;  // explicit mantissa bits
  static constexpr int bias = 15;
};
template <>
struct ActTraits<bf16_t> {
  static constexpr int mantissa = 7;
  static constexpr int bias = 127;
};

// std::conditional (NVRTC has no <type_traits> without the toolkit headers).
template <bool C, class T, class F> struct Select { using type = T; };
template <class T, class F> struct Select<false, T, F> { using type = F; };

}  // namespace humming
