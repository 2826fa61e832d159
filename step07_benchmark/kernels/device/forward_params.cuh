// What every forward kernel (sm80/, sm90/) is given: its parameters (FastParams), and the twin of a
// configuration built for a sliding window.
#pragma once

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"  // elem16

namespace fa2::flash {

// A configuration's options (FastOptions, FastBwdOptions) with a sliding window: its tile ranges
// and masks would cost the default kernels registers they do not have, so every configuration is
// compiled twice and the launch picks the twin when the arguments have a window (Cfg::Windowed).
template <class Options>
constexpr Options windowed_twin(Options o) {
  o.window = true;
  return o;
}

struct PackedSequence;  // device/packed_schedule.hpp
struct PackedTile;

// The kernel's arguments, named as step05's FlashFwdParams names them (the head dim is
// contiguous here, so only batch and row strides are passed). Lengths are int: the fast kernel
// takes sequences shorter than 2^31, and 32-bit row arithmetic saves registers.
struct FastParams {
  const elem16* Q;
  const elem16* K;
  const elem16* V;
  elem16* O;
  float* L;
  index_t stride_qb, stride_qq;
  index_t stride_kb, stride_kk;
  index_t stride_vb, stride_vk;
  index_t stride_ob, stride_oq;
  index_t stride_lb, stride_lq;
  int N_QUERIES, N_KEYS;
  int kv_group;  // grouped-query attention: (batch, head) bh reads K and V at bh / kv_group
  // A sliding window (v5's twins built for it, Cfg::WINDOW): query q sees keys q - window_left ..
  // q + window_right. Without one, `windowed` is false and the bounds (N_QUERIES, N_KEYS) are
  // past every key.
  bool windowed;
  int window_left, window_right;
  int n_q_tiles;     // cdiv(N_QUERIES, BLOCK_M)
  int l2_heads;      // v6's L2 order (HopperOptions::l2_order): heads per group; set by its launch
  float scale_log2;  // softmax scale * log2(e): scores go straight into exp2
  // A packed batch (v6's packed twins, Cfg::PACKED; device/packed_schedule.hpp): where each
  // sequence's rows are, and the query tiles in the order the blocks take them. Q, K, V and O are
  // then (rows, heads, D), stride_?b the head stride and stride_?q the row stride; L is (heads,
  // rows); N_QUERIES, N_KEYS and the window's bounds are each item's sequence's (item_params), the
  // window's bottom-right aligned. Null and 0 in the dense kernels.
  const PackedSequence* sequences;
  const PackedTile* packed_tiles;
  int n_packed_tiles;
};

}  // namespace fa2::flash
