// Annotations that let one function body compile for the host (g++) and the GPU (nvcc).
// Included by every header whose code runs in both places (bf16, tile pointer, kernels).
#pragma once

#if defined(__CUDACC__)
#define FA2_HOST_DEVICE __host__ __device__
#define FA2_FORCE_INLINE __forceinline__
#else
#define FA2_HOST_DEVICE
#define FA2_FORCE_INLINE inline
#endif

// Asks nvcc to unroll the next loop; g++ unrolls small constant-trip loops on its own.
#if defined(__CUDA_ARCH__)
#define FA2_UNROLL _Pragma("unroll")
#else
#define FA2_UNROLL
#endif

// True while nvcc compiles the device half of a translation unit.
#if defined(__CUDA_ARCH__)
#define FA2_DEVICE_PASS 1
#else
#define FA2_DEVICE_PASS 0
#endif
