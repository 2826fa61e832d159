// The host models of hardware_model.hpp: banks, sectors, occupancy (no CUDA needed).
//   ctest --preset cpu-only -L step04
#include "step04_weighted_sum/cuda_primer/hardware_model.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fa2::cuda_primer {

namespace {

int round_up(int value, int unit) {
  return (value + unit - 1) / unit * unit;
}

void require_lanes(std::size_t lanes) {
  if (lanes == 0 || lanes > static_cast<std::size_t>(kWarpSize)) {
    throw std::invalid_argument("lanes: got " + std::to_string(lanes) + ", allowed 1 to 32 (one warp)");
  }
}

}  // namespace

int bank_conflict_degree(std::span<const std::uint32_t> lane_byte_offsets) {
  require_lanes(lane_byte_offsets.size());
  // For each bank, the distinct words asked of it; the busiest bank sets the number of passes.
  std::array<std::set<std::uint32_t>, kSharedBanks> words_per_bank;
  for (const std::uint32_t offset : lane_byte_offsets) {
    words_per_bank[static_cast<std::size_t>(bank_of(offset))].insert(offset / kBankWordBytes);
  }
  std::size_t degree = 0;
  for (const auto& words : words_per_bank) degree = std::max(degree, words.size());
  return static_cast<int>(degree);
}

int bank_conflict_degree_for_stride(int stride_words, int lanes) {
  if (stride_words < 0)
    throw std::invalid_argument("stride_words: got " + std::to_string(stride_words) + ", allowed >= 0");
  require_lanes(static_cast<std::size_t>(lanes));
  std::vector<std::uint32_t> offsets;
  for (int lane = 0; lane < lanes; ++lane) {
    offsets.push_back(static_cast<std::uint32_t>(lane) * static_cast<std::uint32_t>(stride_words) * kBankWordBytes);
  }
  return bank_conflict_degree(offsets);
}

int sectors_touched(std::span<const std::uint64_t> lane_byte_addresses, int bytes_per_lane) {
  require_lanes(lane_byte_addresses.size());
  if (bytes_per_lane < 1 || bytes_per_lane > 16) {
    throw std::invalid_argument("bytes_per_lane: got " + std::to_string(bytes_per_lane) + ", allowed 1 to 16");
  }
  std::set<std::uint64_t> sectors;
  for (const std::uint64_t address : lane_byte_addresses) {
    const std::uint64_t last_byte = address + static_cast<std::uint64_t>(bytes_per_lane) - 1;
    for (std::uint64_t s = address / kSectorBytes; s <= last_byte / kSectorBytes; ++s) sectors.insert(s);
  }
  return static_cast<int>(sectors.size());
}

int sectors_for_strided_load(std::int64_t first_element, std::int64_t stride_elements, int element_bytes, int lanes) {
  if (first_element < 0 || stride_elements < 0) {
    throw std::invalid_argument("first_element and stride_elements: got " + std::to_string(first_element) + " and " +
                                std::to_string(stride_elements) + ", allowed >= 0");
  }
  require_lanes(static_cast<std::size_t>(lanes));
  std::vector<std::uint64_t> addresses;
  for (int lane = 0; lane < lanes; ++lane) {
    addresses.push_back(static_cast<std::uint64_t>((first_element + lane * stride_elements) * element_bytes));
  }
  return sectors_touched(addresses, element_bytes);
}

double load_efficiency(int lanes, int element_bytes, int sectors) {
  if (sectors < 1) throw std::invalid_argument("sectors: got " + std::to_string(sectors) + ", allowed >= 1");
  return static_cast<double>(lanes * element_bytes) / static_cast<double>(sectors * kSectorBytes);
}

SmLimits sm80_limits() {
  return {"sm_80 (A100)", 2048, 32, 65536, 65536, 167936, 49152, 1024, 1024};
}
SmLimits sm89_limits() {
  return {"sm_89 (L4, L40, RTX 4090)", 1536, 24, 65536, 65536, 102400, 49152, 1024, 1024};
}
SmLimits sm90_limits() {
  return {"sm_90 (H100, H200)", 2048, 32, 65536, 65536, 233472, 49152, 1024, 1024};
}

const char* Occupancy::limited_by() const {
  // When several limits agree, the first one named: full warp slots say the most.
  if (blocks_per_sm == 0) return "cannot launch";
  if (blocks_per_sm == by_warps) return "warps";
  if (blocks_per_sm == by_registers) return "registers";
  if (blocks_per_sm == by_shared_memory) return "shared memory";
  return "blocks";
}

Occupancy occupancy(const BlockResources& block, const SmLimits& sm) {
  constexpr int kRegisterUnit = 256;  // registers are handed to a warp in multiples of this
  constexpr int kSchedulers = 4;      // each owns a quarter of the register file and whole warps
  constexpr int kSharedUnit = 128;    // shared memory is handed to a block in multiples of this
  if (block.threads < 1 || block.registers_per_thread < 0 || block.shared_bytes < 0) {
    throw std::invalid_argument("block: threads >= 1, registers_per_thread >= 0 and shared_bytes >= 0");
  }
  Occupancy occ;
  occ.max_warps = sm.max_threads_per_sm / kWarpSize;
  if (block.threads > sm.max_threads_per_block) return occ;
  const int warps_per_block = (block.threads + kWarpSize - 1) / kWarpSize;  // a partial warp still takes a slot

  occ.by_warps = occ.max_warps / warps_per_block;
  occ.by_blocks = sm.max_blocks_per_sm;

  occ.by_registers = INT_MAX;
  if (block.registers_per_thread > 0) {
    const int registers_per_warp = round_up(block.registers_per_thread * kWarpSize, kRegisterUnit);
    // The launch check counts a block's warps as if spread evenly over the 4 schedulers.
    const int block_registers = registers_per_warp * round_up(warps_per_block, kSchedulers);
    const int warps_per_scheduler = sm.registers_per_sm / kSchedulers / registers_per_warp;
    occ.by_registers = block_registers > sm.registers_per_block || block.registers_per_thread > 255
                           ? 0
                           : warps_per_scheduler * kSchedulers / warps_per_block;
  }

  occ.by_shared_memory = INT_MAX;
  if (block.shared_bytes > sm.shared_bytes_per_block) {
    occ.by_shared_memory = 0;
  } else {
    const int per_block = round_up(block.shared_bytes + sm.reserved_shared_bytes_per_block, kSharedUnit);
    if (per_block > 0) occ.by_shared_memory = sm.shared_bytes_per_sm / per_block;
  }

  occ.blocks_per_sm = std::min({occ.by_warps, occ.by_blocks, occ.by_registers, occ.by_shared_memory});
  occ.active_warps = occ.blocks_per_sm * warps_per_block;
  return occ;
}

}  // namespace fa2::cuda_primer
