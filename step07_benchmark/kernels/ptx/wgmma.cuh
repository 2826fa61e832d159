// The Hopper instructions v6 (sm90/forward.cuh) adds to ptx/mma.cuh, each wrapped once:
//   wgmma.mma_async  a warpgroup (4 warps, 128 threads) multiplies a 64-row tile by an N-column
//                    tile, 16 deep, reading its operands straight from shared memory (described
//                    by a 64-bit descriptor) or A from registers; it runs in the background
//   wgmma.fence / commit_group / wait_group   order it with the registers and wait for it
//   fence.proxy.async  makes what ordinary stores (and cp.async) put in shared memory visible to
//                      wgmma, which reads it through the "async proxy"
// They exist only on sm_90a: the file that includes this one is compiled for that target alone.
// PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions".
#pragma once

#include <cstdint>

#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

// A shared-memory matrix descriptor: where a wgmma operand lies and how it is swizzled. Fields:
//   bits  0-13  start address / 16
//   bits 16-29  leading byte offset / 16 (what it steps over depends on the swizzle, below)
//   bits 32-45  stride byte offset / 16: from one 8-row group to the next
//   bits 62-63  the swizzle: 1 = 128 bytes, 3 = 32 bytes
enum class Swizzle : std::uint64_t { bytes128 = 1, bytes32 = 3 };
template <Swizzle S>
__device__ __forceinline__ std::uint64_t matrix_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                           std::uint32_t stride_bytes) {
  return static_cast<std::uint64_t>((address & 0x3FFFF) >> 4) |
         static_cast<std::uint64_t>((leading_bytes >> 4) & 0x3FFF) << 16 |
         static_cast<std::uint64_t>((stride_bytes >> 4) & 0x3FFF) << 32 | static_cast<std::uint64_t>(S) << 62;
}
// The 128-byte swizzle, the layout every operand of v6 uses: rows of 64 bf16 (128 bytes), 8 rows
// to a 1024-byte atom (1024-byte aligned), and inside an atom 16-byte chunk c of row r stored at
// chunk c ^ (r % 8) (the forward's swizzle). An operand whose rows run along K (Q, K) ignores the
// leading byte offset; for one whose rows run along N (V read as keys x D) it is the distance from
// one 64-column block of N to the next. The stride byte offset is 1024 when the atoms are packed.
__device__ __forceinline__ std::uint64_t sw128_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                          std::uint32_t stride_bytes) {
  return matrix_descriptor<Swizzle::bytes128>(address, leading_bytes, stride_bytes);
}
// The 32-byte swizzle: rows of 16 bf16 (32 bytes), 8 rows to a 256-byte atom, and inside an atom
// 16-byte chunk c of row r stored at chunk c ^ ((r / 4) % 2). For an operand whose rows run along
// N (or M), the leading byte offset is the distance from one 16-wide slab of N to the one after it,
// and the stride byte offset the distance from one 8-row slab of K to the one after it. The
// backward's dS^T at 80 queries a tile is laid out so: 80 queries are five 16-wide slabs, not a
// whole number of 128-byte rows.
__device__ __forceinline__ std::uint64_t sw32_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                         std::uint32_t stride_bytes) {
  return matrix_descriptor<Swizzle::bytes32>(address, leading_bytes, stride_bytes);
}
// The same from a generic pointer into shared memory.
__device__ __forceinline__ std::uint64_t sw128_descriptor(const void* smem, std::uint32_t leading_bytes,
                                                          std::uint32_t stride_bytes) {
  return sw128_descriptor(smem_address(smem), leading_bytes, stride_bytes);
}

// Generic-proxy writes to shared memory (st.shared, cp.async) before this fence, followed by a
// barrier, are visible to the wgmma reads after it.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Before the first wgmma of a batch: the accumulator and A registers written by ordinary
// instructions (the O rescale, P) are ready.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
// Closes the batch of wgmma issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// wgmma_wait<N>, held until x is computed. ptxas schedules a wait as early as its operands allow,
// and a wait has none: it lifts it above arithmetic that does not need it, so the softmax of the
// overlapped loop, written between the two waits, ends up waiting for the product it was meant
// to run beside. It does not lift a wait above a branch, and this one is taken on x, a value
// that arithmetic computes last (the row sums). What the branch skips, a sleep of 0 ns, does
// nothing, so x's value does not matter.
template <int N>
__device__ __forceinline__ void wgmma_wait_after(float x) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.lt.f32 p, %0, 0f00000000;\n@p nanosleep.u32 0;\n}\n"
      "wgmma.wait_group.sync.aligned %1;\n" ::"f"(x),
      "n"(N)
      : "memory");
}
// Ties an accumulator to this point of the program: the compiler must not read it before a
// preceding wgmma_wait (nor write it after a following wgmma_fence) by moving code across.
template <int TILES>
__device__ __forceinline__ void fence_accumulators(float (&d)[TILES][4]) {
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[t][e])::"memory");
}

// The same for A fragments in registers: an asynchronous wgmma reads them until its wait, so
// they must stay live (and unshared with new values) until then.
template <int TILES>
__device__ __forceinline__ void fence_fragments(std::uint32_t (&a)[TILES][4]) {
#pragma unroll
  for (int t = 0; t < TILES; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[t][e])::"memory");
}

// The accumulator tile of one warp: N / 8 mma tiles of 16 x 8 floats, laid out as mma.sync's
// (g = lane / 4, c = 2 (lane % 4)): d[t][0..1] row g, columns 8t + c, c + 1; d[t][2..3] row g + 8.
// Warp w of the warpgroup holds rows 16 (w % 4) .. 16 (w % 4) + 15 of the 64.
#define FA2_WGMMA_ACC8(d, t)                                                                            \
  "+f"(d[t][0]), "+f"(d[t][1]), "+f"(d[t][2]), "+f"(d[t][3]), "+f"(d[(t) + 1][0]), "+f"(d[(t) + 1][1]), \
      "+f"(d[(t) + 1][2]), "+f"(d[(t) + 1][3])
#define FA2_WGMMA_ACC32(d, t) \
  FA2_WGMMA_ACC8(d, t), FA2_WGMMA_ACC8(d, (t) + 2), FA2_WGMMA_ACC8(d, (t) + 4), FA2_WGMMA_ACC8(d, (t) + 6)
#define FA2_WGMMA_REGS32                                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define FA2_WGMMA_REGS40                                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}"
#define FA2_WGMMA_REGS64                                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define FA2_WGMMA_REGS88                                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
  "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}"

// d (64 x N) = A B (+ d when accumulate), 16 deep, bf16 (or fp16 with FLOAT16) in, fp32 out, A
// (64 x 16) and B (16 x N) in shared memory. K-major by default (the 16 k-values of a row
// contiguous): S = Q K^T. With MN_MAJOR both transpose flags are set: A stored as 16 rows of its
// 64 M values, B as 16 rows of its N values, as the backward's dQ = dS K_j reads dS^T (keys x
// queries) and K_j (keys x D) (sm90/backward_products.cuh).
// The instruction names its input type ("bf16" or "f16"), so each is written once per type.
#define FA2_WGMMA_SS_64(TYPE)                                                          \
  asm volatile(                                                                        \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " FA2_WGMMA_REGS32 \
      ", %32, %33, p, 1, 1, %35, %35;\n}\n"                                            \
      : FA2_WGMMA_ACC32(d, 0)                                                          \
      : "l"(a), "l"(b), "r"(acc), "n"(kTranspose))
#define FA2_WGMMA_SS_80(TYPE)                                                          \
  asm volatile(                                                                        \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"                                     \
      "wgmma.mma_async.sync.aligned.m64n80k16.f32." TYPE "." TYPE " " FA2_WGMMA_REGS40 \
      ", %40, %41, p, 1, 1, %43, %43;\n}\n"                                            \
      : FA2_WGMMA_ACC32(d, 0), FA2_WGMMA_ACC8(d, 8)                                    \
      : "l"(a), "l"(b), "r"(acc), "n"(kTranspose))
#define FA2_WGMMA_SS_128(TYPE)                                                          \
  asm volatile(                                                                         \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                      \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " FA2_WGMMA_REGS64 \
      ", %64, %65, p, 1, 1, %67, %67;\n}\n"                                             \
      : FA2_WGMMA_ACC32(d, 0), FA2_WGMMA_ACC32(d, 8)                                    \
      : "l"(a), "l"(b), "r"(acc), "n"(kTranspose))
#define FA2_WGMMA_SS_176(TYPE)                                                                      \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"                                                  \
      "wgmma.mma_async.sync.aligned.m64n176k16.f32." TYPE "." TYPE " " FA2_WGMMA_REGS88             \
      ", %88, %89, p, 1, 1, %91, %91;\n}\n"                                                         \
      : FA2_WGMMA_ACC32(d, 0), FA2_WGMMA_ACC32(d, 8), FA2_WGMMA_ACC8(d, 16), FA2_WGMMA_ACC8(d, 18), \
        FA2_WGMMA_ACC8(d, 20)                                                                       \
      : "l"(a), "l"(b), "r"(acc), "n"(kTranspose))
template <int N, bool FLOAT16, bool MN_MAJOR = false>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 8][4], std::uint64_t a, std::uint64_t b, bool accumulate) {
  static_assert(N == 64 || N == 80 || N == 128 || N == 176, "N of 64, 80, 128 or 176");
  const int acc = accumulate ? 1 : 0;
  constexpr int kTranspose = MN_MAJOR ? 1 : 0;
  if constexpr (N == 64) {
    if constexpr (FLOAT16) {
      FA2_WGMMA_SS_64("f16");
    } else {
      FA2_WGMMA_SS_64("bf16");
    }
  } else if constexpr (N == 80) {
    if constexpr (FLOAT16) {
      FA2_WGMMA_SS_80("f16");
    } else {
      FA2_WGMMA_SS_80("bf16");
    }
  } else if constexpr (N == 128) {
    if constexpr (FLOAT16) {
      FA2_WGMMA_SS_128("f16");
    } else {
      FA2_WGMMA_SS_128("bf16");
    }
  } else {
    if constexpr (FLOAT16) {
      FA2_WGMMA_SS_176("f16");
    } else {
      FA2_WGMMA_SS_176("bf16");
    }
  }
}

// d (64 x N) += A B with A (64 x 16) in registers, each warp its 16 rows in mma.sync's A-fragment
// layout (ptx/mma.cuh), and B (16 x N) in shared memory, MN-major (the N values of a k
// contiguous, the transpose flag set): O += P V with V stored keys x D.
#define FA2_WGMMA_RS_64(TYPE)                                                          \
  asm volatile(                                                                        \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " FA2_WGMMA_REGS32 \
      ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                  \
      : FA2_WGMMA_ACC32(d, 0)                                                          \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
#define FA2_WGMMA_RS_128(TYPE)                                                          \
  asm volatile(                                                                         \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                      \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " FA2_WGMMA_REGS64 \
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                   \
      : FA2_WGMMA_ACC32(d, 0), FA2_WGMMA_ACC32(d, 8)                                    \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
template <int N, bool FLOAT16>
__device__ __forceinline__ void wgmma_rs_tb(float (&d)[N / 8][4], const std::uint32_t (&a)[4], std::uint64_t b) {
  static_assert(N == 64 || N == 128, "N of 64 or 128");
  if constexpr (N == 64) {
    if constexpr (FLOAT16) {
      FA2_WGMMA_RS_64("f16");
    } else {
      FA2_WGMMA_RS_64("bf16");
    }
  } else {
    if constexpr (FLOAT16) {
      FA2_WGMMA_RS_128("f16");
    } else {
      FA2_WGMMA_RS_128("bf16");
    }
  }
}

#undef FA2_WGMMA_SS_64
#undef FA2_WGMMA_SS_80
#undef FA2_WGMMA_SS_128
#undef FA2_WGMMA_SS_176
#undef FA2_WGMMA_RS_64
#undef FA2_WGMMA_RS_128
#undef FA2_WGMMA_ACC8
#undef FA2_WGMMA_ACC32
#undef FA2_WGMMA_REGS32
#undef FA2_WGMMA_REGS40
#undef FA2_WGMMA_REGS64
#undef FA2_WGMMA_REGS88

}  // namespace fa2::flash
