// Tests of step 2: the tiled forward against common's float64 reference (O and L) over
// ragged shapes, tile sizes and both causal settings, plus properties that do not need the
// reference (L is a logsumexp, O rows are convex combinations), argument checks and the trace.
//   cmake --build --preset default --target step02_tests && ctest --preset default -L step02
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/testing.hpp"
#include "step01_online_softmax/online_softmax.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;
using fa2::tiled::TileOptions;

struct Shape {
  index_t B, Nq, Nk, D;
};

// Ragged shapes (no length a multiple of 16, Nq != Nk) next to small and aligned ones.
constexpr std::array<Shape, 9> kShapes{{{2, 100, 100, 64},
                                        {1, 37, 53, 32},
                                        {1, 200, 96, 128},
                                        {1, 1, 1, 1},
                                        {3, 5, 7, 4},
                                        {2, 16, 16, 16},
                                        {1, 64, 32, 16},
                                        {1, 20, 50, 8},
                                        {2, 33, 17, 24}}};

// (B_q, B_k): single rows, odd sizes, the default, tiles longer than either sequence.
constexpr std::array<std::array<index_t, 2>, 6> kTiles{{{16, 16}, {1, 1}, {3, 5}, {16, 3}, {64, 64}, {500, 500}}};

// Tolerances against the float64 reference when the tiles are computed in T.
// float: the scores are dot products over up to D = 128 terms and the softmax sums up to
// 200 terms, each adding rounding of eps = 1.2e-7 relative; over many runs the largest
// error seen was ~1.3e-6 for O (|O| <~ 3) and ~8e-7 for L (|L| <~ 10), so 1e-5 absolute
// + 1e-5 relative leaves a margin of ~8x and still fails for any algorithmic slip (a
// missed rescale is an O(1) error). double: the same arithmetic with eps = 2.2e-16; the
// largest error seen was ~3e-15, so 1e-12 absolute + relative.
template <class T>
fa2::Tolerance tile_tolerance() {
  if constexpr (std::is_same_v<T, float>) {
    return {1e-5, 1e-5};
  } else {
    return {1e-12, 1e-12};
  }
}

template <class T>
struct Inputs {
  Tensor<T, 3> Q, K, V;
};

template <class T>
Inputs<T> random_inputs(const Shape& s, fa2::Rng& rng, index_t Dv = -1) {
  return {fa2::random_normal<T, 3>({s.B, s.Nq, s.D}, rng), fa2::random_normal<T, 3>({s.B, s.Nk, s.D}, rng),
          fa2::random_normal<T, 3>({s.B, s.Nk, Dv < 0 ? s.D : Dv}, rng)};
}

template <class T>
fa2::tiled::ForwardResult<T> run(const Inputs<T>& in, const TileOptions& options) {
  return fa2::tiled::tiled_attention_forward<T>(in.Q.cview(), in.K.cview(), in.V.cview(), options);
}

}  // namespace

TEST_SUITE("tiled_cpu") {
  TEST_CASE_TEMPLATE("O and L match the float64 reference for ragged shapes all tile sizes and both causal settings", T,
                     float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const Shape& s : kShapes) {
      const auto in = random_inputs<T>(s, rng);
      for (const bool causal : {false, true}) {
        const auto ref = fa2::reference_attention<T>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
        for (const auto& [B_q, B_k] : kTiles) {
          INFO("shape (B, Nq, Nk, D) = (", s.B, ", ", s.Nq, ", ", s.Nk, ", ", s.D, "), B_q = ", B_q, ", B_k = ", B_k,
               ", causal = ", causal);
          const auto out = run(in, {.block_q = B_q, .block_k = B_k, .causal = causal});
          FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), tile_tolerance<T>(), "O");
          FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), tile_tolerance<T>(), "L");
        }
      }
    }
  }

  TEST_CASE("bf16 inputs are computed in float32 and O is rounded to bf16 once") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 37, 53, 32};
    const auto in = random_inputs<fa2::bf16>(s, rng);
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      // The reference widens the same bf16 values exactly, so the only extra error is the
      // final rounding of O to bf16: half a unit in the 8th bit, 2^-9 = 2e-3 relative.
      const auto ref = fa2::reference_attention<fa2::bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
      const auto out = run(in, {.causal = causal});
      FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), (fa2::Tolerance{1e-5, 4e-3}), "O (bf16)");
      FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), tile_tolerance<float>(), "L (float32)");
    }
  }

  TEST_CASE("L is the logsumexp of the scaled scores summed term by term") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 29, 41, 12};
    const auto in = random_inputs<double>(s, rng);
    const double scale = 0.3;
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto out = run(in, {.block_q = 8, .block_k = 16, .causal = causal, .scale = scale});
      for (index_t b = 0; b < s.B; ++b) {
        for (index_t q = 0; q < s.Nq; ++q) {
          long double sum = 0.0L;  // no max subtraction: these scores are far from overflow
          const index_t visible = causal ? std::min(q + 1, s.Nk) : s.Nk;
          for (index_t k = 0; k < visible; ++k) {
            long double dot = 0.0L;
            for (index_t d = 0; d < s.D; ++d) dot += static_cast<long double>(in.Q(b, q, d)) * in.K(b, k, d);
            sum += std::exp(dot * static_cast<long double>(scale));
          }
          CAPTURE(b);
          CAPTURE(q);
          CHECK(out.L(b, q) == doctest::Approx(static_cast<double>(std::log(sum))).epsilon(1e-12));
        }
      }
    }
  }

  TEST_CASE("with one-hot value rows O holds the attention weights: non-negative and summing to 1") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{1, 23, 19, 8};
    auto in = random_inputs<double>(s, rng, s.Nk);
    // V = identity: row k of V is the unit vector e_k, so O(q, k) is the weight of key k.
    for (index_t k = 0; k < s.Nk; ++k) {
      for (index_t c = 0; c < s.Nk; ++c) in.V(0, k, c) = (k == c) ? 1.0 : 0.0;
    }
    for (const bool causal : {false, true}) {
      for (const index_t tile : {1, 4, 16}) {
        CAPTURE(causal);
        CAPTURE(tile);
        const auto out = run(in, {.block_q = tile, .block_k = tile, .causal = causal});
        for (index_t q = 0; q < s.Nq; ++q) {
          double total = 0.0;
          for (index_t k = 0; k < s.Nk; ++k) {
            const double w = out.O(0, q, k);
            CHECK(w >= 0.0);
            if (causal && k > q) CHECK(w == 0.0);  // masked: exp(-inf) is exactly 0
            total += w;
          }
          CHECK(total == doctest::Approx(1.0).epsilon(1e-13));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("every element of O lies between the smallest and largest value in its column of V", T, float,
                     double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 45, 31, 16};
    const index_t Dv = 10;
    const auto in = random_inputs<T>(s, rng, Dv);
    // A convex combination can only leave [min, max] by rounding: a few eps of |V| (<~ 5).
    const double slack = 8.0 * static_cast<double>(std::numeric_limits<T>::epsilon()) * 5.0;
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto out = run(in, {.block_q = 8, .block_k = 5, .causal = causal});
      for (index_t b = 0; b < s.B; ++b) {
        for (index_t q = 0; q < s.Nq; ++q) {
          const index_t visible = causal ? std::min(q + 1, s.Nk) : s.Nk;
          for (index_t d = 0; d < Dv; ++d) {
            double lo = std::numeric_limits<double>::infinity(), hi = -lo;
            for (index_t k = 0; k < visible; ++k) {
              lo = std::min(lo, static_cast<double>(in.V(b, k, d)));
              hi = std::max(hi, static_cast<double>(in.V(b, k, d)));
            }
            const double o = static_cast<double>(out.O(b, q, d));
            CHECK((o >= lo - slack && o <= hi + slack));
          }
        }
      }
    }
  }

  TEST_CASE("ragged last tiles agree with one tile that covers the whole sequence") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto in = random_inputs<double>({2, 100, 100, 64}, rng);  // 100 = 6 * 16 + 4
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto whole = run(in, {.block_q = 100, .block_k = 100, .causal = causal});
      for (const index_t tile : {16, 7, 33, 99}) {
        CAPTURE(tile);
        const auto tiled = run(in, {.block_q = tile, .block_k = tile, .causal = causal});
        FA2_CHECK_CLOSE(tiled.O.cview(), whole.O.cview(), tile_tolerance<double>(), "O");
        FA2_CHECK_CLOSE(tiled.L.cview(), whole.L.cview(), tile_tolerance<double>(), "L");
      }
    }
  }

  TEST_CASE("causal queries past the last key see every key when Nq is larger than Nk") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{1, 40, 13, 8};
    const auto in = random_inputs<double>(s, rng);
    const auto causal = run(in, {.block_q = 16, .block_k = 16, .causal = true});
    const auto full = run(in, {.block_q = 16, .block_k = 16, .causal = false});
    // Query q >= Nk - 1 sees keys 0..q, i.e. all Nk of them, through the same tiles: same bits.
    for (index_t q = s.Nk - 1; q < s.Nq; ++q) {
      CAPTURE(q);
      CHECK(causal.L(0, q) == full.L(0, q));
      for (index_t d = 0; d < s.D; ++d) CHECK(causal.O(0, q, d) == full.O(0, q, d));
    }
  }

  TEST_CASE("strided views are read through their strides and the gaps are never read") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{2, 21, 18, 8};
    const auto dense = random_inputs<float>(s, rng);
    // Each row padded to 11 elements and the whole buffer poisoned with NaN: a read outside
    // the view would turn the output NaN.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto padded = [&](const Tensor<float, 3>& t) {
      auto p = Tensor<float, 3>::strided(t.shape(), {t.size(1) * 11, 11, 1}, nan);
      fa2::copy_convert<float, float, 3>(t.cview(), p.view());
      return p;
    };
    const Inputs<float> strided{padded(dense.Q), padded(dense.K), padded(dense.V)};
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto a = run(dense, {.block_q = 4, .block_k = 5, .causal = causal});
      const auto b = run(strided, {.block_q = 4, .block_k = 5, .causal = causal});
      FA2_CHECK_CLOSE(b.O.cview(), a.O.cview(), (fa2::Tolerance{0.0, 0.0}), "O");  // same numbers, same order
      FA2_CHECK_CLOSE(b.L.cview(), a.L.cview(), (fa2::Tolerance{0.0, 0.0}), "L");
    }
  }

  TEST_CASE("the trace sees each key tile in order and the first rescale factor is exactly 0") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{1, 10, 37, 8};
    const auto in = random_inputs<double>(s, rng);
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      std::vector<std::array<index_t, 3>> seen;  // (q_start, k_start, k_cols)
      const fa2::tiled::KeyTileTrace<double> trace = [&](const fa2::tiled::KeyTileStep<double>& step) {
        seen.push_back({step.q_start, step.k_start, static_cast<index_t>(step.S_ij.cols())});
        for (Eigen::Index r = 0; r < step.m_new.size(); ++r) {
          const double alpha = step.alpha(r);
          if (step.k_start == 0) CHECK(alpha == 0.0);  // exp(-inf - m_new), not NaN
          CHECK((alpha >= 0.0 && alpha <= 1.0));
          CHECK(step.m_new(r) >= step.m_old(r));  // the running maximum never shrinks
          CHECK(step.l_new(r) >= 1.0);            // the maximum's own term is exp(0) = 1
        }
      };
      fa2::tiled::tiled_attention_forward<double>(in.Q.cview(), in.K.cview(), in.V.cview(),
                                                  {.block_q = 4, .block_k = 16, .causal = causal}, trace);
      std::vector<std::array<index_t, 3>> expected;
      if (!causal) {  // 3 query tiles x 3 key tiles; the last key tile holds 37 - 32 = 5 keys
        const std::array<std::array<index_t, 2>, 3> key_tiles{{{0, 16}, {16, 16}, {32, 5}}};
        for (const index_t q_start : {0, 4, 8}) {
          for (const auto& [k_start, k_cols] : key_tiles) {
            expected.push_back({q_start, k_start, k_cols});
          }
        }
      } else {  // the key loop stops after the tile's last query: keys [0, 4), [0, 8), [0, 10)
        expected = {{0, 0, 4}, {4, 0, 8}, {8, 0, 10}};
      }
      CHECK(seen == expected);
    }
  }

  TEST_CASE("one-row one-key tiles follow step01's online softmax score by score") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Shape s{1, 3, 25, 8};
    const auto in = random_inputs<double>(s, rng);
    const index_t row = 2;
    fa2::online::OnlineSoftmaxState<double> state;  // step01's scalar state, fed the same scores
    const auto out = fa2::tiled::tiled_attention_forward<double>(
        in.Q.cview(), in.K.cview(), in.V.cview(), {.block_q = 1, .block_k = 1},
        [&](const fa2::tiled::KeyTileStep<double>& step) {
          if (step.q_start != row) return;
          const double alpha = state.update(step.S_ij(0, 0));
          CHECK(alpha == doctest::Approx(step.alpha(0)).epsilon(1e-15));
          CHECK(state.m == step.m_new(0));
          CHECK(state.l == doctest::Approx(step.l_new(0)).epsilon(1e-14));
        });
    CHECK(out.L(0, row) == doctest::Approx(state.logsumexp()).epsilon(1e-14));
  }

  TEST_CASE("shapes that do not fit together or have a zero length are rejected naming the argument") {
    const Tensor<float, 3> Q({2, 8, 4}), K({2, 6, 4}), V({2, 6, 3});
    const auto call = [](const Tensor<float, 3>& q, const Tensor<float, 3>& k, const Tensor<float, 3>& v) {
      return fa2::tiled::tiled_attention_forward<float>(q.cview(), k.cview(), v.cview());
    };
    CHECK_NOTHROW(call(Q, K, V));
    CHECK_THROWS_WITH_AS(call(Tensor<float, 3>({0, 8, 4}), K, V), doctest::Contains("Q: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Tensor<float, 3>({2, 0, 4}), K, V), doctest::Contains("Q: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Tensor<float, 3>({2, 8, 0}), K, V), doctest::Contains("Q: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, Tensor<float, 3>({1, 6, 4}), V), doctest::Contains("K: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, Tensor<float, 3>({2, 6, 5}), V), doctest::Contains("got (2, 6, 5)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, Tensor<float, 3>({2, 0, 4}), Tensor<float, 3>({2, 0, 3})),
                         doctest::Contains("K: shape must be"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, Tensor<float, 3>({1, 6, 3})), doctest::Contains("V: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, Tensor<float, 3>({2, 7, 3})), doctest::Contains("V: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, Tensor<float, 3>({2, 6, 0})), doctest::Contains("V: shape must be"),
                         std::invalid_argument);
  }

  TEST_CASE("tile sizes below 1 and a non-finite scale are rejected naming the option") {
    const Tensor<double, 3> Q({1, 4, 4}), K({1, 4, 4}), V({1, 4, 4});
    const auto call = [&](const TileOptions& options) {
      return fa2::tiled::tiled_attention_forward<double>(Q.cview(), K.cview(), V.cview(), options);
    };
    CHECK_THROWS_WITH_AS(call({.block_q = 0}), "block_q: got 0, allowed any integer >= 1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.block_q = -3}), "block_q: got -3, allowed any integer >= 1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.block_k = 0}), "block_k: got 0, allowed any integer >= 1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.scale = std::numeric_limits<double>::quiet_NaN()}), doctest::Contains("scale: got nan"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call({.scale = std::numeric_limits<double>::infinity()}), doctest::Contains("scale: got inf"),
                         std::invalid_argument);
    CHECK_NOTHROW(call({.block_q = 1, .block_k = 1000, .scale = -0.5}));
  }

  TEST_CASE("a view without data is rejected naming the argument") {
    const Tensor<double, 3> K({1, 4, 4}), V({1, 4, 4});
    const fa2::TensorView<const double, 3> no_data(nullptr, {1, 4, 4});
    CHECK_THROWS_WITH_AS(fa2::tiled::tiled_attention_forward<double>(no_data, K.cview(), V.cview()),
                         "Q: the view has no data (null pointer)", std::invalid_argument);
    CHECK_THROWS_WITH_AS(fa2::tiled::tiled_attention_forward<double>(K.cview(), no_data, V.cview()),
                         "K: the view has no data (null pointer)", std::invalid_argument);
    CHECK_THROWS_WITH_AS(fa2::tiled::tiled_attention_forward<double>(K.cview(), K.cview(), no_data),
                         "V: the view has no data (null pointer)", std::invalid_argument);
  }
}
