// Tests of step 2's backward: dQ, dK and dV against common's float64 reference backward over
// ragged shapes, tile sizes, Nq != Nk and both causal settings, with O and L from the float64
// reference forward (so that a bug in the tiled forward cannot fail these tests); then what the trace shows (P from L,
// D_i), strided inputs and the argument checks.
//   cmake --build --preset default --target step02_backward_tests && ctest --preset default -L step02
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/reference_backward.hpp"
#include "common/testing.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"
#include "step02_tiled_cpu/tiled_backward.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;
using fa2::tiled::accum_t;
using fa2::tiled::TileOptions;

struct Shape {
  index_t B, Nq, Nk, D, Dv;
};

// (B_q, B_k): single rows, odd sizes, the default, tiles longer than either sequence.
constexpr std::array<std::array<index_t, 2>, 6> kTiles{{{16, 16}, {1, 1}, {3, 5}, {16, 3}, {64, 64}, {500, 500}}};

// Random Q, K, V and dO, with O and L from the float64 reference, rounded as the tiled forward
// stores them (O in T, L in the accumulator type).
template <class T>
struct Problem {
  Tensor<T, 3> Q, K, V, dO;
  Tensor<T, 3> O;
  Tensor<accum_t<T>, 2> L;
};

template <class T>
Problem<T> random_problem(const Shape& s, fa2::Rng& rng, bool causal, std::optional<double> scale = std::nullopt) {
  Problem<T> p{fa2::random_normal<T, 3>({s.B, s.Nq, s.D}, rng),
               fa2::random_normal<T, 3>({s.B, s.Nk, s.D}, rng),
               fa2::random_normal<T, 3>({s.B, s.Nk, s.Dv}, rng),
               fa2::random_normal<T, 3>({s.B, s.Nq, s.Dv}, rng),
               {},
               {}};
  const auto ref = fa2::reference_attention<T>(p.Q.cview(), p.K.cview(), p.V.cview(), causal, scale);
  p.O = Tensor<T, 3>(ref.O.shape());
  p.L = Tensor<accum_t<T>, 2>(ref.L.shape());
  fa2::copy_convert<T, double, 3>(ref.O.cview(), p.O.view());
  fa2::copy_convert<accum_t<T>, double, 2>(ref.L.cview(), p.L.view());
  return p;
}

template <class T>
fa2::tiled::BackwardResult<T> run(const Problem<T>& p, const TileOptions& options,
                                  const fa2::tiled::QueryTileTrace<accum_t<T>>& trace = {}) {
  return fa2::tiled::tiled_attention_backward<T>(p.Q.cview(), p.K.cview(), p.V.cview(), p.O.cview(), p.L.cview(),
                                                 p.dO.cview(), options, trace);
}

template <class T>
fa2::AttentionGradients reference(const Problem<T>& p, bool causal, std::optional<double> scale = std::nullopt) {
  return fa2::reference_attention_backward<T>(p.Q.cview(), p.K.cview(), p.V.cview(), p.dO.cview(), causal, scale);
}

double max_abs(const Tensor<double, 3>& t) {
  double m = 0.0;
  for (const double x : t.storage()) m = std::max(m, std::fabs(x));
  return m;
}

// Tolerance for one gradient tensor against the float64 reference, when the tiles are computed
// in T. Every gradient entry is a sum over up to N query or key rows of products of inputs, and
// the rows of dS sum to 0 (sum_k P (dP - D) = D - D), so an entry can be far smaller than the
// terms it is made of. Rounding errors scale with the terms, so the absolute part is a fraction
// of the tensor's largest entry, the relative part covers the large entries.
//   float:  the largest error seen over many random runs (the shapes below, all tiles) was
//           ~2e-6 of the largest entry; 2e-5 of it plus 1e-5 relative leaves a margin of ~10x,
//           while a wrong formula (no D term, a missing scale, dQ not summed over key tiles)
//           is off by a tenth of the largest entry or more.
//   double: the same sums with eps = 2.2e-16; the largest error seen was ~4e-15 of the
//           largest entry, so 1e-12 of it plus 1e-12 relative.
//   bf16:   the tiles are float32, but O is the forward's bf16 output, so D_i = rowsum(dO * O)
//           carries O's rounding (2^-9 relative per element) into every entry of dS, and each
//           gradient is rounded to bf16 (2^-9 relative) at the end. The largest error seen was
//           ~8e-3 of the largest entry; allowed 4e-2 of it plus 1e-2 relative (margin ~5x),
//           still well below what a wrong formula gives.
template <class T>
fa2::Tolerance gradient_tolerance(const Tensor<double, 3>& expected) {
  const double largest = max_abs(expected);
  if constexpr (std::is_same_v<T, float>) {
    return {2e-5 * largest, 1e-5};
  } else if constexpr (std::is_same_v<T, double>) {
    return {1e-12 * largest, 1e-12};
  } else {
    return {4e-2 * largest, 1e-2};
  }
}

template <class T>
void check_gradients(const fa2::tiled::BackwardResult<T>& out, const fa2::AttentionGradients& ref) {
  FA2_CHECK_CLOSE(out.dQ.cview(), ref.dQ.cview(), gradient_tolerance<T>(ref.dQ), "dQ");
  FA2_CHECK_CLOSE(out.dK.cview(), ref.dK.cview(), gradient_tolerance<T>(ref.dK), "dK");
  FA2_CHECK_CLOSE(out.dV.cview(), ref.dV.cview(), gradient_tolerance<T>(ref.dV), "dV");
}

}  // namespace

TEST_SUITE("tiled_cpu+backward") {
  TEST_CASE_TEMPLATE("dQ dK and dV match the float64 reference for ragged shapes all tile sizes and both masks", T,
                     float, double) {
    Shape s{};
    SUBCASE("(2, 100, 100, 64): the article's ragged shape") {
      s = {2, 100, 100, 64, 64};
    }
    SUBCASE("(1, 37, 53, 32): Nq < Nk") {
      s = {1, 37, 53, 32, 32};
    }
    SUBCASE("(1, 53, 37, 32), Dv = 16: Nq > Nk and D != Dv") {
      s = {1, 53, 37, 32, 16};
    }
    SUBCASE("(3, 5, 7, 4), Dv = 6: tiny, B = 3") {
      s = {3, 5, 7, 4, 6};
    }
    SUBCASE("(1, 1, 1, 1): one query, one key") {
      s = {1, 1, 1, 1, 1};
    }
    SUBCASE("(2, 16, 16, 16): aligned to the default tile") {
      s = {2, 16, 16, 16, 16};
    }
    SUBCASE("(2, 33, 17, 24): Nq about twice Nk") {
      s = {2, 33, 17, 24, 24};
    }
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed(), ", shape (B, Nq, Nk, D, Dv) = (", s.B, ", ", s.Nq, ", ", s.Nk, ", ", s.D, ", ", s.Dv,
         ")");
    for (const bool causal : {false, true}) {
      const auto p = random_problem<T>(s, rng, causal);
      const auto ref = reference(p, causal);
      for (const auto& [B_q, B_k] : kTiles) {
        INFO("B_q = ", B_q, ", B_k = ", B_k, ", causal = ", causal);
        check_gradients(run(p, {.block_q = B_q, .block_k = B_k, .causal = causal}), ref);
      }
    }
  }

  TEST_CASE("a custom scale reaches every gradient: dK and dQ carry it and P is computed with it") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 19, 23, 8, 8};
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const double scale = 0.9;  // far from 1/sqrt(8) = 0.354, so a default in its place fails
      const auto p = random_problem<double>(s, rng, causal, scale);
      check_gradients(run(p, {.block_q = 4, .block_k = 6, .causal = causal, .scale = scale}),
                      reference(p, causal, scale));
    }
  }

  TEST_CASE("bf16 inputs are computed in float32 and the gradients are rounded to bf16 once") {
    Shape s{};
    SUBCASE("(2, 37, 53, 32): Nq < Nk") {
      s = {2, 37, 53, 32, 32};
    }
    SUBCASE("(1, 53, 37, 16), Dv = 24: Nq > Nk") {
      s = {1, 53, 37, 16, 24};
    }
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed(), ", shape (B, Nq, Nk, D, Dv) = (", s.B, ", ", s.Nq, ", ", s.Nk, ", ", s.D, ", ", s.Dv,
         ")");
    for (const bool causal : {false, true}) {
      // The reference widens the same bf16 values of Q, K, V and dO exactly.
      const auto p = random_problem<fa2::bf16>(s, rng, causal);
      const auto ref = reference(p, causal);
      for (const auto& [B_q, B_k] : {std::array<index_t, 2>{16, 16}, std::array<index_t, 2>{7, 5}}) {
        INFO("B_q = ", B_q, ", B_k = ", B_k, ", causal = ", causal);
        check_gradients(run(p, {.block_q = B_q, .block_k = B_k, .causal = causal}), ref);
      }
    }
  }

  TEST_CASE("keys that no query sees get exactly zero dK and dV when causal and Nq < Nk") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    // Queries 0..9 see keys 0..9 only. With B_k = 8, the key tile [8, 16) is half seen, and the
    // tiles [16, 24) and [24, 29) meet no query tile at all: their rows must still be written
    // (the results start as NaN), and with 0.
    const Shape s{2, 10, 29, 8, 8};
    const auto p = random_problem<double>(s, rng, true);
    const auto out = run(p, {.block_q = 4, .block_k = 8, .causal = true});
    check_gradients(out, reference(p, true));
    for (index_t b = 0; b < s.B; ++b) {
      for (index_t k = s.Nq; k < s.Nk; ++k) {
        CAPTURE(b);
        CAPTURE(k);
        for (index_t d = 0; d < s.D; ++d) CHECK(out.dK(b, k, d) == 0.0);
        for (index_t d = 0; d < s.Dv; ++d) CHECK(out.dV(b, k, d) == 0.0);
      }
    }
  }

  TEST_CASE("each key tile meets the query tiles from its diagonal on in order and masked P is exactly 0") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{1, 10, 13, 8, 8};
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto p = random_problem<double>(s, rng, causal);
      std::vector<std::array<index_t, 4>> seen;  // (k_start, k_cols, q_start, q_rows)
      Tensor<double, 3> last_dK({1, s.Nk, s.D}), last_dV({1, s.Nk, s.Dv});
      const auto out =
          run(p, {.block_q = 4, .block_k = 5, .causal = causal}, [&](const fa2::tiled::QueryTileStep<double>& step) {
            seen.push_back({step.k_start, step.dK_j.rows(), step.q_start, step.P_ij.rows()});
            for (Eigen::Index r = 0; r < step.P_ij.rows(); ++r) {
              for (Eigen::Index c = 0; c < step.P_ij.cols(); ++c) {
                const double P = step.P_ij(r, c);
                if (causal && step.k_start + c > step.q_start + r) {
                  CHECK(P == 0.0);  // exp(-inf - L), not a tiny number
                  CHECK(step.dS_ij(r, c) == 0.0);
                } else {
                  // Up to 1 + a few ulps: the forward's tiles had other widths, so its S and L may
                  // differ in the last bit from this S.
                  CHECK((P > 0.0 && P <= 1.0 + 1e-14));
                }
              }
            }
            // Keep the key tile's latest dK_j and dV_j: after its last query tile they are its rows of dK and dV.
            for (Eigen::Index r = 0; r < step.dK_j.rows(); ++r) {
              for (Eigen::Index d = 0; d < step.dK_j.cols(); ++d) {
                last_dK(0, step.k_start + r, d) = step.dK_j(r, d);
              }
              for (Eigen::Index d = 0; d < step.dV_j.cols(); ++d) {
                last_dV(0, step.k_start + r, d) = step.dV_j(r, d);
              }
            }
          });
      std::vector<std::array<index_t, 4>> expected;
      // Key tiles [0, 5), [5, 10), [10, 13); query tiles [0, 4), [4, 8), [8, 10).
      const std::array<std::array<index_t, 2>, 3> key_tiles{{{0, 5}, {5, 5}, {10, 3}}};
      const std::array<std::array<index_t, 2>, 3> query_tiles{{{0, 4}, {4, 4}, {8, 2}}};
      for (const auto& [k_start, k_cols] : key_tiles) {
        for (const auto& [q_start, q_rows] : query_tiles) {
          // Causal: a query tile is met when its last query sees the tile's first key.
          if (!causal || q_start + q_rows - 1 >= k_start) expected.push_back({k_start, k_cols, q_start, q_rows});
        }
      }
      CHECK(seen == expected);
      FA2_CHECK_CLOSE(out.dK.cview(), last_dK.cview(), (fa2::Tolerance{0.0, 0.0}), "dK vs the trace's last dK_j");
      FA2_CHECK_CLOSE(out.dV.cview(), last_dV.cview(), (fa2::Tolerance{0.0, 0.0}), "dV vs the trace's last dV_j");
    }
  }

  TEST_CASE("P from the forward's L sums to 1 over the key tiles and D_i equals the rowsum of P times dP") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 21, 17, 8, 6};
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto p = random_problem<double>(s, rng, causal);
      Tensor<double, 2> P_sum({s.B, s.Nq}), P_dot_dP({s.B, s.Nq}), D_seen({s.B, s.Nq});
      run(p, {.block_q = 5, .block_k = 4, .causal = causal}, [&](const fa2::tiled::QueryTileStep<double>& step) {
        for (Eigen::Index r = 0; r < step.P_ij.rows(); ++r) {
          P_sum(step.batch, step.q_start + r) += step.P_ij.row(r).sum();
          P_dot_dP(step.batch, step.q_start + r) += step.P_ij.row(r).dot(step.dP_ij.row(r));
          D_seen(step.batch, step.q_start + r) = step.D_i(r);
        }
      });
      // The forward's L normalises P: exp(S - L) = exp(S - m) / l, no division needed.
      const Tensor<double, 2> ones({s.B, s.Nq}, 1.0);
      FA2_CHECK_CLOSE(P_sum.cview(), ones.cview(), (fa2::Tolerance{1e-13, 0.0}), "rowsum of P over the key tiles");
      // O = P V, so rowsum(dO * O) = sum_k P_k (dO . V_k) = rowsum(P * dP); the masked keys add 0.
      FA2_CHECK_CLOSE(D_seen.cview(), P_dot_dP.cview(), (fa2::Tolerance{1e-12, 1e-12}), "D_i vs rowsum(P * dP)");
    }
  }

  TEST_CASE_TEMPLATE("D_i is the dot product of each row of dO and O summed in the accumulator type", T, float, double,
                     fa2::bf16) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto O = fa2::random_normal<T, 3>({3, 7, 40}, rng);
    const auto dO = fa2::random_normal<T, 3>({3, 7, 40}, rng);
    const auto D_rows = fa2::tiled::backward_preprocess_D<T>(O.cview(), dO.cview());
    static_assert(std::is_same_v<typename decltype(D_rows.cview())::value_type, accum_t<T>>);
    Tensor<double, 2> expected({3, 7});
    for (index_t b = 0; b < 3; ++b) {
      for (index_t q = 0; q < 7; ++q) {
        long double dot = 0.0L;  // of the exactly widened inputs
        for (index_t d = 0; d < 40; ++d) dot += fa2::convert<double>(dO(b, q, d)) * fa2::convert<double>(O(b, q, d));
        expected(b, q) = static_cast<double>(dot);
      }
    }
    // 40 products of N(0, 1) values summed in accum_t<T>: an error of a few eps times the sum of
    // |terms| (~40), i.e. ~1e-5 in float (and bf16, summed in float) and ~1e-14 in double.
    const double eps = static_cast<double>(std::numeric_limits<accum_t<T>>::epsilon());
    FA2_CHECK_CLOSE(D_rows.cview(), expected.cview(), (fa2::Tolerance{40.0 * 40.0 * eps, 0.0}), "D");
  }

  TEST_CASE("strided inputs are read through their strides and the gaps are never read") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 21, 18, 8, 8};
    const auto dense = random_problem<float>(s, rng, true);
    // Every row padded to 11 elements and L to 3 entries per query, the padding poisoned with
    // NaN: a read outside the view would turn a gradient NaN.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto padded = [&](const Tensor<float, 3>& t) {
      auto p = Tensor<float, 3>::strided(t.shape(), {t.size(1) * 11, 11, 1}, nan);
      fa2::copy_convert<float, float, 3>(t.cview(), p.view());
      return p;
    };
    auto L = Tensor<float, 2>::strided(dense.L.shape(), {dense.L.size(1) * 3, 3}, nan);
    fa2::copy_convert<float, float, 2>(dense.L.cview(), L.view());
    const Problem<float> strided{padded(dense.Q),  padded(dense.K), padded(dense.V),
                                 padded(dense.dO), padded(dense.O), std::move(L)};
    const TileOptions options{.block_q = 4, .block_k = 5, .causal = true};
    const auto a = run(dense, options), b = run(strided, options);
    FA2_CHECK_CLOSE(b.dQ.cview(), a.dQ.cview(), (fa2::Tolerance{0.0, 0.0}), "dQ");  // same numbers, same order
    FA2_CHECK_CLOSE(b.dK.cview(), a.dK.cview(), (fa2::Tolerance{0.0, 0.0}), "dK");
    FA2_CHECK_CLOSE(b.dV.cview(), a.dV.cview(), (fa2::Tolerance{0.0, 0.0}), "dV");
  }

  TEST_CASE("the CPU backward is deterministic: two runs give the same bits") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    // dQ sums one term per key tile, always in the same order here. A GPU that adds them with
    // atomics from concurrent key tiles gives no such promise.
    const auto p = random_problem<float>({2, 45, 38, 16, 16}, rng, false);
    const TileOptions options{.block_q = 8, .block_k = 8};
    const auto a = run(p, options), b = run(p, options);
    CHECK(a.dQ.storage() == b.dQ.storage());
    CHECK(a.dK.storage() == b.dK.storage());
    CHECK(a.dV.storage() == b.dV.storage());
  }

  TEST_CASE("shapes of Q K V O L and dO that do not fit together are rejected naming the argument") {
    const Tensor<float, 3> Q({2, 8, 4}), K({2, 6, 4}), V({2, 6, 3}), O({2, 8, 3}), dO({2, 8, 3});
    const Tensor<float, 2> L({2, 8});
    const auto call = [](const Tensor<float, 3>& q, const Tensor<float, 3>& k, const Tensor<float, 3>& v,
                         const Tensor<float, 3>& o, const Tensor<float, 2>& l, const Tensor<float, 3>& dout) {
      return fa2::tiled::tiled_attention_backward<float>(q.cview(), k.cview(), v.cview(), o.cview(), l.cview(),
                                                         dout.cview());
    };
    const auto rejects = [&](const char* message, auto&&... args) {
      CAPTURE(message);
      CHECK_THROWS_WITH_AS(call(args...), doctest::Contains(message), std::invalid_argument);
    };
    CHECK_NOTHROW(call(Q, K, V, O, L, dO));
    rejects("Q: shape must be", Tensor<float, 3>({0, 8, 4}), K, V, O, L, dO);
    rejects("Q: shape must be", Tensor<float, 3>({2, 0, 4}), K, V, O, L, dO);
    rejects("Q: shape must be", Tensor<float, 3>({2, 8, 0}), K, V, O, L, dO);
    rejects("K: shape must be", Q, Tensor<float, 3>({1, 6, 4}), V, O, L, dO);
    rejects("K: shape must be", Q, Tensor<float, 3>({2, 6, 5}), V, O, L, dO);
    rejects("K: shape must be", Q, Tensor<float, 3>({2, 0, 4}), Tensor<float, 3>({2, 0, 3}), O, L, dO);
    rejects("V: shape must be", Q, K, Tensor<float, 3>({2, 7, 3}), O, L, dO);
    rejects("V: shape must be", Q, K, Tensor<float, 3>({2, 6, 0}), O, L, dO);
    rejects("O: shape must be (B, Nq, Dv) = (2, 8, 3) from Q and V, got (2, 8, 4)", Q, K, V,
            Tensor<float, 3>({2, 8, 4}), L, dO);
    rejects("O: shape must be", Q, K, V, Tensor<float, 3>({2, 6, 3}), L, dO);
    rejects("O: shape must be", Q, K, V, Tensor<float, 3>({1, 8, 3}), L, dO);
    rejects("L: shape must be (B, Nq) = (2, 8) from Q, got (2, 6)", Q, K, V, O, Tensor<float, 2>({2, 6}), dO);
    rejects("L: shape must be", Q, K, V, O, Tensor<float, 2>({1, 8}), dO);
    rejects("dO: shape must be that of O (2, 8, 3), got (2, 8, 4)", Q, K, V, O, L, Tensor<float, 3>({2, 8, 4}));
    rejects("dO: shape must be", Q, K, V, O, L, Tensor<float, 3>({2, 6, 3}));
  }

  TEST_CASE("tile sizes below 1 a non-finite scale and a non-finite L are rejected naming them") {
    const Tensor<double, 3> Q({1, 4, 4}), K({1, 4, 4}), V({1, 4, 4}), O({1, 4, 4}), dO({1, 4, 4});
    Tensor<double, 2> L({1, 4});
    const auto call = [&](const TileOptions& options) {
      return fa2::tiled::tiled_attention_backward<double>(Q.cview(), K.cview(), V.cview(), O.cview(), L.cview(),
                                                          dO.cview(), options);
    };
    CHECK_THROWS_WITH_AS(call({.block_q = 0}), "block_q: got 0, allowed any integer >= 1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.block_q = -3}), "block_q: got -3, allowed any integer >= 1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.block_k = 0}), "block_k: got 0, allowed any integer >= 1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.scale = std::numeric_limits<double>::quiet_NaN()}), doctest::Contains("scale: got nan"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.scale = -std::numeric_limits<double>::infinity()}),
                         doctest::Contains("scale: got -inf"), std::invalid_argument);
    CHECK_NOTHROW(call({.block_q = 1, .block_k = 1000, .scale = -0.5}));
    L(0, 2) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH_AS(call({}), doctest::Contains("L: every entry must be finite"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({}), doctest::Contains("at (0, 2)"), std::invalid_argument);
    L(0, 2) = -std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(call({}), doctest::Contains("L: every entry must be finite"), std::invalid_argument);
  }

  TEST_CASE("a backward input view without data is rejected naming the argument") {
    const Tensor<double, 3> X({1, 4, 4});
    const Tensor<double, 2> L({1, 4});
    const fa2::TensorView<const double, 3> none(nullptr, {1, 4, 4});
    const fa2::TensorView<const double, 2> no_L(nullptr, {1, 4});
    const auto x = X.cview();
    const auto backward = [](auto... args) { return fa2::tiled::tiled_attention_backward<double>(args...); };
    CHECK_THROWS_WITH_AS(backward(none, x, x, x, L.cview(), x), "Q: the view has no data (null pointer)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(backward(x, none, x, x, L.cview(), x), "K: the view has no data (null pointer)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(backward(x, x, none, x, L.cview(), x), "V: the view has no data (null pointer)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(backward(x, x, x, none, L.cview(), x), "O: the view has no data (null pointer)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(backward(x, x, x, x, no_L, x), "L: the view has no data (null pointer)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(backward(x, x, x, x, L.cview(), none), "dO: the view has no data (null pointer)",
                         std::invalid_argument);
  }

  TEST_CASE("the preprocessing rejects an empty O and a dO of another shape naming them") {
    const Tensor<float, 3> O({2, 3, 4});
    const auto D_of = [](const Tensor<float, 3>& o, const Tensor<float, 3>& dout) {
      return fa2::tiled::backward_preprocess_D<float>(o.cview(), dout.cview());
    };
    CHECK_NOTHROW(D_of(O, O));
    CHECK_THROWS_WITH_AS(D_of(Tensor<float, 3>({2, 0, 4}), Tensor<float, 3>({2, 0, 4})),
                         doctest::Contains("O: shape must be"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(D_of(O, Tensor<float, 3>({2, 3, 5})), "dO: shape must be that of O (2, 3, 4), got (2, 3, 5)",
                         std::invalid_argument);
  }
}
