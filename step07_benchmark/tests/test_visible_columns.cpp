// The two numbers per key row that v6b's steps mask with (kernels/device/visible_columns.hpp),
// checked on the host against the masks themselves, element by element: common/window.hpp's
// `sees` for the windows a dense call gives the kernels, and the masks' own test for every window
// a packed sequence may give them (either bound negative). Run with ctest -R
// step07_variant_host_tests, or the binary with -ts=visible_columns.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "common/window.hpp"
#include "step07_benchmark/kernels/device/visible_columns.hpp"

using fa2::flash::visible_columns;
using fa2::flash::VisibleColumns;

namespace {

// What the kernels' mask says of key `key` and query `query`: past N_KEYS, after the query
// (causal), before the window's left edge or, without the causal mask, after its right edge.
bool masked(bool causal, bool window, int key, int query, int n_keys, int left, int right) {
  const long long ahead = static_cast<long long>(key) - query;
  if (key >= n_keys || (causal && ahead > 0)) return true;
  return window && (ahead < -static_cast<long long>(left) || (!causal && ahead > right));
}

VisibleColumns columns_of(bool causal, bool window, int key, int query0, int n_keys, int left, int right, int cols) {
  if (causal && window) return visible_columns<true, true>(key, query0, n_keys, left, right, cols);
  if (causal) return visible_columns<true, false>(key, query0, n_keys, left, right, cols);
  if (window) return visible_columns<false, true>(key, query0, n_keys, left, right, cols);
  return visible_columns<false, false>(key, query0, n_keys, left, right, cols);
}

// Every column of one row against the mask; the first disagreement, or -1.
int first_wrong_column(bool causal, bool window, int key, int query0, int n_keys, int left, int right, int cols) {
  const VisibleColumns v = columns_of(causal, window, key, query0, n_keys, left, right, cols);
  for (int c = 0; c < cols; ++c) {
    if (v.sees(c) == masked(causal, window, key, query0 + c, n_keys, left, right)) return c;
  }
  return -1;
}

}  // namespace

TEST_SUITE("visible_columns") {
  TEST_CASE("a dense call's rows see exactly the keys common/window.hpp's sees lets them") {
    // Every key and query tile of a small problem, both step widths, every mask, the windows the
    // launch gives the kernels (kernel_window, clamped to the lengths, which holds for the real
    // query rows: a step's padded rows have zero dO and D_i, and need no mask).
    for (int cols : {64, 128}) {
      for (const int n : {1, 63, 200, 300}) {
        for (const fa2::Window user : {fa2::Window{}, fa2::Window{0, 0}, fa2::Window{3, 0}, fa2::Window{40, 3},
                                       fa2::Window{-1, 17}, fa2::Window{100, -1}, fa2::Window{0, 130}}) {
          const fa2::Window k = fa2::kernel_window(user);
          const int left = static_cast<int>(std::min<fa2::index_t>(k.left, n));
          const int right = static_cast<int>(std::min<fa2::index_t>(k.right, n));
          for (bool causal : {false, true}) {
            const bool window = user.bounded();
            int wrong = 0;
            for (int key = 0; key < n + 64; ++key) {
              for (int q0 = 0; q0 < n; q0 += cols) {
                for (int col = 0; col < 8; col += 2) {
                  const VisibleColumns v = columns_of(causal, window, key, q0 + col, n, left, right, cols);
                  for (int c = 0; c < cols && q0 + col + c < n; ++c) {  // padded query rows need no mask
                    const int q = q0 + col + c;
                    const bool want = key < n && fa2::sees(causal, user, q, key);
                    wrong += v.sees(c) != want ? 1 : 0;
                  }
                }
              }
            }
            CAPTURE(cols);
            CAPTURE(n);
            CAPTURE(user.left);
            CAPTURE(user.right);
            CAPTURE(causal);
            CHECK(wrong == 0);
          }
        }
      }
    }
  }

  TEST_CASE("packed windows (either bound negative) and lengths near 2^31 give the masks' own answer") {
    std::mt19937 rng(20261206);
    const auto pick = [&](std::vector<int> values) { return values[rng() % values.size()]; };
    std::uniform_int_distribution<int> small(-300, 300);
    int wrong = 0;
    for (int i = 0; i < 200000; ++i) {
      const bool causal = rng() % 2 == 1, window = rng() % 2 == 1;
      const int cols = pick({64, 128});
      const int n_keys = pick({1, 100, 4096, 1 << 30, 2147483647});
      // Drawn in 64 bits, kept where they fit an int (as the kernels' arguments must).
      const long long key64 =
          pick({0, 1, 63, 64, 127, 4095, 4096, (1 << 30) - 1, 2147483520}) + (rng() % 3 == 0 ? small(rng) : 0);
      const long long query64 = static_cast<long long>(pick({0, 64, 4096, 1 << 30, 2147483000})) + small(rng);
      const long long left64 =
          static_cast<long long>(pick({0, 1, 63, 4095, 1 << 30, 2147483647})) + (rng() % 2 == 0 ? small(rng) : 0);
      const long long right64 =
          static_cast<long long>(pick({0, 1, 63, 4095, 1 << 30, 2147483647})) + (rng() % 2 == 0 ? small(rng) : 0);
      constexpr long long kIntMax = 2147483647;
      // Positions are never negative, and the step's last query is an int too.
      if (key64 < 0 || query64 < 0 || key64 > kIntMax || query64 + cols > kIntMax || left64 > kIntMax ||
          right64 > kIntMax) {
        continue;
      }
      const int key = static_cast<int>(key64), query0 = static_cast<int>(query64);
      const int left = static_cast<int>(left64), right = static_cast<int>(right64);
      const int c = first_wrong_column(causal, window, key, query0, n_keys, left, right, cols);
      if (c >= 0 && wrong++ < 5) {
        INFO("causal " << causal << " window " << window << " key " << key << " query0 " << query0 << " n_keys "
                       << n_keys << " left " << left << " right " << right << " column " << c);
        CHECK(c == -1);
      }
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("a row that sees nothing is an empty range, whatever the columns") {
    const VisibleColumns past = visible_columns<true, true>(300, 0, 300, 10, 0, 128);  // key past N_KEYS
    CHECK(past.first > past.last);
    const VisibleColumns behind = visible_columns<false, true>(0, 5000, 4096, 10, 10, 128);  // window far ahead
    CHECK(behind.first > behind.last);
    const VisibleColumns all = visible_columns<false, false>(5, 0, 300, 0, 0, 64);
    CHECK(all.first == 0);
    CHECK(all.last == 63);
  }
}
