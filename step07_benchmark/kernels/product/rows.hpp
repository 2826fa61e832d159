// The product's table (kernels.def) as constexpr data: its configurations per kernel family (key and
// head dims) and its picks. CUDA-free: the plans read it, and the generated translation units of the
// kernels (instances/) compile the rows it holds. The lab's table has the same shape (lab/rows.hpp);
// the templates below take either (Table).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string_view>

namespace fa2::flash {

// The four kernel families; the options of a row are FastOptions (sm80 forward), FastBwdOptions
// (sm80 backward), HopperOptions (sm90 forward) or HopperBwdOptions (sm90 backward).
enum class Family { sm80_forward, sm80_backward, sm90_forward, sm90_backward };

constexpr bool is_backward(Family f) {
  return f == Family::sm80_backward || f == Family::sm90_backward;
}
constexpr bool is_sm90(Family f) {
  return f == Family::sm90_forward || f == Family::sm90_backward;
}

// The head dims a row is built for, in the table's order.
struct HeadDimSet {
  int dims[4] = {};
  int count = 0;
  constexpr HeadDimSet(std::initializer_list<int> list) {
    for (int d : list) dims[count++] = d;
  }
  constexpr bool has(long long head_dim) const {
    for (int i = 0; i < count; ++i) {
      if (dims[i] == head_dim) return true;
    }
    return false;
  }
};

struct GeneratedRow {
  std::string_view key;
  HeadDimSet head_dims;
};

#define FA2_UNPAREN(...) __VA_ARGS__

// The product's rows, per family, in kernels.def's order.
struct ProductRows {
  static constexpr bool kProduct = true;
  static constexpr GeneratedRow sm80_forward[] = {
#define FA2_SM80_FORWARD(key, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/product/kernels.def"
  };
  static constexpr GeneratedRow sm80_backward[] = {
#define FA2_SM80_BACKWARD(key, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/product/kernels.def"
  };
  static constexpr GeneratedRow sm90_forward[] = {
#define FA2_SM90_FORWARD(key, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/product/kernels.def"
  };
  static constexpr GeneratedRow sm90_backward[] = {
#define FA2_SM90_BACKWARD(key, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/product/kernels.def"
  };
};

// The head dims each family's kernels are compiled for: one translation unit per head dim and
// mask (and part, product or lab). CMakeLists.txt generates the same list.
inline constexpr int kSm80HeadDims[] = {32, 64, 128};
inline constexpr int kSm90HeadDims[] = {64, 128};

template <class Table, Family F>
constexpr const auto& rows() {
  if constexpr (F == Family::sm80_forward) {
    return Table::sm80_forward;
  } else if constexpr (F == Family::sm80_backward) {
    return Table::sm80_backward;
  } else if constexpr (F == Family::sm90_forward) {
    return Table::sm90_forward;
  } else {
    return Table::sm90_backward;
  }
}

template <class Table, Family F>
constexpr int row_count() {
  return static_cast<int>(std::size(rows<Table, F>()));
}

// The index of the row with this key among its family's rows of the table; -1 when it has none.
template <class Table, Family F>
constexpr int row_index(std::string_view key) {
  for (int i = 0; i < row_count<Table, F>(); ++i) {
    if (rows<Table, F>()[i].key == key) return i;
  }
  return -1;
}

// A plan's choice at one head dim and mask (and window or not): the row it runs when the query
// rows (batch x N_q) reach from_rows. Picks of one (family, head dim, causal, window) are tried in
// the table's order.
struct Pick {
  Family family;
  int head_dim = 0;
  bool causal = false;
  bool window = false;
  long long from_rows = 0;
  std::string_view row;
};

inline constexpr Pick kPicks[] = {
#define FA2_PICK(family, head_dim, causal, window, from_rows, row) \
  {Family::family, head_dim, causal, window, from_rows, row},
#include "step07_benchmark/kernels/product/kernels.def"
};

#undef FA2_UNPAREN

// Whether family F has picks for calls with a sliding window at (head dim, mask); where it has
// none, windowed calls take its other picks.
template <Family F>
constexpr bool has_window_picks(long long head_dim, bool causal) {
  for (const Pick& p : kPicks) {
    if (p.family == F && p.head_dim == head_dim && p.causal == causal && p.window) return true;
  }
  return false;
}

// The product's row of family F for these arguments; -1 when it has no pick there.
template <Family F>
constexpr int picked_row(long long head_dim, bool causal, bool window, long long query_rows) {
  const bool window_picks = window && has_window_picks<F>(head_dim, causal);
  for (const Pick& p : kPicks) {
    if (p.family == F && p.head_dim == head_dim && p.causal == causal && p.window == window_picks &&
        query_rows >= p.from_rows) {
      return row_index<ProductRows, F>(p.row);
    }
  }
  return -1;
}

// The key of the row picked_row<F> names ("" when none): for tests and messages.
constexpr std::string_view picked_row_key(Family f, long long head_dim, bool causal, bool window,
                                          long long query_rows) {
  switch (f) {
    case Family::sm80_forward: {
      const int row = picked_row<Family::sm80_forward>(head_dim, causal, window, query_rows);
      return row < 0 ? "" : ProductRows::sm80_forward[row].key;
    }
    case Family::sm80_backward: {
      const int row = picked_row<Family::sm80_backward>(head_dim, causal, window, query_rows);
      return row < 0 ? "" : ProductRows::sm80_backward[row].key;
    }
    case Family::sm90_forward: {
      const int row = picked_row<Family::sm90_forward>(head_dim, causal, window, query_rows);
      return row < 0 ? "" : ProductRows::sm90_forward[row].key;
    }
    case Family::sm90_backward: {
      const int row = picked_row<Family::sm90_backward>(head_dim, causal, window, query_rows);
      return row < 0 ? "" : ProductRows::sm90_backward[row].key;
    }
  }
  return "";
}

// Which library compiles a row: the product compiles its rows at the (head dim, mask) its picks
// name; the lab (FA2_BUILD_ABLATIONS) compiles the product's rows at the other head dims the row
// lists, and every row of its own table at the head dims it lists.
enum class Part { product, lab };

template <Family F>
constexpr bool picked_at(std::string_view key, int head_dim, bool causal) {
  for (const Pick& p : kPicks) {
    if (p.family == F && p.row == key && p.head_dim == head_dim && p.causal == causal) return true;
  }
  return false;
}

template <class Table, Family F>
constexpr bool held(Part part, int row, int head_dim, bool causal) {
  const GeneratedRow& r = rows<Table, F>()[row];
  if constexpr (Table::kProduct) {
    const bool picked = picked_at<F>(r.key, head_dim, causal);
    return part == Part::product ? picked : !picked && r.head_dims.has(head_dim);
  } else {
    return part == Part::lab && r.head_dims.has(head_dim);
  }
}

namespace detail {
// Every pick names a row of its family; the picks of a family at a head dim, mask and window end
// with one from 0 query rows, so that some row always runs.
constexpr bool picks_name_rows() {
  for (const Pick& p : kPicks) {
    const int row = p.family == Family::sm80_forward    ? row_index<ProductRows, Family::sm80_forward>(p.row)
                    : p.family == Family::sm80_backward ? row_index<ProductRows, Family::sm80_backward>(p.row)
                    : p.family == Family::sm90_forward  ? row_index<ProductRows, Family::sm90_forward>(p.row)
                                                        : row_index<ProductRows, Family::sm90_backward>(p.row);
    if (row < 0) return false;
  }
  return true;
}
template <Family F>
constexpr bool picks_complete() {
  for (const Pick& p : kPicks) {
    if (p.family == F && picked_row<F>(p.head_dim, p.causal, p.window, 0) < 0) return false;
  }
  return true;
}
// Every row of the product's table is named by a pick (a row no pick names belongs in the lab's).
template <Family F>
constexpr bool rows_picked() {
  for (const GeneratedRow& r : rows<ProductRows, F>()) {
    bool named = false;
    for (const Pick& p : kPicks) named = named || (p.family == F && p.row == r.key);
    if (!named) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::picks_name_rows(), "kernels.def: an FA2_PICK names no row of its family");
static_assert(detail::picks_complete<Family::sm80_forward>() && detail::picks_complete<Family::sm80_backward>() &&
                  detail::picks_complete<Family::sm90_forward>() && detail::picks_complete<Family::sm90_backward>(),
              "kernels.def: the picks of a family at a head dim and mask must end with one from 0 query rows");
static_assert(detail::rows_picked<Family::sm80_forward>() && detail::rows_picked<Family::sm80_backward>() &&
                  detail::rows_picked<Family::sm90_forward>() && detail::rows_picked<Family::sm90_backward>(),
              "kernels.def: every row is named by a pick (an unpicked configuration belongs in lab/variants.def)");

}  // namespace fa2::flash
