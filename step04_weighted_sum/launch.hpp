// Running a program body on the host: Triton's interpreter mode in C++.
//
// A body is a struct with
//   using Params = ...;                  // the kernel's arguments
//   struct Shared { ... };               // the program's shared memory (Tile members)
//   static constexpr int num_threads;    // threads per program on the GPU
//   template <class Program> FA2_HOST_DEVICE void operator()(const Program&, const Params&) const;
//
// run_on_host<Body>(grid, params) calls the body once per program id, one after the other,
// with a single thread playing the whole block. launch_device.cuh runs the very same body
// as a CUDA kernel, one thread block per program id.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

#include "step03_tile_pointer/program.hpp"

namespace fa2 {

struct Grid {
  int x = 1, y = 1, z = 1;
};

template <class Body>
void run_on_host(const Grid& grid, const typename Body::Params& params) {
  using Shared = typename Body::Shared;
  // The host's "shared memory": one Shared struct, reused by every program in turn.
  auto storage = std::make_unique<std::byte[]>(sizeof(Shared) + alignof(Shared));
  void* raw = storage.get();
  std::size_t space = sizeof(Shared) + alignof(Shared);
  void* aligned = std::align(alignof(Shared), sizeof(Shared), raw, space);
  auto* shared = ::new (aligned) Shared;  // default-initialised: its tiles start indeterminate, as on a GPU
  const Body body{};
  for (int z = 0; z < grid.z; ++z) {
    for (int y = 0; y < grid.y; ++y) {
      for (int x = 0; x < grid.x; ++x) {
        const HostProgram prog(Coord<3>{x, y, z}, reinterpret_cast<std::byte*>(shared), sizeof(Shared));
        body(prog, params);
      }
    }
  }
}

}  // namespace fa2
