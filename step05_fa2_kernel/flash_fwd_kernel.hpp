// The FlashAttention-2 forward kernel, one program per (query tile, batch element).
//
// Read it next to the article's Triton kernel: tile pointers for Q, K, V, O and L, Q_i loaded
// once, K_j and V_j advanced through the keys, the running m_i, l_i, O_i in float32, and O
// divided by l once at the end. It runs on the GPU (one thread block per program) and on the
// host (run_on_host), from this one body. Launch it with launch_flash (flash_fwd_dispatch.hpp).
#pragma once

#include <limits>

#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"
#include "step05_fa2_kernel/flash_fwd_params.hpp"
#include "step05_fa2_kernel/tile_dot.hpp"

// The kernel's namespace: fa2::step05, unless the file that includes it names another. step06
// compiles its twins (files that differ from this one only by the lines of their bug) each in
// its own namespace, fa2::bug1 and so on, by defining FA2_KERNEL_NAMESPACE first.
#ifndef FA2_KERNEL_NAMESPACE
#define FA2_KERNEL_NAMESPACE step05
#endif

namespace fa2::FA2_KERNEL_NAMESPACE {

template <class Cfg>
struct FlashFwdKernel {
  using T = typename Cfg::T;
  static constexpr int D = Cfg::D;
  static constexpr int Q_TILE = Cfg::Q_TILE;
  static constexpr int K_TILE = Cfg::K_TILE;
  static constexpr int num_threads = Cfg::num_warps * 32;
  static constexpr bool takes_window = true;  // reads p.window_left and p.window_right
  using Params = FlashFwdParams<T>;

  struct Shared {  // rows padded against bank conflicts (tile_dot.hpp)
    Tile<T, Block<Q_TILE, D>, kSmemPad> Q_i;
    Tile<T, Block<K_TILE, D>, kSmemPad> K_j;
    Tile<T, Block<K_TILE, D>, kSmemPad> V_j;
    DotStaging<T, Q_TILE, K_TILE, D> stage;
  };

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step05 full: the whole program: the tile pointers of Q, K, V, O and L for this program's query tile and batch element (K and V those of its kv head, batch / kv_group), the running state in float32, then everything the standard level asks: Q_i; the window's key tiles; K_j and V_j behind a barrier; -1e6 for keys past N_k, outside the window or after the query with the causal mask; the online softmax and O_acc with P cast to V's dtype; O = O_acc / l_i and L = m_i + log(l_i), but O = 0 and L = +inf for a row that sees no key; O in O's dtype, L in float32, rows past N_q never written uses(prog, p)
    auto& smem = prog.template shared<Shared>();
    const index_t query_tile_index = prog.program_id(0);
    const index_t batch_index = prog.program_id(1);
    const index_t kv_index = batch_index / p.kv_group;  // its K and V (grouped-query attention)

    // A (rows, D) tile pointer into each tensor of this batch element. Q and O start at this
    // program's query tile; K and V start at key 0 and move down one tile per step.
    auto Q_ptr =
        make_tile_ptr<Block<Q_TILE, D>>(p.Q + batch_index * p.stride_qb, {p.N_QUERIES, D}, {p.stride_qq, p.stride_qd},
                                        {query_tile_index * Q_TILE, 0}, Order<1, 0>{});
    auto K_ptr = make_tile_ptr<Block<K_TILE, D>>(p.K + kv_index * p.stride_kb, {p.N_KEYS, D},
                                                 {p.stride_kk, p.stride_kd}, {0, 0}, Order<1, 0>{});
    auto V_ptr = make_tile_ptr<Block<K_TILE, D>>(p.V + kv_index * p.stride_vb, {p.N_KEYS, D},
                                                 {p.stride_vk, p.stride_vd}, {0, 0}, Order<1, 0>{});
    auto O_ptr =
        make_tile_ptr<Block<Q_TILE, D>>(p.O + batch_index * p.stride_ob, {p.N_QUERIES, D}, {p.stride_oq, p.stride_od},
                                        {query_tile_index * Q_TILE, 0}, Order<1, 0>{});
    auto L_ptr = make_tile_ptr<Block<Q_TILE>>(p.L + batch_index * p.stride_lb, {p.N_QUERIES}, {p.stride_lq},
                                              {query_tile_index * Q_TILE}, Order<0>{});

    using Scores = RowLayoutFor<Program, Q_TILE, K_TILE>;  // how (Q_TILE, K_TILE) tiles sit in registers
    using Rows = RowLayoutFor<Program, Q_TILE, D>;         // and (Q_TILE, D) tiles

    // The running state, float32 whatever T is.
    auto O_acc = Frag<float, Rows>::filled(0.0f);                                       // (Q_TILE, D)
    auto l_i = RowVec<float, Scores>::filled(0.0f);                                     // (Q_TILE,)
    auto m_i = RowVec<float, Scores>::filled(-std::numeric_limits<float>::infinity());  // (Q_TILE,)

    // BEGIN SOLUTION step05 standard: Q_i in shared memory; the key tiles this query tile sees (with a window only those from the tile holding key q_first - left to the one holding q_last + right, q_first and q_last its first and last query below N_q, K_ptr and V_ptr moved to the first; without one every tile); for each, K_j and V_j in shared memory behind a barrier, S_ij, then -1e6 wherever a key is past N_k, outside the window or, with the causal mask, after its query (top-left: key k <= query q); the online softmax (m_i, P_ij, alpha, l_i) and O_acc, with P cast to V's dtype before the second product; then O_i = O_acc / l_i and L_i = m_i + log(l_i), but O = 0 and L = +inf for a row that sees no key; O stored in O's dtype and L in float32, rows past N_q never written uses(prog, p, smem, Q_ptr, K_ptr, V_ptr, O_ptr, L_ptr, O_acc, l_i, m_i, query_tile_index)
    load(prog, Q_ptr, smem.Q_i, boundary_check<0, 1>, Padding::zero);
    const auto q_pos = row_positions<Scores>(prog, query_tile_index * Q_TILE);  // (Q_TILE, 1)

    // The key tiles this query tile can see: all of them, or with a sliding window only those from
    // the tile holding key q_first - left to the one holding key q_last + right; the tiles wholly
    // outside are skipped, neither loaded nor computed. (Without a window the bounds lie past
    // every key, common/window.hpp's kernel_window, and the range is every tile.)
    index_t first_key_tile = 0, end_key_tile = 0;
    // BEGIN SOLUTION step05: the window's key tiles [first_key_tile, end_key_tile), and K_ptr and V_ptr moved to the first uses(p, query_tile_index, K_ptr, V_ptr)
    const index_t q_first = query_tile_index * Q_TILE;
    const index_t q_last = (q_first + Q_TILE < p.N_QUERIES ? q_first + Q_TILE : p.N_QUERIES) - 1;
    first_key_tile = (q_first > p.window_left ? q_first - p.window_left : 0) / K_TILE;
    const index_t key_tiles_in_all = (p.N_KEYS + K_TILE - 1) / K_TILE;
    end_key_tile = (q_last + p.window_right) / K_TILE + 1;
    if (end_key_tile > key_tiles_in_all) end_key_tile = key_tiles_in_all;
    K_ptr = K_ptr.advance({first_key_tile * K_TILE, 0});
    V_ptr = V_ptr.advance({first_key_tile * K_TILE, 0});
    // END SOLUTION step05

    for (index_t j = first_key_tile; j < end_key_tile; ++j) {
      const auto k_pos = col_positions<Scores>(prog, j * K_TILE);  // (1, K_TILE)

      // BEGIN SOLUTION step05: load K_j and V_j into shared memory, then wait for the whole block uses(prog, K_ptr, V_ptr, smem)
      load(prog, K_ptr, smem.K_j, boundary_check<0, 1>, Padding::zero);
      load(prog, V_ptr, smem.V_j, boundary_check<0, 1>, Padding::zero);
      prog.sync();
      // END SOLUTION step05

      auto S_ij = dot_abt(prog, smem.Q_i, smem.K_j, smem.stage) * p.scale;  // (Q_TILE, K_TILE)

      // Which scores count: real keys only (the last K tile is zero-padded past N_KEYS, and a
      // zero key scores exactly 0, not -inf), only keys inside the window (given here), and with the
      // causal mask, no key after the query.
      auto keep = broadcast<Scores>(k_pos < p.N_KEYS);                                     // padded keys must not vote
      keep = keep & (q_pos - p.window_left <= k_pos) & (k_pos - p.window_right <= q_pos);  // inside the window
      // A large negative number rather than -inf: a row whose scores were all -inf would give
      // exp(-inf - (-inf)) = NaN. With -1e6, a masked key's weight underflows to exactly 0 once
      // the row has seen a real key. The hazard left: a row with no visible key at all would
      // average the masked values with weight 1 each. Without a window every query sees key 0;
      // with one bounded on the left such rows exist, and the end of the program handles them.
      // BEGIN SOLUTION step05: with the causal mask, no key after its query either; then -1e6 wherever keep is false uses(keep, k_pos, q_pos, S_ij)
      if constexpr (Cfg::is_causal) {
        keep = keep & (k_pos <= q_pos);
      }
      S_ij = where(keep, S_ij, -1.0e6f);
      // END SOLUTION step05

      // The online softmax: the new running maximum, the tile's unnormalised probabilities, and the
      // factor that rescales the old state (exactly 0 on the first tile).
      RowVec<float, Scores> m_new{}, alpha{};  // (Q_TILE,)
      Frag<float, Scores> P_ij{};              // (Q_TILE, K_TILE), float32
      // BEGIN SOLUTION step05: m_new covers this tile's row maxima, P_ij = exp(S_ij - m_new), alpha = exp(m_i - m_new), then l_i uses(prog, S_ij, m_i, l_i)
      m_new = maximum(m_i, row_max(prog, S_ij));
      P_ij = exp(S_ij - m_new);
      alpha = exp(m_i - m_new);
      l_i = alpha * l_i + row_sum(prog, P_ij);
      // END SOLUTION step05

      // The second product takes P in V's element type.
      const auto P_ij_v = P_ij.template to<T>();  // keep the cast: to<T>() returns a new tile
      O_acc = dot(prog, P_ij_v, smem.V_j, alpha * O_acc, smem.stage);
      m_i = m_new;

      // BEGIN SOLUTION step05: move K_ptr and V_ptr down to the next key tile
      K_ptr = K_ptr.advance({K_TILE, 0});
      V_ptr = V_ptr.advance({K_TILE, 0});
      // END SOLUTION step05
      note_state(prog, j, m_i, l_i, alpha);  // for the host's trace viewer; nothing on the GPU
    }

    // Normalise once, store O in the input dtype and L = m + log(l) in float32; rows past
    // N_QUERIES (computed from zero-padded queries) are never written. A row that sees no key at
    // all (a window bounded on the left, the query more than `left` past the last key) summed
    // only masked keys: it gets O = 0 and L = +inf instead (common/window.hpp says why).
    Frag<float, Rows> O_i{};      // (Q_TILE, D)
    RowVec<float, Scores> L_i{};  // (Q_TILE,)
    // BEGIN SOLUTION step05: divide O_acc by l_i once, and the logsumexp L_i = m_i + log(l_i) uses(O_acc, l_i, m_i)
    O_i = O_acc / l_i;
    L_i = m_i + log(l_i);
    // END SOLUTION step05
    const index_t last_seeing_query = p.N_KEYS - 1 + p.window_left;  // queries after it see no key
    O_i = where(row_positions<Rows>(prog, query_tile_index * Q_TILE) <= last_seeing_query, O_i, 0.0f);
    L_i = where(q_pos <= last_seeing_query, L_i, std::numeric_limits<float>::infinity());
    store(prog, O_ptr, O_i.template to<T>(), boundary_check<0, 1>);
    store(prog, L_ptr, L_i.template to<float>(), boundary_check<0>);
    // END SOLUTION step05 standard
    // END SOLUTION step05 full
  }
};

}  // namespace fa2::FA2_KERNEL_NAMESPACE
#undef FA2_KERNEL_NAMESPACE
