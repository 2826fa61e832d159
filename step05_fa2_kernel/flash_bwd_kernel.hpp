// The FlashAttention-2 backward kernel: three bodies, run one after the other on one stream.
//
//   FlashBwdPreprocess  one program per (query tile, batch): D_i = rowsum(dO_i * O_i); dQ_accum_i = 0
//   FlashBwdKernel      one program per (key tile, batch of K): K_j and V_j loaded once, then every
//                       query tile that sees them (of each query head of its group, with grouped-
//                       query attention) adds to dV_j and dK_j (kept in registers) and adds its
//                       share of dQ_i into the float32 dQ_accum with atomic_add
//   FlashBwdConvertDQ   one program per (query tile, batch): dQ = dQ_accum, in the input dtype
//
// It is step02's tiled backward (step02's README derives it) with the key-tile loop turned into
// the grid, written with the forward's tile pointers and products. The same bodies run on the GPU
// and on the host (run_on_host). Launch them with launch_flash_bwd (flash_bwd_dispatch.hpp);
// tests: ctest -L backward.
#pragma once

#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution region below
#include "step03_tile_pointer/atomic_add.hpp"
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"
#include "step05_fa2_kernel/flash_bwd_params.hpp"
#include "step05_fa2_kernel/tile_dot.hpp"

// The kernels' namespace: fa2::step05, unless the file that includes this one names another
// (the missing-barrier test compiles a copy without its barrier in its own namespace).
#ifndef FA2_KERNEL_NAMESPACE
#define FA2_KERNEL_NAMESPACE step05
#endif

namespace fa2::FA2_KERNEL_NAMESPACE {

// Phase 1. D_i = rowsum(dO_i * O_i) is what every tile of dS subtracts from dP (step02's README
// shows it equals rowsum(P_i * dP_i) over the whole row, which no key-tile program sees). The
// same programs clear this query tile's rows of dQ_accum, which phase 2 adds into.
template <class Cfg>
struct FlashBwdPreprocess {
  using T = typename Cfg::T;
  static constexpr int D = Cfg::D;
  static constexpr int Q_TILE = Cfg::Q_TILE;
  static constexpr int num_threads = Cfg::num_warps * 32;
  using Params = FlashBwdParams<T>;
  struct Shared {};  // row-wise work: registers only

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step05 full: D_i = rowsum(dO_i * O_i) for this query tile, and its rows of dQ_accum cleared uses(prog, p)
    const index_t q_start = prog.program_id(0) * index_t{Q_TILE};
    const index_t batch_index = prog.program_id(1);
    const auto O_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.O + batch_index * p.stride_ob, {p.N_QUERIES, D},
                                                       {p.stride_oq, p.stride_od}, {q_start, 0}, Order<1, 0>{});
    const auto dO_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.dO + batch_index * p.stride_dob, {p.N_QUERIES, D},
                                                        {p.stride_doq, p.stride_dod}, {q_start, 0}, Order<1, 0>{});
    const auto D_ptr = make_tile_ptr<Block<Q_TILE>>(p.D_rows + batch_index * p.stride_Db, {p.N_QUERIES}, {p.stride_Dq},
                                                    {q_start}, Order<0>{});
    const auto dQ_accum_ptr =
        make_tile_ptr<Block<Q_TILE, D>>(p.dQ_accum + batch_index * p.stride_accb, {p.N_QUERIES, D},
                                        {p.stride_accq, p.stride_accd}, {q_start, 0}, Order<1, 0>{});

    using Rows = RowLayoutFor<Program, Q_TILE, D>;  // how (Q_TILE, D) tiles sit in registers
    Frag<float, Rows> O_rows, dO_rows;              // (Q_TILE, D) each, widened to float32
    load(prog, O_ptr, O_rows, boundary_check<0, 1>, Padding::zero);
    load(prog, dO_ptr, dO_rows, boundary_check<0, 1>, Padding::zero);
    const auto D_i = row_sum(prog, dO_rows * O_rows);  // (Q_TILE,) = rowsum(dO_i * O_i)
    store(prog, D_ptr, D_i, boundary_check<0>);
    store(prog, dQ_accum_ptr, Frag<float, Rows>::filled(0.0f), boundary_check<0, 1>);
    // END SOLUTION step05 full
  }
};

// Phase 2. Program (j, b) owns key tile j of batch element b of K and V: its rows of dK and dV are
// sums over the query tiles that see it (of every query batch element reading it, with grouped-
// query attention), kept in registers and written once. dQ_i gets a share from every
// key tile, added into dQ_accum with float32 atomics (the README weighs this against a second
// pass with the query tiles outer).
template <class Cfg>
struct FlashBwdKernel {
  using T = typename Cfg::T;
  static constexpr int D = Cfg::D;
  static constexpr int Q_TILE = Cfg::Q_TILE;
  static constexpr int K_TILE = Cfg::K_TILE;
  static constexpr int num_threads = Cfg::num_warps * 32;
  using Params = FlashBwdParams<T>;

  // The program's shared memory, rows padded against bank conflicts (tile_dot.hpp).
  struct Shared {
    Tile<T, Block<K_TILE, D>, kSmemPad> K_j;        // (K_TILE, D) this program's keys, loaded once
    Tile<T, Block<K_TILE, D>, kSmemPad> V_j;        // (K_TILE, D) and values, loaded once
    Tile<T, Block<Q_TILE, D>, kSmemPad> Q_i;        // (Q_TILE, D) the query tile of the current step
    Tile<T, Block<Q_TILE, D>, kSmemPad> dO_i;       // (Q_TILE, D) its rows of dO
    DotStaging<T, Q_TILE, K_TILE, D> stage;         // dot_abt (S, dP) and dot (dQ's share)
    DotAtbStaging<T, Q_TILE, K_TILE, D> stage_atb;  // dot_atb (dV, dK)
  };

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step05 full: the whole key-tile program: its tile pointers, K_j and V_j, the loop over the query heads of its group and their query tiles, dK_j and dV_j uses(prog, p)
    auto& smem = prog.template shared<Shared>();
    const index_t k_start = prog.program_id(0) * index_t{K_TILE};
    const index_t kv_index = prog.program_id(1);  // a batch element of K and V

    // The query tiles that see some of these keys. Causal (top-left): query q sees key k when
    // k <= q, so none before query k_start. A sliding window: query q sees keys q - left ..
    // q + right, so only queries k_start - right .. k_last + left (without a window these bounds
    // lie past every query: kernel_window in common/window.hpp). When no tile is left, none is
    // visited, and dK_j = dV_j = 0.
    const index_t k_last = (k_start + K_TILE < p.N_KEYS ? k_start + K_TILE : p.N_KEYS) - 1;
    index_t q_lowest = k_start > p.window_right ? k_start - p.window_right : 0;
    if (Cfg::is_causal && q_lowest < k_start) q_lowest = k_start;
    const index_t first_query_tile = q_lowest / Q_TILE;
    index_t end_query_tile = (k_last + p.window_left) / Q_TILE + 1;
    if (end_query_tile > cdiv<index_t>(p.N_QUERIES, Q_TILE)) end_query_tile = cdiv<index_t>(p.N_QUERIES, Q_TILE);
    const index_t q_first = first_query_tile * Q_TILE;

    // K, V, dK and dV stay on this program's key tile.
    const auto K_ptr = make_tile_ptr<Block<K_TILE, D>>(p.K + kv_index * p.stride_kb, {p.N_KEYS, D},
                                                       {p.stride_kk, p.stride_kd}, {k_start, 0}, Order<1, 0>{});
    const auto V_ptr = make_tile_ptr<Block<K_TILE, D>>(p.V + kv_index * p.stride_vb, {p.N_KEYS, D},
                                                       {p.stride_vk, p.stride_vd}, {k_start, 0}, Order<1, 0>{});
    const auto dK_ptr = make_tile_ptr<Block<K_TILE, D>>(p.dK + kv_index * p.stride_dkb, {p.N_KEYS, D},
                                                        {p.stride_dkk, p.stride_dkd}, {k_start, 0}, Order<1, 0>{});
    const auto dV_ptr = make_tile_ptr<Block<K_TILE, D>>(p.dV + kv_index * p.stride_dvb, {p.N_KEYS, D},
                                                        {p.stride_dvk, p.stride_dvd}, {k_start, 0}, Order<1, 0>{});

    // How (Q_TILE, K_TILE) and (K_TILE, D) tiles sit in registers. (Scores is used only by the code
    // of the loop below, which a standard starter kit leaves to the student: hence maybe_unused.)
    using Scores [[maybe_unused]] = RowLayoutFor<Program, Q_TILE, K_TILE>;
    using KeyRows = RowLayoutFor<Program, K_TILE, D>;

    // This program's gradients, float32 whatever T is.
    auto dK_j = Frag<float, KeyRows>::filled(0.0f);  // (K_TILE, D)
    auto dV_j = Frag<float, KeyRows>::filled(0.0f);  // (K_TILE, D)

    // Zero rows past N_KEYS give scores of 0, not -inf: the mask below removes them.
    // BEGIN SOLUTION step05: load this program's K_j and V_j into shared memory, once uses(prog, K_ptr, V_ptr, smem)
    load(prog, K_ptr, smem.K_j, boundary_check<0, 1>, Padding::zero);  // (K_TILE, D), once
    load(prog, V_ptr, smem.V_j, boundary_check<0, 1>, Padding::zero);  // (K_TILE, D), once
    // END SOLUTION step05

    // Grouped-query attention: these keys serve kv_group consecutive batch elements of Q (the
    // query heads of one kv head), and dK_j and dV_j sum over all of them, in this one program:
    // no atomics, the same order on every run. Without groups kv_group is 1.
    for (index_t member = 0; member < p.kv_group; ++member) {
      const index_t batch_index = kv_index * p.kv_group + member;

      // Q, dO, L, D_rows and dQ_accum of that batch element start at the first query tile and move
      // down one tile per step.
      auto Q_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.Q + batch_index * p.stride_qb, {p.N_QUERIES, D},
                                                   {p.stride_qq, p.stride_qd}, {q_first, 0}, Order<1, 0>{});
      auto dO_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.dO + batch_index * p.stride_dob, {p.N_QUERIES, D},
                                                    {p.stride_doq, p.stride_dod}, {q_first, 0}, Order<1, 0>{});
      auto dQ_accum_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.dQ_accum + batch_index * p.stride_accb, {p.N_QUERIES, D},
                                                          {p.stride_accq, p.stride_accd}, {q_first, 0}, Order<1, 0>{});
      auto L_ptr = make_tile_ptr<Block<Q_TILE>>(p.L + batch_index * p.stride_lb, {p.N_QUERIES}, {p.stride_lq},
                                                {q_first}, Order<0>{});
      auto D_ptr = make_tile_ptr<Block<Q_TILE>>(p.D_rows + batch_index * p.stride_Db, {p.N_QUERIES}, {p.stride_Dq},
                                                {q_first}, Order<0>{});

      // BEGIN SOLUTION step05 standard: every query tile that sees K_j and V_j: its loads, S, the masks, the five products, then the pointers one tile down uses(prog, p, smem, Q_ptr, dO_ptr, dQ_accum_ptr, L_ptr, D_ptr, dK_j, dV_j, first_query_tile, end_query_tile, k_start)
      const auto k_pos = col_positions<Scores>(prog, k_start);  // (1, K_TILE)
      for (index_t i = first_query_tile; i < end_query_tile; ++i) {
        const auto q_pos = row_positions<Scores>(prog, i * Q_TILE);          // (Q_TILE, 1)
        load(prog, Q_ptr, smem.Q_i, boundary_check<0, 1>, Padding::zero);    // (Q_TILE, D)
        load(prog, dO_ptr, smem.dO_i, boundary_check<0, 1>, Padding::zero);  // (Q_TILE, D)
        RowVec<float, Scores> L_i, D_i;                                      // (Q_TILE,) each
        load(prog, L_ptr, L_i, boundary_check<0>, Padding::zero);
        load(prog, D_ptr, D_i, boundary_check<0>, Padding::zero);
        // Every warp reads all of Q_i and dO_i (and, the first time, K_j and V_j) in the products.
        prog.sync();

        // The forward's scores, recomputed: the same operands in the same product as there, so
        // S - L <= 0 up to the rounding of L, and P = exp(S - L) is already normalised.
        const auto S_ij = dot_abt(prog, smem.Q_i, smem.K_j, smem.stage) * p.scale;  // (Q_TILE, K_TILE)

        // Which entries of P exist, `keep`: real keys and real queries, with the causal mask no
        // key after its query, and only keys inside the window. Zero padding alone would not do: a
        // padded key scores 0, which exp(S - L) turns into a weight, and a padded query (S = 0, L
        // padded with 0) gets P = 1. (A query that sees no key has L = +inf: its P is 0 anyway.)
        // Then step02's loop body, P_ij = exp(S_ij - L_i) (exactly 0 where not kept) to dQ_i's share.
        // BEGIN SOLUTION step05: keep, P_ij from S_ij and L_i, then dV_j, dP_ij, dS_ij, dK_j and dQ_i's share uses(S_ij, k_pos, q_pos, L_i, D_i)
        auto keep = (k_pos < p.N_KEYS) & (q_pos < p.N_QUERIES);  // (Q_TILE, K_TILE)
        if constexpr (Cfg::is_causal) {
          keep = keep & (k_pos <= q_pos);
        }
        keep = keep & (k_pos >= q_pos - p.window_left) & (k_pos <= q_pos + p.window_right);
        using QueryRows = RowLayoutFor<Program, Q_TILE, D>;    // (Q_TILE, D) tiles in registers
        const auto P_ij = where(keep, exp(S_ij - L_i), 0.0f);  // (Q_TILE, K_TILE), exactly 0 where masked
        dV_j = dot_atb(prog, P_ij.template to<T>(), smem.dO_i, dV_j, smem.stage_atb);  // (K_TILE, D) += P^T dO_i
        const auto dP_ij = dot_abt(prog, smem.dO_i, smem.V_j, smem.stage);             // (Q_TILE, K_TILE) = dO_i V_j^T
        const auto dS_ij = P_ij * (dP_ij - D_i);                                       // (Q_TILE, K_TILE)
        // The scale of both products, applied once, and dS in the operands' dtype.
        const auto dS_ij_scaled = (dS_ij * p.scale).template to<T>();        // (Q_TILE, K_TILE)
        dK_j = dot_atb(prog, dS_ij_scaled, smem.Q_i, dK_j, smem.stage_atb);  // (K_TILE, D) += scale dS^T Q_i
        const auto dQ_ij = dot(prog, dS_ij_scaled, smem.K_j, Frag<float, QueryRows>::filled(0.0f), smem.stage);
        atomic_add(prog, dQ_accum_ptr, dQ_ij, boundary_check<0, 1>);  // dQ_i += scale dS K_j, (Q_TILE, D)
        // END SOLUTION step05

        Q_ptr = Q_ptr.advance({Q_TILE, 0});
        dO_ptr = dO_ptr.advance({Q_TILE, 0});
        dQ_accum_ptr = dQ_accum_ptr.advance({Q_TILE, 0});
        L_ptr = L_ptr.advance({Q_TILE});
        D_ptr = D_ptr.advance({Q_TILE});
      }
      // END SOLUTION step05 standard
    }

    // Every query tile of every query head has been met: this key tile's gradients are complete.
    // Rows past N_KEYS are never written.
    store(prog, dK_ptr, dK_j.template to<T>(), boundary_check<0, 1>);
    store(prog, dV_ptr, dV_j.template to<T>(), boundary_check<0, 1>);
    // END SOLUTION step05 full
  }
};

// Phase 3. dQ is complete once every key tile has added its share: round it to the input dtype.
template <class Cfg>
struct FlashBwdConvertDQ {
  using T = typename Cfg::T;
  static constexpr int D = Cfg::D;
  static constexpr int Q_TILE = Cfg::Q_TILE;
  static constexpr int num_threads = Cfg::num_warps * 32;
  using Params = FlashBwdParams<T>;
  struct Shared {};  // registers only

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step05 full: this query tile's rows of dQ_accum, rounded into dQ uses(prog, p)
    const index_t q_start = prog.program_id(0) * index_t{Q_TILE};
    const index_t batch_index = prog.program_id(1);
    const auto dQ_accum_ptr =
        make_tile_ptr<Block<Q_TILE, D>>(p.dQ_accum + batch_index * p.stride_accb, {p.N_QUERIES, D},
                                        {p.stride_accq, p.stride_accd}, {q_start, 0}, Order<1, 0>{});
    const auto dQ_ptr = make_tile_ptr<Block<Q_TILE, D>>(p.dQ + batch_index * p.stride_dqb, {p.N_QUERIES, D},
                                                        {p.stride_dqq, p.stride_dqd}, {q_start, 0}, Order<1, 0>{});
    const auto dQ_i = load(prog, dQ_accum_ptr, boundary_check<0, 1>, Padding::zero);  // (Q_TILE, D) float32
    store(prog, dQ_ptr, dQ_i.template to<T>(), boundary_check<0, 1>);
    // END SOLUTION step05 full
  }
};

}  // namespace fa2::FA2_KERNEL_NAMESPACE
#undef FA2_KERNEL_NAMESPACE
