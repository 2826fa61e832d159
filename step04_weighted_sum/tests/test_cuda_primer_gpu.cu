// Tests of the CUDA primer on a GPU: the primer's kernels give what their host-emulated runs give,
// and the hardware agrees with the models of hardware_model.hpp (lanes and warps from %laneid and
// a shuffle, bank conflicts from clock cycles, occupancy from the CUDA runtime). Skipped here
// without a GPU. Not run under compute-sanitizer: it times shared-memory reads.
//   ctest --preset default -L gpu      (FA2_REQUIRE_GPU=1 turns a missing GPU into a failure)
#include <string>
#include <vector>

#include "common/cuda/gpu.hpp"
#include "common/testing.hpp"
#include "step04_weighted_sum/cuda_primer/hardware_model.hpp"
#include "step04_weighted_sum/cuda_primer/primer.hpp"
#include "step04_weighted_sum/cuda_primer/primer_gpu.hpp"

namespace {

using namespace fa2::cuda_primer;  // NOLINT(google-build-using-namespace)

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("primer on the GPU: each primer kernel writes what its host-emulated run writes") {
    FA2_SKIP_WITHOUT_GPU();
    CHECK(write_own_index_on_gpu(1000, 256, 50) == write_own_index_on_host(1000, 256, 50));
    CHECK(write_own_index_on_gpu(1, 1024, 1023) == write_own_index_on_host(1, 1024, 1023));

    std::vector<float> in(1000 * 9);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
    const std::vector<float> chunks(in.begin(), in.begin() + 6 * 128);
    CHECK(reverse_each_block_on_gpu(chunks, 128) == reverse_each_block_on_host(chunks, 128));
    for (const int stride : {0, 1, 2, 9}) {
      CAPTURE(stride);
      CHECK(gather_with_stride_on_gpu(in, 1000, stride, 128) == gather_with_stride_on_host(in, 1000, stride, 128));
    }
    for (const int width : {32, 33}) {
      CAPTURE(width);
      const std::vector<float> table(in.begin(), in.begin() + 32 * width);
      CHECK(read_shared_column_on_gpu(table, width, 7) == read_shared_column_on_host(table, width, 7));
    }
  }

  TEST_CASE("primer on the GPU: the hardware numbers threads x fastest and cuts warps of 32, as the model says") {
    FA2_SKIP_WITHOUT_GPU();
    struct Block {
      int x, y, z;
    };
    // 1-D; 2-D with rows that do not divide 32; 3-D with a partial last warp (12 * 5 * 2 = 120).
    for (const Block b : {Block{96, 1, 1}, Block{12, 5, 1}, Block{12, 5, 2}, Block{8, 8, 4}}) {
      INFO("block (", b.x, ", ", b.y, ", ", b.z, ")");
      const auto places = warp_places_on_gpu(b.x, b.y, b.z);
      int mismatches = 0;
      for (int z = 0; z < b.z; ++z)
        for (int y = 0; y < b.y; ++y)
          for (int x = 0; x < b.x; ++x) {
            const int linear = linear_thread_index(x, y, z, b.x, b.y);
            const WarpPlace model = warp_place(linear);
            const auto i = static_cast<std::size_t>(linear);
            if (places.lane[i] != model.lane || places.first_thread_of_warp[i] != model.warp * kWarpSize) ++mismatches;
          }
      CHECK(mismatches == 0);
    }
  }

  TEST_CASE("primer on the GPU: shared-memory reads slow down with the model's bank-conflict degree") {
    FA2_SKIP_WITHOUT_GPU();
    const int reads = 4096;
    const long long conflict_free = shared_read_cycles_on_gpu(1, reads);
    INFO("stride 1 (degree 1): ", conflict_free, " cycles");
    // The model predicts 32 passes for stride 32 and 16 for stride 16; the hardware serves a pass
    // per cycle, so those reads take many times longer. The bounds below leave a wide margin
    // (a conflict-free read also costs its issue slots, so the measured ratio is below the degree).
    for (const int stride : {16, 32}) {
      const long long cycles = shared_read_cycles_on_gpu(stride, reads);
      const int degree = bank_conflict_degree_for_stride(stride);
      INFO("stride ", stride, " (degree ", degree, "): ", cycles, " cycles");
      CHECK(cycles >= conflict_free * degree / 8);
    }
    // Strides the model calls conflict-free cost what stride 1 costs, within noise.
    for (const int stride : {3, 33}) {
      REQUIRE(bank_conflict_degree_for_stride(stride) == 1);
      const long long cycles = shared_read_cycles_on_gpu(stride, reads);
      INFO("stride ", stride, " (degree 1): ", cycles, " cycles");
      CHECK(cycles * 2 <= conflict_free * 3);
    }
  }

  TEST_CASE("primer on the GPU: the occupancy model gives the CUDA runtime's blocks per SM") {
    FA2_SKIP_WITHOUT_GPU();
    const OccupancyProbe probes[] = {OccupancyProbe::write_own_index, OccupancyProbe::reverse_each_block,
                                     OccupancyProbe::hold_many_values, OccupancyProbe::weighted_sum_plain_f32_16x64,
                                     OccupancyProbe::weighted_sum_plain_bf16_32x128};
    const int threads[] = {16, 32, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024};
    const int dynamic_bytes[] = {0, 1, 4000, 10 * 1024, 20000, 30 * 1024};
    int compared = 0;
    for (const auto probe : probes) {
      const KernelFacts facts = kernel_facts_on_gpu(probe);
      for (const int t : threads) {
        for (const int dynamic : dynamic_bytes) {
          if (facts.static_shared_bytes + dynamic > 48 * 1024) continue;  // needs an opt-in: below
          const Occupancy model = model_occupancy_on_gpu(probe, t, dynamic);
          const int runtime = runtime_blocks_per_sm(probe, t, dynamic);
          INFO(to_string(probe), ": ", t, " threads, ", facts.registers_per_thread, " registers, ",
               facts.static_shared_bytes, " + ", dynamic, " bytes of shared memory; model limited by ",
               model.limited_by());
          CHECK(model.blocks_per_sm == runtime);
          ++compared;
        }
      }
    }
    // Past 48 KB, after the opt-in. On a 228 KB SM, 115712 bytes (+ 1 KB reserved) fit exactly twice
    // and one byte more fits once: the reserved kilobyte and the 128-byte rounding both show.
    for (const int dynamic : {0, 49 * 1024, 100 * 1024, 115712, 115713, 200 * 1024}) {
      for (const int t : {32, 256, 1024}) {
        const Occupancy model = model_occupancy_on_gpu(OccupancyProbe::use_dynamic_shared, t, dynamic);
        INFO("use_dynamic_shared: ", t, " threads, ", dynamic, " bytes; model limited by ", model.limited_by());
        CHECK(model.blocks_per_sm == runtime_blocks_per_sm(OccupancyProbe::use_dynamic_shared, t, dynamic));
        ++compared;
      }
    }
    MESSAGE(compared, " launch shapes compared on ", fa2::cuda::gpu_status().name);
  }

  TEST_CASE("primer on the GPU: an sm_90 device reports the SM limits the host tests assume") {
    FA2_SKIP_WITHOUT_GPU();
    const auto& gpu = fa2::cuda::gpu_status();
    if (gpu.cc_major != 9 || gpu.cc_minor != 0) {
      MESSAGE("not an sm_90 GPU (", gpu.name, "): nothing to compare");
      return;
    }
    const SmLimits device = sm_limits_on_gpu(false);
    const SmLimits assumed = sm90_limits();
    CHECK(device.max_threads_per_sm == assumed.max_threads_per_sm);
    CHECK(device.max_blocks_per_sm == assumed.max_blocks_per_sm);
    CHECK(device.registers_per_sm == assumed.registers_per_sm);
    CHECK(device.registers_per_block == assumed.registers_per_block);
    CHECK(device.shared_bytes_per_sm == assumed.shared_bytes_per_sm);
    CHECK(device.shared_bytes_per_block == assumed.shared_bytes_per_block);
    CHECK(device.reserved_shared_bytes_per_block == assumed.reserved_shared_bytes_per_block);
    CHECK(sm_limits_on_gpu(true).shared_bytes_per_block == 232448);
  }
}
