// Helpers for step03's tests: guarded buffers (so a wrong tile pointer can be shown reading or
// writing "outside the tensor" without a real out-of-bounds access), one thread of a
// multi-thread program played on the host, and compact printing of tiles for CHECKs.
//   cmake --build --preset default --target step03_tests && ctest --preset default -L step03
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2::test {

// numel elements of a tensor with `guard` sentinel elements on each side, all in one vector.
// data() points at the tensor's first element, so data()[-1] and data()[numel] are real,
// allocated memory: a tile pointer that strays past the tensor lands on a sentinel.
template <class T>
class GuardedBuffer {
 public:
  static constexpr index_t guard = 64;

  GuardedBuffer(index_t numel, T sentinel)
      : storage_(static_cast<std::size_t>(numel + 2 * guard), sentinel), numel_(numel), sentinel_(sentinel) {}

  T* data() { return storage_.data() + guard; }
  const T* data() const { return storage_.data() + guard; }
  index_t numel() const { return numel_; }
  T sentinel() const { return sentinel_; }

  // The sentinels before and after the tensor still hold their value.
  bool guards_intact() const {
    for (index_t i = 0; i < guard; ++i) {
      if (!same(storage_[static_cast<std::size_t>(i)]) ||
          !same(storage_[static_cast<std::size_t>(guard + numel_ + i)])) {
        return false;
      }
    }
    return true;
  }

  // Whether every element that `ptr`'s tile could touch lies in the allocation (tensor or
  // guards). Tests of deliberately wrong pointers REQUIRE this first.
  template <class P>
  bool covers_whole_tile(const P& ptr) const {
    using BS = typename P::block_shape;
    const index_t base = ptr.base() - data();  // a wrong pointer's base need not be data()
    for (int e = 0; e < BS::numel; ++e) {
      const index_t at = base + ptr.element_offset(unravel<BS, typename P::order>(e));
      if (at < -guard || at >= numel_ + guard) return false;
    }
    return true;
  }

 private:
  bool same(T v) const {
    return v == sentinel_ || (std::isnan(static_cast<double>(v)) && std::isnan(static_cast<double>(sentinel_)));
  }

  std::vector<T> storage_;
  index_t numel_;
  T sentinel_;
};

// Thread `rank` of a program of NUM_THREADS threads, played alone on the host. Loads and stores
// use only thread_rank() and num_threads, so calling them once per rank shows exactly which
// elements each GPU thread would touch. (Reductions across threads need the real GPU.)
template <int NUM_THREADS>
struct OneThreadOf {
  static constexpr int num_threads = NUM_THREADS;
  static constexpr bool on_device = false;
  int rank = 0;
  int thread_rank() const { return rank; }
  int program_id(int) const { return 0; }
  void sync() const {}
};

inline HostProgram host_program(int program_id = 0) {
  return HostProgram(Coord<3>{program_id, 0, 0}, nullptr, 0);
}

inline std::string show_value(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream s;
  s << v;
  return s.str();
}

// "[[48, 49, 0, 0], [0, 0, 0, 0]]" from f(row, col) over a ROWS x COLS grid.
template <class F>
std::string show_grid(int rows, int cols, F f) {
  std::string s = "[";
  for (int r = 0; r < rows; ++r) {
    s += "[";
    for (int c = 0; c < cols; ++c) {
      s += show_value(static_cast<double>(f(r, c)));
      if (c + 1 < cols) s += ", ";
    }
    s += (r + 1 < rows) ? "], " : "]";
  }
  return s + "]";
}

// "[8, 9, 0, 0]" from f(i) over n entries.
template <class F>
std::string show_list(int n, F f) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) {
    s += show_value(static_cast<double>(f(i)));
    if (i + 1 < n) s += ", ";
  }
  return s + "]";
}

// A register tile loaded on the host (one thread owns every element), printed.
template <class T, class L>
std::string show(const Frag<T, L>& frag) {
  static_assert(L::num_threads == 1, "printing a register tile needs the host layout");
  return show_grid(L::rows, L::cols, [&](int r, int c) { return frag.v[r][c]; });
}
template <class T, class L>
std::string show(const ColVec<T, L>& v) {
  static_assert(L::num_threads == 1, "printing a register tile needs the host layout");
  return show_list(L::cols, [&](int c) { return v.v[c]; });
}
template <class T, class L>
std::string show(const RowVec<T, L>& v) {
  static_assert(L::num_threads == 1, "printing a register tile needs the host layout");
  return show_list(L::rows, [&](int r) { return v.v[r]; });
}
template <class T, class BS, int PAD>
std::string show(const Tile<T, BS, PAD>& tile) {
  if constexpr (BS::rank == 1) {
    return show_list(BS::dim(0), [&](int i) { return tile(Coord<1>{i}); });
  } else {
    return show_grid(Tile<T, BS, PAD>::rows, Tile<T, BS, PAD>::cols, [&](int r, int c) { return tile.at(r, c); });
  }
}

// The tile's element offsets from base (Triton's address grid) and its mask, printed.
template <class P>
std::string show_offsets(const P& ptr) {
  using BS = typename P::block_shape;
  return show_grid(BS::dim(0), BS::dim(1), [&](int r, int c) { return ptr.element_offset({r, c}); });
}
template <class P, class Check>
std::string show_mask(const P& ptr, Check check) {
  using BS = typename P::block_shape;
  return show_grid(BS::dim(0), BS::dim(1), [&](int r, int c) { return ptr.in_bounds({r, c}, check) ? 1 : 0; });
}

// 0, 1, 2, ... in memory order: every loaded value then says which slot it came from.
inline std::vector<float> iota_floats(index_t n, float first = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
  return v;
}

}  // namespace fa2::test
