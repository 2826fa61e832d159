// tl.load and tl.store for tile pointers, on the host and on the GPU.
//
//   load(prog, ptr, tile, boundary_check<0, 1>, Padding::zero)   into a shared Tile: every
//       thread of the program takes a share, neighbouring threads on neighbouring addresses
//   load(prog, ptr, frag, boundary_check<0, 1>, Padding::zero)   into registers: each thread
//       loads the elements its layout gives it
//   store(prog, ptr, value, boundary_check<0, 1>)                 the reverse; elements outside
//       the tensor (on checked axes) are never written
//
// Elements outside the tensor along a checked axis are never read. Padding says what the
// destination gets there: zero, NaN, or (Padding::none) nothing at all. Axes that are not
// checked are trusted: a tile that hangs over them reads or writes out of bounds, exactly
// as in Triton, which is why step03's tests show that mistake on a guarded buffer.
//
//   note_state(prog, j, m_i, l_i, alpha);   the running softmax state after key tile j, for the
//       trace viewer (common/viewer/): one line in a kernel's key loop, nothing on the GPU
//
// A host program that carries a trace recorder (common/trace.hpp) also notes every load and
// store here, with its tile pointer and mask; the others pay one null test per call.
#pragma once

#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/bf16.hpp"
#include "common/trace.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2 {

namespace detail {

template <class U>
FA2_HOST_DEVICE FA2_FORCE_INLINE void apply_padding(U& dst, Padding pad) {
  if (pad == Padding::zero) {
    dst = convert<U>(0.0f);
  } else if (pad == Padding::nan) {
    dst = convert<U>(std::numeric_limits<float>::quiet_NaN());
  }  // Padding::none: leave dst as it was
}

template <class Check, int Rank>
inline constexpr bool check_ok = Check::template valid_for<Rank>();

// The host's race checks (program.hpp): element e of a shared Tile is loaded or stored by
// thread e % num_threads on the GPU, so that is the simulated thread the access is noted for.
// Programs without the checks (the GPU's, step03's one-thread tests) note nothing.
template <class Program, class TileT>
FA2_HOST_DEVICE FA2_FORCE_INLINE void note_shared_write(const Program& prog, int element, const TileT& tile,
                                                        const typename TileT::value_type* at) {
  if constexpr (requires { prog.note_write(0, tile, at); }) {
    prog.note_write(element % prog.simulated_threads(), tile, at);
  }
}
template <class Program, class TileT>
FA2_HOST_DEVICE FA2_FORCE_INLINE void note_shared_read(const Program& prog, int element, const TileT& tile,
                                                       const typename TileT::value_type* at) {
  if constexpr (requires { prog.note_read(0, tile, at); }) {
    prog.note_read(element % prog.simulated_threads(), tile, at);
  }
}

// The trace recorder (common/trace.hpp), host only: what a load or store of `ptr` touched.
// The mask is computed here, from the same in_bounds() the copy uses, only when recording.
template <class T, class BS, class Ord, auto... Axes>
void record_access(trace::Recorder& recorder, const TilePtr<T, BS, Ord>& ptr, BoundaryCheck<Axes...> check,
                   bool is_load, const char* place, Padding pad) {
  constexpr int rank = BS::rank;
  trace::TileAccess a;
  a.is_load = is_load;
  a.tensor = recorder.name_of(ptr.base());
  a.place = place;
  for (int axis = 0; axis < rank; ++axis) {
    a.shape.push_back(ptr.shape()[axis]);
    a.strides.push_back(ptr.strides()[axis]);
    a.offsets.push_back(ptr.offsets()[axis]);
    a.block.push_back(BS::dim(axis));
    if (BoundaryCheck<Axes...>::checks(axis)) a.checked.push_back(axis);
  }
  if (is_load) a.padding = pad == Padding::zero ? "zero" : (pad == Padding::nan ? "nan" : "none");
  // Row-major over the block (the last axis fastest), whatever the tensor's order: one string per row.
  for (int e = 0; e < BS::numel; ++e) {
    Coord<rank> idx;
    for (int axis = rank - 1, rest = e; axis >= 0; --axis) {
      idx[axis] = rest % BS::dim(axis);
      rest /= BS::dim(axis);
    }
    if (idx[rank - 1] == 0) a.mask.emplace_back();
    a.mask.back() += ptr.in_bounds(idx, check) ? '1' : '0';
  }
  recorder.add(std::move(a));
}

// A RowVec's values in row order (on the host one thread owns every row).
template <class U, class L>
std::vector<double> row_values(const RowVec<U, L>& v) {
  std::vector<double> out(static_cast<std::size_t>(L::rows));
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (L::owns(0, i)) out[static_cast<std::size_t>(L::row(0, i))] = static_cast<double>(v.v[i]);
  }
  return out;
}

template <class Program, class T, class BS, class Ord, auto... Axes>
FA2_HOST_DEVICE FA2_FORCE_INLINE void note_access(const Program& prog, const TilePtr<T, BS, Ord>& ptr,
                                                  BoundaryCheck<Axes...> check, bool is_load, const char* place,
                                                  Padding pad) {
  if constexpr (requires { prog.recorder(); }) {
    if (prog.recorder() != nullptr) record_access(*prog.recorder(), ptr, check, is_load, place, pad);
  } else {
    (void)prog, (void)ptr, (void)check, (void)is_load, (void)place, (void)pad;
  }
}

// 16-byte copies along the contiguous axis, when the layout allows them: the last tile axis
// is the tensor's contiguous one (stride 1) and the address is 16-byte aligned.
template <class T>
struct alignas(16) Vec16 {
  unsigned char bytes[16];
};

}  // namespace detail

// ---- shared Tile <-> global ------------------------------------------------------------------
template <class Program, class T, class BS, class Ord, class U, int PAD, auto... Axes>
FA2_HOST_DEVICE void load(const Program& prog, const TilePtr<T, BS, Ord>& ptr, Tile<U, BS, PAD>& tile,
                          BoundaryCheck<Axes...> check, Padding pad) {
  constexpr int rank = BS::rank;
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, rank>,
                "boundary_check axes must be distinct and smaller than the tile's rank");
  static_assert(std::is_same_v<std::remove_const_t<T>, U>, "a tile holds the element type of the tensor it loads");
  detail::note_access(prog, ptr, check, true, "shared", pad);
  constexpr int last = rank - 1;
  constexpr int VEC = 16 / static_cast<int>(sizeof(U));
  // The vector path: the tensor's fastest axis is the tile's last (row-major storage), it
  // has stride 1, and a vector of VEC elements divides the tile's rows. The row padding must
  // keep every row of the tile 16-byte aligned too (PAD a multiple of VEC): with PAD = 1 the
  // 16-byte store into row 1 would be misaligned, which the GPU reports as a fault.
  constexpr bool vector_layout =
      Program::on_device && Ord::axis(0) == last && BS::dim(last) % VEC == 0 && PAD % VEC == 0;
  if constexpr (vector_layout) {
    if (ptr.strides()[last] == 1) {
      constexpr int chunks = BS::numel / VEC;
      for (int c = prog.thread_rank(); c < chunks; c += Program::num_threads) {
        const Coord<rank> first = unravel<BS, Ord>(c * VEC);
        const index_t off = ptr.element_offset(first);
        Coord<rank> tail = first;
        tail[last] += VEC - 1;
        const bool aligned = (reinterpret_cast<std::uintptr_t>(ptr.base() + off) % 16) == 0;
        if (aligned && ptr.in_bounds(first, check) && ptr.in_bounds(tail, check)) {
          *reinterpret_cast<detail::Vec16<U>*>(&tile(first)) =
              *reinterpret_cast<const detail::Vec16<U>*>(ptr.base() + off);
        } else {
          for (int k = 0; k < VEC; ++k) {
            Coord<rank> idx = first;
            idx[last] += k;
            if (ptr.in_bounds(idx, check)) {
              tile(idx) = ptr.base()[ptr.element_offset(idx)];
            } else {
              detail::apply_padding(tile(idx), pad);
            }
          }
        }
      }
      return;
    }
  }
  for (int e = prog.thread_rank(); e < BS::numel; e += Program::num_threads) {
    const Coord<rank> idx = unravel<BS, Ord>(e);
    if (ptr.in_bounds(idx, check)) {
      tile(idx) = ptr.base()[ptr.element_offset(idx)];
    } else {
      detail::apply_padding(tile(idx), pad);
    }
    detail::note_shared_write(prog, e, tile, &tile(idx));
  }
}

template <class Program, class T, class BS, class Ord, class U, int PAD, auto... Axes>
FA2_HOST_DEVICE void store(const Program& prog, const TilePtr<T, BS, Ord>& ptr, const Tile<U, BS, PAD>& tile,
                           BoundaryCheck<Axes...> check) {
  static_assert(!std::is_const_v<T>, "cannot store through a tile pointer to const elements");
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, BS::rank>,
                "boundary_check axes must be distinct and smaller than the tile's rank");
  detail::note_access(prog, ptr, check, false, "shared", Padding::none);
  for (int e = prog.thread_rank(); e < BS::numel; e += Program::num_threads) {
    const Coord<BS::rank> idx = unravel<BS, Ord>(e);
    detail::note_shared_read(prog, e, tile, &tile(idx));
    if (ptr.in_bounds(idx, check)) ptr.base()[ptr.element_offset(idx)] = convert<T>(tile(idx));
  }
}

// ---- registers <-> global -------------------------------------------------------------------
// A 2-D tile into a Frag: element (i, j) of this thread is tile (Layout::row(i), Layout::col(j)).
template <class Program, class T, class BS, class Ord, class U, class L, auto... Axes>
FA2_HOST_DEVICE void load(const Program& prog, const TilePtr<T, BS, Ord>& ptr, Frag<U, L>& frag,
                          BoundaryCheck<Axes...> check, Padding pad) {
  static_assert(BS::rank == 2 && BS::dim(0) == L::rows && BS::dim(1) == L::cols,
                "the register tile's layout must have the tile pointer's block shape");
  static_assert(L::num_threads == Program::num_threads, "the register tile's layout was made for another thread count");
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, 2>, "boundary_check axes must be 0 and/or 1, each once");
  detail::note_access(prog, ptr, check, true, "registers", pad);
  const int rank = prog.thread_rank();
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (!L::owns(rank, i)) continue;
    for (int j = 0; j < L::cols_per_thread; ++j) {
      const Coord<2> idx{L::row(rank, i), L::col(rank, j)};
      if (ptr.in_bounds(idx, check)) {
        frag.v[i][j] = convert<U>(ptr.base()[ptr.element_offset(idx)]);
      } else {
        detail::apply_padding(frag.v[i][j], pad);
      }
    }
  }
}

// Like tl.store, the values are converted to the tensor's element type on the way out.
template <class Program, class T, class BS, class Ord, class U, class L, auto... Axes>
FA2_HOST_DEVICE void store(const Program& prog, const TilePtr<T, BS, Ord>& ptr, const Frag<U, L>& frag,
                           BoundaryCheck<Axes...> check) {
  static_assert(!std::is_const_v<T>, "cannot store through a tile pointer to const elements");
  static_assert(BS::rank == 2 && BS::dim(0) == L::rows && BS::dim(1) == L::cols,
                "the register tile's layout must have the tile pointer's block shape");
  static_assert(L::num_threads == Program::num_threads, "the register tile's layout was made for another thread count");
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, 2>, "boundary_check axes must be 0 and/or 1, each once");
  detail::note_access(prog, ptr, check, false, "registers", Padding::none);
  const int rank = prog.thread_rank();
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (!L::owns(rank, i)) continue;
    for (int j = 0; j < L::cols_per_thread; ++j) {
      const Coord<2> idx{L::row(rank, i), L::col(rank, j)};
      if (ptr.in_bounds(idx, check)) ptr.base()[ptr.element_offset(idx)] = convert<T>(frag.v[i][j]);
    }
  }
}

// A 1-D tile into one value per row (RowVec) or per column (ColVec) of a layout.
template <class Program, class T, class BS, class Ord, class U, class L, auto... Axes>
FA2_HOST_DEVICE void load(const Program& prog, const TilePtr<T, BS, Ord>& ptr, RowVec<U, L>& rows,
                          BoundaryCheck<Axes...> check, Padding pad) {
  static_assert(BS::rank == 1 && BS::dim(0) == L::rows, "a RowVec loads a 1-D tile of the layout's row count");
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, 1>, "a 1-D tile has only axis 0 to check");
  detail::note_access(prog, ptr, check, true, "registers", pad);
  const int rank = prog.thread_rank();
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (!L::owns(rank, i)) continue;
    const Coord<1> idx{L::row(rank, i)};
    if (ptr.in_bounds(idx, check)) {
      rows.v[i] = convert<U>(ptr.base()[ptr.element_offset(idx)]);
    } else {
      detail::apply_padding(rows.v[i], pad);
    }
  }
}

template <class Program, class T, class BS, class Ord, class U, class L, auto... Axes>
FA2_HOST_DEVICE void load(const Program& prog, const TilePtr<T, BS, Ord>& ptr, ColVec<U, L>& cols,
                          BoundaryCheck<Axes...> check, Padding pad) {
  static_assert(BS::rank == 1 && BS::dim(0) == L::cols, "a ColVec loads a 1-D tile of the layout's column count");
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, 1>, "a 1-D tile has only axis 0 to check");
  detail::note_access(prog, ptr, check, true, "registers", pad);
  const int rank = prog.thread_rank();
  for (int j = 0; j < L::cols_per_thread; ++j) {
    const Coord<1> idx{L::col(rank, j)};
    if (ptr.in_bounds(idx, check)) {
      cols.v[j] = convert<U>(ptr.base()[ptr.element_offset(idx)]);
    } else {
      detail::apply_padding(cols.v[j], pad);
    }
  }
}

// The threads that share a row hold the same value; the first of them writes it.
template <class Program, class T, class BS, class Ord, class U, class L, auto... Axes>
FA2_HOST_DEVICE void store(const Program& prog, const TilePtr<T, BS, Ord>& ptr, const RowVec<U, L>& rows,
                           BoundaryCheck<Axes...> check) {
  static_assert(!std::is_const_v<T>, "cannot store through a tile pointer to const elements");
  static_assert(BS::rank == 1 && BS::dim(0) == L::rows, "a RowVec stores a 1-D tile of the layout's row count");
  static_assert(detail::check_ok<BoundaryCheck<Axes...>, 1>, "a 1-D tile has only axis 0 to check");
  detail::note_access(prog, ptr, check, false, "registers", Padding::none);
  const int rank = prog.thread_rank();
  if (rank % L::threads_per_row != 0) return;
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (!L::owns(rank, i)) continue;
    const Coord<1> idx{L::row(rank, i)};
    if (ptr.in_bounds(idx, check)) ptr.base()[ptr.element_offset(idx)] = convert<T>(rows.v[i]);
  }
}

// tl.load(ptr, ...) returning a register tile in the program's row layout.
template <class Program, class T, class BS, class Ord, auto... Axes>
FA2_HOST_DEVICE auto load(const Program& prog, const TilePtr<T, BS, Ord>& ptr, BoundaryCheck<Axes...> check,
                          Padding pad) {
  static_assert(BS::rank == 2, "use load(prog, ptr, dst, ...) with a RowVec or ColVec for 1-D tiles");
  Frag<std::remove_const_t<T>, RowLayoutFor<Program, BS::dim(0), BS::dim(1)>> frag;
  load(prog, ptr, frag, check, pad);
  return frag;
}

// ---- the running state, for the trace viewer ---------------------------------------------------
// note_state(prog, j, m_i, l_i, alpha): the state of the program's query tile after key tile j
// (alpha: the factor this tile rescaled the old l_i and O_acc by). On the GPU, and on the host
// unless a trace::Recording asked for this program, it does nothing.
template <class Program, class U, class L>
FA2_HOST_DEVICE FA2_FORCE_INLINE void note_state(const Program& prog, index_t key_tile, const RowVec<U, L>& m_i,
                                                 const RowVec<U, L>& l_i, const RowVec<U, L>& alpha) {
  if constexpr (requires { prog.recorder(); }) {
    if (prog.recorder() != nullptr) {
      prog.recorder()->add(
          trace::RowState{key_tile, 0, detail::row_values(m_i), detail::row_values(l_i), detail::row_values(alpha)});
    }
  } else {
    (void)prog, (void)key_tile, (void)m_i, (void)l_i, (void)alpha;
  }
}

}  // namespace fa2
