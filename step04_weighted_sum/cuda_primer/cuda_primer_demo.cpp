// Step 4's CUDA primer, one idea after another: the primer's kernels run on the host emulation
// of CUDA (and on the GPU when there is one), with the hardware models' numbers beside them.
//   cmake --build --preset default --target step04_cuda_primer && build/default/step04_weighted_sum/step04_cuda_primer
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "step04_weighted_sum/cuda_primer/hardware_model.hpp"
#include "step04_weighted_sum/cuda_primer/primer.hpp"
#if FA2_STEP04_WITH_CUDA
#include "common/cuda/gpu.hpp"
#include "step04_weighted_sum/cuda_primer/primer_gpu.hpp"
#endif

namespace {

using namespace fa2::cuda_primer;  // NOLINT(google-build-using-namespace): reads like the primer

template <class T>
std::string list(const std::vector<T>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(values[i]));
    s += buf;
    s += i + 1 < values.size() ? ", " : "]";
  }
  return s;
}

void threads_and_blocks() {
  std::printf("1. Threads and blocks: write_own_index, n = 10, blocks of 4 threads: cdiv(10, 4) = 3 blocks\n");
  const auto out = write_own_index_on_host(10, 4, 2);
  std::printf("   out + 2 guard elements: %s\n", list(out).c_str());
  std::printf("   block 2's threads 2 and 3 found i = 10 and 11 >= n and wrote nothing (the guards kept -1)\n\n");
}

void warps() {
  std::printf("2. Warps: a block of (12, 5) threads; thread (x, y) is linear x + 12 y, warp.lane:\n");
  for (int y = 0; y < 5; ++y) {
    std::printf("   y = %d:", y);
    std::string row;
    for (int x = 0; x < 12; ++x) {
      const WarpPlace place = warp_place(linear_thread_index(x, y, 0, 12, 5));
      const std::string entry = std::to_string(place.warp) + "." + std::to_string(place.lane);
      row += " " + entry + (x + 1 < 12 ? std::string(4 - entry.size(), ' ') : "");
    }
    std::printf("%s\n", row.c_str());
  }
  std::printf("   warp 1 starts in the middle of row y = 2; warp 1 has 28 threads, its last 4 lanes are empty\n\n");
}

void shared_memory_and_barrier() {
  std::printf("3. Shared memory and __syncthreads(): reverse_each_block on 0..15, blocks of 8 threads\n");
  std::vector<float> in(16);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  std::printf("   out = %s\n\n", list(reverse_each_block_on_host(in, 8)).c_str());
}

void coalescing() {
  std::printf("4. Coalescing: one warp reads element lane * stride; 32-byte sectors it touches\n");
  std::printf("   stride   float32 sectors  efficiency   bf16 sectors  efficiency\n");
  for (const int stride : {1, 2, 4, 8, 16, 32}) {
    const int f32 = sectors_for_strided_load(0, stride, 4);
    const int b16 = sectors_for_strided_load(0, stride, 2);
    std::printf("   %6d   %15d  %9.1f%%   %12d  %9.1f%%\n", stride, f32, 100.0 * load_efficiency(32, 4, f32), b16,
                100.0 * load_efficiency(32, 2, b16));
  }
  std::printf("   (a float32 load starting one element late: %d sectors)\n\n", sectors_for_strided_load(1, 1, 4));
}

void banks() {
  std::printf("5. Banks: one warp reads 4-byte word lane * stride of shared memory; passes needed\n");
  std::printf("   stride: ");
  for (const int stride : {1, 2, 3, 4, 8, 16, 32, 33})
    std::printf(" %d->%d", stride, bank_conflict_degree_for_stride(stride));
  std::printf("\n   a column of a (32, 32) float table: %d passes; of a (32, 33) table: %d\n\n",
              bank_conflict_degree_for_stride(32), bank_conflict_degree_for_stride(33));
}

void occupancy_table(const SmLimits& sm) {
  std::printf("6. Occupancy on one %s SM: %d threads, %d blocks, %d registers, %d bytes of shared memory\n",
              sm.name.c_str(), sm.max_threads_per_sm, sm.max_blocks_per_sm, sm.registers_per_sm,
              sm.shared_bytes_per_sm);
  std::printf("   threads  registers  shared bytes   blocks/SM  warps  occupancy  limited by\n");
  const BlockResources examples[] = {{256, 32, 0}, {256, 64, 0}, {128, 32, 48 * 1024}, {32, 32, 0},
                                     {96, 40, 0},  {64, 128, 0}, {1024, 72, 0}};
  for (const auto& b : examples) {
    const Occupancy occ = occupancy(b, sm);
    std::printf("   %7d  %9d  %12d   %9d  %5d  %8.1f%%  %s\n", b.threads, b.registers_per_thread, b.shared_bytes,
                occ.blocks_per_sm, occ.active_warps, 100.0 * occ.fraction(), occ.limited_by());
  }
}

#if FA2_STEP04_WITH_CUDA
void on_the_gpu() {
  const auto& gpu = fa2::cuda::gpu_status();
  if (!gpu.available) {
    std::printf("\nGPU: not run (%s)\n", gpu.reason.c_str());
    return;
  }
  std::printf("\nOn the GPU (%s):\n", gpu.name.c_str());
  std::printf("   write_own_index: %s\n", write_own_index_on_gpu(10, 4, 2) == write_own_index_on_host(10, 4, 2)
                                              ? "same as the host emulation"
                                              : "DIFFERENT from the host emulation");
  const auto places = warp_places_on_gpu(12, 5, 1);
  std::printf("   block (12, 5): thread (8, 2) has %%laneid %d, its warp starts at thread %d\n", places.lane[32],
              places.first_thread_of_warp[32]);
  std::printf("   gather_with_stride, 2^21 elements: useful bytes per second\n");
  for (const int stride : {1, 2, 4, 8, 16, 32}) {
    const double seconds = gather_seconds_on_gpu(1 << 21, stride);
    std::printf("     stride %2d: %7.1f GB/s (model: %2d sectors per warp)\n", stride,
                2.0 * 4.0 * (1 << 21) / seconds * 1e-9, sectors_for_strided_load(0, stride, 4));
  }
  std::printf("   shared-memory reads, 4096 per lane, clock cycles:");
  for (const int stride : {1, 2, 4, 8, 16, 32, 33})
    std::printf(" %d->%lld", stride, shared_read_cycles_on_gpu(stride, 4096));
  std::printf("\n   occupancy, the model and the CUDA runtime:\n");
  for (const auto probe :
       {OccupancyProbe::weighted_sum_plain_f32_16x64, OccupancyProbe::weighted_sum_plain_bf16_32x128}) {
    const KernelFacts facts = kernel_facts_on_gpu(probe);
    const int threads = probe == OccupancyProbe::weighted_sum_plain_f32_16x64 ? 16 : 32;
    const Occupancy model = model_occupancy_on_gpu(probe, threads, 0);
    std::printf("     %s: %d threads, %d registers, %d bytes: model %d blocks/SM (%.1f%%, %s), runtime %d\n",
                to_string(probe).c_str(), threads, facts.registers_per_thread, facts.static_shared_bytes,
                model.blocks_per_sm, 100.0 * model.fraction(), model.limited_by(),
                runtime_blocks_per_sm(probe, threads, 0));
  }
}
#endif

int demo() {
  std::printf(
      "A CUDA primer. The kernels run on the host emulation of CUDA: one std::thread per CUDA\n"
      "thread, a std::barrier for __syncthreads(), blocks one after another.\n\n");
  threads_and_blocks();
  warps();
  shared_memory_and_barrier();
  coalescing();
  banks();
  occupancy_table(sm90_limits());
#if FA2_STEP04_WITH_CUDA
  on_the_gpu();
#else
  std::printf("\nGPU: not built (configure with CUDA to compare the models with the hardware)\n");
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli("step04_cuda_primer",
                       "Step 4's CUDA primer: threads and blocks, warps, shared memory and __syncthreads(),\n"
                       "coalescing, banks and occupancy; each kernel run on the host emulation of CUDA (and on\n"
                       "the GPU when there is one) beside the hardware model's numbers.");
  return cli.run(argc, argv, demo);
}
