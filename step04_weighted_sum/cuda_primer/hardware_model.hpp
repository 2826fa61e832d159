// Small host models of the GPU hardware behind the CUDA primer (README.md, "A CUDA primer"):
// which warp and lane a thread is, which shared-memory bank a word lives in and how many passes
// one warp's access needs, how many 32-byte sectors one warp's load touches, and how many blocks
// fit on one SM (occupancy). Plain arithmetic: they run anywhere; the GPU tests check them against
// the hardware (tests/test_cuda_primer_gpu.cu).
//   ctest --preset cpu-only -L step04   and, on a GPU machine,   ctest --preset default -L gpu
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace fa2::cuda_primer {

inline constexpr int kWarpSize = 32;

// ---- threads, warps, blocks -----------------------------------------------------------------
// A block's threads are numbered x fastest, then y, then z, and cut into warps of 32 in that order.
struct WarpPlace {
  int warp = 0;  // which warp of the block
  int lane = 0;  // which of its 32 threads
};
// The linear index of thread (x, y, z) in a block of block_x * block_y * block_z threads.
constexpr int linear_thread_index(int x, int y, int z, int block_x, int block_y) {
  return x + block_x * (y + block_y * z);
}
constexpr WarpPlace warp_place(int linear_thread) {
  return {linear_thread / kWarpSize, linear_thread % kWarpSize};
}

// ---- shared memory banks ----------------------------------------------------------------------
// Shared memory is 32 banks, each 4 bytes wide; consecutive 4-byte words go to consecutive banks.
inline constexpr int kSharedBanks = 32;
inline constexpr int kBankWordBytes = 4;

constexpr int bank_of(std::uint32_t byte_offset) {
  return static_cast<int>((byte_offset / kBankWordBytes) % kSharedBanks);
}

// The passes ("wavefronts") shared memory needs to serve one warp's access to 4-byte words, given
// each lane's byte offset: the most *distinct* words that any one bank must deliver. Lanes that
// read the same word share one delivery (a broadcast). 1 means conflict-free; 32 means the
// warp's access is served one lane at a time. Accesses wider than 4 bytes are not modelled.
int bank_conflict_degree(std::span<const std::uint32_t> lane_byte_offsets);

// The same for the common case: lane l accesses the 4-byte word `l * stride_words` (lanes 0..lanes-1).
int bank_conflict_degree_for_stride(int stride_words, int lanes = kWarpSize);

// ---- coalescing -------------------------------------------------------------------------------
// Global memory moves in 32-byte sectors: a warp's load costs the sectors its lanes' bytes touch.
inline constexpr int kSectorBytes = 32;

// Distinct sectors touched by one warp's load, each lane reading `bytes_per_lane` bytes from its
// byte address (an access that straddles a sector boundary touches both).
int sectors_touched(std::span<const std::uint64_t> lane_byte_addresses, int bytes_per_lane);

// Lane l reads element `first_element + l * stride_elements` of an array of `element_bytes`-byte
// elements that starts on a sector boundary.
int sectors_for_strided_load(std::int64_t first_element, std::int64_t stride_elements, int element_bytes,
                             int lanes = kWarpSize);

// Bytes the lanes asked for over bytes the sectors moved, in (0, 1].
double load_efficiency(int lanes, int element_bytes, int sectors);

// ---- occupancy --------------------------------------------------------------------------------
// One SM's resources, named after the cudaDeviceProp fields they come from.
struct SmLimits {
  std::string name;
  int max_threads_per_sm = 0;               // maxThreadsPerMultiProcessor
  int max_blocks_per_sm = 0;                // maxBlocksPerMultiProcessor
  int registers_per_sm = 0;                 // regsPerMultiprocessor
  int registers_per_block = 0;              // regsPerBlock
  int shared_bytes_per_sm = 0;              // sharedMemPerMultiprocessor
  int shared_bytes_per_block = 0;           // sharedMemPerBlock (48 KB), or sharedMemPerBlockOptin after
                                            // cudaFuncAttributeMaxDynamicSharedMemorySize raised it
  int reserved_shared_bytes_per_block = 0;  // reservedSharedMemPerBlock: the driver's own 1 KB per block
  int max_threads_per_block = 1024;         // maxThreadsPerBlock
};

// The SMs of the GPUs this repository targets (the values cudaGetDeviceProperties reports).
SmLimits sm80_limits();  // A100
SmLimits sm89_limits();  // L4, L40, RTX 4090
SmLimits sm90_limits();  // H100, H200

// What one block of a kernel asks for: cudaFuncAttributes' numRegs, and its static shared memory
// (sharedSizeBytes) plus the dynamic shared memory of the launch.
struct BlockResources {
  int threads = 0;
  int registers_per_thread = 0;
  int shared_bytes = 0;
};

// How many blocks of that kernel one SM holds at once, and which resource says so.
struct Occupancy {
  int blocks_per_sm = 0;
  int by_warps = 0;          // warp slots: max_threads_per_sm / 32
  int by_blocks = 0;         // the SM's block slots
  int by_registers = 0;      // the register file
  int by_shared_memory = 0;  // shared memory
  int active_warps = 0;      // blocks_per_sm * warps per block
  int max_warps = 0;         // the SM's warp slots
  double fraction() const { return max_warps == 0 ? 0.0 : static_cast<double>(active_warps) / max_warps; }
  // "warps", "registers", "shared memory", "blocks" (the first that sets blocks_per_sm), or "cannot launch"
  const char* limited_by() const;
};

// The allocation rules of sm_80 to sm_90: registers go to warps in units of 256 (a warp of r
// registers per thread takes roundup(32 r, 256)), and each of the SM's 4 schedulers owns a quarter
// of the register file and whole warps; shared memory goes to blocks in units of 128 bytes, each
// block also taking the driver's reserved share. A block that cannot fit at all gives 0.
Occupancy occupancy(const BlockResources& block, const SmLimits& sm);

}  // namespace fa2::cuda_primer
