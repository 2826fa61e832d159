// Where a loaded tile lives, and the arithmetic on it.
//
//   Tile<T, Block<R, C>>   a tile in memory the whole program shares: shared memory on the GPU,
//                          plain memory on the host. Loaded and stored cooperatively.
//   Frag<T, Layout>        a tile held in registers: each thread owns the elements that the
//                          Layout assigns to it. This is what a Triton tensor value is.
//   RowVec / ColVec        one value per row (Triton's x[:, None]) / per column (x[None, :]).
//
// RowLayout<ROWS, COLS, NUM_THREADS> spreads a tile over threads the way row-wise work wants
// it: each row belongs to a group of `threads_per_row` neighbouring threads (within one warp),
// so a row reduction is a few shuffles. On the host NUM_THREADS is 1 and the single thread
// owns every element.
//
// Arithmetic broadcasts like NumPy: Frag op RowVec applies the row's value along the row,
// Frag op ColVec the column's value down the column, RowVec op ColVec makes a Frag.
#pragma once

#include <cmath>
#include <type_traits>

#include "common/bf16.hpp"
#include "common/host_device.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2 {

// ---- Tile: shared (or host) memory ------------------------------------------------------
// Row-major; PAD extra elements at the end of each row shift consecutive rows across the
// 32 shared-memory banks (see step07 for when that matters).
template <class T, class BlockShape, int PAD = 0>
struct Tile {
  using value_type = T;
  using block_shape = BlockShape;
  static constexpr int rank = BlockShape::rank;
  static constexpr int cols = BlockShape::dim(rank - 1);
  static constexpr int rows = BlockShape::numel / cols;
  static constexpr int ld = cols + PAD;  // leading dimension: elements from one row to the next

  alignas(128) T data[static_cast<std::size_t>(rows * ld)];

  FA2_HOST_DEVICE T& at(int r, int c) { return data[r * ld + c]; }
  FA2_HOST_DEVICE const T& at(int r, int c) const { return data[r * ld + c]; }

  FA2_HOST_DEVICE T& operator()(const Coord<rank>& idx) { return data[flat(idx)]; }
  FA2_HOST_DEVICE const T& operator()(const Coord<rank>& idx) const { return data[flat(idx)]; }

 private:
  FA2_HOST_DEVICE static index_t flat(const Coord<rank>& idx) {
    index_t row = 0;
    for (int a = 0; a + 1 < rank; ++a) row = row * BlockShape::dim(a) + idx[a];
    return row * ld + idx[rank - 1];
  }
};

// ---- RowLayout ---------------------------------------------------------------------------
template <int ROWS, int COLS, int NUM_THREADS>
struct RowLayout {
  static_assert(is_power_of_two(ROWS) && is_power_of_two(COLS) && is_power_of_two(NUM_THREADS),
                "RowLayout sizes must be powers of two");
  static constexpr int rows = ROWS;
  static constexpr int cols = COLS;
  static constexpr int num_threads = NUM_THREADS;
  static constexpr int threads_per_row = [] {
    int t = NUM_THREADS / ROWS;
    if (t < 1) t = 1;
    if (t > COLS) t = COLS;
    if (t > 32) t = 32;  // a row's threads share one warp, so reductions are shuffles
    return t;
  }();
  static constexpr int row_groups = NUM_THREADS / threads_per_row;
  static constexpr int rows_per_thread = (ROWS + row_groups - 1) / row_groups;
  static constexpr int cols_per_thread = COLS / threads_per_row;

  // Tile row of this thread's i-th row, and tile column of its j-th column.
  FA2_HOST_DEVICE static constexpr int row(int rank, int i) { return rank / threads_per_row + i * row_groups; }
  FA2_HOST_DEVICE static constexpr int col(int rank, int j) { return rank % threads_per_row + j * threads_per_row; }
  // Threads beyond the tile's rows (more threads than rows * threads_per_row) own nothing.
  FA2_HOST_DEVICE static constexpr bool owns(int rank, int i) { return row(rank, i) < ROWS; }
};

// The layout a program of `Program::num_threads` threads uses for a ROWS x COLS tile.
template <class Program, int ROWS, int COLS>
using RowLayoutFor = RowLayout<ROWS, COLS, Program::num_threads>;

// ---- register tiles ------------------------------------------------------------------------
template <class T, class Layout>
struct Frag;
template <class T, class Layout>
struct RowVec;
template <class T, class Layout>
struct ColVec;

namespace detail {
// kind: 0 scalar, 1 RowVec, 2 ColVec, 3 Frag. Combining kinds is a bitwise or: a row and a
// column broadcast to a full tile, exactly like x[:, None] + y[None, :].
template <class X>
struct tile_kind {
  static constexpr int value = 0;
  using layout = void;
  using type = X;
};
template <class T, class L>
struct tile_kind<RowVec<T, L>> {
  static constexpr int value = 1;
  using layout = L;
  using type = T;
};
template <class T, class L>
struct tile_kind<ColVec<T, L>> {
  static constexpr int value = 2;
  using layout = L;
  using type = T;
};
template <class T, class L>
struct tile_kind<Frag<T, L>> {
  static constexpr int value = 3;
  using layout = L;
  using type = T;
};

template <int Kind, class T, class L>
struct container;
template <class T, class L>
struct container<1, T, L> {
  using type = RowVec<T, L>;
};
template <class T, class L>
struct container<2, T, L> {
  using type = ColVec<T, L>;
};
template <class T, class L>
struct container<3, T, L> {
  using type = Frag<T, L>;
};

template <class X>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto element(const X& x, int i, int j) {
  constexpr int k = tile_kind<X>::value;
  if constexpr (k == 0) {
    return x;
  } else if constexpr (k == 1) {
    return x.v[i];
  } else if constexpr (k == 2) {
    return x.v[j];
  } else {
    return x.v[i][j];
  }
}

// The result's layout: a Frag operand's if there is one, else the first tile value's.
template <class A, class B, class C>
using common_layout_t = std::conditional_t<
    tile_kind<A>::value == 3, typename tile_kind<A>::layout,
    std::conditional_t<tile_kind<B>::value == 3, typename tile_kind<B>::layout,
                       std::conditional_t<tile_kind<C>::value == 3, typename tile_kind<C>::layout,
                                          std::conditional_t<tile_kind<A>::value != 0, typename tile_kind<A>::layout,
                                                             std::conditional_t<tile_kind<B>::value != 0,
                                                                                typename tile_kind<B>::layout,
                                                                                typename tile_kind<C>::layout>>>>>;

// Values from two layouts can be combined when every thread holds the same rows (for a
// RowVec operand) or the same columns (for a ColVec operand) in both.
template <class X, class L>
constexpr bool fits_layout() {
  using XL = typename tile_kind<X>::layout;
  constexpr int k = tile_kind<X>::value;
  if constexpr (k == 0) {
    return true;
  } else if constexpr (k == 1) {
    return XL::rows == L::rows && XL::threads_per_row == L::threads_per_row && XL::num_threads == L::num_threads;
  } else if constexpr (k == 2) {
    return XL::cols == L::cols && XL::threads_per_row == L::threads_per_row && XL::num_threads == L::num_threads;
  } else {
    return std::is_same_v<XL, L>;
  }
}

template <class A, class B, class C = int>
inline constexpr int combined_kind = tile_kind<A>::value | tile_kind<B>::value | tile_kind<C>::value;
}  // namespace detail

template <class X>
inline constexpr bool is_tile_value_v = detail::tile_kind<std::remove_cv_t<std::remove_reference_t<X>>>::value != 0;

// Applies f element by element to up to three operands, broadcasting rows and columns;
// the result has the combined kind (Frag, RowVec or ColVec) and element type of f's result.
template <class A, class B, class C, class F>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto zip_with3(const A& a, const B& b, const C& c, F f) {
  constexpr int kind = detail::combined_kind<A, B, C>;
  static_assert(kind != 0, "zip_with needs at least one tile value");
  using L = detail::common_layout_t<A, B, C>;
  static_assert(detail::fits_layout<A, L>() && detail::fits_layout<B, L>() && detail::fits_layout<C, L>(),
                "these tile values are spread over the threads differently and cannot be combined");
  using T = decltype(f(detail::element(a, 0, 0), detail::element(b, 0, 0), detail::element(c, 0, 0)));
  typename detail::container<kind, T, L>::type out;
  if constexpr (kind == 3) {
    FA2_UNROLL
    for (int i = 0; i < L::rows_per_thread; ++i) FA2_UNROLL
    for (int j = 0; j < L::cols_per_thread; ++j)
      out.v[i][j] = f(detail::element(a, i, j), detail::element(b, i, j), detail::element(c, i, j));
  } else if constexpr (kind == 1) {
    FA2_UNROLL
    for (int i = 0; i < L::rows_per_thread; ++i)
      out.v[i] = f(detail::element(a, i, 0), detail::element(b, i, 0), detail::element(c, i, 0));
  } else {
    FA2_UNROLL
    for (int j = 0; j < L::cols_per_thread; ++j)
      out.v[j] = f(detail::element(a, 0, j), detail::element(b, 0, j), detail::element(c, 0, j));
  }
  return out;
}

template <class A, class B, class F>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto zip_with(const A& a, const B& b, F f) {
  return zip_with3(a, b, 0, [f](auto x, auto y, int) { return f(x, y); });
}

template <class A, class F>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto map(const A& a, F f) {
  return zip_with(a, 0, [f](auto x, int) { return f(x); });
}

template <class T, class Layout>
struct RowVec {
  using value_type = T;
  using layout = Layout;
  T v[Layout::rows_per_thread];

  FA2_HOST_DEVICE static RowVec filled(T value) {
    RowVec r;
    for (auto& x : r.v) x = value;
    return r;
  }
  template <class U>
  [[nodiscard("to<U>() returns a converted copy and leaves this value unchanged: assign the result")]] FA2_HOST_DEVICE
      RowVec<U, Layout>
      to() const {
    return map(*this, [](T x) { return convert<U>(x); });
  }
};

template <class T, class Layout>
struct ColVec {
  using value_type = T;
  using layout = Layout;
  T v[Layout::cols_per_thread];

  FA2_HOST_DEVICE static ColVec filled(T value) {
    ColVec c;
    for (auto& x : c.v) x = value;
    return c;
  }
  template <class U>
  [[nodiscard("to<U>() returns a converted copy and leaves this value unchanged: assign the result")]] FA2_HOST_DEVICE
      ColVec<U, Layout>
      to() const {
    return map(*this, [](T x) { return convert<U>(x); });
  }
};

template <class T, class Layout>
struct Frag {
  using value_type = T;
  using layout = Layout;
  T v[Layout::rows_per_thread][Layout::cols_per_thread];

  FA2_HOST_DEVICE static Frag filled(T value) {
    Frag f;
    for (auto& row : f.v)
      for (auto& x : row) x = value;
    return f;
  }
  // Like Triton's x.to(dtype): a new tile of another element type. It does not change
  // this one, which is why the result must be used (step06, bug 1).
  template <class U>
  [[nodiscard("to<U>() returns a converted copy and leaves this tile unchanged: assign the result")]] FA2_HOST_DEVICE
      Frag<U, Layout>
      to() const {
    return map(*this, [](T x) { return convert<U>(x); });
  }
};

// ---- operators (found by argument-dependent lookup; at least one side is a tile value) ----
#define FA2_TILE_BINARY_OP(op)                                                                     \
  template <class A, class B, std::enable_if_t<is_tile_value_v<A> || is_tile_value_v<B>, int> = 0> \
  FA2_HOST_DEVICE FA2_FORCE_INLINE auto operator op(const A& a, const B& b) {                      \
    return zip_with(a, b, [](auto x, auto y) { return x op y; });                                  \
  }
FA2_TILE_BINARY_OP(+)
FA2_TILE_BINARY_OP(-)
FA2_TILE_BINARY_OP(*)
FA2_TILE_BINARY_OP(/)
FA2_TILE_BINARY_OP(<)
FA2_TILE_BINARY_OP(<=)
FA2_TILE_BINARY_OP(>)
FA2_TILE_BINARY_OP(>=)
#undef FA2_TILE_BINARY_OP

// & and | combine masks (tiles of bool), like Triton's & and | on boolean tensors.
template <class A, class B, std::enable_if_t<is_tile_value_v<A> || is_tile_value_v<B>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto operator&(const A& a, const B& b) {
  return zip_with(a, b, [](bool x, bool y) { return x && y; });
}
template <class A, class B, std::enable_if_t<is_tile_value_v<A> || is_tile_value_v<B>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto operator|(const A& a, const B& b) {
  return zip_with(a, b, [](bool x, bool y) { return x || y; });
}

// ---- elementwise functions ------------------------------------------------------------------
// exp and log on the GPU use the special-function unit (__expf is exp2(x * log2 e) in
// hardware, which is also what Triton's tl.exp compiles to); on the host, the C library.
FA2_HOST_DEVICE FA2_FORCE_INLINE float exp_scalar(float x) {
#if FA2_DEVICE_PASS
  return __expf(x);
#else
  return std::exp(x);
#endif
}
FA2_HOST_DEVICE FA2_FORCE_INLINE float exp2_scalar(float x) {
#if FA2_DEVICE_PASS
  return exp2f(x);
#else
  return std::exp2(x);
#endif
}
FA2_HOST_DEVICE FA2_FORCE_INLINE float log2_scalar(float x) {
#if FA2_DEVICE_PASS
  return log2f(x);
#else
  return std::log2(x);
#endif
}
FA2_HOST_DEVICE FA2_FORCE_INLINE float log_scalar(float x) {
#if FA2_DEVICE_PASS
  return logf(x);
#else
  return std::log(x);
#endif
}

template <class A, std::enable_if_t<is_tile_value_v<A>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto exp(const A& a) {
  return map(a, [](float x) { return exp_scalar(x); });
}
template <class A, std::enable_if_t<is_tile_value_v<A>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto exp2(const A& a) {
  return map(a, [](float x) { return exp2_scalar(x); });
}
template <class A, std::enable_if_t<is_tile_value_v<A>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto log2(const A& a) {
  return map(a, [](float x) { return log2_scalar(x); });
}
template <class A, std::enable_if_t<is_tile_value_v<A>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto log(const A& a) {
  return map(a, [](float x) { return log_scalar(x); });
}
// tl.maximum: the elementwise larger of two values.
template <class A, class B, std::enable_if_t<is_tile_value_v<A> || is_tile_value_v<B>, int> = 0>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto maximum(const A& a, const B& b) {
  return zip_with(a, b, [](auto x, auto y) { return x > y ? x : y; });
}
// tl.where(cond, a, b): a where cond holds, b elsewhere.
template <class C, class A, class B>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto where(const C& cond, const A& a, const B& b) {
  return zip_with3(cond, a, b, [](bool c, auto x, auto y) { return c ? x : y; });
}

// A RowVec or ColVec (or a scalar) spread to a full tile of `Layout`, e.g. a per-column mask
// that later gains a per-element causal term.
template <class Layout, class X>
FA2_HOST_DEVICE FA2_FORCE_INLINE auto broadcast(const X& x) {
  using T = decltype(detail::element(x, 0, 0));
  return zip_with(x, Frag<T, Layout>{}, [](T a, T) { return a; });
}

// Positions along the rows and columns of a tile that starts at (row0, col0): Triton's
// row0 + tl.arange(0, ROWS)[:, None] and col0 + tl.arange(0, COLS)[None, :].
template <class Layout, class Program>
FA2_HOST_DEVICE FA2_FORCE_INLINE RowVec<index_t, Layout> row_positions(const Program& prog, index_t row0) {
  RowVec<index_t, Layout> r;
  FA2_UNROLL
  for (int i = 0; i < Layout::rows_per_thread; ++i) r.v[i] = row0 + Layout::row(prog.thread_rank(), i);
  return r;
}
template <class Layout, class Program>
FA2_HOST_DEVICE FA2_FORCE_INLINE ColVec<index_t, Layout> col_positions(const Program& prog, index_t col0) {
  ColVec<index_t, Layout> c;
  FA2_UNROLL
  for (int j = 0; j < Layout::cols_per_thread; ++j) c.v[j] = col0 + Layout::col(prog.thread_rank(), j);
  return c;
}

// ---- row reductions (tl.max / tl.sum along axis 1) -----------------------------------------
// Each thread folds its own columns, then the threads that share a row combine their partial
// results (shuffles on the GPU, nothing on the host).
template <class Program, class T, class Layout, class Op>
FA2_HOST_DEVICE FA2_FORCE_INLINE RowVec<T, Layout> reduce_rows(const Program& prog, const Frag<T, Layout>& x, Op op) {
  static_assert(Layout::num_threads == Program::num_threads, "the tile's layout was made for another thread count");
  RowVec<T, Layout> r;
  FA2_UNROLL
  for (int i = 0; i < Layout::rows_per_thread; ++i) {
    T acc = x.v[i][0];
    FA2_UNROLL
    for (int j = 1; j < Layout::cols_per_thread; ++j) acc = op(acc, x.v[i][j]);
    r.v[i] = prog.template reduce<Layout::threads_per_row>(acc, op);
  }
  return r;
}

template <class Program, class T, class Layout>
FA2_HOST_DEVICE FA2_FORCE_INLINE RowVec<T, Layout> row_max(const Program& prog, const Frag<T, Layout>& x) {
  return reduce_rows(prog, x, [](T a, T b) { return a > b ? a : b; });
}
template <class Program, class T, class Layout>
FA2_HOST_DEVICE FA2_FORCE_INLINE RowVec<T, Layout> row_sum(const Program& prog, const Frag<T, Layout>& x) {
  return reduce_rows(prog, x, [](T a, T b) { return a + b; });
}

}  // namespace fa2
