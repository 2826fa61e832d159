// The ladder: the step05 kernel (same tile pointers, same tile arithmetic, same WMMA products
// through shared memory) at 64 x 64 tiles, with the article's first fixes switched on one by one.
// Variant 1 is step05's own kernel with larger tiles (kernels/lab/step05_tiles.cu); this file adds
//   2. causal_skip     the key loop stops at the diagonal instead of masking whole tiles away
//   3. exp2            scale * log2(e) folded into the scores, then 2^x instead of e^x
//   4. mask_last_only  the mask runs only on tiles that need it: the padded last tile and the
//                      tiles that cross the causal diagonal
// Runs on the host (tests in CI) and on the GPU, like step05. Launchers: ladder_host.cpp and
// ladder.cu; the variants table (kernels/lab/variants.cpp) lists them. Its solution regions are
// compiled with step05's code (cmake/Fa2SolutionRegions.cmake); its own regions (the log2 units of
// variant 3) are an exercise of step 7 in the starter kit.
#pragma once

#include <limits>

#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"
#include "step05_fa2_kernel/flash_fwd_params.hpp"
#include "step05_fa2_kernel/tile_dot.hpp"

namespace fa2::ladder {

struct Features {
  bool causal_skip = false;
  bool exp2 = false;
  bool mask_last_only = false;
};

template <class Cfg, Features F>
struct LadderKernel {
  using T = typename Cfg::T;
  static constexpr int D = Cfg::D;
  static constexpr int Q_TILE = Cfg::Q_TILE;
  static constexpr int K_TILE = Cfg::K_TILE;
  static constexpr int num_threads = Cfg::num_warps * 32;
  using Params = FlashFwdParams<T>;

  struct Shared {  // rows padded against bank conflicts (tile_dot.hpp)
    Tile<T, Block<Q_TILE, D>, kSmemPad> Q_i;
    Tile<T, Block<K_TILE, D>, kSmemPad> K_j;
    Tile<T, Block<K_TILE, D>, kSmemPad> V_j;
    DotStaging<T, Q_TILE, K_TILE, D> stage;
  };

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step07 full: the whole program of step 5 with the rungs' features: causal_skip, exp2 and mask_last_only uses(prog, p)
    auto& smem = prog.template shared<Shared>();
    const index_t query_tile_index = prog.program_id(0);
    const index_t batch_index = prog.program_id(1);
    const index_t kv_index = batch_index / p.kv_group;  // its K and V (grouped-query attention)
    const index_t q_start = query_tile_index * Q_TILE;

    auto Q_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.Q + batch_index * p.stride_qb, {p.N_QUERIES, D},
                                                 {p.stride_qq, p.stride_qd}, {q_start, 0}, Order<1, 0>{});
    auto K_ptr = make_tile_ptr<Block<K_TILE, D>>(p.K + kv_index * p.stride_kb, {p.N_KEYS, D},
                                                 {p.stride_kk, p.stride_kd}, {0, 0}, Order<1, 0>{});
    auto V_ptr = make_tile_ptr<Block<K_TILE, D>>(p.V + kv_index * p.stride_vb, {p.N_KEYS, D},
                                                 {p.stride_vk, p.stride_vd}, {0, 0}, Order<1, 0>{});
    auto O_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.O + batch_index * p.stride_ob, {p.N_QUERIES, D},
                                                 {p.stride_oq, p.stride_od}, {q_start, 0}, Order<1, 0>{});
    auto L_ptr = make_tile_ptr<Block<Q_TILE>>(p.L + batch_index * p.stride_lb, {p.N_QUERIES}, {p.stride_lq}, {q_start},
                                              Order<0>{});

    using Scores = RowLayoutFor<Program, Q_TILE, K_TILE>;
    using Rows = RowLayoutFor<Program, Q_TILE, D>;

    auto O_acc = Frag<float, Rows>::filled(0.0f);
    auto l_i = RowVec<float, Scores>::filled(0.0f);
    auto m_i = RowVec<float, Scores>::filled(-std::numeric_limits<float>::infinity());

    // BEGIN SOLUTION step07 standard: your step 5 code from Q_i to the stores, with the rungs of Features: the causal loop stopping at the diagonal, the softmax in log2 units (L back in natural log), the mask only where it is needed uses(prog, p, smem, Q_ptr, K_ptr, V_ptr, O_ptr, L_ptr, O_acc, l_i, m_i, q_start)
    load(prog, Q_ptr, smem.Q_i, boundary_check<0, 1>, Padding::zero);
    const auto q_pos = row_positions<Scores>(prog, q_start);

    // 3: in log2 units the scale carries log2(e), and 2^x replaces e^x below.
    constexpr float kLog2e = 1.4426950408889634f;
    const float score_scale = F.exp2 ? p.scale * kLog2e : p.scale;

    index_t n_key_tiles = cdiv<index_t>(p.N_KEYS, K_TILE);
    if constexpr (Cfg::is_causal && F.causal_skip) {
      // 2: keys after this tile's last query are invisible to all of it.
      const index_t last_query = (q_start + Q_TILE < p.N_QUERIES ? q_start + Q_TILE : p.N_QUERIES) - 1;
      n_key_tiles = (last_query / K_TILE + 1 < n_key_tiles) ? last_query / K_TILE + 1 : n_key_tiles;
    }

    for (index_t j = 0; j < n_key_tiles; ++j) {
      const index_t k_start = j * K_TILE;
      const auto k_pos = col_positions<Scores>(prog, k_start);

      // BEGIN SOLUTION step05: load K_j and V_j into shared memory, then wait for the whole block uses(prog, K_ptr, V_ptr, smem)
      load(prog, K_ptr, smem.K_j, boundary_check<0, 1>, Padding::zero);
      load(prog, V_ptr, smem.V_j, boundary_check<0, 1>, Padding::zero);
      prog.sync();
      // END SOLUTION step05

      auto S_ij = dot_abt(prog, smem.Q_i, smem.K_j, smem.stage) * score_scale;

      // 4: a full interior tile needs no mask. Only the padded last tile and, when causal,
      // tiles whose last key lies after the tile's first query do.
      const bool ragged = k_start + K_TILE > p.N_KEYS;
      const bool crosses_diagonal = Cfg::is_causal && k_start + K_TILE - 1 > q_start;
      if (!F.mask_last_only || ragged || crosses_diagonal) {
        auto keep = broadcast<Scores>(k_pos < p.N_KEYS);
        // BEGIN SOLUTION step05: with the causal mask, no key after its query either; then -1e6 wherever keep is false uses(keep, k_pos, q_pos, S_ij)
        if constexpr (Cfg::is_causal) {
          keep = keep & (k_pos <= q_pos);
        }
        S_ij = where(keep, S_ij, -1.0e6f);
        // END SOLUTION step05
      }

      RowVec<float, Scores> m_new{}, alpha{};  // (Q_TILE,)
      Frag<float, Scores> P_ij{};              // (Q_TILE, K_TILE), float32
      if constexpr (F.exp2) {
        // 3: the scores carry log2(e) already, so 2^x gives the same weights as e^x did.
        // BEGIN SOLUTION step07: the online softmax of step 5 in log2 units, with exp2 for exp uses(prog, S_ij, m_i, l_i)
        m_new = maximum(m_i, row_max(prog, S_ij));
        P_ij = exp2(S_ij - m_new);
        alpha = exp2(m_i - m_new);
        l_i = alpha * l_i + row_sum(prog, P_ij);
        // END SOLUTION step07
      } else {
        // BEGIN SOLUTION step05: m_new covers this tile's row maxima, P_ij = exp(S_ij - m_new), alpha = exp(m_i - m_new), then l_i uses(prog, S_ij, m_i, l_i)
        m_new = maximum(m_i, row_max(prog, S_ij));
        P_ij = exp(S_ij - m_new);
        alpha = exp(m_i - m_new);
        l_i = alpha * l_i + row_sum(prog, P_ij);
        // END SOLUTION step05
      }
      const auto P_ij_v = P_ij.template to<T>();
      O_acc = dot(prog, P_ij_v, smem.V_j, alpha * O_acc, smem.stage);
      m_i = m_new;

      // BEGIN SOLUTION step05: move K_ptr and V_ptr down to the next key tile
      K_ptr = K_ptr.advance({K_TILE, 0});
      V_ptr = V_ptr.advance({K_TILE, 0});
      // END SOLUTION step05
    }

    Frag<float, Rows> O_i{};      // (Q_TILE, D)
    RowVec<float, Scores> L_i{};  // (Q_TILE,)
    if constexpr (F.exp2) {
      constexpr float kLn2 = 0.6931471805599453f;
      O_i = O_acc / l_i;
      L_i = (m_i + log2(l_i)) * kLn2;  // log(l) = log2(l) ln 2, and m was kept in log2 units
    } else {
      // BEGIN SOLUTION step05: divide O_acc by l_i once, and the logsumexp L_i = m_i + log(l_i) uses(O_acc, l_i, m_i)
      O_i = O_acc / l_i;
      L_i = m_i + log(l_i);
      // END SOLUTION step05
    }
    store(prog, O_ptr, O_i.template to<T>(), boundary_check<0, 1>);
    store(prog, L_ptr, L_i, boundary_check<0>);
    // END SOLUTION step07 standard
    // END SOLUTION step07 full
  }
};

// The three rungs, each a kernel template of one configuration (launch_flash takes these).
inline constexpr Features kV2{.causal_skip = true};
inline constexpr Features kV3{.causal_skip = true, .exp2 = true};
inline constexpr Features kV4{.causal_skip = true, .exp2 = true, .mask_last_only = true};
template <class Cfg>
using V2Kernel = LadderKernel<Cfg, kV2>;
template <class Cfg>
using V3Kernel = LadderKernel<Cfg, kV3>;
template <class Cfg>
using V4Kernel = LadderKernel<Cfg, kV4>;

}  // namespace fa2::ladder
