// Step 2's heap meter (see heap_meter.hpp): this file replaces the program's malloc family, as
// glibc's manual allows ("Replacing malloc"), and forwards every call to glibc's own allocator.
//   Linked into step02_measure and step02_measure_tests; ctest --preset cpu-only -L step02
//
// The replacement functions are always on, for every allocation of the program; they only
// count while measure_heap runs. To know how many bytes a free() gives back, the meter keeps
// the size of each block allocated during the measurement in a table keyed by its address.
// Blocks it does not know (allocated before the measurement) are freed without counting.
#include "step02_tiled_cpu/heap_meter.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

// glibc's allocator under its own names: what malloc and friends are when nobody replaces them.
extern "C" {
void* __libc_malloc(std::size_t size);
void __libc_free(void* block);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* block, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
}
#endif

namespace fa2::tiled {
namespace {

// Open addressing with linear probing: address -> requested bytes, for the blocks allocated
// during one measurement. Capacity 2^16, used up to half full; zero address = empty slot. A
// static array, because the table cannot allocate: it lives inside malloc.
constexpr std::size_t kSlotBits = 16;
constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
constexpr std::size_t kMaxTracked = kSlots / 2;

struct Slot {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
};

struct Meter {
  std::atomic<bool> running{false};  // read on every malloc and free: the one check when idle
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  Slot slots[kSlots];
  std::size_t tracked = 0;  // occupied slots
  bool overflowed = false;  // a block could not be tracked: the counts are incomplete
  HeapPeak counts;
};

Meter g_meter;  // zero-initialised before any code runs, so malloc may be called before main

class SpinGuard {
 public:
  explicit SpinGuard(std::atomic_flag& flag) : flag_(flag) {
    while (flag_.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~SpinGuard() { flag_.clear(std::memory_order_release); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  std::atomic_flag& flag_;
};

// Fibonacci hashing of the address (its low 4 bits are always 0: blocks are 16-byte aligned).
std::size_t home_slot(std::uintptr_t address) {
  return static_cast<std::size_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

void insert(std::uintptr_t address, std::size_t bytes) {
  if (g_meter.tracked >= kMaxTracked) {
    g_meter.overflowed = true;
    return;
  }
  std::size_t i = home_slot(address);
  while (g_meter.slots[i].address != 0) i = (i + 1) & (kSlots - 1);
  g_meter.slots[i] = {address, bytes};
  ++g_meter.tracked;
}

// The requested size of a tracked block, removing it; 0 when the block is not tracked. The
// slots after it that probed past it move back, so that no lookup meets a hole (no tombstones).
std::size_t remove(std::uintptr_t address) {
  std::size_t i = home_slot(address);
  while (g_meter.slots[i].address != address) {
    if (g_meter.slots[i].address == 0) return 0;
    i = (i + 1) & (kSlots - 1);
  }
  const std::size_t bytes = g_meter.slots[i].bytes;
  std::size_t hole = i;
  for (std::size_t j = (hole + 1) & (kSlots - 1); g_meter.slots[j].address != 0; j = (j + 1) & (kSlots - 1)) {
    const std::size_t home = home_slot(g_meter.slots[j].address);
    // The entry at j stays if its home lies cyclically in (hole, j]: it never probed past the hole.
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    g_meter.slots[hole] = g_meter.slots[j];
    hole = j;
  }
  g_meter.slots[hole] = {};
  --g_meter.tracked;
  return bytes;
}

[[maybe_unused]] void on_allocate(void* block, std::size_t bytes) {
  if (block == nullptr || !g_meter.running.load(std::memory_order_relaxed)) return;
  const SpinGuard guard(g_meter.lock);
  insert(reinterpret_cast<std::uintptr_t>(block), bytes);
  HeapPeak& c = g_meter.counts;
  c.live_bytes += static_cast<std::int64_t>(bytes);
  c.peak_bytes = std::max(c.peak_bytes, c.live_bytes);
  ++c.allocations;
}

[[maybe_unused]] void on_release(void* block) {
  if (block == nullptr || !g_meter.running.load(std::memory_order_relaxed)) return;
  const SpinGuard guard(g_meter.lock);
  g_meter.counts.live_bytes -= static_cast<std::int64_t>(remove(reinterpret_cast<std::uintptr_t>(block)));
}

// Starts and stops one measurement; stopping also when the measured call throws.
class Measurement {
 public:
  Measurement() {
    // exchange: of two measurements started at once, exactly one sees false and runs. The
    // error is built after that, because building it allocates and the other one is counting.
    if (g_meter.running.exchange(true)) throw std::logic_error("measure_heap: a measurement is already running");
    const SpinGuard guard(g_meter.lock);
    std::fill(std::begin(g_meter.slots), std::end(g_meter.slots), Slot{});
    g_meter.tracked = 0;
    g_meter.overflowed = false;
    g_meter.counts = {};
  }
  ~Measurement() { g_meter.running.store(false); }
  Measurement(const Measurement&) = delete;
  Measurement& operator=(const Measurement&) = delete;

  HeapPeak stop() {
    g_meter.running.store(false);  // from here on nothing counts, so building an error may allocate
    if (g_meter.overflowed) {
      throw std::runtime_error("measure_heap: more than " + std::to_string(kMaxTracked) +
                               " blocks were live at once; the counts would be incomplete");
    }
    const SpinGuard guard(g_meter.lock);  // a free on another thread may still be updating them
    return g_meter.counts;
  }
};

}  // namespace

#if defined(__GLIBC__)
bool heap_meter_available() {
  return true;
}
#else
bool heap_meter_available() {
  return false;
}
#endif

HeapPeak measure_heap(const std::function<void()>& call) {
  if (!heap_meter_available()) {
    throw std::runtime_error("measure_heap: the heap meter needs glibc (it replaces glibc's malloc)");
  }
  Measurement measurement;
  call();
  return measurement.stop();
}

}  // namespace fa2::tiled

#if defined(__GLIBC__)
// The replacements. Each forwards to glibc and reports the block; errno and the return values
// are glibc's own. They are noexcept, as glibc declares them.
extern "C" {

void* malloc(std::size_t size) noexcept {
  void* block = __libc_malloc(size);
  fa2::tiled::on_allocate(block, size);
  return block;
}

void free(void* block) noexcept {
  fa2::tiled::on_release(block);
  __libc_free(block);
}

void* calloc(std::size_t count, std::size_t size) noexcept {
  void* block = __libc_calloc(count, size);
  fa2::tiled::on_allocate(block, count * size);  // no overflow: glibc returned null if it overflowed
  return block;
}

// A block that moves or grows is counted as freed and allocated again, with its new size.
void* realloc(void* block, std::size_t size) noexcept {
  if (block == nullptr) return malloc(size);
  if (size == 0) {  // glibc frees the block and returns null
    free(block);
    return nullptr;
  }
  void* moved = __libc_realloc(block, size);
  if (moved == nullptr) return nullptr;  // the old block is still there, unchanged
  fa2::tiled::on_release(block);
  fa2::tiled::on_allocate(moved, size);
  return moved;
}

void* memalign(std::size_t alignment, std::size_t size) noexcept {
  void* block = __libc_memalign(alignment, size);
  fa2::tiled::on_allocate(block, size);
  return block;
}

void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  return memalign(alignment, size);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  // POSIX: a power of two and a multiple of sizeof(void*), else EINVAL; *out untouched on failure.
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) return EINVAL;
  void* block = memalign(alignment, size);
  if (block == nullptr) return ENOMEM;
  *out = block;
  return 0;
}

void* valloc(std::size_t size) noexcept {
  return memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size);
}

void* pvalloc(std::size_t size) noexcept {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return memalign(page, (size + page - 1) / page * page);
}

}  // extern "C"
#endif
