// Which key tiles a query tile computes, and in which order blocks take the query tiles: the
// causal key-tile formula and the tile scheduler that v5 (sm80/forward.cuh) and v6 (sm90/) share.
// Host and device: tests/test_figures.cpp checks the schedule's balance on the host.
#pragma once

#include <climits>

#include "common/host_device.hpp"

namespace fa2::flash {

// The one causal key-tile formula. Under the top-left causal mask query q sees key k when
// k <= q, so a run of queries whose last is `last_query` (a block's, a warpgroup's, a warp's)
// needs key tile j when the tile's first key j * block_n is at most last_query: tiles
// 0 .. last_query / block_n, and never more than the n_key_tiles the keys fill. The loops that
// walk every tile ask causal_tile_needed of each; the others count with causal_key_tiles.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr bool causal_tile_needed(int j, int last_query, int block_n) {
  return j * block_n <= last_query;
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int causal_key_tiles(int last_query, int block_n, int n_key_tiles) {
  const int needed = last_query / block_n + 1;
  return n_key_tiles < needed ? n_key_tiles : needed;
}

// The window's counterpart: a run of queries whose last is `last_query` sees no key after
// last_query + right (a window bounded on the right), so it needs tiles up to that key's, never
// more than the n_key_tiles given (the keys', or fewer already).
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int window_right_key_tiles(int last_query, int right, int block_n,
                                                                      int n_key_tiles) {
  const int needed = (last_query + right) / block_n + 1;
  return needed < n_key_tiles ? needed : n_key_tiles;
}

// Of n_keys keys in tiles of block_n, the tiles that the query tile of `rows` rows from q0
// computes: all of them without a mask; with it, those up to its last real query (rows past
// n_queries are padding).
template <bool CAUSAL>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int key_tiles(int n_keys, int block_n, int q0, int rows, int n_queries) {
  const int n_key_tiles = (n_keys + block_n - 1) / block_n;
  if constexpr (!CAUSAL) {
    return n_key_tiles;
  } else {
    const int end = q0 + rows < n_queries ? q0 + rows : n_queries;
    return causal_key_tiles(end - 1, block_n, n_key_tiles);
  }
}

// Key tiles first .. end - 1 (end <= first: none).
struct KeyTileRange {
  int first, end;
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int count() const { return end > first ? end - first : 0; }
};

// The key tiles that the query tile of `rows` rows from q0 computes under a sliding window (query
// q sees keys q - left .. q + right; the launch clamps an unbounded side to the lengths, so no sum
// overflows): key_tiles' range, less the tiles before its first query's window and after its
// last real query's: exactly the tiles its queries see. When none sees a key (every query of the
// tile past the keys' end by more than `left`, N_q > N_k), empty or one tile, which the masks
// leave wholly at -inf.
template <bool CAUSAL>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr KeyTileRange window_key_tiles(int n_keys, int block_n, int q0, int rows,
                                                                         int n_queries, int left, int right) {
  const int last_query = (q0 + rows < n_queries ? q0 + rows : n_queries) - 1;
  const int first = (q0 > left ? q0 - left : 0) / block_n;
  return {first,
          window_right_key_tiles(last_query, right, block_n, key_tiles<CAUSAL>(n_keys, block_n, q0, rows, n_queries))};
}

// The range a query tile computes in a kernel built with or without a window (WINDOW): key_tiles'
// from tile 0, or window_key_tiles'. v5 (sm80/forward.cuh) and v6 (sm90/producer.cuh) both ask it.
template <bool CAUSAL, bool WINDOW>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr KeyTileRange query_tile_key_tiles(int n_keys, int block_n, int q0, int rows,
                                                                             int n_queries, int left, int right) {
  if constexpr (WINDOW) {
    return window_key_tiles<CAUSAL>(n_keys, block_n, q0, rows, n_queries, left, right);
  } else {
    return {0, key_tiles<CAUSAL>(n_keys, block_n, q0, rows, n_queries)};
  }
}

// v6's warp-specialised kernel walks at least one key tile per work item (its producer loads the
// item's Q with its first tile, and the ring counts tiles). A window can leave an item no key at
// all; it then walks the last tile of keys, which the masks leave wholly at -inf.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr KeyTileRange at_least_one_tile(KeyTileRange range, int n_keys, int block_n) {
  if (range.count() > 0) return range;
  const int last_tile = (n_keys - 1) / block_n;
  const int first = range.first < last_tile ? range.first : last_tile;
  return {first, first + 1};
}

// Of a work item's key tiles `range`, how many a warpgroup of v6 whose last row is wg_last_query
// takes part in: those up to its rows' causal bound and (WINDOW) window's right edge (`right`), and
// at least the first, which every warpgroup computes. The loop waits for the others and hands
// them back (sm90/consumer.cuh).
template <bool CAUSAL, bool WINDOW>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int warpgroup_key_tiles(KeyTileRange range, int wg_last_query, int block_n,
                                                                   int right) {
  int end = range.end;
  if constexpr (CAUSAL) end = causal_key_tiles(wg_last_query, block_n, end);
  if constexpr (!WINDOW) {
    return end - range.first;  // without a window, range.first is 0 and the causal share at least 1
  } else {
    end = window_right_key_tiles(wg_last_query, right, block_n, end);
    return end - range.first > 1 ? end - range.first : 1;
  }
}

// The backward's side: the query tiles (of block_m queries) that the key tile of block_n keys from
// k0 meets, first .. end - 1. All of them without a mask. Causal (top-left), from the tile that
// holds query k0, the first to see key k0. With a sliding window (the launch clamps an unbounded
// side to the lengths), also from the tile that holds the first query whose window reaches key k0
// (query k0 - right) and up to the one that holds the last whose window reaches the tile's last
// real key (query k_last + left). Empty when no query sees the tile (keys past every query's reach).
// The backward kernels' walks (QueryWalk, device/backward_params.cuh) take it.
struct QueryTileRange {
  int first, end;
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int count() const { return end > first ? end - first : 0; }
};
template <bool CAUSAL, bool WINDOW>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr QueryTileRange key_tile_query_tiles(int k0, int n_keys, int n_queries,
                                                                               int block_m, int block_n, int left,
                                                                               int right) {
  int first = CAUSAL ? k0 / block_m : 0;
  if (WINDOW && k0 > right && (k0 - right) / block_m > first) first = (k0 - right) / block_m;
  int end = (n_queries + block_m - 1) / block_m;
  if (WINDOW) {
    const int k_last = (k0 + block_n < n_keys ? k0 + block_n : n_keys) - 1;
    // (A packed sequence's window may have a negative left bound: no query sees the tile then.)
    const int window_end = k_last + left < 0 ? 0 : (k_last + left) / block_m + 1;
    end = window_end < end ? window_end : end;
  }
  return {first, end};
}

// The last key tile (of block_n keys) that meets query tile m (of block_m queries) in those walks,
// for the turns of deterministic dQ (dq_turns.cuh): with the causal mask, key tile n's first query
// tile is n block_n / block_m; with a sliding window bounded on the right (window_right >= 0), it
// is (n block_n - window_right) / block_m. The key tiles that meet a query tile are consecutive,
// so the turns of those after this one are last_key_tile - n. (The host tests check both against
// key_tile_query_tiles.)
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int last_key_tile(int m, int key_tiles, int block_m, int block_n,
                                                             bool causal, int window_right = -1) {
  int last = key_tiles - 1;
  if (causal && ((m + 1) * block_m - 1) / block_n < last) last = ((m + 1) * block_m - 1) / block_n;
  if (window_right >= 0 && ((m + 1) * block_m - 1 + window_right) / block_n < last) {
    last = ((m + 1) * block_m - 1 + window_right) / block_n;
  }
  return last;
}
// The same with a right bound of either sign, always applied: a packed sequence's window
// (packed_schedule.hpp's packed_window) may end before its query's own key, with fewer keys than
// queries. -1 when no key tile meets query tile m.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int last_key_tile_right(int m, int key_tiles, int block_m, int block_n,
                                                                   bool causal, int window_right) {
  const int last_seen = (m + 1) * block_m - 1 + window_right;  // the last key the tile's last query sees
  if (last_seen < 0) return -1;
  const int last = last_key_tile(m, key_tiles, block_m, block_n, causal);
  return last_seen / block_n < last ? last_seen / block_n : last;
}

// The order in which v6b's key-tile blocks start (device/backward_params.cuh): the key tile and
// batch element (kv slot) of K and V of the i-th block to start, of `key_tiles` key tiles per
// element and `slots` elements, the elements taken `group` at a time: the blocks of a group, key
// tile by key tile across its elements, all start before those of the next (the last group may be
// smaller). Within a group, the key tiles from the last (deterministic: the turns' order) or,
// last_first false, from the first (the default twins; with the causal mask the first key tile walks
// the most query tiles, so the longest start first). group == slots is the grid's own order (block
// i = y slots + x: key tile y from the last or first, element x); group == 1 head by head. Any
// group: a deterministic block starts after every block whose turn comes before its own
// (tests/test_deferred_turns.cpp).
struct BlockPlace {
  int key_tile, kv_slot;
};
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr BlockPlace grouped_block(int i, int key_tiles, int slots, int group,
                                                                    bool last_first) {
  const int first = i / (group * key_tiles) * group;  // the group's first element
  const int size = slots - first < group ? slots - first : group;
  const int j = i - first * key_tiles;  // the block's place in its group
  const int tile = j / size;
  return {last_first ? key_tiles - 1 - tile : tile, first + j % size};
}

// The query tile that the i-th block (of a head) takes. Without a mask, in order. Causal, the
// last first: query tile i needs about i + 1 key tiles, so the heaviest start first and the
// lightest fill the end (longest processing time first).
template <bool CAUSAL>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int query_tile_at(int i, int n_q_tiles) {
  return CAUSAL ? n_q_tiles - 1 - i : i;
}

// Heads per group of v6's L2 order (TileScheduler::head_group): the largest power of two, at most
// `heads`, whose K and V fit in l2_bytes together (FlashAttention-4's rule on sm_90, with this
// GPU's L2). A query head's share is 2 n_keys head_dim 2-byte values over its kv_group, since the
// query heads of a group read one K and V.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int l2_head_group(long long l2_bytes, long long n_keys, int head_dim,
                                                             int kv_group, int heads) {
  long long per_head = 2 * n_keys * head_dim * 2 / (kv_group > 0 ? kv_group : 1);
  if (per_head < 1) per_head = 1;
  int group = 1;
  while (2 * group <= heads && 2 * group * per_head <= l2_bytes) group *= 2;
  return group;
}

// A work item: query tile `q_tile` of (batch x head) `bh`; in a packed batch (packed_schedule.hpp)
// of sequence `seq`, bh then being the head.
struct WorkTile {
  int q_tile, bh;
  int seq = 0;
};

// v6's items t = 0 .. n_q_tiles * heads - 1 and who computes which. Without a mask, the query tiles
// of a head one after the other (the blocks running together share its K and V in L2), and under
// grouped-query attention (heads of `kv_group` query heads per K and V) the heads in an order that
// visits every kv head before it comes back to one: head slot i is query head i % kv_heads *
// kv_group + i / kv_heads. A round of blocks then reads as many different K and V as without
// groups, where the heads in order would have put every block of a round on one kv head's K and V
// at once. Causal, query_tile_at's order across every head: the last query tile of each head, then
// the one before it, and so on; or, with head_group > 1 (v6's L2 order), that order within groups
// of head_group consecutive heads (the last group may be smaller), group after group, so that the
// blocks running together read the K and V of a few heads, which stay in L2, rather than of every
// head. Without PERSISTENT block b computes item b; with it there is a
// block per SM, and round k holds items k * blocks onwards, taken left to right in even rounds and
// right to left in odd ones: causal items come heaviest first, so the block that takes the heaviest
// of one round takes the lightest of the next, and the blocks' totals stay even.
template <bool CAUSAL, bool PERSISTENT>
struct TileScheduler {
  int n_q_tiles, heads;
  int kv_group = 1;    // query heads (of heads) per K and V head; divides heads
  int head_group = 1;  // causal: heads per group of the L2 order (1: one group of every head)

  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int items() const { return heads * n_q_tiles; }

  // The item that block `block` of `blocks` (blockIdx.x, gridDim.x) computes in its round k;
  // INT_MAX when it has none.
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int item(int k, int block, int blocks) const {
    if constexpr (!PERSISTENT) return k == 0 ? block : INT_MAX;
    return k * blocks + (k % 2 == 0 ? block : blocks - 1 - block);
  }

  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr WorkTile work_tile(int t) const {
    if constexpr (CAUSAL) {
      if (head_group <= 1) return {query_tile_at<true>(t / heads, n_q_tiles), t % heads};
      const int group = t / (head_group * n_q_tiles), r = t % (head_group * n_q_tiles);
      const int first = group * head_group, in_group = heads - first < head_group ? heads - first : head_group;
      return {query_tile_at<true>(r / in_group, n_q_tiles), first + r % in_group};
    } else {
      const int slot = t / n_q_tiles, kv_heads = heads / kv_group;
      return {t % n_q_tiles, slot % kv_heads * kv_group + slot / kv_heads};
    }
  }
};

}  // namespace fa2::flash
