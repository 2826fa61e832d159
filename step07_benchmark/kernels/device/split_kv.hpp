// Split-KV, for decoding: one sequence's long key range cut into parts, each computed by a block of
// its own, so that a batch of few queries still fills the GPU. Part s writes its O_s, normalised
// over its own keys, and L_s, the logsumexp of its scaled scores (-inf when it saw no key). The
// combine is step 1's merge of softmax states (step01_online_softmax/online_softmax.hpp,
// OnlineSoftmaxState::combine) read backwards: a part's state is m = L_s and l = 1, so
//   L = log sum_s exp(L_s),   O = sum_s exp(L_s - L) O_s,
// each part's output weighed by the share of the softmax's mass its keys hold. Host and device:
// the combine kernel (sm80/decode.cuh) runs merge_splits and split_weight per row, combine_splits
// is both for one row, and tests/test_split_kv.cpp checks them and the decoding schedule below on
// the host.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/host_device.hpp"
#include "common/numeric.hpp"

namespace fa2::flash {

// How many parts to cut each sequence's keys into (of key_blocks blocks of keys), given the work
// items (sequences x kv heads x query tiles) and the blocks the GPU holds at once (slots = SMs x
// resident blocks per SM). The blocks run in waves of `slots`, and a last wave that is partly empty
// leaves SMs idle while the memory could still be read: s parts fill the waves to
//   fill(s) = items s / (slots ceil(items s / slots)),
// and the count is the smallest s whose fill reaches kSplitFillShare of the best over 1 ..
// min(key_blocks, max_splits): fewer parts mean fewer partial outputs for the combine to read.
inline constexpr double kSplitFillShare = 0.95;
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr double split_wave_fill(long long work_items, int splits, long long slots) {
  const long long blocks = work_items * splits;
  return static_cast<double>(blocks) / static_cast<double>(slots * ((blocks + slots - 1) / slots));
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int split_kv_count(long long work_items, int key_blocks, int sm_count,
                                                              int waves = 2, int max_splits = 128) {
  if (work_items <= 0 || key_blocks <= 1 || sm_count <= 0 || waves <= 0) return 1;
  const long long slots = static_cast<long long>(waves) * sm_count;
  const int most = key_blocks < max_splits ? key_blocks : max_splits;
  double best = 0.0;
  for (int s = 1; s <= most; ++s) {
    const double fill = split_wave_fill(work_items, s, slots);
    if (fill > best) best = fill;
  }
  int s = 1;
  while (split_wave_fill(work_items, s, slots) < kSplitFillShare * best) ++s;
  return s;
}

// The merge of a row's parts, before any output is read: m = max_s L_s and log_l = log sum_s
// exp(L_s - m), so that L = m + log_l and part s weighs exp(L_s - L). m is -inf when no part saw
// a key. The combine kernel's lanes each compute it and then weigh their own columns.
struct SplitMerge {
  float m = -INFINITY;
  float log_l = 0.0f;
};
FA2_HOST_DEVICE inline SplitMerge merge_splits(const float* lse, index_t lse_stride, int splits) {
  SplitMerge merge;
  for (int s = 0; s < splits; ++s) merge.m = fmaxf(merge.m, lse[s * lse_stride]);
  if (merge.m == -INFINITY) return merge;
  float l = 0.0f;  // sum_s exp(L_s - m): step 1's l, with every part's l = 1 moved to m
  for (int s = 0; s < splits; ++s) l += expf(lse[s * lse_stride] - merge.m);
  merge.log_l = logf(l);
  return merge;
}
// exp(L_s - L): 0 for a part that saw no key (L_s = -inf), whose O_s is never read.
FA2_HOST_DEVICE FA2_FORCE_INLINE float split_weight(const SplitMerge& merge, float lse_s) {
  return expf(lse_s - merge.m - merge.log_l);
}

// Row r's output from its `splits` parts: part s's logsumexp lse[s * lse_stride] and output row
// o + s * o_stride (d floats). Writes out[0 .. d) and *lse_out. A row no part saw a key of gets
// O = 0 and L = +inf, the kernels' convention for a query that sees no key.
FA2_HOST_DEVICE inline void combine_splits(const float* lse, index_t lse_stride, const float* o, index_t o_stride,
                                           int splits, int d, float* out, float* lse_out) {
  const SplitMerge merge = merge_splits(lse, lse_stride, splits);
  for (int c = 0; c < d; ++c) out[c] = 0.0f;
  if (merge.m == -INFINITY) {
    *lse_out = INFINITY;
    return;
  }
  for (int s = 0; s < splits; ++s) {
    const float w = split_weight(merge, lse[s * lse_stride]);
    if (w == 0.0f) continue;
    for (int c = 0; c < d; ++c) out[c] += w * o[s * o_stride + c];
  }
  *lse_out = merge.m + merge.log_l;
}

// ---- which keys a decoding block reads --------------------------------------------------------
// A sequence of n_q queries and n_k keys aligns its masks bottom-right (FlashAttention's varlen and
// kv-cache rule): query i stands at key i + n_k - n_q, so that the last query sits at the last key,
// and it sees keys at - left .. at + right of that place (-1: no bound on that side), within
// 0 .. n_k - 1. `last < first` when it sees none (a query before the first key under the causal
// mask, n_q > n_k). Both ends grow with i: the first and last queries of a run of rows bound the
// keys the whole run needs.
struct KeySpan {
  int first = 0, last = -1;
  FA2_HOST_DEVICE constexpr int count() const { return last >= first ? last - first + 1 : 0; }
};
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr KeySpan bottom_right_keys(int i, int n_q, int n_k, int left, int right) {
  const long long at = static_cast<long long>(i) + n_k - n_q;
  long long first = left >= 0 ? at - left : 0;
  long long last = right >= 0 ? at + right : n_k - 1;
  if (first < 0) first = 0;
  if (last > n_k - 1) last = n_k - 1;
  if (last < first) return {0, -1};
  return {static_cast<int>(first), static_cast<int>(last)};
}

// The keys a decoding block reads, for its queries i_first .. i_last of a sequence (n_q, n_k): from
// the first key of its first query that sees one (only a run of first queries can see none: the
// causal bound before the first key, when n_q > n_k) to the last key of its last query, in `tiles`
// tiles of `tile` keys from keys.first. Keys in `unmasked` are seen by every query of the block: a
// tile inside it needs no mask (none is unmasked when a query of the block sees no key at all).
struct BlockKeys {
  KeySpan keys;
  int tiles = 0;
  KeySpan unmasked;
};
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr BlockKeys decode_block_keys(int i_first, int i_last, int n_q, int n_k,
                                                                       int left, int right, int tile) {
  const long long first_seeing = right >= 0 ? static_cast<long long>(n_q) - n_k - right : 0;
  const int i_seeing = first_seeing > i_first ? static_cast<int>(first_seeing < n_q ? first_seeing : n_q) : i_first;
  const KeySpan first_q = i_seeing <= i_last ? bottom_right_keys(i_seeing, n_q, n_k, left, right) : KeySpan{};
  if (first_q.count() == 0) return {};
  const KeySpan last_q = bottom_right_keys(i_last, n_q, n_k, left, right);
  BlockKeys b;
  b.keys = {first_q.first, last_q.last};
  b.tiles = (b.keys.last - b.keys.first + tile) / tile;
  if (i_seeing == i_first) b.unmasked = {last_q.first, first_q.last};
  return b;
}

// Part `split` of `splits` of n_tiles tiles of keys: tiles [begin, end), the parts as even as
// whole tiles allow (their sizes differ by at most one; empty when there are fewer tiles than parts).
struct TileRange {
  int begin = 0, end = 0;
};
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr TileRange split_tiles(int n_tiles, int splits, int split) {
  return {static_cast<int>(static_cast<long long>(n_tiles) * split / splits),
          static_cast<int>(static_cast<long long>(n_tiles) * (split + 1) / splits)};
}

// A part's tiles dealt to `warps` warps in turn: warp w takes part.begin + w + j * warps for
// j = 0 .. warp_tile_count - 1.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int warp_tile_count(TileRange part, int warp, int warps) {
  const int n = part.end - part.begin;
  return n > warp ? (n - warp + warps - 1) / warps : 0;
}

// ---- where a decoding block's sequence lies --------------------------------------------------
// Sequence b's rows as the decoding kernel reads them from the index arrays, bounded so that no
// value of them can move a read or a write out of the tensors: its queries q_begin .. q_begin +
// n_q - 1 within the T_q rows of q (at most max_q of them), its keys key_row0 + 0 .. n_k - 1 within
// the T_k rows of the packed k (at most max_k), or for a paged cache (cu_seq_k null) the first n_k
// of the pages its block_table row names (at most pages_per_sequence * page_size keys; the kernel
// bounds each page number too, decode_page). Values that keep the rules (from 0, never decreasing,
// within the tensors and max_q, max_k, seqused_k within its sequence) come back as they are; others
// give wrong numbers, never an access out of bounds.
struct DecodeSequence {
  int q_begin = 0, n_q = 0, key_row0 = 0, n_k = 0;
};
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int clamp_to(long long x, long long lo, long long hi) {
  return static_cast<int>(x < lo ? lo : (x > hi ? hi : x));
}
FA2_HOST_DEVICE FA2_FORCE_INLINE DecodeSequence decode_sequence(const std::int32_t* cu_seq_q,
                                                                const std::int32_t* cu_seq_k,
                                                                const std::int32_t* seqused_k, int b, int total_q,
                                                                int total_k, int max_q, int max_k,
                                                                long long paged_keys) {
  DecodeSequence s;
  s.q_begin = clamp_to(cu_seq_q[b], 0, total_q);
  s.n_q = clamp_to(static_cast<long long>(cu_seq_q[b + 1]) - s.q_begin, 0,
                   total_q - s.q_begin < max_q ? total_q - s.q_begin : max_q);
  long long keys = 0;
  if (cu_seq_k != nullptr) {
    s.key_row0 = clamp_to(cu_seq_k[b], 0, total_k);
    keys = clamp_to(static_cast<long long>(cu_seq_k[b + 1]) - s.key_row0, 0, total_k - s.key_row0);
  } else {
    keys = paged_keys;
  }
  if (seqused_k != nullptr) keys = clamp_to(seqused_k[b], 0, keys);
  s.n_k = clamp_to(keys, 0, max_k);
  return s;
}
// Page `page` of a paged cache of `pages` pages, as the kernel reads it: a number outside the cache
// reads its last page instead (wrong numbers, never an access out of bounds).
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int decode_page(std::int32_t page, int pages) {
  return clamp_to(page, 0, pages - 1);
}

}  // namespace fa2::flash
