// The rows of the variants table (kernels/variants.def) whose kernels are generated from options
// (v5's forward, its backward, v6, v6b), as constexpr tables of keys and head dims, and the tuned
// entries' picks. CUDA-free: the product's plans, the lab's launchers and the generated
// translation units of the kernels (fa2_fast_instances.cuh, fa2_hopper_instances.cuh) read them.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string_view>

namespace fa2::fast {

// What a row's options build: v5's forward (FastConfig), v5's backward (FastBwdConfig), v6
// (HopperConfig), v6b (HopperBwdConfig).
enum class Family { v5, v5b, v6, v6b };

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

inline constexpr GeneratedRow kV5Rows[] = {
#define FA2_V5(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/variants.def"
};
inline constexpr GeneratedRow kV5bRows[] = {
#define FA2_V5B(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/variants.def"
};
inline constexpr GeneratedRow kV6Rows[] = {
#define FA2_V6(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/variants.def"
};
inline constexpr GeneratedRow kV6bRows[] = {
#define FA2_V6B(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/variants.def"
};

// The head dims each family's kernels are compiled for: one translation unit per head dim and
// mask (and part, product or lab). CMakeLists.txt generates the same list.
inline constexpr int kV5HeadDims[] = {32, 64, 128};
inline constexpr int kV6HeadDims[] = {64, 128};

template <Family F>
constexpr const auto& rows() {
  if constexpr (F == Family::v5) {
    return kV5Rows;
  } else if constexpr (F == Family::v5b) {
    return kV5bRows;
  } else if constexpr (F == Family::v6) {
    return kV6Rows;
  } else {
    return kV6bRows;
  }
}

template <Family F>
constexpr int row_count() {
  return static_cast<int>(std::size(rows<F>()));
}

// The index of the row with this key among its family's rows; -1 when it has none.
template <Family F>
constexpr int row_index(std::string_view key) {
  for (int i = 0; i < row_count<F>(); ++i) {
    if (rows<F>()[i].key == key) return i;
  }
  return -1;
}

// A tuned entry's choice at one head dim and mask: the row it runs when the query rows (batch x
// N_q) reach from_rows. Picks of one (tuned, head dim, causal) are tried in the table's order.
struct Pick {
  std::string_view tuned;
  int head_dim = 0;
  bool causal = false;
  long long from_rows = 0;
  std::string_view row;
};

inline constexpr Pick kPicks[] = {
#define FA2_PICK(tuned, head_dim, causal, from_rows, row) {tuned, head_dim, causal, from_rows, row},
#include "step07_benchmark/kernels/variants.def"
};

#undef FA2_UNPAREN

// The row of family F that `tuned` runs for these arguments; -1 when it has no pick there.
template <Family F>
constexpr int picked_row(std::string_view tuned, long long head_dim, bool causal, long long query_rows) {
  for (const Pick& p : kPicks) {
    if (p.tuned == tuned && p.head_dim == head_dim && p.causal == causal && query_rows >= p.from_rows) {
      if (const int row = row_index<F>(p.row); row >= 0) return row;
    }
  }
  return -1;
}

// Where a row's kernel at (head dim, mask) is compiled: in the product when a pick names it there,
// otherwise in the lab when the row is built for that head dim, otherwise nowhere.
enum class Part { product, lab, none };

template <Family F>
constexpr Part part_of(int row, int head_dim, bool causal) {
  for (const Pick& p : kPicks) {
    if (p.row == rows<F>()[row].key && p.head_dim == head_dim && p.causal == causal) return Part::product;
  }
  return rows<F>()[row].head_dims.has(head_dim) ? Part::lab : Part::none;
}

namespace detail {
// Every pick names a row; the picks of a tuned entry at a head dim and mask end with one from 0
// query rows, so that some row always runs.
template <Family F>
constexpr bool picks_complete() {
  for (const Pick& p : kPicks) {
    if (row_index<F>(p.row) >= 0 && picked_row<F>(p.tuned, p.head_dim, p.causal, 0) < 0) return false;
  }
  return true;
}
constexpr bool picks_name_rows() {
  for (const Pick& p : kPicks) {
    if (row_index<Family::v5>(p.row) < 0 && row_index<Family::v5b>(p.row) < 0 && row_index<Family::v6>(p.row) < 0 &&
        row_index<Family::v6b>(p.row) < 0)
      return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::picks_name_rows(), "variants.def: an FA2_PICK names no FA2_V5, FA2_V5B, FA2_V6 or FA2_V6B row");
static_assert(detail::picks_complete<Family::v5>() && detail::picks_complete<Family::v5b>() &&
                  detail::picks_complete<Family::v6>() && detail::picks_complete<Family::v6b>(),
              "variants.def: the picks of a tuned entry at a head dim and mask must end with one from 0 query rows");

}  // namespace fa2::fast
