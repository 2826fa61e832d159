// The fast backward: FlashAttention-2's backward (step05's flash_bwd_kernel.hpp, the same three
// phases and the same KV-outer loop) written against the tensor cores like v5's forward
// (sm80/forward.cuh): mma.sync m16n8k16, ldmatrix, cp.async double buffering, XOR-swizzled shared
// memory, accumulators in registers. bf16, head dims 32, 64, 128. Host side: product/backward.cu.
//
//   preprocess  one thread per 16-byte chunk of a row: D_i = rowsum(dO_i * O_i); dQ_accum = 0
//   kernel      one block per (key tile of BLOCK_N keys, batch element): dK_j and dV_j stay in
//               registers while the block walks the query tiles; dQ shares go to dQ_accum with
//               float32 atomics
//   convert     dQ = scale * dQ_accum, in bf16
//
// The layout of the work inside a block. Warp w owns WARP_KEYS = 16 (or 32) keys of the key
// tile and computes everything whose rows are keys, so that no product needs a transposed
// register tile (shapes below for 16 keys):
//   S^T  = K_j Q_i^T          (16 keys, BLOCK_M queries)  A: K_j (registers), B: Q_i (ldmatrix)
//   P^T  = 2^(S^T * scale * log2 e - L_i * log2 e)        in place; 0 where masked
//   dP^T = V_j dO_i^T                                     A: V_j (registers), B: dO_i
//   dV_j += P^T dO_i          (16 keys, D)                A: P^T straight from the accumulators
//   dS^T = P^T * (dP^T - D_i)                             in place of dP^T
//   dK_j += dS^T Q_i          (16 keys, D)                A: dS^T straight from the accumulators
// dQ_i's share, dS K_j, has queries as rows: dS^T goes through shared memory (bf16, one store
// per element, read back with a transposing ldmatrix) and the block's warps split the
// (BLOCK_M, D) product between them, 16 query rows by DQ_COLS columns each. The scale is applied
// once, to dK at the end and to dQ in the convert phase.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/device/backward_phases.cuh"
#include "step07_benchmark/kernels/device/dq_turns.cuh"
#include "step07_benchmark/kernels/device/smem_tiles.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

// What the backward's configurations vary (defaults: the tuned choice for head dim 64).
struct FastBwdOptions {
  int block_m = 64;            // queries per step of the loop over query tiles
  bool kv_in_regs = true;      // the warp's K and V fragments loaded once into registers; false:
                               // re-read from shared memory at every product (frees registers)
  int warps = 8;               // key tiles of 16 * key_tiles * warps; 4 warps run two blocks per SM
  int key_tiles = 1;           // 16-key tiles per warp: 2 uses every Q and dO fragment twice
  bool deferred_dq = false;    // dS^T double-buffered: tile i's dQ share is computed during tile
                               // i + 1, so one barrier per step instead of two
  bool deterministic = false;  // dQ's shares added in turns (dq_turns.cuh); not a row's choice:
                               // every configuration is built both ways (Cfg::Deterministic)
  bool window = false;         // a sliding window's query-tile range and masks; also built both
                               // ways (Cfg::Windowed)
  bool float16 = false;        // fp16 elements instead of bf16; also built both ways (Cfg::Float16)
};

template <int D_, bool CAUSAL_, FastBwdOptions OPT = FastBwdOptions{}>
struct FastBwdConfig {
  static constexpr int D = D_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int NUM_WARPS = OPT.warps;
  // Eight warps per SM either way: one block of 8, or two independent blocks of 4 (one's
  // barriers and softmax then overlap the other's products).
  static constexpr int MIN_BLOCKS_PER_SM = 8 / NUM_WARPS;
  static constexpr int NUM_THREADS = 32 * NUM_WARPS;
  static constexpr int KEY_TILES = OPT.key_tiles;
  static constexpr int WARP_KEYS = 16 * KEY_TILES;
  static constexpr int BLOCK_N = WARP_KEYS * NUM_WARPS;  // keys per block
  static constexpr int BLOCK_M = OPT.block_m;            // queries per step
  static constexpr bool KV_IN_REGS = OPT.kv_in_regs;
  static constexpr bool DEFERRED_DQ = OPT.deferred_dq;
  static constexpr int DS_STAGES = DEFERRED_DQ ? 2 : 1;
  static constexpr bool DETERMINISTIC = OPT.deterministic;
  using Deterministic = FastBwdConfig<D_, CAUSAL_, deterministic_twin(OPT)>;
  static constexpr bool WINDOW = OPT.window;
  using Windowed = FastBwdConfig<D_, CAUSAL_, windowed_twin(OPT)>;
  static constexpr bool FLOAT16 = OPT.float16;
  using Float16 = FastBwdConfig<D_, CAUSAL_, float16_twin(OPT)>;
  // What the forward's tile helpers (tile_offset, load_tile_async, the ldmatrix addresses) read.
  static constexpr bool SWIZZLE = true;
  static constexpr int CHUNKS = D / 8;
  // dQ's share, (BLOCK_M, D): warp w takes rows 16 (w % DQ_ROW_GROUPS) and DQ_COLS columns.
  static constexpr int DQ_ROW_GROUPS = BLOCK_M / 16;
  static constexpr int DQ_COLS = D * DQ_ROW_GROUPS / NUM_WARPS;
  static constexpr std::size_t smem_bytes =
      static_cast<std::size_t>(2 * BLOCK_N * D                     // K_j, V_j
                               + 2 * 2 * BLOCK_M * D               // Q_i, dO_i, two stages each
                               + DS_STAGES * BLOCK_N * BLOCK_M) *  // dS^T
          sizeof(elem16) +
      static_cast<std::size_t>(2 * 2 * BLOCK_M) * sizeof(float);  // L_i, D_i, two stages each
  static_assert(D == 32 || D == 64 || D == 128, "head dims 32, 64 and 128");
  static_assert(BLOCK_M == 32 || BLOCK_M == 64 || BLOCK_M == 128, "query tiles of 32, 64 or 128 rows");
  static_assert(NUM_WARPS == 4 || NUM_WARPS == 8, "4 or 8 warps");
  static_assert(KEY_TILES == 1 || (KEY_TILES == 2 && !KV_IN_REGS),
                "two key tiles per warp leave no registers for K, V");
  static_assert(NUM_WARPS % DQ_ROW_GROUPS == 0 && DQ_COLS % 16 == 0, "dS K_j must split evenly over the warps");
};

// The dS^T tile in shared memory: BLOCK_N rows (keys) of BLOCK_M bf16 (queries), swizzled like
// the D-wide tiles. Only the members tile_offset and the ldmatrix addresses read.
template <class Cfg>
struct DsTile {
  static constexpr int D = Cfg::BLOCK_M;  // the row length, in elements
  static constexpr int CHUNKS = Cfg::BLOCK_M / 8;
  static constexpr bool SWIZZLE = true;
};

// ---- phase 2: the key-tile kernel ----------------------------------------------------------------
// A warp's tiles with keys as rows, KEY_TILES tiles of 16 keys: by BLOCK_M queries (S^T, P^T,
// dP^T, dS^T) and by D (dK_j, dV_j). In key tile mt, lane (g = lane / 4, c = 2 (lane % 4)) holds
// keys 16 mt + g and 16 mt + g + 8, columns c and c + 1 of each 8-column mma tile.
template <class Cfg>
using KeyByQuery = float[Cfg::KEY_TILES][Cfg::BLOCK_M / 8][4];
template <class Cfg>
using KeyByDim = float[Cfg::KEY_TILES][Cfg::D / 8][4];
// K_j or V_j fragments of the warp's 16 keys, as A operands (one per 16-wide slice of D).
template <class Cfg>
using KeyFrags = std::uint32_t[Cfg::KV_IN_REGS ? Cfg::D / 16 : 1][4];

template <class Cfg>
__device__ __forceinline__ void load_key_fragments(KeyFrags<Cfg>& f, const elem16* sX, int key0, int lane) {
  if constexpr (Cfg::KV_IN_REGS) {
#pragma unroll
    for (int kk = 0; kk < Cfg::D / 16; ++kk) ldmatrix_x4(f[kk], addr_rows_then_chunks<Cfg>(sX, key0, 2 * kk, lane));
  }
}

// acc = X_j Y_i^T for the warp's keys: X_j is K_j or V_j (A operand, registers or shared
// memory), Y_i is Q_i or dO_i, (BLOCK_M, D) in shared memory (B operand, as K in the forward;
// each B fragment serves the warp's KEY_TILES key tiles).
template <class Cfg>
__device__ __forceinline__ void keys_times_rows_t(KeyByQuery<Cfg>& acc, const KeyFrags<Cfg>& xf, const elem16* sX,
                                                  const elem16* sY, int key0, int lane) {
  constexpr int KT = Cfg::KEY_TILES;
#pragma unroll
  for (int mt = 0; mt < KT; ++mt)
#pragma unroll
    for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) acc[mt][t][0] = acc[mt][t][1] = acc[mt][t][2] = acc[mt][t][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < Cfg::D / 16; ++kk) {
    std::uint32_t a[KT][4];
#pragma unroll
    for (int mt = 0; mt < KT; ++mt) {
      if constexpr (Cfg::KV_IN_REGS) {
#pragma unroll
        for (int r = 0; r < 4; ++r) a[mt][r] = xf[kk][r];
      } else {
        ldmatrix_x4(a[mt], addr_rows_then_chunks<Cfg>(sX, key0 + 16 * mt, 2 * kk, lane));
      }
    }
#pragma unroll
    for (int nn = 0; nn < Cfg::BLOCK_M / 16; ++nn) {
      std::uint32_t b[4];
      ldmatrix_x4(b, addr_chunks_then_rows<Cfg>(sY, nn * 16, 2 * kk, lane));
#pragma unroll
      for (int mt = 0; mt < KT; ++mt) {
        mma_16816<Cfg::FLOAT16>(acc[mt][2 * nn], a[mt], b[0], b[1]);
        mma_16816<Cfg::FLOAT16>(acc[mt][2 * nn + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// acc (keys, D) += X^T Y_i, where X^T (keys, BLOCK_M queries) is still in accumulator registers
// (P^T or dS^T) and Y_i is dO_i or Q_i in shared memory. Two neighbouring 16 x 8 accumulator
// tiles make one 16 x 16 A fragment once packed to bf16, as P in the forward's P V.
template <class Cfg>
__device__ __forceinline__ void accumulate_keys_by_dim(KeyByDim<Cfg>& acc, const KeyByQuery<Cfg>& x, const elem16* sY,
                                                       int lane) {
  constexpr int KT = Cfg::KEY_TILES;
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_M / 16; ++kk) {
    std::uint32_t a[KT][4];
#pragma unroll
    for (int mt = 0; mt < KT; ++mt) {
      a[mt][0] = pack_x2<Cfg::FLOAT16>(x[mt][2 * kk][0], x[mt][2 * kk][1]);
      a[mt][1] = pack_x2<Cfg::FLOAT16>(x[mt][2 * kk][2], x[mt][2 * kk][3]);
      a[mt][2] = pack_x2<Cfg::FLOAT16>(x[mt][2 * kk + 1][0], x[mt][2 * kk + 1][1]);
      a[mt][3] = pack_x2<Cfg::FLOAT16>(x[mt][2 * kk + 1][2], x[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dd = 0; dd < Cfg::D / 16; ++dd) {
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, addr_rows_then_chunks<Cfg>(sY, kk * 16, 2 * dd, lane));
#pragma unroll
      for (int mt = 0; mt < KT; ++mt) {
        mma_16816<Cfg::FLOAT16>(acc[mt][2 * dd], a[mt], b[0], b[1]);
        mma_16816<Cfg::FLOAT16>(acc[mt][2 * dd + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// Where one warp stands: its lane, its first key inside the block and in the sequence.
struct KeyWarp {
  int lane, key_row0, key0;
};

// S^T becomes P^T = 2^(S^T scale_log2 - L log2 e) in place. Keys past N_KEYS (the padded last
// tile; their K rows are zero, so without the mask P would be 2^-L, which overflows for very
// negative L), when causal keys after the query (top-left mask), and keys outside a sliding
// window give exactly 0 (a query that sees no key has L = +inf, and P = 0 throughout). Padded
// query rows need no mask: Q, dO, L and D_i are zero-filled there, so P = 1 but dP = 0 and
// dS = 0, nothing reaches dK or dV, and their dQ rows are never added.
template <class Cfg>
__device__ __forceinline__ void probabilities(KeyByQuery<Cfg>& s, const float* sL, int q0, const FastBwdParams& p,
                                              const KeyWarp& w) {
  const int N_KEYS = p.N_KEYS;
  const float scale_log2 = p.scale_log2;
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
  const bool ragged = w.key0 + Cfg::WARP_KEYS > N_KEYS;
  const bool straddles = Cfg::CAUSAL && w.key0 + Cfg::WARP_KEYS - 1 > q0;  // a key of the warp after a query
  // A window's edge crosses the warp's keys for some query of the step: its left edge (the last
  // query's first key) or its right edge (the first query's last key).
  const bool window_edge = Cfg::WINDOW && (w.key0 < q0 + Cfg::BLOCK_M - 1 - p.window_left ||
                                           w.key0 + Cfg::WARP_KEYS - 1 > q0 + p.window_right);
#pragma unroll
  for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) {
    const float2 L = *reinterpret_cast<const float2*>(sL + t * 8 + c);
    const float neg_l[2] = {-L.x * kLog2e, -L.y * kLog2e};
#pragma unroll
    for (int mt = 0; mt < Cfg::KEY_TILES; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = fmaf(s[mt][t][e], scale_log2, neg_l[e & 1]);
        if (ragged || straddles || window_edge) {
          const int key = w.key0 + 16 * mt + g + 8 * (e >> 1), query = q0 + t * 8 + c + (e & 1);
          if (key >= N_KEYS || (Cfg::CAUSAL && key > query)) x = -INFINITY;
          if (window_edge && (key < query - p.window_left || key > query + p.window_right)) x = -INFINITY;
        }
        s[mt][t][e] = exp2_approx(x);
      }
  }
}

// dP^T becomes dS^T = P^T * (dP^T - D_i) in place.
template <class Cfg>
__device__ __forceinline__ void score_gradients(KeyByQuery<Cfg>& dp, const KeyByQuery<Cfg>& p, const float* sD,
                                                int lane) {
  const int c = 2 * (lane % 4);
#pragma unroll
  for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) {
    const float2 Di = *reinterpret_cast<const float2*>(sD + t * 8 + c);
#pragma unroll
    for (int mt = 0; mt < Cfg::KEY_TILES; ++mt) {
      dp[mt][t][0] = p[mt][t][0] * (dp[mt][t][0] - Di.x);
      dp[mt][t][1] = p[mt][t][1] * (dp[mt][t][1] - Di.y);
      dp[mt][t][2] = p[mt][t][2] * (dp[mt][t][2] - Di.x);
      dp[mt][t][3] = p[mt][t][3] * (dp[mt][t][3] - Di.y);
    }
  }
}

// dS^T (bf16) into shared memory, keys as rows, for dQ's product.
template <class Cfg>
__device__ __forceinline__ void store_score_gradients(elem16* sdS, const KeyByQuery<Cfg>& ds, const KeyWarp& w) {
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
#pragma unroll
  for (int mt = 0; mt < Cfg::KEY_TILES; ++mt)
#pragma unroll
    for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) {
      const int row = w.key_row0 + 16 * mt + g;
      *reinterpret_cast<std::uint32_t*>(sdS + tile_offset<DsTile<Cfg>>(row, t) + c) =
          pack_x2<Cfg::FLOAT16>(ds[mt][t][0], ds[mt][t][1]);
      *reinterpret_cast<std::uint32_t*>(sdS + tile_offset<DsTile<Cfg>>(row + 8, t) + c) =
          pack_x2<Cfg::FLOAT16>(ds[mt][t][2], ds[mt][t][3]);
    }
}

// dQ_accum[q0 ..] += dS K_j for this warp's 16 query rows and DQ_COLS columns. A: dS, read from
// dS^T (keys as rows) with a transposing ldmatrix; B: K_j, as V in the forward's P V.
template <class Cfg>
__device__ __forceinline__ void accumulate_query_gradients(const FastBwdParams& p, index_t bh, int q0,
                                                           const elem16* sdS, const elem16* sK, int warp, int lane) {
  constexpr int COLS = Cfg::DQ_COLS;
  const int row_group = warp % Cfg::DQ_ROW_GROUPS, col0 = (warp / Cfg::DQ_ROW_GROUPS) * COLS;
  float acc[COLS / 8][4];
#pragma unroll
  for (int t = 0; t < COLS / 8; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_N / 16; ++kk) {
    std::uint32_t a[4];
    ldmatrix_x4_trans(a, addr_chunks_then_rows<DsTile<Cfg>>(sdS, kk * 16, 2 * row_group, lane));
#pragma unroll
    for (int dd = 0; dd < COLS / 16; ++dd) {
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, addr_rows_then_chunks<Cfg>(sK, kk * 16, col0 / 8 + 2 * dd, lane));
      mma_16816<Cfg::FLOAT16>(acc[2 * dd], a, b[0], b[1]);
      mma_16816<Cfg::FLOAT16>(acc[2 * dd + 1], a, b[2], b[3]);
    }
  }
  const int g = lane / 4, c = 2 * (lane % 4);
  float* const base = p.dQ_accum + bh * p.stride_accb;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int query = q0 + row_group * 16 + g + 8 * h;
    if (query >= p.N_QUERIES) continue;
    float* const row = base + static_cast<index_t>(query) * p.stride_accq + col0 + c;
#pragma unroll
    for (int t = 0; t < COLS / 8; ++t) atomic_add_f32x2(row + t * 8, acc[t][2 * h], acc[t][2 * h + 1]);
  }
}

// dK_j (times the scale) and dV_j, rows past N_KEYS skipped.
template <class Cfg>
__device__ __forceinline__ void write_key_gradients(const FastBwdParams& p, index_t bh, const KeyByDim<Cfg>& dk,
                                                    const KeyByDim<Cfg>& dv, const KeyWarp& w) {
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
#pragma unroll
  for (int mt = 0; mt < Cfg::KEY_TILES; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = w.key0 + 16 * mt + g + 8 * h;
      if (key >= p.N_KEYS) continue;
      elem16* const dk_row = p.dK + bh * p.stride_dkb + static_cast<index_t>(key) * p.stride_dkk + c;
      elem16* const dv_row = p.dV + bh * p.stride_dvb + static_cast<index_t>(key) * p.stride_dvk + c;
#pragma unroll
      for (int t = 0; t < Cfg::D / 8; ++t) {
        *reinterpret_cast<std::uint32_t*>(dk_row + t * 8) =
            pack_x2<Cfg::FLOAT16>(dk[mt][t][2 * h] * p.scale, dk[mt][t][2 * h + 1] * p.scale);
        *reinterpret_cast<std::uint32_t*>(dv_row + t * 8) =
            pack_x2<Cfg::FLOAT16>(dv[mt][t][2 * h], dv[mt][t][2 * h + 1]);
      }
    }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS, Cfg::MIN_BLOCKS_PER_SM) fast_bwd_kernel(const FastBwdParams p) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N, D = Cfg::D;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto* sK = reinterpret_cast<elem16*>(smem_raw);                       // (BLOCK_N, D)
  elem16* sV = sK + BN * D;                                             // (BLOCK_N, D)
  elem16* sQ = sV + BN * D;                                             // 2 stages x (BLOCK_M, D)
  elem16* sdO = sQ + 2 * BM * D;                                        // 2 stages x (BLOCK_M, D)
  elem16* sdS = sdO + 2 * BM * D;                                       // DS_STAGES x (BLOCK_N, BLOCK_M): dS^T
  auto* sL = reinterpret_cast<float*>(sdS + Cfg::DS_STAGES * BN * BM);  // 2 stages x BLOCK_M
  float* sD = sL + 2 * BM;                                              // 2 stages x BLOCK_M

  // The grid is (batch, key tiles), x fastest: blocks start in the order of their key tile over
  // every (batch, head) at once. Causal, key tile 0 meets every query tile and the last one the
  // fewest, so the heaviest blocks of all heads go first and the light ones fill the tail
  // (longest-processing-time first).
  // Deterministic, the order is reversed (dq_turns.cuh says why).
  const int key_tile = key_tile_of_block<Cfg::DETERMINISTIC>();
  const int k0 = key_tile * BN;
  const index_t kv = blockIdx.x;  // the batch element of K and V
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const KeyWarp w{static_cast<int>(threadIdx.x) % 32, warp * Cfg::WARP_KEYS, k0 + warp * Cfg::WARP_KEYS};

  // The query tiles it meets, of every query batch element of its group (one, without grouped-
  // query attention).
  using Walk = QueryWalk<BM, BN, Cfg::CAUSAL, Cfg::DETERMINISTIC, Cfg::WINDOW>;

  // dQ_i's share of step t's query tile (dS^T in sdS_t) into dQ_accum; deterministic, in this key
  // tile's turn (dq_turns.cuh): thread 0 waits for it, the block's barrier passes it on, and each
  // warp increments the counter once it has added (the key tiles after this one: NUM_WARPS each).
  const auto add_query_share = [&](int t, const elem16* sdS_t) {
    const index_t bh = Walk::bh(p, t);
    const int m = Walk::m(p, t);
    std::int32_t* const counter = p.dq_semaphores + bh * p.stride_semb + m;
    if constexpr (Cfg::DETERMINISTIC) {
      if (threadIdx.x == 0) {
        const int last =
            last_key_tile(m, static_cast<int>(gridDim.y), BM, BN, Cfg::CAUSAL, Cfg::WINDOW ? p.window_right : -1);
        const int after = last - key_tile;
        wait_for_turn(counter, Cfg::NUM_WARPS * after);
      }
      __syncthreads();
    }
    accumulate_query_gradients<Cfg>(p, bh, m * BM, sdS_t, sK, warp, w.lane);
    if constexpr (Cfg::DETERMINISTIC) {
      __syncwarp();
      if (w.lane == 0) pass_turn(counter);
    }
  };

  // Step t's Q_i, dO_i, L_i and D_i into stage `stage`, in the background; rows past N_QUERIES
  // zero-filled.
  const auto load_query_tile = [&](int t, int stage) {
    const index_t bh = Walk::bh(p, t);
    const int q0 = Walk::m(p, t) * BM;
    load_tile_async<Cfg, BM>(sQ + stage * BM * D, p.Q + bh * p.stride_qb, p.stride_qq, q0, p.N_QUERIES);
    load_tile_async<Cfg, BM>(sdO + stage * BM * D, p.dO + bh * p.stride_dob, p.stride_doq, q0, p.N_QUERIES);
    const int r = static_cast<int>(threadIdx.x);
    if (r < BM) {
      const bool valid = q0 + r < p.N_QUERIES;
      const index_t q = valid ? q0 + r : 0;
      cp_async_4(smem_address(sL + stage * BM + r), p.L + bh * p.stride_lb + q * p.stride_lq, valid);
      cp_async_4(smem_address(sD + stage * BM + r), p.D_rows + bh * p.stride_Db + q * p.stride_Dq, valid);
    }
  };

  KeyByDim<Cfg> dk, dv;
#pragma unroll
  for (int mt = 0; mt < Cfg::KEY_TILES; ++mt)
#pragma unroll
    for (int t = 0; t < D / 8; ++t) {
      dk[mt][t][0] = dk[mt][t][1] = dk[mt][t][2] = dk[mt][t][3] = 0.0f;
      dv[mt][t][0] = dv[mt][t][1] = dv[mt][t][2] = dv[mt][t][3] = 0.0f;
    }
  KeyFrags<Cfg> kf, vf;

  if (Walk::steps(p) > 0) {
    load_tile_async<Cfg, BN>(sK, p.K + kv * p.stride_kb, p.stride_kk, k0, p.N_KEYS);
    load_tile_async<Cfg, BN>(sV, p.V + kv * p.stride_vb, p.stride_vk, k0, p.N_KEYS);
    load_query_tile(0, 0);
    cp_async_commit();
  }
  for (int t = 0; t < Walk::steps(p); ++t) {
    const int stage = t & 1;
    // Step t's tile has landed, and every warp is done with step t - 1: its stage and sdS are free.
    cp_async_wait<0>();
    __syncthreads();
    if (t + 1 < Walk::steps(p)) load_query_tile(t + 1, stage ^ 1);
    cp_async_commit();
    if (t == 0) {
      load_key_fragments<Cfg>(kf, sK, w.key_row0, w.lane);
      load_key_fragments<Cfg>(vf, sV, w.key_row0, w.lane);
    }
    const elem16* sQi = sQ + stage * BM * D;
    const elem16* sdOi = sdO + stage * BM * D;
    const int q0 = Walk::m(p, t) * BM;

    KeyByQuery<Cfg> s, dp;
    keys_times_rows_t<Cfg>(s, kf, sK, sQi, w.key_row0, w.lane);  // S^T = K_j Q_i^T
    probabilities<Cfg>(s, sL + stage * BM, q0, p, w);
    keys_times_rows_t<Cfg>(dp, vf, sV, sdOi, w.key_row0, w.lane);  // dP^T = V_j dO_i^T
    accumulate_keys_by_dim<Cfg>(dv, s, sdOi, w.lane);              // dV_j += P^T dO_i
    score_gradients<Cfg>(dp, s, sD + stage * BM, w.lane);          // dS^T = P^T (dP^T - D_i)
    accumulate_keys_by_dim<Cfg>(dk, dp, sQi, w.lane);              // dK_j += dS^T Q_i
    if constexpr (Cfg::DEFERRED_DQ) {
      // dS^T of step t - 1 was complete at this step's barrier; its buffer was last read before
      // it, by step t - 2's dQ, so step t's dS^T may go to the other one meanwhile.
      if (t > 0) add_query_share(t - 1, sdS + ((t - 1) & 1) * BN * BM);
      store_score_gradients<Cfg>(sdS + (t & 1) * BN * BM, dp, w);
    } else {
      store_score_gradients<Cfg>(sdS, dp, w);
      __syncthreads();  // all of dS^T is in shared memory
      add_query_share(t, sdS);
    }
  }
  if constexpr (Cfg::DEFERRED_DQ) {
    if (Walk::steps(p) > 0) {
      __syncthreads();  // the last step's dS^T is complete
      const int last = Walk::steps(p) - 1;
      add_query_share(last, sdS + (last & 1) * BN * BM);
    }
  }
  cp_async_wait<0>();  // nothing may still be landing when the block ends
  write_key_gradients<Cfg>(p, kv, dk, dv, w);
}

}  // namespace fa2::flash
