// Split-KV, for decoding: one sequence's long key range cut into parts, each computed by a block of
// its own, so that a batch of few queries still fills the GPU. Part s writes its O_s, normalised
// over its own keys, and L_s, the logsumexp of its scaled scores (-inf when it saw no key). The
// combine is step 1's merge of softmax states (step01_online_softmax/online_softmax.hpp,
// OnlineSoftmaxState::combine) read backwards: a part's state is m = L_s and l = 1, so
//   L = log sum_s exp(L_s),   O = sum_s exp(L_s - L) O_s,
// each part's output weighed by the share of the softmax's mass its keys hold. Host and device:
// the combine kernel runs combine_splits per row; tests/test_split_kv.cpp checks it on the host.
#pragma once

#include <cmath>

#include "common/host_device.hpp"
#include "common/numeric.hpp"

namespace fa2::flash {

// How many parts to cut each sequence's keys into (of key_blocks blocks of keys) so that the
// work items (sequences x kv heads x query tiles) times the parts give at least `waves` blocks per
// SM, never more parts than blocks of keys nor than max_splits. 1 when the items alone fill the
// GPU: a split costs a combine pass and the partial outputs' traffic.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int split_kv_count(long long work_items, int key_blocks, int sm_count,
                                                              int waves = 2, int max_splits = 128) {
  if (work_items <= 0 || key_blocks <= 1) return 1;
  const long long wanted = static_cast<long long>(waves) * sm_count;
  if (work_items >= wanted) return 1;
  long long splits = (wanted + work_items - 1) / work_items;
  if (splits > key_blocks) splits = key_blocks;
  if (splits > max_splits) splits = max_splits;
  return static_cast<int>(splits);
}

// Row r's output from its `splits` parts: part s's logsumexp lse[s * lse_stride] and output row
// o + s * o_stride (d floats). Writes out[0 .. d) and *lse_out. A row no part saw a key of gets
// O = 0 and L = +inf, the kernels' convention for a query that sees no key.
FA2_HOST_DEVICE inline void combine_splits(const float* lse, index_t lse_stride, const float* o, index_t o_stride,
                                           int splits, int d, float* out, float* lse_out) {
  float m = -INFINITY;  // the largest L_s: every weight exp(L_s - m) is at most 1
  for (int s = 0; s < splits; ++s) m = fmaxf(m, lse[s * lse_stride]);
  if (m == -INFINITY) {
    for (int c = 0; c < d; ++c) out[c] = 0.0f;
    *lse_out = INFINITY;
    return;
  }
  float l = 0.0f;  // sum_s exp(L_s - m): step 1's l, with every part's l = 1 moved to m
  for (int s = 0; s < splits; ++s) l += expf(lse[s * lse_stride] - m);
  const float log_l = logf(l);
  for (int c = 0; c < d; ++c) out[c] = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float w = expf(lse[s * lse_stride] - m - log_l);  // exp(L_s - L)
    if (w == 0.0f) continue;                                // an empty part (L_s = -inf), whose O_s is never read
    for (int c = 0; c < d; ++c) out[c] += w * o[s * o_stride + c];
  }
  *lse_out = m + log_l;
}

}  // namespace fa2::flash
