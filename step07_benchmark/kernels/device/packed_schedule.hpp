// A packed batch (sequences of different lengths laid end to end, PyTorch's varlen layout) on v6's
// packed twins (sm90/forward_kernel.cuh, Cfg::PACKED): which sequence and query tile each work item
// computes, and in which order the blocks take them. The host builds the schedule from the
// sequences' lengths (packed_schedule) and the launch copies it to the GPU; the kernel reads it
// through PackedScheduler. tests/test_packed_schedule.cpp checks it on the host.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "common/host_device.hpp"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"

namespace fa2::flash {

// Where sequence b lies: its queries are rows q_start .. q_start + n_q - 1 of Q (and O), its keys
// rows k_start .. k_start + n_k - 1 of K and V. 16 bytes: one load.
struct alignas(16) PackedSequence {
  int q_start, n_q, k_start, n_k;
};
// Query tile q_tile of sequence seq, for every head (a work item is a packed tile and a head).
struct PackedTile {
  int seq, q_tile;
};

// The rows of a packed tensor as its ragged TMA view reaches them (product/forward_sm90.cu's
// ragged_tile_map, ptx/tma.cuh's tma_load_ragged): five coordinates, innermost first, the column,
// kRaggedSpan - n + r, the sequence's end row start + n, kRaggedSpan, and the head. The map's
// strides make the second, third and fourth add up to row start + r (the fourth's stride wraps
// around 2^64 to minus kRaggedSpan rows), and the second is inside the map exactly when r < n: a
// box that runs past the sequence's end loads zeros there and stores nothing there, as a box past
// a dense tensor's end does, and the next sequence's rows are never read.
inline constexpr int kRaggedSpan = 1 << 30;
struct RaggedRows {
  int start, n;  // the sequence's first row and its row count
};

// Which masks a packed launch applies: none; the causal mask where every sequence has as many
// queries as keys (its bottom-right and top-left alignments then agree, and the causal kernel runs
// unchanged per sequence); otherwise a window per sequence (the windowed twin), whose bounds
// packed_window turns from bottom-right into the kernel's top-left ones.
enum class PackedMask { none, causal, window };

// The masks align bottom-right in a packed batch (FlashAttention's varlen convention): query i of a
// sequence stands at key i + n_k - n_q, and sees keys from there - left to there + right. The
// kernels' windows count from key i (top-left): the same bounds, shifted by n_k - n_q. `left` and
// `right` must already be finite (the launch gives an unbounded left max_k, an unbounded right
// max_q, enough to reach every key of every sequence).
struct WindowBounds {
  int left, right;
};
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr WindowBounds packed_window(int left, int right, const PackedSequence& s) {
  return {left - (s.n_k - s.n_q), right + (s.n_k - s.n_q)};
}

// The key tiles that the query tile of block_m rows from q0 of sequence s computes under `mask`
// (bottom-right bounds left, right for PackedMask::window): the kernel's own range
// (query_tile_key_tiles), at least one tile (the kernel walks one even where no key is seen).
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr KeyTileRange packed_key_tiles(PackedMask mask, const PackedSequence& s,
                                                                         int q0, int block_m, int block_n, int left,
                                                                         int right) {
  KeyTileRange range{0, 0};
  if (mask == PackedMask::none) {
    range = query_tile_key_tiles<false, false>(s.n_k, block_n, q0, block_m, s.n_q, 0, 0);
  } else if (mask == PackedMask::causal) {
    range = query_tile_key_tiles<true, false>(s.n_k, block_n, q0, block_m, s.n_q, 0, 0);
  } else {
    const WindowBounds w = packed_window(left, right, s);
    range = query_tile_key_tiles<false, true>(s.n_k, block_n, q0, block_m, s.n_q, w.left, w.right);
  }
  return at_least_one_tile(range, s.n_k, block_n);
}

// The items of a packed launch: tile t / heads of the schedule for head t % heads, so that every
// head of a tile comes before the next tile, and the tiles come in the schedule's order (the
// heaviest first). Rounds of persistent blocks as TileScheduler's.
template <bool PERSISTENT>
struct PackedScheduler {
  const PackedTile* tiles;
  int n_tiles, heads;

  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int items() const { return n_tiles * heads; }
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int item(int k, int block, int blocks) const {
    return TileScheduler<false, PERSISTENT>{}.item(k, block, blocks);
  }
  FA2_HOST_DEVICE FA2_FORCE_INLINE WorkTile work_tile(int t) const {
    const PackedTile pt = tiles[t / heads];
    return {pt.q_tile, t % heads, pt.seq};
  }
};

// The schedule of one packed launch: every sequence's place, and its query tiles (of block_m rows)
// in the order the blocks take them. Sequence by sequence, the most key tiles first (ties in the
// order of the sequences), and inside a sequence its own tiles the most key tiles first (ties in
// their order): the last tiles of the longest causal sequences lead, the shortest sequences' tiles
// fill the end. Tile by tile the most work first would balance the blocks a little better, but it
// would run the tiles of equal work of several long sequences together, each reading its own keys
// and values, more than L2 holds; sequence by sequence the blocks running together read one
// sequence's, as the dense kernel's blocks do. A sequence without queries has no tile.
struct PackedSchedule {
  std::vector<PackedSequence> sequences;
  std::vector<PackedTile> tiles;
};

// The tiles of a schedule from each sequence's (work, tile) pairs, listed in the order that sequence
// runs them: sequence by sequence, the most total work first (ties in the order of the sequences),
// each as {sequence, tile}. Both packed schedules order their sequences so.
template <class Tile>
std::vector<Tile> sequences_by_work(const std::vector<std::vector<std::pair<int, int>>>& tiles) {
  std::vector<long long> total(tiles.size(), 0);
  for (std::size_t b = 0; b < tiles.size(); ++b) {
    for (const auto& [work, tile] : tiles[b]) total[b] += work;
  }
  std::vector<int> order(tiles.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return total[static_cast<std::size_t>(x)] > total[static_cast<std::size_t>(y)];
  });
  std::vector<Tile> listed;
  for (const int b : order) {
    for (const auto& [work, tile] : tiles[static_cast<std::size_t>(b)]) listed.push_back({b, tile});
  }
  return listed;
}

// cu_seq_q and cu_seq_k: batch + 1 offsets (host memory); seqused_k (host, or null): the keys each
// sequence uses from its first, else all of its cu_seq_k rows.
inline PackedSchedule packed_schedule(const std::int32_t* cu_seq_q, const std::int32_t* cu_seq_k,
                                      const std::int32_t* seqused_k, int batch, PackedMask mask, int block_m,
                                      int block_n, int left, int right) {
  PackedSchedule schedule;
  schedule.sequences.reserve(static_cast<std::size_t>(batch));
  // Each sequence's tiles with their key tiles, heaviest first.
  std::vector<std::vector<std::pair<int, int>>> tiles(static_cast<std::size_t>(batch));  // (work, tile)
  for (int b = 0; b < batch; ++b) {
    const PackedSequence s{cu_seq_q[b], cu_seq_q[b + 1] - cu_seq_q[b], cu_seq_k[b],
                           seqused_k != nullptr ? seqused_k[b] : cu_seq_k[b + 1] - cu_seq_k[b]};
    schedule.sequences.push_back(s);
    auto& own = tiles[static_cast<std::size_t>(b)];
    for (int m = 0; m * block_m < s.n_q; ++m) {
      own.emplace_back(packed_key_tiles(mask, s, m * block_m, block_m, block_n, left, right).count(), m);
    }
    std::stable_sort(own.begin(), own.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  }
  schedule.tiles = sequences_by_work<PackedTile>(tiles);
  return schedule;
}

// The backward's side (v6b's packed twins, sm90/backward.cuh with Cfg::PACKED): a work item is key
// tile key_tile of sequence seq and one kv head, and walks the query tiles that see it.
struct PackedKeyTile {
  int seq, key_tile;
};

// The query tiles (of block_m rows) that the key tile of block_n keys from k0 of sequence s meets
// under `mask` (bottom-right bounds left, right for PackedMask::window): the kernels' own walk
// (tile_scheduler.hpp's key_tile_query_tiles), empty when no query sees the tile.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr QueryTileRange packed_query_tiles(PackedMask mask, const PackedSequence& s,
                                                                             int k0, int block_m, int block_n, int left,
                                                                             int right) {
  if (mask == PackedMask::none) return key_tile_query_tiles<false, false>(k0, s.n_k, s.n_q, block_m, block_n, 0, 0);
  if (mask == PackedMask::causal) return key_tile_query_tiles<true, false>(k0, s.n_k, s.n_q, block_m, block_n, 0, 0);
  const WindowBounds w = packed_window(left, right, s);
  return key_tile_query_tiles<false, true>(k0, s.n_k, s.n_q, block_m, block_n, w.left, w.right);
}

// The schedule of one packed backward: every sequence's place, and its key tiles (of block_n keys;
// every tile of every sequence that has keys, since each writes its rows of dK and dV, zeros where
// no query sees them) in the order the blocks take them: sequence by sequence, the most query
// tiles first, as packed_schedule orders the forward's. Inside a sequence the key tiles with the
// most query tiles come first, or, for deterministic gradients (last_first), the last key tile
// first: the order in which they take their turns to add to dQ (dq_turns.cuh), so that a block
// waits only for blocks that started before it.
struct PackedBackwardSchedule {
  std::vector<PackedSequence> sequences;
  std::vector<PackedKeyTile> tiles;
};
inline PackedBackwardSchedule packed_backward_schedule(const std::int32_t* cu_seq_q, const std::int32_t* cu_seq_k,
                                                       int batch, PackedMask mask, int block_m, int block_n, int left,
                                                       int right, bool last_first) {
  PackedBackwardSchedule schedule;
  schedule.sequences.reserve(static_cast<std::size_t>(batch));
  std::vector<std::vector<std::pair<int, int>>> tiles(static_cast<std::size_t>(batch));  // (work, key tile)
  for (int b = 0; b < batch; ++b) {
    const PackedSequence s{cu_seq_q[b], cu_seq_q[b + 1] - cu_seq_q[b], cu_seq_k[b], cu_seq_k[b + 1] - cu_seq_k[b]};
    schedule.sequences.push_back(s);
    auto& own = tiles[static_cast<std::size_t>(b)];
    for (int n = 0; n * block_n < s.n_k; ++n) {
      own.emplace_back(packed_query_tiles(mask, s, n * block_n, block_m, block_n, left, right).count(), n);
    }
    if (last_first) {
      std::reverse(own.begin(), own.end());
    } else {
      std::stable_sort(own.begin(), own.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    }
  }
  schedule.tiles = sequences_by_work<PackedKeyTile>(tiles);
  return schedule;
}

}  // namespace fa2::flash
