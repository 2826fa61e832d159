// The tile pointer: Triton's tl.make_block_ptr in C++, for host and device code.
//
//   auto x_ptr = make_tile_ptr<Block<ROWS, COLS>>(x, /*shape=*/{N, D}, /*strides=*/{stride_row, stride_col},
//                                                 /*offsets=*/{row0, 0}, Order<1, 0>{});
//   load(prog, x_ptr, tile, boundary_check<0, 1>, Padding::zero);   // load_store.hpp
//   x_ptr = x_ptr.advance({0, COLS});                                // returns a new pointer
//
// A tile pointer is a window of compile-time size (the block shape) onto a tensor described
// at run time by its start (base), its full shape, its element strides and the window's
// top-left corner (offsets). It never owns memory and never touches it by itself.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/host_device.hpp"
#include "common/numeric.hpp"
#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below

namespace fa2 {

// ---- Coord: one integer per axis ------------------------------------------------------
// The rank is part of the type, so shape, strides, offsets and advance() deltas of the
// wrong length do not compile (Triton only finds out when the kernel is compiled, and
// Python's (D) vs (D,) is a classic slip; here a 1-D coordinate is simply {D} or D).
template <int Rank>
struct Coord {
  static_assert(Rank >= 1, "a coordinate has at least one axis");
  index_t v[static_cast<std::size_t>(Rank)];

  FA2_HOST_DEVICE constexpr Coord() : v{} {}

  template <class... I, std::enable_if_t<(std::is_integral_v<I> && ...), int> = 0>
  FA2_HOST_DEVICE constexpr Coord(I... i) : v{static_cast<index_t>(i)...} {  // NOLINT(google-explicit-constructor)
    static_assert(sizeof...(I) == Rank,
                  "shape, strides, offsets and advance() take one entry per axis of the tile: "
                  "a 2-D tile pointer needs {rows, cols}");
  }

  FA2_HOST_DEVICE constexpr index_t& operator[](int axis) { return v[axis]; }
  FA2_HOST_DEVICE constexpr const index_t& operator[](int axis) const { return v[axis]; }

  FA2_HOST_DEVICE friend constexpr Coord operator+(Coord a, const Coord& b) {
    for (int i = 0; i < Rank; ++i) a.v[i] += b.v[i];
    return a;
  }
  FA2_HOST_DEVICE friend constexpr bool operator==(const Coord& a, const Coord& b) {
    for (int i = 0; i < Rank; ++i)
      if (a.v[i] != b.v[i]) return false;
    return true;
  }
};

// ---- Block: the tile's shape, fixed at compile time -------------------------------------
// Like Triton's block_shape (tl.constexpr). A run-time value cannot be a template argument,
// so "tile sizes as run-time arguments" is a compile error, and non-powers of two are
// rejected below with a message.
template <int... Dims>
struct Block {
  static constexpr int rank = static_cast<int>(sizeof...(Dims));
  static constexpr int numel = (Dims * ... * 1);
  static_assert(rank >= 1, "block_shape needs at least one axis");
  static_assert((is_power_of_two(Dims) && ...),
                "block_shape entries must be powers of two (16, 32, 64, ...), as in Triton: "
                "round a size up with next_power_of_two() on the host");

  FA2_HOST_DEVICE static constexpr int dim(int axis) {
    constexpr int d[] = {Dims...};
    return d[axis];
  }
};

// ---- Order: which axis is contiguous in memory ----------------------------------------
// Axes listed from fastest-varying to slowest, as in Triton: Order<1, 0> is row-major
// (axis 1, the columns, sits side by side in memory). Loops over a tile visit the fastest
// axis innermost, so that neighbouring threads touch neighbouring addresses (coalescing).
template <int... Axes>
struct Order {
  static constexpr int rank = static_cast<int>(sizeof...(Axes));
  FA2_HOST_DEVICE static constexpr int axis(int i) {  // i-th fastest axis
    constexpr int a[] = {Axes...};
    return a[i];
  }
  FA2_HOST_DEVICE static constexpr bool is_permutation() {
    constexpr int a[] = {Axes...};
    for (int i = 0; i < rank; ++i) {
      if (a[i] < 0 || a[i] >= rank) return false;
      for (int j = 0; j < i; ++j)
        if (a[i] == a[j]) return false;
    }
    return true;
  }
  static_assert(is_permutation(), "order must list each axis exactly once, fastest first: Order<1, 0> for row-major");
};

template <int Rank>
struct RowMajor;
template <>
struct RowMajor<1> {
  using type = Order<0>;
};
template <>
struct RowMajor<2> {
  using type = Order<1, 0>;
};
template <>
struct RowMajor<3> {
  using type = Order<2, 1, 0>;
};

// ---- boundary_check and padding ---------------------------------------------------------
// The axes to check are a compile-time set: boundary_check<0, 1> checks rows and columns.
// Triton silently misreads boundary_check=(True, True) as "axis 1, axis 1"; here booleans
// are rejected at compile time.
template <auto... Axes>
struct BoundaryCheck {
  static_assert((std::is_same_v<decltype(Axes), int> && ...),
                "boundary_check takes axis indices such as boundary_check<0, 1>, not booleans such as <true, true>");
  FA2_HOST_DEVICE static constexpr bool checks(int axis) { return ((axis == static_cast<int>(Axes)) || ... || false); }
  template <int Rank>
  FA2_HOST_DEVICE static constexpr bool valid_for() {
    constexpr int a[] = {static_cast<int>(Axes)..., -1};
    for (int i = 0; i < static_cast<int>(sizeof...(Axes)); ++i) {
      if (a[i] < 0 || a[i] >= Rank) return false;
      for (int j = 0; j < i; ++j)
        if (a[i] == a[j]) return false;
    }
    return true;
  }
};

template <auto... Axes>
inline constexpr BoundaryCheck<Axes...> boundary_check{};

// Reads and writes every element of the tile with no check: only for tiles known to lie
// inside the tensor. It has to be written out; there is no default.
inline constexpr BoundaryCheck<> unchecked{};

// What a load puts where the tile hangs over the edge of the tensor.
//   zero: 0, the neutral element of a sum.   nan: NaN, which poisons any sum it enters.
//   none: nothing is read or written there; the destination keeps whatever it held.
enum class Padding { none, zero, nan };

// ---- TilePtr ----------------------------------------------------------------------------
template <class T, class BlockShape, class Ord = typename RowMajor<BlockShape::rank>::type>
class TilePtr {
 public:
  using element_type = T;
  using block_shape = BlockShape;
  using order = Ord;
  static constexpr int rank = BlockShape::rank;
  static_assert(Ord::rank == rank, "order must have one entry per axis of block_shape");

  FA2_HOST_DEVICE TilePtr(T* base, const Coord<rank>& shape, const Coord<rank>& strides, const Coord<rank>& offsets)
      : base_(base), shape_(shape), strides_(strides), offsets_(offsets) {}

  // A new tile pointer moved by `deltas` elements along each axis. This one is unchanged,
  // so the result must be kept: `ptr = ptr.advance({0, COLS});`.
  [[nodiscard(
      "advance() returns the moved tile pointer and leaves this one unchanged: write ptr = "
      "ptr.advance(...)")]] FA2_HOST_DEVICE TilePtr
  advance(const Coord<rank>& deltas) const {
    // BEGIN SOLUTION step03 full: return a tile pointer with the same tensor, moved by deltas uses(deltas)
    return TilePtr(base_, shape_, strides_, offsets_ + deltas);
    // END SOLUTION step03 full
  }

  FA2_HOST_DEVICE T* base() const { return base_; }
  FA2_HOST_DEVICE const Coord<rank>& shape() const { return shape_; }
  FA2_HOST_DEVICE const Coord<rank>& strides() const { return strides_; }
  FA2_HOST_DEVICE const Coord<rank>& offsets() const { return offsets_; }

  // Where element `idx` of the tile sits in the tensor (row, col, ...).
  FA2_HOST_DEVICE Coord<rank> position(const Coord<rank>& idx) const {
    // BEGIN SOLUTION step03 full: return where element idx of the tile sits in the tensor uses(idx)
    return offsets_ + idx;
    // END SOLUTION step03 full
  }

  // Its distance from base, in elements: sum over axes of position * stride (64-bit).
  FA2_HOST_DEVICE index_t element_offset(const Coord<rank>& idx) const {
    // BEGIN SOLUTION step03: return the distance from base in elements (position times stride, summed) uses(idx)
    index_t off = 0;
    for (int a = 0; a < rank; ++a) off += (offsets_[a] + idx[a]) * strides_[a];
    return off;
    // END SOLUTION step03
  }

  // Whether element `idx` lies inside the tensor along the axes that `check` lists.
  template <auto... Axes>
  FA2_HOST_DEVICE bool in_bounds(const Coord<rank>& idx, BoundaryCheck<Axes...>) const {
    static_assert(BoundaryCheck<Axes...>::template valid_for<rank>(),
                  "boundary_check axes must be distinct and smaller than the tile's rank");
    // BEGIN SOLUTION step03: return whether the element lies inside the tensor on every checked axis uses(idx)
    bool inside = true;
    for (int a = 0; a < rank; ++a) {
      if (BoundaryCheck<Axes...>::checks(a)) {
        const index_t p = offsets_[a] + idx[a];
        inside = inside && p >= 0 && p < shape_[a];
      }
    }
    return inside;
    // END SOLUTION step03
  }

 private:
  T* base_;
  Coord<rank> shape_;
  Coord<rank> strides_;
  Coord<rank> offsets_;
};

// make_tile_ptr<Block<ROWS, COLS>>(base, shape, strides, offsets, Order<1, 0>{})
// base is the start of the whole tensor; offsets (in elements, not tiles) place the tile.
template <class BlockShape, class Ord = typename RowMajor<BlockShape::rank>::type, class T>
FA2_HOST_DEVICE TilePtr<T, BlockShape, Ord> make_tile_ptr(T* base, const Coord<BlockShape::rank>& shape,
                                                          const Coord<BlockShape::rank>& strides,
                                                          const Coord<BlockShape::rank>& offsets, Ord = {}) {
  return TilePtr<T, BlockShape, Ord>(base, shape, strides, offsets);
}

// Multi-index of the i-th element of a block when the fastest axis of `Ord` varies fastest.
template <class BlockShape, class Ord>
FA2_HOST_DEVICE constexpr Coord<BlockShape::rank> unravel(int i) {
  Coord<BlockShape::rank> idx;
  for (int k = 0; k < BlockShape::rank; ++k) {
    const int axis = Ord::axis(k);
    idx[axis] = i % BlockShape::dim(axis);
    i /= BlockShape::dim(axis);
  }
  return idx;
}

// The smallest power of two >= n (host side, for choosing block sizes from run-time sizes).
constexpr long long next_power_of_two(long long n) {
  long long p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace fa2
