// The backward's first and last phases, shared by v5's backward (sm80/backward.cuh) and v6b's
// (sm90/backward.cuh): D_i = rowsum(dO_i * O_i) with dQ_accum cleared, dQ converted and scaled,
// and dK and dV summed from a split group's parts.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/ptx/grid_dependency.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

// ---- phase 1: D_i = rowsum(dO_i * O_i), and dQ_accum (and the dq_semaphores) cleared -----------
// Thread t of the grid takes 16-byte chunk t % CHUNKS of query row t / CHUNKS; the CHUNKS lanes
// of a row are neighbours in one warp and add their partial dots with shuffles. EARLY (v6b's pdl):
// the key-tile kernel launched after it may start at once; it waits before it reads D_i or adds to
// dQ_accum (ptx/grid_dependency.cuh).
template <int D, bool FLOAT16, bool EARLY = false>
__global__ void __launch_bounds__(256) fast_bwd_preprocess(const FastBwdParams p) {
  if constexpr (EARLY) allow_dependent_launch();
  constexpr int CHUNKS = D / 8;
  const index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t row = t / CHUNKS;
  const int chunk = static_cast<int>(t % CHUNKS);
  const index_t bh = blockIdx.y;
  const bool valid = row < p.N_QUERIES;
  float dot = 0.0f;
  if (valid) {
    const uint4 o = *reinterpret_cast<const uint4*>(p.O + bh * p.stride_ob + row * p.stride_oq + chunk * 8);
    const uint4 g = *reinterpret_cast<const uint4*>(p.dO + bh * p.stride_dob + row * p.stride_doq + chunk * 8);
    const std::uint32_t o2[4] = {o.x, o.y, o.z, o.w}, g2[4] = {g.x, g.y, g.z, g.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 a = unpack_x2<FLOAT16>(o2[i]), b = unpack_x2<FLOAT16>(g2[i]);
      dot = fmaf(a.x, b.x, fmaf(a.y, b.y, dot));
    }
    auto* acc = reinterpret_cast<float4*>(p.dQ_accum + bh * p.stride_accb + row * p.stride_accq + chunk * 8);
    acc[0] = acc[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (p.deterministic && chunk == 0 && row % 32 == 0) p.dq_semaphores[bh * p.stride_semb + row / 32] = 0;
  }
#pragma unroll
  for (int offset = CHUNKS / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
  if (valid && chunk == 0) p.D_rows[bh * p.stride_Db + row * p.stride_Dq] = dot;
}

// ---- phase 3: dQ = scale * dQ_accum, in bf16 or fp16 (FLOAT16) ---------------------------------
// EARLY (v6b's pdl): launched to start before the key-tile kernel ends, it first waits for it.
template <int D, bool FLOAT16, bool EARLY = false>
__global__ void __launch_bounds__(256) fast_bwd_convert_dq(const FastBwdParams p) {
  if constexpr (EARLY) wait_for_prior_grids();
  constexpr int CHUNKS = D / 8;
  const index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t row = t / CHUNKS;
  const int chunk = static_cast<int>(t % CHUNKS);
  const index_t bh = blockIdx.y;
  if (row >= p.N_QUERIES) return;
  const auto* acc = reinterpret_cast<const float4*>(p.dQ_accum + bh * p.stride_accb + row * p.stride_accq + chunk * 8);
  const float4 a = acc[0], b = acc[1];
  const float s = p.scale;
  uint4 out;
  out.x = pack_x2<FLOAT16>(a.x * s, a.y * s);
  out.y = pack_x2<FLOAT16>(a.z * s, a.w * s);
  out.z = pack_x2<FLOAT16>(b.x * s, b.y * s);
  out.w = pack_x2<FLOAT16>(b.z * s, b.w * s);
  *reinterpret_cast<uint4*>(p.dQ + bh * p.stride_dqb + row * p.stride_dqq + chunk * 8) = out;
}

// ---- phase 3 with a group spread over blocks: dK and dV = the sums of their parts ---------------
// Thread t of the grid takes 16-byte chunk t % CHUNKS of key row t / CHUNKS of K batch element
// blockIdx.y, and adds the group_splits parts in their order: the same bits on every run.
template <int D, bool FLOAT16>
__global__ void __launch_bounds__(256) fast_bwd_sum_group_parts(const FastBwdParams p) {
  constexpr int CHUNKS = D / 8;
  const index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t row = t / CHUNKS;
  const int chunk = static_cast<int>(t % CHUNKS);
  const index_t kv = blockIdx.y;
  if (row >= p.N_KEYS) return;
  float dk[8] = {}, dv[8] = {};
  for (int s = 0; s < p.group_splits; ++s) {
    const index_t at = ((kv * p.group_splits + s) * p.N_KEYS + row) * D + chunk * 8;
    const auto* k4 = reinterpret_cast<const float4*>(p.dk_partial + at);
    const auto* v4 = reinterpret_cast<const float4*>(p.dv_partial + at);
    const float4 k_lo = k4[0], k_hi = k4[1], v_lo = v4[0], v_hi = v4[1];
    const float ks[8] = {k_lo.x, k_lo.y, k_lo.z, k_lo.w, k_hi.x, k_hi.y, k_hi.z, k_hi.w};
    const float vs[8] = {v_lo.x, v_lo.y, v_lo.z, v_lo.w, v_hi.x, v_hi.y, v_hi.z, v_hi.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) dk[i] += ks[i], dv[i] += vs[i];
  }
  const auto pack8 = [](const float(&x)[8]) {
    return uint4{pack_x2<FLOAT16>(x[0], x[1]), pack_x2<FLOAT16>(x[2], x[3]), pack_x2<FLOAT16>(x[4], x[5]),
                 pack_x2<FLOAT16>(x[6], x[7])};
  };
  *reinterpret_cast<uint4*>(p.dK + kv * p.stride_dkb + row * p.stride_dkk + chunk * 8) = pack8(dk);
  *reinterpret_cast<uint4*>(p.dV + kv * p.stride_dvb + row * p.stride_dvk + chunk * 8) = pack8(dv);
}

}  // namespace fa2::flash
