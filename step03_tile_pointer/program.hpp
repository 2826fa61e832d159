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
//
// The concept ProgramLike states that interface; a body is checked against it when it is
// launched (step04's launch.hpp).
//
// The host also checks what compute-sanitizer's racecheck checks on the GPU: shared memory
// used without a barrier between the thread that writes an element and another thread that
// reads or overwrites it (SharedMemoryChecker below). And a host program may carry a trace
// recorder (common/trace.hpp): then its loads, stores and running state are noted for the trace
// viewer (load_store.hpp), which is how the viewer watches a kernel run.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bf16.hpp"
#include "common/trace.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2 {

template <class P>
concept ProgramLike = requires(const P& prog) {
  { P::num_threads } -> std::convertible_to<int>;
  { P::on_device } -> std::convertible_to<bool>;
  { prog.program_id(0) } -> std::convertible_to<int>;
  { prog.thread_rank() } -> std::convertible_to<int>;
  prog.sync();
};

// A shared-memory hazard found on the host: what racecheck would report on the GPU.
class SharedMemoryHazard : public std::logic_error {
 public:
  explicit SharedMemoryHazard(const std::string& what) : std::logic_error(what) {}
};

// ---- SharedMemoryChecker --------------------------------------------------------------------
// On a GPU the threads of a block run at the same time, so between two barriers the order of
// two accesses by different threads to one shared element is undefined: a write and a read (or
// two writes) of the same element by different threads in one barrier interval is a race. The
// host runs the threads' shares of the work one after another and would never see the race
// happen. So it keeps, for every byte offset of shared memory, who last wrote it and who read
// it, and in which barrier epoch (the count of prog.sync() calls so far): a conflicting access
// in the same epoch is reported whatever order the host ran the two threads in.
//
// Which simulated thread does what follows the GPU's share-out: the loads and stores of a
// shared Tile give element e to thread e % num_threads (load_store.hpp); a tensor-core product
// reads its operand blocks in the warp that computes them (tile_dot.hpp).
class SharedMemoryChecker {
 public:
  SharedMemoryChecker(std::size_t shared_bytes, int simulated_threads)
      : shadow_(shared_bytes), simulated_threads_(simulated_threads < 1 ? 1 : simulated_threads) {}

  int simulated_threads() const { return simulated_threads_; }

  // A new program starts: its barrier intervals are new ones (accesses of the previous program
  // can never race with this one's).
  void start_program(const Coord<3>& pid) {
    pid_ = pid;
    barrier();
  }
  void barrier() { ++epoch_; }

  // A thread's access to one element of a Tile that lives in this program's shared memory.
  template <class TileT>
  void read(int thread, const TileT& tile, const typename TileT::value_type* element) {
    access(thread, false, describe(tile, element));
  }
  template <class TileT>
  void write(int thread, const TileT& tile, const typename TileT::value_type* element) {
    access(thread, true, describe(tile, element));
  }

  // Shared memory starts at `base`; accesses outside [base, base + shared_bytes) are ignored
  // (a Tile outside the program's shared struct, e.g. in a test's own memory).
  void set_base(const std::byte* base) { base_ = base; }

 private:
  struct Shadow {
    std::uint64_t write_epoch = 0;
    std::uint64_t read_epoch = 0;
    int writer = -1;
    int reader = -1;             // the first reader in read_epoch
    bool other_readers = false;  // more than one thread read it in read_epoch
  };
  struct Element {
    std::ptrdiff_t offset;  // bytes from the start of shared memory; < 0 when outside it
    std::ptrdiff_t tile_offset;
    int rows, cols, row, col;
    const char* dtype;
  };

  template <class TileT>
  Element describe(const TileT& tile, const typename TileT::value_type* element) const {
    using T = typename TileT::value_type;
    const auto* first = reinterpret_cast<const std::byte*>(tile.data);
    const auto* at = reinterpret_cast<const std::byte*>(element);
    const std::ptrdiff_t index = element - tile.data;
    Element e{};
    e.offset = (base_ != nullptr && at >= base_ && at < base_ + shadow_.size()) ? at - base_ : -1;
    e.tile_offset = base_ != nullptr ? first - base_ : 0;
    e.rows = TileT::rows;
    e.cols = TileT::cols;
    e.row = static_cast<int>(index / TileT::ld);
    e.col = static_cast<int>(index % TileT::ld);
    e.dtype = std::is_same_v<T, float>
                  ? "float"
                  : (std::is_same_v<T, bf16> ? "bf16" : (std::is_same_v<T, fp16> ? "fp16" : "element"));
    return e;
  }

  void access(int thread, bool is_write, const Element& e) {
    if (e.offset < 0) return;
    Shadow& s = shadow_[static_cast<std::size_t>(e.offset)];
    if (s.write_epoch == epoch_ && s.writer != thread) {
      report(is_write ? "wrote" : "read", thread, "wrote", s.writer, e);
    }
    if (is_write) {
      if (s.read_epoch == epoch_ && (s.reader != thread || s.other_readers)) {
        report("wrote", thread, "read", s.reader != thread ? s.reader : -1, e);
      }
      s.writer = thread;
      s.write_epoch = epoch_;
    } else if (s.read_epoch != epoch_) {
      s.reader = thread;
      s.read_epoch = epoch_;
      s.other_readers = false;
    } else if (s.reader != thread) {
      s.other_readers = true;
    }
  }

  [[noreturn]] void report(const char* now, int thread, const char* before, int other, const Element& e) const {
    const std::string who = other >= 0 ? "thread " + std::to_string(other) : std::string("another thread");
    throw SharedMemoryHazard(
        "shared-memory race in program (" + std::to_string(pid_[0]) + ", " + std::to_string(pid_[1]) + ", " +
        std::to_string(pid_[2]) + "): thread " + std::to_string(thread) + " " + now + " element (" +
        std::to_string(e.row) + ", " + std::to_string(e.col) + ") of the " + std::to_string(e.rows) + " x " +
        std::to_string(e.cols) + " " + e.dtype + " tile at byte " + std::to_string(e.tile_offset) +
        " of shared memory, which " + who + " " + before +
        " after the last prog.sync(): on a GPU their order is undefined. A barrier (prog.sync()) is missing "
        "between the two.");
  }

  std::vector<Shadow> shadow_;
  int simulated_threads_;
  const std::byte* base_ = nullptr;
  std::uint64_t epoch_ = 1;
  Coord<3> pid_{};
};

// The precision (InputPrecision, common/numeric.hpp) a launch's parameters ask for: their
// `input_precision` member, tf32 without one.
template <class Params>
constexpr InputPrecision input_precision_of(const Params& params) {
  if constexpr (requires { params.input_precision; }) {
    return params.input_precision;
  } else {
    return InputPrecision::tf32;
  }
}

// ---- HostProgram ----------------------------------------------------------------------------
class HostProgram {
 public:
  static constexpr int num_threads = 1;
  static constexpr bool on_device = false;

  // `checker` (optional) watches the shared memory for races; run_on_host always gives one.
  // The trace recorder is the one a live trace::Recording asked for this program id, if any.
  // `precision`: how its products of float32 tiles run (InputPrecision).
  HostProgram(const Coord<3>& pid, std::byte* shared_memory, std::size_t shared_bytes,
              SharedMemoryChecker* checker = nullptr, InputPrecision precision = InputPrecision::tf32)
      : pid_(pid),
        shared_(shared_memory),
        shared_bytes_(shared_bytes),
        checker_(checker),
        recorder_(trace::Recording::recorder_for({pid[0], pid[1], pid[2]})),
        precision_(precision) {}

  int program_id(int axis) const { return static_cast<int>(pid_[axis]); }
  int thread_rank() const { return 0; }
  InputPrecision input_precision() const { return precision_; }
  void sync() const {
    if (checker_ != nullptr) checker_->barrier();
  }

  template <int Width, class T, class Op>
  T reduce(T value, Op) const {
    static_assert(Width == 1, "on the host one thread owns whole rows: nothing to combine");
    return value;
  }

  template <class S>
  S& shared() const {
    if (sizeof(S) > shared_bytes_)
      throw std::logic_error("HostProgram::shared: the program's shared struct does not fit");
    return *reinterpret_cast<S*>(shared_);
  }

  // The threads the GPU would run this program with, for the race checks; 1 without a checker.
  int simulated_threads() const { return checker_ != nullptr ? checker_->simulated_threads() : 1; }

  // Records that simulated thread `thread` reads or writes `element` of a shared Tile.
  template <class TileT>
  void note_read(int thread, const TileT& tile, const typename TileT::value_type* element) const {
    if (checker_ != nullptr) checker_->read(thread, tile, element);
  }
  template <class TileT>
  void note_write(int thread, const TileT& tile, const typename TileT::value_type* element) const {
    if (checker_ != nullptr) checker_->write(thread, tile, element);
  }

  // Where load, store and note_state (load_store.hpp) note what this program does for the trace
  // viewer; nullptr unless a trace::Recording asked for this program.
  trace::Recorder* recorder() const { return recorder_; }

 private:
  Coord<3> pid_;
  std::byte* shared_;
  std::size_t shared_bytes_;
  SharedMemoryChecker* checker_;
  trace::Recorder* recorder_;
  InputPrecision precision_;
};

static_assert(ProgramLike<HostProgram>);

}  // namespace fa2
