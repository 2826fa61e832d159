// The two Hopper mechanisms v6's warp-specialised configurations (sm90/forward.cuh) load with, each
// wrapped once:
//   mbarrier  a 64-bit counter in shared memory that completes a phase when its expected arrivals
//             and expected bytes have all come in; threads wait for a phase by its parity (0, 1,
//             0, ...), so one barrier serves every round of a ring of stages
//   TMA       cp.async.bulk.tensor: one thread asks the copy engine for a whole box of a tensor
//             (described by a CUtensorMap made on the host), which lands in shared memory already
//             swizzled and signals the bytes to an mbarrier; rows outside the tensor arrive as 0.
//             The same engine stores a box from shared memory back to the tensor
// PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier" and "Data
// Movement: cp.async.bulk.tensor".
#pragma once

#include <cuda.h>  // CUtensorMap (the type only: the driver is reached at run time, product/forward_sm90.cu)

#include <cstdint>

#include "step07_benchmark/kernels/device/packed_schedule.hpp"  // RaggedRows, kRaggedSpan
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
}
// Makes initialised barriers visible to the copy engine (then a __syncthreads, to the threads).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival, and `bytes` more expected from the copy engine before the phase completes.
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}
// (Also by shared address, where a warp has no registers for a generic pointer.)
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  mbarrier_arrive(smem_address(bar));
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (done == 0);
}
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, std::uint32_t parity) {
  mbarrier_wait(smem_address(bar), parity);
}

// Hands registers back to the SM (dec) or takes more (inc), for the whole warpgroup: a producer
// that only issues loads needs few, the computing warpgroups as many as are left. The kernel
// must start under a register cap (__launch_bounds__(threads, 1)), each role one branch.
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// Named barriers (ids 1-15; 0 is __syncthreads') for `threads` threads of the block: sync waits
// until that many have arrived (itself included), arrive counts itself and goes on.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The box of `map` at coordinates (c0, c1, c2) (innermost first) into shared memory at `dst` (a
// shared address, or a generic pointer), its bytes counted on `bar`.
__device__ __forceinline__ void tma_load_3d_at(std::uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                               std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            std::uint64_t* bar) {
  tma_load_3d_at(smem_address(dst), map, c0, c1, c2, bar);
}

// L2 cache policies for the loads below (createpolicy): evict_last keeps their lines in L2 ahead
// of others, evict_first lets them go first. A hint: what is loaded does not change.
__device__ __forceinline__ std::uint64_t l2_policy_evict_last() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ std::uint64_t l2_policy_evict_first() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// tma_load_3d under an L2 cache policy.
__device__ __forceinline__ void tma_load_3d_hinted(void* dst, const CUtensorMap* map, int c0, int c1, int c2,
                                                   std::uint64_t* bar, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3, "
      "%4}], [%5], %6;\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar)), "l"(policy)
      : "memory");
}

// The reverse: the box at `src` in shared memory to `map` at (c0, c1, c2); rows outside the
// tensor are not written. Stores are tracked per thread in bulk groups, not on an mbarrier: the
// issuing thread commits them and waits for them (bulk_wait_read before shared memory is reused,
// bulk_wait before the block exits). Shared-memory writes must be fenced to the async proxy first.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(smem_address(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
// The same with an addition: the box at `src` (shared address) is added element by element to
// the tensor at (c0, c1, c2), atomically in L2 (float32 adds for a float32 map); rows outside the
// tensor are left out. Tracked like the store.
__device__ __forceinline__ void tma_reduce_add_3d(const CUtensorMap* map, std::uint32_t src, int c0, int c1, int c2) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Ragged views (packed sequences of different lengths; device/packed_schedule.hpp says how the five
// coordinates of product/forward_sm90.cu's ragged_tile_map reach a sequence's rows): the box at
// column col, row `row` of sequence `seq` and head `head`; rows past the sequence's end load as
// zeros and are not stored.
__device__ __forceinline__ void tma_load_ragged_at(std::uint32_t dst, const CUtensorMap* map, int col, int row,
                                                   int head, RaggedRows seq, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], "
      "[%7];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(kRaggedSpan - seq.n + row), "r"(seq.start + seq.n),
      "r"(kRaggedSpan), "r"(head), "r"(smem_address(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_ragged(void* dst, const CUtensorMap* map, int col, int row, int head,
                                                RaggedRows seq, std::uint64_t* bar) {
  tma_load_ragged_at(smem_address(dst), map, col, row, head, seq, bar);
}
__device__ __forceinline__ void tma_load_ragged_hinted(void* dst, const CUtensorMap* map, int col, int row, int head,
                                                       RaggedRows seq, std::uint64_t* bar, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3, "
      "%4, %5, %6}], [%7], %8;\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(kRaggedSpan - seq.n + row), "r"(seq.start + seq.n),
      "r"(kRaggedSpan), "r"(head), "r"(smem_address(bar)), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void tma_store_ragged(const CUtensorMap* map, const void* src, int col, int row, int head,
                                                 RaggedRows seq) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(smem_address(src)), "r"(col), "r"(kRaggedSpan - seq.n + row), "r"(seq.start + seq.n),
               "r"(kRaggedSpan), "r"(head)
               : "memory");
}
// tma_reduce_add_3d on a ragged view: rows past the sequence's end are left out.
__device__ __forceinline__ void tma_reduce_add_ragged(const CUtensorMap* map, std::uint32_t src, int col, int row,
                                                      int head, RaggedRows seq) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(map)),
      "r"(src), "r"(col), "r"(kRaggedSpan - seq.n + row), "r"(seq.start + seq.n), "r"(kRaggedSpan), "r"(head)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// The stores committed so far, all but the latest N groups, have read their shared memory (which
// may then be overwritten).
template <int N = 0>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// The stores committed so far, all but the latest N groups, are complete.
template <int N = 0>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace fa2::flash
