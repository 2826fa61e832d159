// Tests of the CUDA primer on the host: the hardware models (warps and lanes, banks, sectors,
// occupancy) against cases worked out by hand in the comments, and the primer's kernels run by
// the host emulation. The GPU twin, tests/test_cuda_primer_gpu.cu, asks the hardware instead.
//   cmake --build --preset cpu-only --target step04_cuda_primer_tests && ctest --preset cpu-only -L step04
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/testing.hpp"
#include "step04_weighted_sum/cuda_primer/hardware_model.hpp"
#include "step04_weighted_sum/cuda_primer/primer.hpp"

namespace {

using namespace fa2::cuda_primer;  // NOLINT(google-build-using-namespace)

}  // namespace

TEST_SUITE("cuda_primer") {
  TEST_CASE("threads and blocks: every index below n is written by its own thread, nothing past n") {
    SUBCASE("1000 elements, blocks of 256: the 4th block is 24 threads short of work") {
      const auto out = write_own_index_on_host(1000, 256, 50);
      for (int i = 0; i < 1000; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == i);
      for (std::size_t i = 1000; i < out.size(); ++i) CHECK(out[i] == -1);
    }
    SUBCASE("1 element, one block of 1024 threads: 1023 of them idle") {
      const auto out = write_own_index_on_host(1, 1024, 1023);
      CHECK(out[0] == 0);
      for (std::size_t i = 1; i < out.size(); ++i) CHECK(out[i] == -1);
    }
  }

  TEST_CASE("warps: threads are numbered x fastest and cut into warps of 32 in that order") {
    // Block (8, 8): thread (3, 5) is 3 + 8 * 5 = 43, the second warp's lane 11.
    CHECK(linear_thread_index(3, 5, 0, 8, 8) == 43);
    CHECK(warp_place(43).warp == 1);
    CHECK(warp_place(43).lane == 11);
    // Block (12, 5, 2): thread (11, 4, 1) is 11 + 12 * (4 + 5 * 1) = 119, warp 3 lane 23.
    CHECK(linear_thread_index(11, 4, 1, 12, 5) == 119);
    CHECK(warp_place(119).warp == 3);
    CHECK(warp_place(119).lane == 23);
    CHECK(warp_place(31).warp == 0);
    CHECK(warp_place(32).lane == 0);
  }

  TEST_CASE("shared memory and __syncthreads: each block reverses its own chunk") {
    std::vector<float> in(4 * 64);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
    const auto out = reverse_each_block_on_host(in, 64);
    for (std::size_t b = 0; b < 4; ++b)
      for (std::size_t t = 0; t < 64; ++t) CHECK(out[b * 64 + t] == in[b * 64 + 63 - t]);
    CHECK_THROWS_AS(reverse_each_block_on_host(in, 257), std::invalid_argument);
  }

  TEST_CASE("banks: a word's bank is its 4-byte index mod 32") {
    CHECK(bank_of(0) == 0);
    CHECK(bank_of(4) == 1);
    CHECK(bank_of(7) == 1);  // the bytes of one word share its bank
    CHECK(bank_of(124) == 31);
    CHECK(bank_of(128) == 0);  // 32 words on, the banks start over
  }

  TEST_CASE("banks: the passes one warp needs are the most distinct words any bank must serve") {
    CHECK(bank_conflict_degree_for_stride(1) == 1);  // 32 words in 32 banks
    CHECK(bank_conflict_degree_for_stride(2) == 2);  // even banks only, two words each
    CHECK(bank_conflict_degree_for_stride(3) == 1);  // an odd stride visits every bank once
    CHECK(bank_conflict_degree_for_stride(16) == 16);
    CHECK(bank_conflict_degree_for_stride(32) == 32);  // every lane in bank 0: one lane per pass
    CHECK(bank_conflict_degree_for_stride(33) == 1);   // one word of padding per row undoes it
    CHECK(bank_conflict_degree_for_stride(0) == 1);    // all lanes, one word: a broadcast
    // Two lanes on one word and one lane on another word of the same bank: 2 passes, not 3.
    const std::vector<std::uint32_t> offsets = {0, 0, 128, 4};
    CHECK(bank_conflict_degree(offsets) == 2);
    CHECK_THROWS_AS(bank_conflict_degree(std::vector<std::uint32_t>(33, 0)), std::invalid_argument);
  }

  TEST_CASE("banks: why the plain weighted sum pads its x tile to D_TILE_SIZE + 1 floats per row") {
    // Its threads each own a row and read the same column together: lane l reads word
    // l * row_stride + c. With 64-float rows all 32 lanes land in one bank.
    CHECK(bank_conflict_degree_for_stride(64) == 32);
    CHECK(bank_conflict_degree_for_stride(64 + 1) == 1);
    CHECK(bank_conflict_degree_for_stride(4 + 1) == 1);  // the article's 2 x 4 tiles (2 lanes anyway)
  }

  TEST_CASE("banks: the column kernel returns the column whatever the width costs") {
    for (const int width : {32, 33}) {
      CAPTURE(width);
      std::vector<float> table(static_cast<std::size_t>(32 * width));
      for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
      const auto column = read_shared_column_on_host(table, width, 5);
      for (int lane = 0; lane < 32; ++lane)
        CHECK(column[static_cast<std::size_t>(lane)] == table[static_cast<std::size_t>(lane * width + 5)]);
    }
  }

  TEST_CASE("coalescing: the sectors one warp's load touches") {
    CHECK(sectors_for_strided_load(0, 1, 4) == 4);      // 128 contiguous bytes: 4 sectors, all used
    CHECK(sectors_for_strided_load(1, 1, 4) == 5);      // shifted by one float: 5 sectors
    CHECK(sectors_for_strided_load(0, 2, 4) == 8);      // every other float: twice the sectors
    CHECK(sectors_for_strided_load(0, 8, 4) == 32);     // 32 bytes apart: a sector per lane
    CHECK(sectors_for_strided_load(0, 1000, 4) == 32);  // a transposed x: a column per warp
    CHECK(sectors_for_strided_load(0, 1, 2) == 2);      // bf16: 64 bytes
    CHECK(sectors_for_strided_load(0, 0, 4) == 1);      // one float for everyone
    const std::vector<std::uint64_t> straddling = {30};
    CHECK(sectors_touched(straddling, 4) == 2);  // bytes 30..33 cross a sector boundary
    CHECK(load_efficiency(32, 4, 4) == doctest::Approx(1.0));
    CHECK(load_efficiency(32, 4, 32) == doctest::Approx(0.125));
  }

  TEST_CASE("coalescing: the strided gather kernel reads element i times stride") {
    std::vector<float> in(1000);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) + 0.25f;
    for (const int stride : {0, 1, 3, 9}) {
      CAPTURE(stride);
      const auto out = gather_with_stride_on_host(in, 100, stride, 32);
      for (std::size_t i = 0; i < 100; ++i) CHECK(out[i] == in[i * static_cast<std::size_t>(stride)]);
    }
  }

  TEST_CASE("occupancy: worked examples on an H100/H200 SM (2048 threads, 32 blocks, 64 K registers, 228 KB)") {
    const SmLimits sm = sm90_limits();
    // 256 threads, 32 registers: 8 warps of 1024 registers; 8 blocks fill all 64 warp slots.
    auto occ = occupancy({256, 32, 0}, sm);
    CHECK(occ.blocks_per_sm == 8);
    CHECK(occ.fraction() == doctest::Approx(1.0));
    CHECK(std::string(occ.limited_by()) == "warps");
    // 64 registers: 2048 per warp; a scheduler's 16384 hold 8 warps, the SM 32: 4 blocks, 50%.
    occ = occupancy({256, 64, 0}, sm);
    CHECK(occ.blocks_per_sm == 4);
    CHECK(occ.active_warps == 32);
    CHECK(std::string(occ.limited_by()) == "registers");
    // 48 KB of shared memory: 48 KB + 1 KB reserved per block; 233472 / 50176 = 4 blocks of 4 warps.
    occ = occupancy({128, 32, 48 * 1024}, sm);
    CHECK(occ.blocks_per_sm == 4);
    CHECK(occ.fraction() == doctest::Approx(0.25));
    CHECK(std::string(occ.limited_by()) == "shared memory");
    // One warp per block: 32 block slots hold 32 warps, half the SM.
    occ = occupancy({32, 32, 0}, sm);
    CHECK(occ.blocks_per_sm == 32);
    CHECK(occ.fraction() == doctest::Approx(0.5));
    CHECK(std::string(occ.limited_by()) == "blocks");
    // 3 warps of 40 registers (1280 per warp): 16384 / 1280 = 12 warps per scheduler, 48 per
    // SM, 16 blocks. Dividing the whole file instead (65536 / 1280 = 51 warps) would say 17.
    occ = occupancy({96, 40, 0}, sm);
    CHECK(occ.by_registers == 16);
    CHECK(occ.blocks_per_sm == 16);
    // One byte of shared memory still takes 1024 + 128 bytes: 233472 / 1152 = 202 blocks' worth.
    CHECK(occupancy({32, 16, 1}, sm).by_shared_memory == 202);
  }

  TEST_CASE("occupancy: blocks that cannot launch at all give 0") {
    const SmLimits sm = sm90_limits();
    // 1024 threads of 72 registers: 32 warps of 2304 registers = 73728 > 65536 per block.
    CHECK(occupancy({1024, 72, 0}, sm).blocks_per_sm == 0);
    CHECK(std::string(occupancy({1024, 72, 0}, sm).limited_by()) == "cannot launch");
    CHECK(occupancy({128, 32, 48 * 1024 + 1}, sm).blocks_per_sm == 0);  // past 48 KB without the opt-in
    CHECK(occupancy({1025, 16, 0}, sm).blocks_per_sm == 0);
    SmLimits opted_in = sm;
    opted_in.shared_bytes_per_block = 232448;  // sharedMemPerBlockOptin after cudaFuncSetAttribute
    CHECK(occupancy({128, 32, 100 * 1024}, opted_in).blocks_per_sm == 2);  // 233472 / 103424
  }

  TEST_CASE("occupancy: an Ada SM (1536 threads, 24 blocks, 100 KB) differs from Hopper's") {
    const SmLimits sm = sm89_limits();
    CHECK(occupancy({256, 32, 0}, sm).blocks_per_sm == 6);  // 48 warp slots / 8
    CHECK(occupancy({32, 32, 0}, sm).blocks_per_sm == 24);
    CHECK(occupancy({128, 32, 48 * 1024}, sm).blocks_per_sm == 2);             // 102400 / 50176
    CHECK(occupancy({128, 32, 48 * 1024}, sm80_limits()).blocks_per_sm == 3);  // 167936 / 50176
  }
}
