// Host side of v6 (sm90/forward.cuh): when it can run (its checks, the GPU's compute capability),
// the TMA views its warp-specialised kernels read, and its tuned entry. Its kernels are in the
// generated translation units (instances/sm90.cuh), compiled for sm_90a alone when 90 is
// among the CUDA architectures; CMake then defines FA2_HOPPER_SM90A. Otherwise v6 refuses,
// naming the reason.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/packed_schedule.hpp"  // kRaggedSpan
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"

namespace fa2::flash {

std::string sm90_unavailable() {
#ifndef FA2_HOPPER_SM90A
  return "v6: this build has no sm_90a code (configure with 90 in CMAKE_CUDA_ARCHITECTURES)";
#else
  std::string why_not;
  const DeviceInfo* device = current_device_or(why_not);
  if (device == nullptr) return "v6: " + why_not;
  if (device->cc_major != 9 || device->cc_minor != 0) {
    return "v6: wgmma needs an sm_90 GPU (Hopper); this one is sm_" +
           std::to_string(10 * device->cc_major + device->cc_minor);
  }
  return {};
#endif
}

std::string sm90_forward_refusal_beyond_sm80(const FlashFwdArgs& a) {
  if (a.q_shape[2] != 64 && a.q_shape[2] != 128) return "head_dim: v6 takes 64 or 128";
  // The grid is (query tiles, batch) or, causal, (batch, query tiles): CUDA caps y at 65535.
  if (a.q_shape[0] > 65535) return "batch: v6 takes at most 65535 (batch x heads)";
  if (a.causal && cdiv<index_t>(a.q_shape[1], 128) > 65535) return "seq: causal v6 takes at most 65535 * 128 queries";
  // The warp-specialised kernels number their (query tile, head) items with an int.
  if (a.q_shape[0] * cdiv<index_t>(a.q_shape[1], 64) >= (index_t{1} << 31)) {
    return "batch x seq: v6 takes fewer than 2^31 query tiles of 64 rows";
  }
  return sm90_unavailable();
}

#ifdef FA2_HOPPER_SM90A
namespace {

// cuTensorMapEncodeTiled, from the driver the runtime has loaded (no link to libcuda: a machine
// without a driver still runs every host program of the project).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    FA2_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      throw std::runtime_error("v6: the CUDA driver does not offer cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

}  // namespace

namespace {

// A (batch, N, D) tensor of `type` (element_bytes each) with a contiguous head dim: dims (D, N,
// batch), innermost first, byte strides for rows and batches, boxes of box_cols x box_rows in the
// 128-byte swizzle.
CUtensorMap encode_tiles(const void* data, CUtensorMapDataType type, index_t element_bytes, index_t batch, index_t N,
                         index_t D, index_t row_stride, index_t batch_stride, int box_cols, int box_rows) {
  // With one batch element its stride is never used; give the map a well-formed one.
  const index_t batch_bytes =
      batch == 1 ? std::max<index_t>(N * row_stride, 16) * element_bytes : batch_stride * element_bytes;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(D), static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_stride * element_bytes),
                                 static_cast<cuuint64_t>(batch_bytes)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t steps[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(&map, type, 3, const_cast<void*>(data), dims, strides, box, steps,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("v6: cuTensorMapEncodeTiled failed, error " + std::to_string(r));
  return map;
}

}  // namespace

CUtensorMap tile_map(const void* data, index_t batch, index_t N, index_t D, index_t row_stride, index_t batch_stride,
                     int box_rows, bool float16) {
  return encode_tiles(data, float16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, batch, N,
                      D, row_stride, batch_stride, 64, box_rows);
}

namespace {

// A packed (rows, heads, D) tensor of `type` (element_bytes each) with a contiguous head dim, as
// five coordinates, innermost first: the head dim; kRaggedSpan rows counted back from a sequence's
// end; the end row (up to `rows`); the wrap, kRaggedSpan steps of 2^35 - row bytes each, which is
// minus kRaggedSpan rows modulo 2^64 (ptx/tma.cuh's tma_load_ragged gives the coordinates); the
// head. 2^35 bytes keeps the stride under TMA's 2^40 and a multiple of 16, as a row stride is
// here. Boxes of box_cols x box_rows of one head in the 128-byte swizzle.
CUtensorMap encode_ragged(const void* data, CUtensorMapDataType type, index_t element_bytes, index_t rows,
                          index_t heads, index_t D, index_t row_stride, index_t head_stride, int box_cols,
                          int box_rows) {
  const auto row_bytes = static_cast<cuuint64_t>(row_stride * element_bytes);
  const cuuint64_t dims[5] = {static_cast<cuuint64_t>(D), static_cast<cuuint64_t>(kRaggedSpan),
                              static_cast<cuuint64_t>(rows) + 1, static_cast<cuuint64_t>(kRaggedSpan) + 1,
                              static_cast<cuuint64_t>(heads)};
  const cuuint64_t strides[4] = {row_bytes, row_bytes, (cuuint64_t{1} << 35) - row_bytes,
                                 static_cast<cuuint64_t>(std::max<index_t>(head_stride * element_bytes, 16))};
  const cuuint32_t box[5] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1, 1, 1};
  const cuuint32_t steps[5] = {1, 1, 1, 1, 1};
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(&map, type, 5, const_cast<void*>(data), dims, strides, box, steps,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("v6 packed: cuTensorMapEncodeTiled failed for a ragged view, error " + std::to_string(r));
  }
  return map;
}

}  // namespace

CUtensorMap ragged_tile_map(const void* data, index_t rows, index_t heads, index_t D, index_t row_stride,
                            index_t head_stride, int box_rows, bool float16) {
  return encode_ragged(data, float16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, rows,
                       heads, D, row_stride, head_stride, 64, box_rows);
}

CUtensorMap ragged_accum_map(const float* data, index_t rows, index_t heads, index_t D, index_t row_stride,
                             index_t head_stride, int box_rows) {
  return encode_ragged(data, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, rows, heads, D, row_stride, head_stride, 32, box_rows);
}

CUtensorMap accum_tile_map(const float* data, index_t batch, index_t N, index_t D, index_t row_stride,
                           index_t batch_stride, int box_rows) {
  return encode_tiles(data, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, batch, N, D, row_stride, batch_stride, 32, box_rows);
}
#endif

}  // namespace fa2::flash
