// Split-KV's combine (kernels/device/split_kv.hpp) on the host: one attention row whose keys are cut
// into parts, each part's O_s and L_s computed in float64 and stored as float32 (as a part's block
// would write them), then combined, against the whole row in float64. Also how many parts a
// decoding batch is cut into, and the decoding kernel's schedule (sm80/decode.cuh) walked as its
// blocks and warps walk it: every key a query sees is read and counted exactly once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
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

  TEST_CASE("split-KV's part count fills the waves of resident blocks with as few parts as it can") {
    using fa2::flash::split_kv_count;
    // 132 SMs holding two blocks each: 264 slots. One sequence with 8 kv heads is 8 items.
    CHECK(split_kv_count(8, 1024, 132) == 32);     // 256 of 264 slots; 33 would fill them all, 31 only 94%
    CHECK(split_kv_count(64, 128, 132) == 4);      // 256 blocks; 5 parts would run 320 in two waves
    CHECK(split_kv_count(8 * 128, 32, 132) == 1);  // 128 sequences: 1024 blocks fill 97% of four waves
    CHECK(split_kv_count(8, 4, 132) == 4);         // no more parts than blocks of keys
    CHECK(split_kv_count(1, 100000, 132) == 122);  // the cap of 128 parts: 122 / 264 >= 0.95 x 128 / 264
    CHECK(split_kv_count(1, 1, 132) == 1);         // one block of keys cannot be cut
    CHECK(split_kv_count(264, 1024, 132) == 1);    // exactly two per SM already
    CHECK(split_kv_count(300, 1024, 132) == 6);    // 1800 blocks fill 7 waves to 97%; 1 part, 2 waves to 57%

    // Against a brute force over every count: the result fills its waves to kSplitFillShare of the
    // best count's fill, and every smaller count falls short of that.
    const auto fill = [](long long items, int s, long long slots) {
      const long long blocks = items * s, waves = (blocks + slots - 1) / slots;
      return static_cast<double>(blocks) / static_cast<double>(waves * slots);
    };
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> items_of(1, 3000), keys_of(1, 400), sms_of(1, 200), resident_of(1, 4);
    for (int trial = 0; trial < 2000; ++trial) {
      const int items = items_of(rng), key_blocks = keys_of(rng), sms = sms_of(rng), resident = resident_of(rng);
      const int s = split_kv_count(items, key_blocks, sms, resident);
      const long long slots = static_cast<long long>(sms) * resident;
      const int most = std::min(key_blocks, 128);
      REQUIRE(s >= 1);
      REQUIRE(s <= most);
      double best = 0.0;
      for (int t = 1; t <= most; ++t) best = std::max(best, fill(items, t, slots));
      CHECK(fill(items, s, slots) >= fa2::flash::kSplitFillShare * best);
      for (int t = 1; t < s; ++t) CHECK(fill(items, t, slots) < fa2::flash::kSplitFillShare * best);
    }
  }

  TEST_CASE("the decoding schedule counts every key a query sees once, and masks off the others") {
    using namespace fa2::flash;
    // sm80/decode.cuh's shape: blocks of 16 (query, head) rows, 4 warps, tiles of 16 keys.
    constexpr int kRows = 16, kWarps = 4, kTile = 16;
    std::mt19937 rng(45);
    std::uniform_int_distribution<int> queries(0, 20), keys(0, 300);
    int cases = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const int n_q = queries(rng), n_k = keys(rng);
      for (const auto& [left, right] : {std::pair{-1, -1}, std::pair{-1, 0}, std::pair{40, 0}, std::pair{0, 0},
                                        std::pair{3, 2}, std::pair{-1, 5}, std::pair{7, -1}}) {
        for (const int group : {1, 3, 8}) {
          const int splits = std::vector<int>{1, 2, 5, 40}[static_cast<std::size_t>(trial % 4)];
          INFO("n_q ", n_q, ", n_k ", n_k, ", window (", left, ", ", right, "), group ", group, ", ", splits, " parts");
          // What query i sees, written out: i stands at key i + n_k - n_q.
          const auto sees = [&](int i, int key) {
            const int at = i + n_k - n_q;
            return key >= 0 && key < n_k && (left < 0 || key >= at - left) && (right < 0 || key <= at + right);
          };
          const int rows = n_q * group;
          std::vector<int> counted(static_cast<std::size_t>(rows) * static_cast<std::size_t>(n_k + kTile), 0);
          bool stray = false;  // a key counted that the query does not see, or past the block's keys
          for (int row0 = 0; row0 < rows; row0 += kRows) {
            const int i_first = row0 / group, i_last = (std::min(rows, row0 + kRows) - 1) / group;
            const BlockKeys block = decode_block_keys(i_first, i_last, n_q, n_k, left, right, kTile);
            std::vector<int> dealt(static_cast<std::size_t>(block.tiles), 0);
            for (int split = 0; split < splits; ++split) {
              const TileRange part = split_tiles(block.tiles, splits, split);
              for (int warp = 0; warp < kWarps; ++warp) {
                for (int j = 0; j < warp_tile_count(part, warp, kWarps); ++j) {
                  const int tile = part.begin + warp + j * kWarps;
                  ++dealt[static_cast<std::size_t>(tile)];
                  const int k0 = block.keys.first + tile * kTile;
                  const bool no_mask = k0 >= block.unmasked.first && k0 + kTile - 1 <= block.unmasked.last;
                  for (int row = row0; row < std::min(rows, row0 + kRows); ++row) {
                    const int i = row / group;
                    const KeySpan span = bottom_right_keys(i, n_q, n_k, left, right);
                    for (int key = k0; key < k0 + kTile; ++key) {
                      if (!no_mask && (key < span.first || key > span.last)) continue;
                      // Keys past block.keys.last are zeros in shared memory: counting one is a bug.
                      if (key > block.keys.last || !sees(i, key)) stray = true;
                      if (key >= 0 && key < n_k + kTile) {
                        ++counted[static_cast<std::size_t>(row) * static_cast<std::size_t>(n_k + kTile) +
                                  static_cast<std::size_t>(key)];
                      }
                    }
                  }
                }
              }
            }
            CHECK(std::all_of(dealt.begin(), dealt.end(), [](int n) { return n == 1; }));
          }
          CHECK_FALSE(stray);
          int wrong = 0;
          for (int row = 0; row < rows; ++row) {
            for (int key = 0; key < n_k + kTile; ++key) {
              const int want = sees(row / group, key) ? 1 : 0;
              if (counted[static_cast<std::size_t>(row) * static_cast<std::size_t>(n_k + kTile) +
                          static_cast<std::size_t>(key)] != want) {
                ++wrong;
              }
            }
          }
          CHECK(wrong == 0);
          ++cases;
        }
      }
    }
    CHECK(cases == 400 * 7 * 3);
  }

  TEST_CASE("the decoding kernel's sequences stay inside the tensors whatever the index arrays hold") {
    // Random index arrays, half of them keeping the rules (decode_sequence must return them as
    // they are) and half not (negative, decreasing, past the tensors, past max_q and max_k):
    // every query and key row the kernel would touch lies inside q and k, or inside the pages a
    // block_table row can name.
    std::mt19937 rng(11);
    int kept = 0, broken = 0;
    for (int trial = 0; trial < 4000; ++trial) {
      const bool keep = trial % 2 == 0, paged = trial % 4 >= 2;
      const int batch = std::uniform_int_distribution<int>(1, 6)(rng);
      const int total_q = std::uniform_int_distribution<int>(0, 40)(rng);
      const int total_k = std::uniform_int_distribution<int>(0, 300)(rng);
      const int max_q = std::uniform_int_distribution<int>(0, 16)(rng);
      const int max_k = std::uniform_int_distribution<int>(0, 400)(rng);
      const long long paged_keys = paged ? std::uniform_int_distribution<int>(0, 256)(rng) : 0;
      std::vector<std::int32_t> cu_q(static_cast<std::size_t>(batch) + 1), cu_k(cu_q.size()),
          used(static_cast<std::size_t>(batch));
      auto any = std::uniform_int_distribution<std::int32_t>(-1000, 1000);
      if (keep) {  // sorted cuts of the rows, lengths within max_q / max_k, seqused_k within its sequence
        for (int b = 0; b < batch; ++b) {
          const int room_q = total_q - cu_q[static_cast<std::size_t>(b)];
          const int room_k = total_k - cu_k[static_cast<std::size_t>(b)];
          cu_q[static_cast<std::size_t>(b) + 1] =
              cu_q[static_cast<std::size_t>(b)] + std::uniform_int_distribution<int>(0, std::min(room_q, max_q))(rng);
          const int keys_max = std::min(room_k, paged ? static_cast<int>(paged_keys) : max_k);
          cu_k[static_cast<std::size_t>(b) + 1] =
              cu_k[static_cast<std::size_t>(b)] + std::uniform_int_distribution<int>(0, std::min(keys_max, max_k))(rng);
          used[static_cast<std::size_t>(b)] = std::uniform_int_distribution<int>(
              0, cu_k[static_cast<std::size_t>(b) + 1] - cu_k[static_cast<std::size_t>(b)])(rng);
        }
      } else {
        for (auto* values : {&cu_q, &cu_k, &used})
          for (std::int32_t& x : *values) x = trial % 8 == 1 ? any(rng) * 1000000 : any(rng);
      }
      const bool with_used = paged || trial % 3 == 0;
      for (int b = 0; b < batch; ++b) {
        const fa2::flash::DecodeSequence s =
            fa2::flash::decode_sequence(cu_q.data(), paged ? nullptr : cu_k.data(), with_used ? used.data() : nullptr,
                                        b, total_q, total_k, max_q, max_k, paged_keys);
        const auto i = static_cast<std::size_t>(b);
        CHECK(s.q_begin >= 0);
        CHECK(s.n_q >= 0);
        CHECK(s.n_q <= max_q);
        CHECK(s.q_begin + s.n_q <= total_q);
        CHECK(s.n_k >= 0);
        CHECK(s.n_k <= max_k);
        if (paged) {
          CHECK(s.n_k <= paged_keys);
        } else {
          CHECK(s.key_row0 >= 0);
          CHECK(s.key_row0 + s.n_k <= total_k);
        }
        if (keep) {
          CHECK(s.q_begin == cu_q[i]);
          CHECK(s.n_q == cu_q[i + 1] - cu_q[i]);
          const int n_k = with_used ? used[i] : cu_k[i + 1] - cu_k[i];
          CHECK(s.n_k == n_k);
          if (!paged) CHECK(s.key_row0 == cu_k[i]);
        }
      }
      ++(keep ? kept : broken);
    }
    CHECK(kept == 2000);
    CHECK(broken == 2000);
    // Page numbers outside the cache read a page of it.
    CHECK(fa2::flash::decode_page(-5, 10) == 0);
    CHECK(fa2::flash::decode_page(3, 10) == 3);
    CHECK(fa2::flash::decode_page(10, 10) == 9);
    CHECK(fa2::flash::decode_page(2147483647, 10) == 9);
  }
}
