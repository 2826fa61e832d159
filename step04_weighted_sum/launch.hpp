// Running a program body on the host: Triton's interpreter mode in C++.
//
// A kernel body (the concept KernelBody below) is a struct with
//   using Params = ...;                  // the kernel's arguments
//   struct Shared { ... };               // the program's shared memory (Tile members)
//   static constexpr int num_threads;    // threads per program on the GPU
//   template <class Program> FA2_HOST_DEVICE void operator()(const Program&, const Params&) const;
//
// run_on_host<Body>(grid, params) calls the body once per program id, one after the other,
// with a single thread playing the whole block, and checks its use of shared memory for races
// the way compute-sanitizer's racecheck does on the GPU (step03's program.hpp says how).
// launch_device.cuh runs the very same body as a CUDA kernel, one thread block per program id.
//
// launch<Body>(HostLauncher{}, grid, params) and launch<Body>(DeviceLauncher{stream}, grid,
// params) (launch_device.cuh) choose between the two with one call.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

#include "step03_tile_pointer/program.hpp"

namespace fa2 {

struct Grid {
  int x = 1, y = 1, z = 1;
  // The first program id on axis 0: a launch of programs first_x .. first_x + x - 1 runs one
  // slice of a larger grid (step05's deterministic backward launches its key tiles one by one).
  int first_x = 0;
};

// What a kernel body must offer to be launched; a body that lacks one of these is rejected at
// the launch with this concept's name in the compiler's message.
template <class Body>
concept KernelBody =
    std::default_initializable<Body> && std::is_default_constructible_v<typename Body::Shared> && requires {
  typename Body::Params;
} && requires {
  { Body::num_threads } -> std::convertible_to<int>;
} &&(Body::num_threads >= 1) && std::invocable<const Body&, const HostProgram&, const typename Body::Params&>;

template <KernelBody Body>
void run_on_host(const Grid& grid, const typename Body::Params& params) {
  using Shared = typename Body::Shared;
  // The host's "shared memory": one Shared struct, reused by every program in turn.
  auto storage = std::make_unique<std::byte[]>(sizeof(Shared) + alignof(Shared));
  void* raw = storage.get();
  std::size_t space = sizeof(Shared) + alignof(Shared);
  void* aligned = std::align(alignof(Shared), sizeof(Shared), raw, space);
  auto* shared = ::new (aligned) Shared;  // default-initialised: its tiles start indeterminate, as on a GPU
  auto* shared_bytes = reinterpret_cast<std::byte*>(shared);
  SharedMemoryChecker checker(sizeof(Shared), Body::num_threads);
  checker.set_base(shared_bytes);
  const Body body{};
  for (int z = 0; z < grid.z; ++z) {
    for (int y = 0; y < grid.y; ++y) {
      for (int x = grid.first_x; x < grid.first_x + grid.x; ++x) {
        checker.start_program(Coord<3>{x, y, z});
        const HostProgram prog(Coord<3>{x, y, z}, shared_bytes, sizeof(Shared), &checker, input_precision_of(params));
        body(prog, params);
      }
    }
  }
}

// The host launcher: Triton's interpreter mode.
struct HostLauncher {};

template <KernelBody Body>
void launch(HostLauncher, const Grid& grid, const typename Body::Params& params) {
  run_on_host<Body>(grid, params);
}

}  // namespace fa2
