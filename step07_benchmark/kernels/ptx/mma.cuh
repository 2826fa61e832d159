// The handful of PTX instructions the fast kernel is built from, each wrapped once:
//   cp.async (16- and 4-byte global -> shared copies that run in the background, zero-filling rows
//   past the end), ldmatrix (a warp loads four 8x8 matrices of 16-bit elements from shared memory
//   straight into the mma operand layout, optionally transposed), mma.sync m16n8k16 (bf16 or
//   fp16 in, fp32 accumulate), ex2.approx (2^x on the special-function unit) and a two-float
//   atomic add (the backward's dQ).
// PTX ISA: https://docs.nvidia.com/cuda/parallel-thread-execution/ (warp-level matrix
// instructions; fragment layouts for m16n8k16).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace fa2::flash {

// An element of Q, K, V, O, dO and the gradients: bf16, or fp16 where the configuration's FLOAT16
// says so. The kernels move elements as 16-bit patterns (copies, ldmatrix, TMA); only the
// tensor-core instructions (mma_16816, wgmma) and the conversions from and to float (pack_x2,
// unpack_x2) read them as numbers, and those take FLOAT16 as a template argument.
using elem16 = std::uint16_t;

// A configuration's options (FastOptions, FastBwdOptions, HopperOptions, HopperBwdOptions) for
// fp16 elements: every configuration is compiled for both types, and the launch picks the fp16
// twin (Cfg::Float16) when the arguments' dtype is float16.
template <class Options>
constexpr Options float16_twin(Options o) {
  o.float16 = true;
  return o;
}

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes global -> shared without passing through registers. With valid == false
// nothing is read and the 16 shared bytes are zero-filled (src-size 0).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
// The same for one 4-byte word (a float of L or D_i), through L1.
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Lane l supplies the address of row (l % 8) of matrix (l / 8); each lane receives, for
// matrix i, the two elements at (row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1) in r[i].
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// The same with each 8x8 matrix transposed: lane l receives (rows 2 (l % 4), 2 (l % 4) + 1;
// column l / 4).
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b for one 16x8x16 block. Fragment layouts (g = lane / 4, c = 2 (lane % 4)):
//   a[0] (g, c..c+1)  a[1] (g+8, c..c+1)  a[2] (g, c+8..c+9)  a[3] (g+8, c+8..c+9)   rows x k
//   b0 (k c..c+1, n g)  b1 (k c+8..c+9, n g)
//   d[0], d[1] (g, c..c+1)   d[2], d[3] (g+8, c..c+1)                                rows x n
// FLOAT16: a and b hold fp16 pairs; otherwise bf16 pairs.
template <bool FLOAT16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1) {
  if constexpr (FLOAT16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats -> two fp16 (FLOAT16) or bf16 in one register, rounded to nearest even, `lo` in the
// low half. fp16 overflows to infinity past 65504; the kernels pack probabilities (<= 1), dS, O
// and the gradients, which fp16 callers keep in range as they must for the inputs.
template <bool FLOAT16>
__device__ __forceinline__ std::uint32_t pack_x2(float lo, float hi) {
  std::uint32_t bits;
  if constexpr (FLOAT16) {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&bits, &v, sizeof bits);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &v, sizeof bits);
  }
  return bits;
}

// The inverse: a register of two fp16 (FLOAT16) or bf16 -> two floats, exactly.
template <bool FLOAT16>
__device__ __forceinline__ float2 unpack_x2(std::uint32_t bits) {
  if constexpr (FLOAT16) {
    __half2 v;
    memcpy(&v, &bits, sizeof v);
    return __half22float2(v);
  } else {
    __nv_bfloat162 v;
    memcpy(&v, &bits, sizeof v);
    return __bfloat1622float2(v);
  }
}

// *addr += (a, b) atomically in global memory; addr 8-byte aligned. Hopper adds both floats in one
// vector reduction; older GPUs take two.
__device__ __forceinline__ void atomic_add_f32x2(float* addr, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(addr), make_float2(a, b));
#else
  atomicAdd(addr, a);
  atomicAdd(addr + 1, b);
#endif
}

// 2^x on the special-function unit (flushes denormals; 2^-inf = 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace fa2::flash
