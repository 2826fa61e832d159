// The schedule of v6's packed forward (kernels/device/packed_schedule.hpp) on the host: every query
// tile of every sequence once, sequence by sequence, the heaviest first; the per-sequence windows that turn the packed
// batch's bottom-right masks into the kernel's top-left ones, query by query and key by key against
// split_kv.hpp's bottom_right_keys; and the key tiles each query tile walks, which must hold every
// key its queries see. The backward's side too: every key tile once in its order, and the query tiles each
// walks, consecutive per query tile and ending where the turns of deterministic dQ count from.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "common/window.hpp"
#include "step07_benchmark/kernels/device/packed_schedule.hpp"
#include "step07_benchmark/kernels/device/split_kv.hpp"

namespace {

using fa2::flash::PackedMask;
using fa2::flash::PackedSequence;

constexpr int kBlockM = 128, kBlockN = 128;

// Random lengths of 0 to 700 (a few of each extreme), queries equal to keys when `square`.
std::vector<std::pair<int, int>> random_lengths(std::mt19937& rng, bool square) {
  std::uniform_int_distribution<int> count(1, 12), length(0, 700), pick(0, 5);
  std::vector<std::pair<int, int>> lengths;
  for (int b = count(rng); b > 0; --b) {
    const int kind = pick(rng);
    const int n_q = kind == 0 ? 0 : (kind == 1 ? 1 : length(rng));
    const int n_k = square ? n_q : (kind == 2 ? 0 : length(rng));
    lengths.emplace_back(n_q, n_k);
  }
  return lengths;
}

// The batch + 1 offsets of the lengths' queries and keys, and the longest of each.
struct Offsets {
  std::vector<std::int32_t> cu_q, cu_k;
  int max_q = 0, max_k = 0;
};
Offsets offsets(const std::vector<std::pair<int, int>>& lengths) {
  Offsets o{{0}, {0}};
  for (const auto& [n_q, n_k] : lengths) {
    o.cu_q.push_back(o.cu_q.back() + n_q), o.cu_k.push_back(o.cu_k.back() + n_k);
    o.max_q = std::max(o.max_q, n_q), o.max_k = std::max(o.max_k, n_k);
  }
  return o;
}

// The kernel's bounds as the launch gives them (product/plan.hpp's packed_kernel_bounds): an
// unbounded side reaches every key.
std::pair<int, int> kernel_bounds(fa2::Window w, int max_q, int max_k) {
  return {w.left < 0 ? max_k : static_cast<int>(w.left), w.right < 0 ? max_q : static_cast<int>(w.right)};
}

}  // namespace

TEST_CASE("packed schedule: every query tile once, sequence by sequence, the most key tiles first") {
  std::mt19937 rng(46);
  for (int trial = 0; trial < 300; ++trial) {
    const bool square = trial % 2 == 0;
    const auto lengths = random_lengths(rng, square);
    const auto [cu_q, cu_k, max_q, max_k] = offsets(lengths);
    const PackedMask mask =
        square && trial % 4 == 0 ? PackedMask::causal : (trial % 3 == 0 ? PackedMask::none : PackedMask::window);
    const auto [left, right] = kernel_bounds(trial % 5 == 0 ? fa2::Window{60, 10} : fa2::Window{-1, 0}, max_q, max_k);
    const auto batch = static_cast<int>(lengths.size());
    const fa2::flash::PackedSchedule s =
        fa2::flash::packed_schedule(cu_q.data(), cu_k.data(), nullptr, batch, mask, kBlockM, kBlockN, left, right);
    REQUIRE(s.sequences.size() == lengths.size());
    std::size_t expected = 0;
    std::vector<long long> total(static_cast<std::size_t>(batch), 0);
    const auto work = [&](const fa2::flash::PackedTile& t) {
      return fa2::flash::packed_key_tiles(mask, s.sequences[static_cast<std::size_t>(t.seq)], t.q_tile * kBlockM,
                                          kBlockM, kBlockN, left, right)
          .count();
    };
    for (int b = 0; b < batch; ++b) {
      const PackedSequence& q = s.sequences[static_cast<std::size_t>(b)];
      CHECK(q.q_start == cu_q[static_cast<std::size_t>(b)]);
      CHECK(q.k_start == cu_k[static_cast<std::size_t>(b)]);
      CHECK(q.n_q == lengths[static_cast<std::size_t>(b)].first);
      CHECK(q.n_k == lengths[static_cast<std::size_t>(b)].second);
      expected += static_cast<std::size_t>((q.n_q + kBlockM - 1) / kBlockM);
      for (int m = 0; m * kBlockM < q.n_q; ++m) total[static_cast<std::size_t>(b)] += work({b, m});
    }
    CHECK(s.tiles.size() == expected);
    std::set<std::pair<int, int>> seen;
    std::set<int> finished;  // the sequences whose tiles have all come: each sequence's tiles are consecutive
    int previous_seq = -1, previous_work = 0;
    long long previous_total = 1LL << 60;
    for (const fa2::flash::PackedTile& t : s.tiles) {
      REQUIRE(t.seq >= 0);
      REQUIRE(t.seq < batch);
      CHECK(t.q_tile * kBlockM < s.sequences[static_cast<std::size_t>(t.seq)].n_q);
      CHECK(seen.insert({t.seq, t.q_tile}).second);
      const int w = work(t);
      if (t.seq != previous_seq) {
        CHECK(finished.insert(t.seq).second);
        CHECK(total[static_cast<std::size_t>(t.seq)] <= previous_total);  // the sequences, the most work first
        previous_total = total[static_cast<std::size_t>(t.seq)];
      } else {
        CHECK(w <= previous_work);  // inside a sequence, the most key tiles first
      }
      previous_seq = t.seq, previous_work = w;
    }
  }
}

TEST_CASE("packed schedule: per-sequence top-left windows see exactly the bottom-right keys") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> length(0, 90), bound(-1, 40);
  for (int trial = 0; trial < 2000; ++trial) {
    const PackedSequence s{0, length(rng), 0, length(rng)};
    const fa2::Window w{bound(rng), bound(rng)};
    const auto [left, right] = kernel_bounds(w, 100, 100);
    const fa2::flash::WindowBounds tl = fa2::flash::packed_window(left, right, s);
    for (int i = 0; i < s.n_q; ++i) {
      const fa2::flash::KeySpan want =
          fa2::flash::bottom_right_keys(i, s.n_q, s.n_k, static_cast<int>(w.left), static_cast<int>(w.right));
      for (int j = 0; j < s.n_k; ++j) {
        const bool bottom_right = j >= want.first && j <= want.last;
        // The kernels' masks compare with the bounds as numbers (a shifted bound may be negative).
        const bool top_left = j >= i - tl.left && j <= i + tl.right;
        REQUIRE_MESSAGE(bottom_right == top_left, "n_q ", s.n_q, ", n_k ", s.n_k, ", window (", w.left, ", ", w.right,
                        "), query ", i, ", key ", j);
      }
    }
  }
}

TEST_CASE("packed schedule: a query tile's key tiles hold every key its queries see") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> length(0, 600), bound(-1, 300);
  for (int trial = 0; trial < 3000; ++trial) {
    const PackedSequence s{0, length(rng), 0, length(rng)};
    const fa2::Window w{bound(rng), trial % 3 == 0 ? 0 : bound(rng)};
    const auto [left, right] = kernel_bounds(w, 600, 600);
    const bool square = s.n_q == s.n_k;
    for (const PackedMask mask : {PackedMask::none, PackedMask::causal, PackedMask::window}) {
      // The masks as the plan gives them: causal only for square sequences and the causal window.
      if (mask == PackedMask::causal && !(square && w.left < 0 && w.right == 0)) continue;
      const fa2::Window seen = mask == PackedMask::none ? fa2::Window{} : w;
      for (int q0 = 0; q0 < s.n_q; q0 += kBlockM) {
        const fa2::flash::KeyTileRange range = fa2::flash::packed_key_tiles(mask, s, q0, kBlockM, kBlockN, left, right);
        CHECK(range.count() >= 1);
        CHECK(range.first >= 0);
        CHECK(range.end <= std::max(1, (s.n_k + kBlockN - 1) / kBlockN));
        for (int i = q0; i < std::min(q0 + kBlockM, s.n_q); ++i) {
          const fa2::flash::KeySpan keys =
              fa2::flash::bottom_right_keys(i, s.n_q, s.n_k, static_cast<int>(seen.left), static_cast<int>(seen.right));
          if (keys.count() == 0) continue;
          REQUIRE_MESSAGE(keys.first / kBlockN >= range.first, "query ", i, " of (", s.n_q, ", ", s.n_k, ")");
          REQUIRE_MESSAGE(keys.last / kBlockN < range.end, "query ", i, " of (", s.n_q, ", ", s.n_k, ")");
        }
      }
    }
  }
}

// The backward's side (v6b's packed twins): key tiles of 128 walking query tiles of 64.
TEST_CASE(
    "packed backward schedule: every key tile once, sequence by sequence, heaviest or (deterministic) last first") {
  constexpr int kBwdM = 64, kBwdN = 128;
  std::mt19937 rng(47);
  for (int trial = 0; trial < 300; ++trial) {
    const bool square = trial % 2 == 0, last_first = trial % 3 == 1;
    const auto lengths = random_lengths(rng, square);
    const auto [cu_q, cu_k, max_q, max_k] = offsets(lengths);
    const PackedMask mask =
        square && trial % 4 == 0 ? PackedMask::causal : (trial % 5 == 0 ? PackedMask::none : PackedMask::window);
    const auto [left, right] = kernel_bounds(trial % 7 == 0 ? fa2::Window{60, 10} : fa2::Window{-1, 0}, max_q, max_k);
    const auto batch = static_cast<int>(lengths.size());
    const fa2::flash::PackedBackwardSchedule s = fa2::flash::packed_backward_schedule(
        cu_q.data(), cu_k.data(), batch, mask, kBwdM, kBwdN, left, right, last_first);
    REQUIRE(s.sequences.size() == lengths.size());
    const auto work = [&](const fa2::flash::PackedKeyTile& t) {
      return fa2::flash::packed_query_tiles(mask, s.sequences[static_cast<std::size_t>(t.seq)], t.key_tile * kBwdN,
                                            kBwdM, kBwdN, left, right)
          .count();
    };
    std::size_t expected = 0;
    std::vector<long long> total(static_cast<std::size_t>(batch), 0);
    for (int b = 0; b < batch; ++b) {
      const int n_k = lengths[static_cast<std::size_t>(b)].second;
      expected += static_cast<std::size_t>((n_k + kBwdN - 1) / kBwdN);  // every key tile: each writes its dK, dV
      for (int n = 0; n * kBwdN < n_k; ++n) total[static_cast<std::size_t>(b)] += work({b, n});
    }
    CHECK(s.tiles.size() == expected);
    std::set<std::pair<int, int>> seen;
    std::set<int> finished;
    int previous_seq = -1, previous_tile = 0, previous_work = 0;
    long long previous_total = 1LL << 60;
    for (const fa2::flash::PackedKeyTile& t : s.tiles) {
      REQUIRE(t.seq >= 0);
      REQUIRE(t.seq < batch);
      CHECK(t.key_tile * kBwdN < s.sequences[static_cast<std::size_t>(t.seq)].n_k);
      CHECK(seen.insert({t.seq, t.key_tile}).second);
      const int w = work(t);
      if (t.seq != previous_seq) {
        CHECK(finished.insert(t.seq).second);
        CHECK(total[static_cast<std::size_t>(t.seq)] <= previous_total);
        previous_total = total[static_cast<std::size_t>(t.seq)];
      } else if (last_first) {
        CHECK(t.key_tile == previous_tile - 1);  // the order of the turns of deterministic dQ
      } else {
        CHECK(w <= previous_work);
      }
      previous_seq = t.seq, previous_tile = t.key_tile, previous_work = w;
    }
  }
}

// The walks of v6b's packed twins and the turns of deterministic dQ: the key tiles whose walks meet a
// query tile are exactly those with a key one of its queries sees (never fewer; more only where a
// partial last query tile is counted whole, as the dense walks count it), they are consecutive, and
// the last of them is last_key_tile(_right)'s, the count the turns start from. Windows bottom-right,
// so that a sequence with more queries than keys has a right bound below zero.
TEST_CASE("packed backward walks: every seen key's tile, consecutive, ending at the turns' last key tile") {
  constexpr int kBwdM = 64, kBwdN = 128;
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> length(0, 700), bound(-1, 300);
  for (int trial = 0; trial < 1500; ++trial) {
    const PackedSequence s{0, length(rng), 0, length(rng)};
    const fa2::Window w{bound(rng), trial % 3 == 0 ? 0 : bound(rng)};
    const auto [left, right] = kernel_bounds(w, 700, 700);
    const bool square = s.n_q == s.n_k;
    for (const PackedMask mask : {PackedMask::none, PackedMask::causal, PackedMask::window}) {
      if (mask == PackedMask::causal && !(square && w.left < 0 && w.right == 0)) continue;
      const fa2::Window seen_window = mask == PackedMask::none ? fa2::Window{} : w;
      const int key_tiles = (s.n_k + kBwdN - 1) / kBwdN;
      const fa2::flash::WindowBounds tl = fa2::flash::packed_window(left, right, s);
      for (int m = 0; m * kBwdM < s.n_q; ++m) {
        INFO("(", s.n_q, ", ", s.n_k, "), window (", w.left, ", ", w.right, "), query tile ", m);
        int first = -1, last = -1;
        for (int n = 0; n < key_tiles; ++n) {
          const fa2::flash::QueryTileRange walked =
              fa2::flash::packed_query_tiles(mask, s, n * kBwdN, kBwdM, kBwdN, left, right);
          bool sees = false;  // some query of tile m sees some key of tile n
          for (int i = m * kBwdM; i < std::min((m + 1) * kBwdM, s.n_q) && !sees; ++i) {
            const fa2::flash::KeySpan keys = fa2::flash::bottom_right_keys(
                i, s.n_q, s.n_k, static_cast<int>(seen_window.left), static_cast<int>(seen_window.right));
            sees = keys.count() > 0 && keys.first < (n + 1) * kBwdN && keys.last >= n * kBwdN;
          }
          const bool walks = m >= walked.first && m < walked.end;
          if (sees) REQUIRE(walks);
          if (!walks) continue;
          if (first < 0) first = n;
          REQUIRE_MESSAGE((last < 0 || last == n - 1), "key tiles ", last, " and ", n, " not consecutive");
          last = n;
        }
        if (last < 0) continue;
        int turns_last = 0;
        if (mask == PackedMask::window) {
          turns_last = fa2::flash::last_key_tile_right(m, key_tiles, kBwdM, kBwdN, false, tl.right);
        } else {
          turns_last = fa2::flash::last_key_tile(m, key_tiles, kBwdM, kBwdN, mask == PackedMask::causal);
        }
        CHECK(last == turns_last);
      }
    }
  }
}
