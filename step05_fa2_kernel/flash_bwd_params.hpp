// The backward kernels' arguments: what a Triton launch of the backward would pass, pointers,
// element strides, lengths and the softmax scale. The compile-time configuration is the
// forward's FlashFwdConfig (flash_fwd_params.hpp): the same dtype, head dim, causal flag and tile
// sizes. Filled from FlashBwdArgs by make_flash_bwd_params (flash_bwd_dispatch.hpp).
#pragma once

#include "common/numeric.hpp"

namespace fa2 {

// Q, K, V, O, dO, dQ, dK, dV and dQ_accum are (batch, seq, head_dim); L and D_rows (batch, N_q).
// K, V, dK and dV may have fewer batch elements than the rest (grouped-query attention): kv_group
// query batch elements share each. One struct for the three phases: each reads what it needs.
template <class T>
struct FlashBwdParams {
  const T* Q;
  const T* K;
  const T* V;
  const T* O;
  const T* dO;
  const float* L;   // the forward's logsumexp of the scaled scores
  float* D_rows;    // D_i = rowsum(dO_i * O_i), written by the preprocess
  float* dQ_accum;  // dQ summed over key tiles in float32, zeroed by the preprocess
  T* dQ;
  T* dK;
  T* dV;
  index_t stride_qb, stride_qq, stride_qd;
  index_t stride_kb, stride_kk, stride_kd;
  index_t stride_vb, stride_vk, stride_vd;
  index_t stride_ob, stride_oq, stride_od;
  index_t stride_dob, stride_doq, stride_dod;
  index_t stride_lb, stride_lq;
  index_t stride_Db, stride_Dq;                   // D_rows
  index_t stride_accb, stride_accq, stride_accd;  // dQ_accum
  index_t stride_dqb, stride_dqq, stride_dqd;
  index_t stride_dkb, stride_dkk, stride_dkd;
  index_t stride_dvb, stride_dvk, stride_dvd;
  index_t N_QUERIES, N_KEYS;
  index_t kv_group;                   // query batch elements per K and V batch element: 1, or the group of GQA
  index_t window_left, window_right;  // the sliding window, as FlashFwdParams has it
  float scale;
  InputPrecision input_precision = InputPrecision::tf32;  // as FlashFwdParams has it
};

}  // namespace fa2
