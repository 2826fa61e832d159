// A "program" is Triton's name for one instance of a kernel: on the GPU, one thread block.
// Kernel bodies in this repository are written against the small interface below, so the
// same body runs on the GPU (DeviceProgram, program_device.cuh) and on the host
// (HostProgram, here), where one thread plays the whole block, like Triton's interpreter.
//
//   prog.program_id(axis)   which program this is (Triton: tl.program_id)
//   Program::num_threads    threads that share the program's work (1 on the host)
//   prog.thread_rank()      this thread's index in [0, num_threads)
//   prog.sync()             barrier between phases that exchange data through shared memory
//   prog.shared<S>()        the program's shared-memory struct S
//   prog.reduce<W>(v, op)   combine v across W neighbouring threads (W == 1 on the host)
#pragma once

#include <cstddef>
#include <stdexcept>

#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2 {

class HostProgram {
 public:
  static constexpr int num_threads = 1;
  static constexpr bool on_device = false;

  HostProgram(const Coord<3>& pid, std::byte* shared_memory, std::size_t shared_bytes)
      : pid_(pid), shared_(shared_memory), shared_bytes_(shared_bytes) {}

  int program_id(int axis) const { return static_cast<int>(pid_[axis]); }
  int thread_rank() const { return 0; }
  void sync() const {}

  template <int Width, class T, class Op>
  T reduce(T value, Op) const {
    static_assert(Width == 1, "on the host one thread owns whole rows: nothing to combine");
    return value;
  }

  template <class S>
  S& shared() const {
    if (sizeof(S) > shared_bytes_) throw std::logic_error("HostProgram::shared: the program's shared struct does not fit");
    return *reinterpret_cast<S*>(shared_);
  }

 private:
  Coord<3> pid_;
  std::byte* shared_;
  std::size_t shared_bytes_;
};

}  // namespace fa2
