// tl.atomic_add for tile pointers: adds a register tile into a float32 tensor in global memory,
// so that several programs can sum into the same elements (step05's backward adds every key
// tile's share of dQ into one accumulator). Used from kernel bodies, on the host and the GPU.
//
//   atomic_add(prog, ptr, frag, boundary_check<0, 1>)   elements outside the tensor (on checked
//                                                        axes) are skipped, as store() skips them
//
// On the GPU every element is one atomicAdd: no addition is lost when programs collide, but the
// order in which they land, hence the float32 rounding of the sum, changes from run to run. The
// host interpreter runs one program after another, so there a plain += is already atomic and the
// order is always that of the program ids: the host path is deterministic, the GPU's is not.
// The host's race checks (program.hpp) watch shared memory only; this writes global memory, where
// the atomics themselves make concurrent additions safe.
#pragma once

#include <type_traits>

#include "common/host_device.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2 {

// A 2-D register tile added into the tensor: element (i, j) of this thread goes to tile
// (Layout::row(i), Layout::col(j)), each element by the one thread that owns it.
template <class Program, class T, class BS, class Ord, class L, auto... Axes>
FA2_HOST_DEVICE void atomic_add(const Program& prog, const TilePtr<T, BS, Ord>& ptr, const Frag<float, L>& frag,
                                BoundaryCheck<Axes...> check) {
  static_assert(std::is_same_v<T, float>,
                "atomic_add sums into float32 tensors: a bf16 accumulator would round every partial sum to 8 bits");
  static_assert(BS::rank == 2 && BS::dim(0) == L::rows && BS::dim(1) == L::cols,
                "the register tile's layout must have the tile pointer's block shape");
  static_assert(L::num_threads == Program::num_threads, "the register tile's layout was made for another thread count");
  static_assert(BoundaryCheck<Axes...>::template valid_for<2>(), "boundary_check axes must be 0 and/or 1, each once");
  const int rank = prog.thread_rank();
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (!L::owns(rank, i)) continue;
    for (int j = 0; j < L::cols_per_thread; ++j) {
      const Coord<2> idx{L::row(rank, i), L::col(rank, j)};
      if (!ptr.in_bounds(idx, check)) continue;
      float* const element = ptr.base() + ptr.element_offset(idx);
#if FA2_DEVICE_PASS
      atomicAdd(element, frag.v[i][j]);
#else
      *element += frag.v[i][j];  // one program at a time: nothing else writes this element meanwhile
#endif
    }
  }
}

}  // namespace fa2
