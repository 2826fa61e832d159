// Split-KV's combine (kernels/device/split_kv.hpp) on the host: one attention row whose keys are cut
// into parts, each part's O_s and L_s computed in float64 and stored as float32 (as a part's block
// would write them), then combined, against the whole row in float64. Also how many parts a
// decoding batch is cut into.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "step07_benchmark/kernels/device/split_kv.hpp"

namespace {

struct RowState {
  std::vector<double> o;  // normalised over the keys seen
  double lse;             // -inf when no key was seen
};

// Softmax attention of one row over keys [begin, end): scores s[k], values v[k * d .. k * d + d).
RowState attend(const std::vector<double>& s, const std::vector<double>& v, int d, int begin, int end) {
  RowState r{std::vector<double>(static_cast<std::size_t>(d), 0.0), -std::numeric_limits<double>::infinity()};
  if (begin >= end) return r;
  double m = -std::numeric_limits<double>::infinity();
  for (int k = begin; k < end; ++k) m = std::max(m, s[static_cast<std::size_t>(k)]);
  double l = 0.0;
  for (int k = begin; k < end; ++k) {
    const double p = std::exp(s[static_cast<std::size_t>(k)] - m);
    l += p;
    for (int c = 0; c < d; ++c) r.o[static_cast<std::size_t>(c)] += p * v[static_cast<std::size_t>(k * d + c)];
  }
  for (double& x : r.o) x /= l;
  r.lse = m + std::log(l);
  return r;
}

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("split-KV's combine gives the whole row's O and L from its parts, empty parts included") {
    std::mt19937 rng(20261205);
    std::normal_distribution<double> normal(0.0, 3.0);
    const int d = 16;
    for (const int n : {1, 7, 100, 1000}) {
      std::vector<double> s(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n * d));
      for (double& x : s) x = normal(rng);
      for (double& x : v) x = normal(rng);
      const RowState whole = attend(s, v, d, 0, n);
      for (const int splits : {1, 2, 3, 8, 33}) {
        // Part boundaries at random, so that some parts are empty (splits > n, or equal cuts).
        std::vector<int> cuts = {0, n};
        std::uniform_int_distribution<int> at(0, n);
        for (int i = 1; i < splits; ++i) cuts.push_back(at(rng));
        std::sort(cuts.begin(), cuts.end());
        std::vector<float> lse(static_cast<std::size_t>(splits)), o(static_cast<std::size_t>(splits * d), NAN);
        for (int p = 0; p < splits; ++p) {
          const RowState part =
              attend(s, v, d, cuts[static_cast<std::size_t>(p)], cuts[static_cast<std::size_t>(p) + 1]);
          lse[static_cast<std::size_t>(p)] = static_cast<float>(part.lse);
          // A part that saw no key leaves its O_s unwritten (NaN here): the combine must not read it.
          if (part.lse > -std::numeric_limits<double>::infinity()) {
            for (int c = 0; c < d; ++c) {
              o[static_cast<std::size_t>(p * d + c)] = static_cast<float>(part.o[static_cast<std::size_t>(c)]);
            }
          }
        }
        std::vector<float> out(static_cast<std::size_t>(d), NAN);
        float out_lse = NAN;
        fa2::flash::combine_splits(lse.data(), 1, o.data(), d, splits, d, out.data(), &out_lse);
        INFO("n ", n, ", ", splits, " parts");
        CHECK(static_cast<double>(out_lse) == doctest::Approx(whole.lse).epsilon(1e-6));
        for (int c = 0; c < d; ++c) {
          CHECK(std::abs(static_cast<double>(out[static_cast<std::size_t>(c)]) - whole.o[static_cast<std::size_t>(c)]) <
                1e-5 * (1.0 + std::abs(whole.o[static_cast<std::size_t>(c)])));
        }
      }
    }
  }

  TEST_CASE("split-KV's combine: a row that no part saw a key of gets O = 0 and L = +inf") {
    const float minus_inf = -std::numeric_limits<float>::infinity();
    const std::vector<float> lse = {minus_inf, minus_inf, minus_inf};
    const std::vector<float> o(12, NAN);
    std::vector<float> out(4, NAN);
    float out_lse = 0.0f;
    fa2::flash::combine_splits(lse.data(), 1, o.data(), 4, 3, 4, out.data(), &out_lse);
    CHECK(out_lse == std::numeric_limits<float>::infinity());
    for (const float x : out) CHECK(x == 0.0f);
  }

  TEST_CASE("split-KV's part count: enough blocks for two per SM, within the key blocks and the cap") {
    using fa2::flash::split_kv_count;
    // One sequence, 8 kv heads (decoding, the group's query heads together): 8 items on 132 SMs.
    CHECK(split_kv_count(8, 1024, 132) == 33);     // 8 x 33 = 264 blocks
    CHECK(split_kv_count(8 * 128, 32, 132) == 1);  // 128 sequences fill the GPU alone
    CHECK(split_kv_count(8, 4, 132) == 4);         // no more parts than blocks of keys
    CHECK(split_kv_count(1, 100000, 132) == 128);  // the cap
    CHECK(split_kv_count(1, 1, 132) == 1);         // one block of keys cannot be cut
    CHECK(split_kv_count(264, 1024, 132) == 1);    // exactly two per SM already
    CHECK(split_kv_count(263, 1024, 132) == 2);
  }
}
