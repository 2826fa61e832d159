// The kernel's arguments and compile-time configuration, shared by step05's kernel, the
// buggy variants of step06 and the benchmark of step07.
#pragma once

#include <type_traits>

#include "common/bf16.hpp"
#include "common/numeric.hpp"

namespace fa2 {

// What the Triton launch passes: pointers, element strides, lengths and the softmax scale.
// Q, K, V, O are (batch, seq, head_dim); L is (batch, seq) in float32. K and V may have fewer
// batch elements than Q (grouped-query attention): query batch element b reads K and V at
// b / kv_group.
template <class T>
struct FlashFwdParams {
  const T* Q;
  const T* K;
  const T* V;
  T* O;
  float* L;
  index_t stride_qb, stride_qq, stride_qd;
  index_t stride_kb, stride_kk, stride_kd;
  index_t stride_vb, stride_vk, stride_vd;
  index_t stride_ob, stride_oq, stride_od;
  index_t stride_lb, stride_lq;
  index_t N_QUERIES, N_KEYS;
  index_t kv_group;  // query batch elements per K and V batch element: 1, or the group of GQA
  // The sliding window: query q sees keys q - window_left .. q + window_right (kernel_window in
  // common/window.hpp: without a window, 2^40, past every key, so the same code holds).
  index_t window_left, window_right;
  float scale;
  // How float32 products run (common/numeric.hpp): the program reads it (input_precision_of).
  InputPrecision input_precision = InputPrecision::tf32;
};

// The tl.constexpr arguments of the Triton kernel: element type, head dim, causal flag, tile
// sizes, and (a CUDA addition) the warps per program.
template <class T_, int D_, bool IS_CAUSAL, int Q_TILE_SIZE = 16, int K_TILE_SIZE = 16, int NUM_WARPS = 4>
struct FlashFwdConfig {
  using T = T_;
  static constexpr int D = D_;
  static constexpr bool is_causal = IS_CAUSAL;
  static constexpr int Q_TILE = Q_TILE_SIZE;
  static constexpr int K_TILE = K_TILE_SIZE;
  static constexpr int num_warps = NUM_WARPS;
  static_assert(std::is_same_v<T, float> || is_16_bit_float_v<T>,
                "the kernel takes float32, bfloat16 or float16 inputs");
  static_assert(D == 16 || D == 32 || D == 64 || D == 128, "head dims 16, 32, 64 and 128 are supported");
  static_assert(Q_TILE % 16 == 0 && K_TILE % 16 == 0 && is_power_of_two(Q_TILE) && is_power_of_two(K_TILE),
                "tiles are powers of two and multiples of 16 (the tensor cores' block size)");
  static_assert(NUM_WARPS >= 1 && is_power_of_two(NUM_WARPS), "a power-of-two number of warps");
};

}  // namespace fa2
