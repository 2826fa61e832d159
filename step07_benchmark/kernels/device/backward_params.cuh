// What every backward kernel (sm80/, sm90/) is given: its parameters (FastBwdParams), where a block
// stands in the grid, the query tiles a key tile walks (QueryWalk) and log2(e).
#pragma once

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/dq_turns.cuh"
#include "step07_benchmark/kernels/device/packed_schedule.hpp"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"  // elem16

namespace fa2::flash {

// The kernels' arguments, named as step05's FlashBwdParams names them (head dim contiguous,
// so only batch and row strides).
struct FastBwdParams {
  const elem16* Q;
  const elem16* K;
  const elem16* V;
  const elem16* O;
  const elem16* dO;
  const float* L;
  float* D_rows;
  float* dQ_accum;
  elem16* dQ;
  elem16* dK;
  elem16* dV;
  index_t stride_qb, stride_qq;
  index_t stride_kb, stride_kk;
  index_t stride_vb, stride_vk;
  index_t stride_ob, stride_oq;
  index_t stride_dob, stride_doq;
  index_t stride_lb, stride_lq;
  index_t stride_Db, stride_Dq;
  index_t stride_accb, stride_accq;
  index_t stride_dqb, stride_dqq;
  index_t stride_dkb, stride_dkk;
  index_t stride_dvb, stride_dvk;
  int N_QUERIES, N_KEYS;
  int kv_group;  // grouped-query attention: query batch elements per K and V batch element
  // A group's query heads spread over group_splits blocks per key tile (v6b, given dkv_partial):
  // heads_per_block = kv_group / group_splits each. Block x of the grid serves K and V batch
  // element x / group_splits and, when group_splits > 1, writes its float32 parts of dK (scaled)
  // and dV to row block x of dk_partial and dv_partial ((K batch x group_splits, N_KEYS, D)),
  // which fast_bwd_sum_group_parts adds up in order. Otherwise kv_group and 1.
  int heads_per_block, group_splits;
  float* dk_partial;
  float* dv_partial;
  // A sliding window (the Cfg::Windowed twins of v5's backward and v6b), as FastParams has it.
  bool windowed;
  int window_left, window_right;
  float scale;       // dK and dQ are multiplied by it once, at the end
  float scale_log2;  // scale * log2(e): P = 2^(S * scale_log2 - L * log2(e))
  // Deterministic dQ (dq_turns.cuh): the kernels built for it take turns on one counter per
  // (batch element, 32 query rows), stride_semb counters per batch element, which the
  // preprocess clears when `deterministic` is set.
  bool deterministic;
  int head_group;  // the twins that order their starts (Cfg::HEAD_MAJOR): batch elements per group
  std::int32_t* dq_semaphores;
  index_t stride_semb;
  // A packed batch (v6b's packed twins, Cfg::PACKED; packed_schedule.hpp): Q, dO, O, dQ and
  // dQ_accum are (T_q, H, D), K, V, dK, dV (T_k, H_kv, D), L and D_i (H, T_q), so the "batch"
  // strides above are head strides. Block x computes key tile tiles[x / kv_heads] for kv head
  // x % kv_heads. Each block reads its own copy of these parameters (bwd_item_params): N_QUERIES,
  // N_KEYS and the window are then its sequence's, L, D_i, dK, dV and the counters start at its
  // sequence's rows, and item_* say where it stands.
  const PackedSequence* sequences;
  const PackedKeyTile* packed_tiles;
  int kv_heads;
  int item_key_tile, item_kv;      // the block's key tile of its sequence, its kv head
  int item_q_start, item_k_start;  // its sequence's first rows of Q and of K
};

// Where a block of the key-tile kernels stands in the grid (batch elements in x, key tiles in y):
// its key tile, the highest first when the turns of deterministic dQ need it (dq_turns.cuh).
template <bool DETERMINISTIC>
__device__ __forceinline__ int key_tile_of_block() {
  return DETERMINISTIC ? static_cast<int>(gridDim.y - 1 - blockIdx.y) : static_cast<int>(blockIdx.y);
}

// Head by head, or in groups of heads (v6b's head_major option): the grid is as ever, but block i
// in the order the GPU starts them (i = blockIdx.y gridDim.x + blockIdx.x) takes its place from
// grouped_block, p.head_group batch elements at a time. A group's key tiles then start side by side
// and walk their query tiles a step or so apart, finding them in L2; in the grid's own order (key
// tile by key tile across every head, head_group = gridDim.x) a head's blocks start far apart and
// each reads its query tiles from memory again once they no longer fit there. A deterministic block
// still waits only for blocks started before it. Thread 0 works the place out once
// (head_major_place_set) into the block's shared memory, where each use reads it.
__device__ __forceinline__ BlockPlace& head_major_place() {
  __shared__ BlockPlace place;
  return place;
}
template <bool DETERMINISTIC>
__device__ __forceinline__ void head_major_place_set(int head_group) {
  const int i = static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x);
  head_major_place() =
      grouped_block(i, static_cast<int>(gridDim.y), static_cast<int>(gridDim.x), head_group, DETERMINISTIC);
}

// The query tiles a key-tile block meets, in order. With grouped-query attention its keys (batch
// element blockIdx.x / group_splits of K and V) serve heads_per_block query batch elements, the
// heads of one group or of a part of it, and dK_j and dV_j sum over all of them: the block walks
// its query tiles m_begin .. m_end - 1 of each in turn, so that step t is query tile
// m_begin + t % tiles of query batch element blockIdx.x * heads_per_block + t / tiles (block x's
// heads are the (x % group_splits)-th part of group x / group_splits). Without groups
// heads_per_block is 1 and step t is query tile m_begin + t. (Causal, top-left: query q sees keys
// 0..q, so the tile's first key k0 is first seen by query k0, in query tile k0 / BLOCK_M.)
// The walk keeps no registers: each member is remade at each use from blockIdx, gridDim and the
// parameters, through a value the compiler cannot see through (`fresh`). Held through the loop,
// they and the divisor's reciprocal would take registers the kernels at the edge do not have.
// HEAD_MAJOR: the block's place is head_major_place's.
template <int BLOCK_M, int BLOCK_N, bool CAUSAL, bool DETERMINISTIC, bool WINDOW = false, bool PACKED = false,
          bool HEAD_MAJOR = false>
struct QueryWalk {
  __device__ __forceinline__ static int fresh(int x) {
    asm volatile("" : "+r"(x));
    return x;
  }
  // The block's key tile and its batch element of K and V (packed: its kv head), from the grid or,
  // packed, from its item (the parameters are then the block's own copy).
  __device__ __forceinline__ static int key_tile(const FastBwdParams& p) {
    if constexpr (PACKED) return p.item_key_tile;
    if constexpr (HEAD_MAJOR) return head_major_place().key_tile;
    return key_tile_of_block<DETERMINISTIC>();
  }
  __device__ __forceinline__ static int kv_slot(const FastBwdParams& p) {
    if constexpr (PACKED) return p.item_kv;
    if constexpr (HEAD_MAJOR) return head_major_place().kv_slot;
    return static_cast<int>(blockIdx.x);
  }
  // Its query tiles of a head (tile_scheduler.hpp's key_tile_query_tiles, which the host tests
  // check against the keys each query sees): with a sliding window (WINDOW: the kernels built for
  // one) also without the query tiles whose windows miss the key tile.
  __device__ __forceinline__ static QueryTileRange range(const FastBwdParams& p) {
    const int k0 = fresh(key_tile(p)) * BLOCK_N;
    return key_tile_query_tiles<CAUSAL, WINDOW>(k0, p.N_KEYS, fresh(p.N_QUERIES), BLOCK_M, BLOCK_N, p.window_left,
                                                p.window_right);
  }
  __device__ __forceinline__ static int m_begin(const FastBwdParams& p) { return range(p).first; }
  __device__ __forceinline__ static int tiles(const FastBwdParams& p) { return range(p).count(); }
  // One past its last query tile of a head.
  __device__ __forceinline__ static int m_end(const FastBwdParams& p) { return m_begin(p) + tiles(p); }
  __device__ __forceinline__ static int steps(const FastBwdParams& p) { return p.heads_per_block * tiles(p); }
  __device__ __forceinline__ static index_t bh(const FastBwdParams& p, int t) {
    return static_cast<index_t>(fresh(kv_slot(p) * p.heads_per_block)) + t / tiles(p);
  }
  __device__ __forceinline__ static int m(const FastBwdParams& p, int t) { return m_begin(p) + t % tiles(p); }
};

inline constexpr float kLog2e = 1.4426950408889634f;

}  // namespace fa2::flash
