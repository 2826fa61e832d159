// Decoding: a few queries per sequence (1 to 16: the next token, or a few drafted ones) against
// a long key/value cache, packed or paged (common/attention_args.hpp's FlashVarlenArgs). The
// forward kernels give each block a tile of 64 to 128 query rows; here a sequence has one query
// row per head, and a block per (sequence, head) would leave most SMs idle and read each key once
// per query head. So:
//   - one block per (sequence, kv head, part of the keys): the block's rows are the (query, query
//     head) pairs that read that kv head, 16 of them at most (mma.sync's M; more rows, more blocks),
//     so each key is read once per group of query heads;
//   - the keys are cut into parts (split-KV, device/split_kv.hpp): each part a block that writes
//     its O and L, a last kernel merges the parts by their logsumexp (step 1's merge once more);
//   - inside a block each warp streams its own tiles of BLOCK_N keys (tiles w, w + NUM_WARPS, ...) through
//     its own cp.async stages, with no barrier between warps, and keeps its own softmax state; the
//     warps' states merge through shared memory at the end, by the same rule.
// Decoding reads K and V once and does little with them: its speed is the memory bandwidth's. The
// stages keep STAGES - 1 tiles per warp in flight. The per-warp pieces (S = Q K^T, the online
// softmax, O += P V on mma.sync) are v5's (sm80/warp_products.cuh, device/warp_softmax.cuh).
// Runs on every GPU from sm_80 on; sm80/decode_launch.cuh launches it, product/decode.cu plans it.
#pragma once

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/split_kv.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/sm80/warp_products.cuh"

namespace fa2::flash {

// A configuration: what v5's warp pieces read (D, WARP_M, BLOCK_N, Q_IN_REGS, SWIZZLE, FLOAT16,
// CHUNKS) and the decoding block's own shape.
template <int D_, int NUM_WARPS_, int STAGES_, int BLOCK_N_ = 16, bool ROW_LOADS_ = true, bool FLOAT16_ = false>
struct DecodeConfig {
  static constexpr int D = D_;
  static constexpr int WARP_M = 1;  // the block's 16 rows, every warp the same ones
  static constexpr int BLOCK_M = 16;
  static constexpr int BLOCK_N = BLOCK_N_;  // keys of a warp's tile: 16 or 32
  static constexpr int NUM_WARPS = NUM_WARPS_;
  static constexpr int NUM_THREADS = 32 * NUM_WARPS;
  static constexpr int STAGES = STAGES_;  // a warp's tiles in shared memory: STAGES - 1 in flight
  static constexpr bool Q_IN_REGS = true;
  static constexpr bool SWIZZLE = true;
  static constexpr bool FLOAT16 = FLOAT16_;
  // How a warp's lanes copy a tile: true, whole rows per instruction (32 / CHUNKS rows, each lane
  // one 16-byte chunk), so that an instruction reads 2 to 8 rows of 64 to 256 bytes; false, one key
  // row per lane (lanes 16-31 the row's other half): 16 rows per instruction, two 16-byte pieces of
  // each.
  static constexpr bool ROW_LOADS = ROW_LOADS_;
  using Float16 = DecodeConfig<D_, NUM_WARPS_, STAGES_, BLOCK_N_, ROW_LOADS_, true>;
  static constexpr int CHUNKS = D / kChunkElems;
  static constexpr int TILE_ELEMS = BLOCK_N * D;
  // The warps' merge: each warp's O rows (padded by 4 floats against bank conflicts), m and l.
  static constexpr int MERGE_STRIDE = D + 4;
  static constexpr std::size_t q_bytes = BLOCK_M * D * sizeof(elem16);
  static constexpr std::size_t stage_bytes = std::size_t{NUM_WARPS} * STAGES * 2 * TILE_ELEMS * sizeof(elem16);
  static constexpr std::size_t merge_bytes = std::size_t{NUM_WARPS} * BLOCK_M * MERGE_STRIDE * sizeof(float);
  static constexpr std::size_t smem_bytes =
      q_bytes + std::max(stage_bytes, merge_bytes) + 2 * std::size_t{NUM_WARPS} * BLOCK_M * sizeof(float);
  static_assert(D == 32 || D == 64 || D == 128, "head dims 32, 64 and 128");
  static_assert(STAGES >= 2, "a tile lands while the one before computes");
  static_assert(BLOCK_N == 16 || (BLOCK_N == 32 && ROW_LOADS), "a lane looks up one key of a tile");
};

// The kernels' arguments, from FlashVarlenArgs (decode.cu's make_decode_params). Strides in elements.
struct DecodeParams {
  const elem16* Q;  // (T_q, H, D)
  const elem16* K;  // (rows, H_kv, D): packed sequences, or pages * page_size rows
  const elem16* V;
  elem16* O;      // (T_q, H, D)
  float* L;       // (H, T_q)
  float* O_part;  // splits > 1: (splits, T_q, H, D), then
  float* L_part;  // (splits, H, T_q)
  const std::int32_t* cu_seq_q;
  const std::int32_t* cu_seq_k;   // null when paged
  const std::int32_t* seqused_k;  // null: cu_seq_k's lengths
  const std::int32_t* block_table;
  index_t stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh, stride_lh, stride_lt;
  index_t block_table_stride;
  int page_size;  // 0: packed keys
  int batch, heads, kv_heads, kv_group, total_q;
  int total_k;           // rows of K and V: packed keys, or pages * page_size
  int max_q, max_k;      // the bounds the grid and the parts were planned for
  long long paged_keys;  // a paged cache: the keys a row of block_table can name
  int row_chunks;        // blocks of 16 rows per (sequence, kv head): cdiv(kv_group * max_q, 16)
  int splits;
  int window_left, window_right;  // bottom-right; -1: no bound
  float scale_log2;
};

// Masks the scores of keys k0 .. k0 + 15 that fall outside this lane's two rows' spans.
template <class Cfg>
__device__ __forceinline__ void mask_to_spans(ScoreFrags<Cfg>& s, int k0, const KeySpan (&span)[2], int lane) {
#pragma unroll
  for (int t = 0; t < Cfg::BLOCK_N / 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = k0 + t * 8 + mma_c_element(lane, e).col;
      const KeySpan& sp = span[e >> 1];
      if (key < sp.first || key > sp.last) s[0][t][e] = -INFINITY;
    }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS) decode_kernel(const DecodeParams p) {
  constexpr int D = Cfg::D, NW = Cfg::NUM_WARPS, S = Cfg::STAGES, BN = Cfg::BLOCK_N;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto* sQ = reinterpret_cast<elem16*>(smem_raw);
  auto* stages = reinterpret_cast<elem16*>(smem_raw + Cfg::q_bytes);
  auto* merge_o = reinterpret_cast<float*>(smem_raw + Cfg::q_bytes);  // the stages, once the keys are done
  auto* merge_m = reinterpret_cast<float*>(smem_raw + Cfg::q_bytes + std::max(Cfg::stage_bytes, Cfg::merge_bytes));
  float* merge_l = merge_m + NW * Cfg::BLOCK_M;

  // Which block: (sequence b, kv head, chunk of 16 rows), and the part of the keys.
  int item = static_cast<int>(blockIdx.x);
  const int chunk = item % p.row_chunks;
  item /= p.row_chunks;
  const int kv_head = item % p.kv_heads, b = item / p.kv_heads;
  const int split = static_cast<int>(blockIdx.y);
  // The sequence's rows, bounded by the tensors whatever the index arrays hold (split_kv.hpp).
  const DecodeSequence seq =
      decode_sequence(p.cu_seq_q, p.cu_seq_k, p.seqused_k, b, p.total_q, p.total_k, p.max_q, p.max_k, p.paged_keys);
  const int q_begin = seq.q_begin, n_q = seq.n_q, key_row0 = seq.key_row0, n_k = seq.n_k;
  const int g = p.kv_group, rows = n_q * g, row0 = chunk * Cfg::BLOCK_M;
  if (row0 >= rows) return;  // a sequence shorter than max_q: the whole block has nothing to do

  // Row r of the block is (query i, query head kv_head * g + h) with row0 + r = i * g + h: its
  // queries are i_first .. i_last, and split_kv.hpp's decode_block_keys says which keys they read.
  const int i_first = row0 / g, i_last = (min(rows, row0 + Cfg::BLOCK_M) - 1) / g;
  const BlockKeys block = decode_block_keys(i_first, i_last, n_q, n_k, p.window_left, p.window_right, BN);
  const int k_first = block.keys.first, k_last = block.keys.last;
  const TileRange part = split_tiles(block.tiles, p.splits, split);

  // Q's 16 rows, for every warp (rows past the sequence's are zeros and are never written).
  for (int i = static_cast<int>(threadIdx.x); i < Cfg::BLOCK_M * Cfg::CHUNKS; i += Cfg::NUM_THREADS) {
    const int r = i / Cfg::CHUNKS, c = i % Cfg::CHUNKS, row = row0 + r;
    const bool valid = row < rows;
    const elem16* src = p.Q + static_cast<index_t>(q_begin + row / g) * p.stride_qt +
                        static_cast<index_t>(kv_head * g + row % g) * p.stride_qh + c * kChunkElems;
    cp_async_16(smem_address(sQ + tile_offset<Cfg>(r, c)), valid ? src : p.Q, valid);
  }
  cp_async_commit();

  // This warp's tiles of the part: w, w + NW, ...; tile t holds keys k_first + 16 t .. + 15.
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int my_tiles = warp_tile_count(part, warp, NW);
  elem16* sK = stages + warp * S * 2 * Cfg::TILE_ELEMS;  // S stages of K, then S of V
  elem16* sV = sK + S * Cfg::TILE_ELEMS;
  const index_t kv_col = static_cast<index_t>(kv_head);
  // key_row(j): the cache row of key lane % BLOCK_N of tile j, -1 past the block's keys; in a paged
  // cache it reads the block table, and the loop asks one tile ahead, so that the read's latency
  // passes under a tile's products. load_tile spreads the rows over the lanes that copy them.
  const auto key_row = [&](int j) -> index_t {
    const int key = k_first + (part.begin + warp + j * NW) * BN + lane % BN;
    if (key > k_last) return -1;
    if (p.page_size > 0) {
      const int page =
          decode_page(p.block_table[b * p.block_table_stride + key / p.page_size], p.total_k / p.page_size);
      return static_cast<index_t>(page) * p.page_size + key % p.page_size;
    }
    return static_cast<index_t>(key_row0) + key;
  };
  const auto load_tile = [&](int j, index_t row) {
    elem16* k_dst = sK + (j % S) * Cfg::TILE_ELEMS;
    elem16* v_dst = sV + (j % S) * Cfg::TILE_ELEMS;
    const auto copy_chunk = [&](int r, int c, index_t cache_row) {
      const bool valid = cache_row >= 0;
      const index_t at_row = valid ? cache_row : 0;
      const int at = tile_offset<Cfg>(r, c);
      cp_async_16(smem_address(k_dst + at),
                  valid ? p.K + at_row * p.stride_kt + kv_col * p.stride_kh + c * kChunkElems : p.K, valid);
      cp_async_16(smem_address(v_dst + at),
                  valid ? p.V + at_row * p.stride_vt + kv_col * p.stride_vh + c * kChunkElems : p.V, valid);
    };
    if constexpr (Cfg::ROW_LOADS) {
      // Lane l copies chunk l % CHUNKS of row l / CHUNKS (+ 32 / CHUNKS per step); the rows' cache
      // positions come from the lanes that hold them (lane r: key r of the tile).
      constexpr int rows_per_step = 32 / Cfg::CHUNKS;
#pragma unroll
      for (int step = 0; step < BN / rows_per_step; ++step) {
        const int r = step * rows_per_step + lane / Cfg::CHUNKS;
        copy_chunk(r, lane % Cfg::CHUNKS, __shfl_sync(0xffffffffu, row, r));
      }
    } else {
      constexpr int half_chunks = Cfg::CHUNKS / 2;
#pragma unroll
      for (int cc = 0; cc < half_chunks; ++cc) copy_chunk(lane % 16, (lane / 16) * half_chunks + cc, row);
    }
  };
#pragma unroll
  for (int j = 0; j < S - 1; ++j) {
    if (j < my_tiles) load_tile(j, key_row(j));
    cp_async_commit();
  }
  index_t next_row = S - 1 < my_tiles ? key_row(S - 1) : -1;
  cp_async_wait<S - 1>();  // Q, committed before this warp's S - 1 tiles, has landed
  __syncthreads();         // ... for every thread's chunks of it
  const WarpPlace w{lane, 0, 0};
  QFrags<Cfg> qf;
  load_q_fragments<Cfg>(qf, sQ, w);

  // This lane's two rows (g_row and g_row + 8 of the 16) and the keys each sees.
  KeySpan span[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + lane / 4 + 8 * h;
    span[h] = row < rows ? bottom_right_keys(row / g, n_q, n_k, p.window_left, p.window_right) : KeySpan{0, k_last};
  }
  RowState<Cfg> st;
  init_row_state<Cfg>(st);
  for (int j = 0; j < my_tiles; ++j) {
    cp_async_wait<S - 2>();  // tile j has landed (tiles j + 1 .. j + S - 2 may still be in flight)
    __syncwarp();            // ... for every lane's chunks; and tile j - 1's stage is no longer read
    if (j + S - 1 < my_tiles) load_tile(j + S - 1, next_row);
    cp_async_commit();
    next_row = j + S < my_tiles ? key_row(j + S) : -1;
    const int k0 = k_first + (part.begin + warp + j * NW) * BN;
    const int stage = j % S;
    ScoreFrags<Cfg> s;
    compute_scores<Cfg>(s, qf, sQ, sK + stage * Cfg::TILE_ELEMS, w);
    if (k0 < block.unmasked.first || k0 + BN - 1 > block.unmasked.last) mask_to_spans<Cfg>(s, k0, span, lane);
    online_softmax<Cfg>(s, st, p.scale_log2);
    accumulate_pv<Cfg>(st, s, sV + stage * Cfg::TILE_ELEMS, lane);
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with its stages: they hold the merge now

  // The warps' merge: with M = max_w m_w, warp w's O and l weigh 2^(m_w - M) (m in log2 units).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = st.l[0][h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (lane % 4 == 0) {
      merge_m[warp * Cfg::BLOCK_M + lane / 4 + 8 * h] = st.m[0][h];
      merge_l[warp * Cfg::BLOCK_M + lane / 4 + 8 * h] = l;
    }
  }
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = lane / 4 + 8 * h;
    float m_all = -INFINITY;
#pragma unroll
    for (int v = 0; v < NW; ++v) m_all = fmaxf(m_all, merge_m[v * Cfg::BLOCK_M + r]);
    const float weight = st.m[0][h] == -INFINITY ? 0.0f : exp2f(st.m[0][h] - m_all);
    float* out = merge_o + (warp * Cfg::BLOCK_M + r) * Cfg::MERGE_STRIDE + 2 * (lane % 4);
#pragma unroll
    for (int t = 0; t < D / 8; ++t) {
      *reinterpret_cast<float2*>(out + t * 8) = make_float2(st.o[0][t][2 * h] * weight, st.o[0][t][2 * h + 1] * weight);
    }
  }
  __syncthreads();

  // Thread by thread, 4 columns of one row: the warps' sum, over l, to O (or this part's O).
  constexpr float kLn2 = 0.6931471805599453f;
  const bool one_part = p.splits == 1;
  for (int i = static_cast<int>(threadIdx.x); i < Cfg::BLOCK_M * (D / 4); i += Cfg::NUM_THREADS) {
    const int r = i / (D / 4), c = 4 * (i % (D / 4)), row = row0 + r;
    if (row >= rows) continue;
    float m_all = -INFINITY;
#pragma unroll
    for (int v = 0; v < NW; ++v) m_all = fmaxf(m_all, merge_m[v * Cfg::BLOCK_M + r]);
    float l = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int v = 0; v < NW; ++v) {
      const float m_v = merge_m[v * Cfg::BLOCK_M + r];
      if (m_v != -INFINITY) l += merge_l[v * Cfg::BLOCK_M + r] * exp2f(m_v - m_all);
      const float4 o = *reinterpret_cast<const float4*>(merge_o + (v * Cfg::BLOCK_M + r) * Cfg::MERGE_STRIDE + c);
      acc.x += o.x, acc.y += o.y, acc.z += o.z, acc.w += o.w;
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // l = 0: this part (or the row) saw no key
    const int t = q_begin + row / g, head = kv_head * g + row % g;
    // A row that saw no key: L = +inf when it is the whole row, -inf for a part (which weighs 0).
    const float lse = l > 0.0f ? (m_all + log2f(l)) * kLn2 : (one_part ? INFINITY : -INFINITY);
    if (one_part) {
      elem16* o = p.O + static_cast<index_t>(t) * p.stride_ot + static_cast<index_t>(head) * p.stride_oh + c;
      reinterpret_cast<std::uint32_t*>(o)[0] = pack_x2<Cfg::FLOAT16>(acc.x * inv, acc.y * inv);
      reinterpret_cast<std::uint32_t*>(o)[1] = pack_x2<Cfg::FLOAT16>(acc.z * inv, acc.w * inv);
      if (c == 0) p.L[static_cast<index_t>(head) * p.stride_lh + static_cast<index_t>(t) * p.stride_lt] = lse;
    } else {
      const index_t at = (static_cast<index_t>(split) * p.total_q + t) * p.heads + head;
      *reinterpret_cast<float4*>(p.O_part + at * D + c) =
          make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
      if (c == 0) p.L_part[(static_cast<index_t>(split) * p.heads + head) * p.total_q + t] = lse;
    }
  }
}

// The parts' merge: one warp per (query row t, head), 4 columns per lane. Rows past
// cu_seq_q[batch] belong to no sequence and are left alone.
template <int D, bool FLOAT16>
__global__ void __launch_bounds__(128) decode_combine_kernel(const DecodeParams p) {
  const index_t item = static_cast<index_t>(blockIdx.x) * 4 + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int t = static_cast<int>(item / p.heads), head = static_cast<int>(item % p.heads);
  if (t >= p.cu_seq_q[p.batch]) return;
  const index_t lse_stride = static_cast<index_t>(p.heads) * p.total_q;
  const float* lse = p.L_part + static_cast<index_t>(head) * p.total_q + t;
  const SplitMerge merge = merge_splits(lse, lse_stride, p.splits);
  const int c = 4 * lane;
  if (c < D) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (merge.m != -INFINITY) {
      for (int s = 0; s < p.splits; ++s) {
        const float w = split_weight(merge, lse[s * lse_stride]);
        if (w == 0.0f) continue;  // a part that saw no key
        const float4 o = *reinterpret_cast<const float4*>(
            p.O_part + ((static_cast<index_t>(s) * p.total_q + t) * p.heads + head) * D + c);
        acc.x += w * o.x, acc.y += w * o.y, acc.z += w * o.z, acc.w += w * o.w;
      }
    }
    elem16* o = p.O + static_cast<index_t>(t) * p.stride_ot + static_cast<index_t>(head) * p.stride_oh + c;
    reinterpret_cast<std::uint32_t*>(o)[0] = pack_x2<FLOAT16>(acc.x, acc.y);
    reinterpret_cast<std::uint32_t*>(o)[1] = pack_x2<FLOAT16>(acc.z, acc.w);
  }
  if (lane == 0) {
    p.L[static_cast<index_t>(head) * p.stride_lh + static_cast<index_t>(t) * p.stride_lt] =
        merge.m == -INFINITY ? INFINITY : merge.m + merge.log_l;
  }
}

}  // namespace fa2::flash
