// Step 2's heap meter: the exact peak of heap bytes that one call allocates, counted by
// replacing the C allocator (malloc, free and friends) in any program that links it.
//   Used by step02_measure (measure_main.cpp); tests: ctest --preset cpu-only -L step02
//
//   const fa2::tiled::HeapPeak peak = fa2::tiled::measure_heap([&] { out = attention(Q, K, V); });
//
// Why malloc and not operator new: Eigen allocates its matrices with std::malloc, and
// libstdc++'s operator new calls malloc too, so one place sees both. What is counted: the bytes
// each malloc, calloc, realloc, aligned_alloc, memalign, posix_memalign or valloc asked for
// (not what the allocator rounds them up to, nor its bookkeeping), for blocks allocated while
// the meter runs. Blocks that existed before (the inputs) are not counted, not even when the
// call frees them. Stack memory is not heap and is not counted (Eigen puts small temporaries of
// its matrix products there, up to 128 KiB). glibc only (Debian, Ubuntu): elsewhere
// heap_meter_available() is false and measure_heap throws.
#pragma once

#include <cstdint>
#include <functional>

namespace fa2::tiled {

struct HeapPeak {
  std::int64_t peak_bytes = 0;   // most bytes live at once among the blocks allocated since the start
  std::int64_t live_bytes = 0;   // of those, still live at the end (what the call returned, or leaked)
  std::int64_t allocations = 0;  // blocks allocated since the start, freed or not
};

// Whether this program's allocator is the meter's (glibc); without it nothing can be counted.
bool heap_meter_available();

// Runs `call` with the meter on and returns what it counted. One meter at a time: a call to
// measure_heap inside `call` throws std::logic_error. Throws std::runtime_error when more
// blocks are live at once than the meter's table holds (tens of thousands; step 2's loops
// keep a few dozen). Any thread's allocations count while the meter runs.
HeapPeak measure_heap(const std::function<void()>& call);

}  // namespace fa2::tiled
