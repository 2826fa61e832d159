// The GPU half of flash_bwd_test_support.hpp, for any backward with flash_bwd_cuda's signature
// (step05's, step07's fast one): the passes (O and L from the float64 reference forward, then the
// backward under test on the GPU), and the layout checks every GPU backward must pass: a head of a (B, N, H, D)
// tensor (row stride H * D, the other heads' elements left untouched) and batch strides past 2^31
// elements. Used by step05's test_flash_bwd_gpu.cu and step07's test_variants_gpu.cu.
#pragma once

#include <cstddef>
#include <limits>

#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support.hpp"
#include "step05_fa2_kernel/tests/flash_test_support_cuda.hpp"

namespace fa2::testing {

template <class T>
FlashPasses<T> gpu_passes(CudaBwdLaunchFn backward, bool deterministic = false, Window window = {}) {
  return {reference_forward<T>(window),
          [backward, deterministic, window](TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                            TensorView<const T, 3> V, TensorView<const T, 3> O,
                                            TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal) {
            return run_backward_with_device_tensors<T>(backward, Q, K, V, O, L, dO, causal, std::nullopt, deterministic,
                                                       window);
          }};
}

// Every tensor is head `head` of a (B, N, heads, D) bf16 (or float32 workspace) tensor: rows of
// heads * D elements, the view starting at element head * D. The other heads start as NaN and
// must stay so; the gradients must match the float64 reference. L and D_rows are strided too.
inline void check_backward_head_view(CudaBwdLaunchFn backward, bool causal, index_t D = 64) {
  const index_t B = 2, N_q = 45, N_k = 38, heads = 3, head = 1;
  Rng rng(fresh_seed());
  INFO("seed ", rng.seed(), " causal ", causal, " D ", D);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The whole (B, N, heads, D) storage, viewed as (B, N, D) at `head`.
  const auto whole = [&](index_t N, auto fill) {
    using E = decltype(fill);
    return Tensor<E, 3>::strided({B, N, heads * D}, {N * heads * D, heads * D, 1}, fill);
  };
  const auto head_of = [&]<class E>(Tensor<E, 3>& t) {
    return TensorView<E, 3>(t.storage().data() + head * D, {t.shape()[0], t.shape()[1], D}, t.strides());
  };
  const auto random_whole = [&](index_t N) {
    auto t = whole(N, bf16(0.0f));
    fill_normal<bf16, 3>(t.view(), rng);
    return t;
  };
  auto Q = random_whole(N_q), K = random_whole(N_k), V = random_whole(N_k), dO = random_whole(N_q);
  const auto q = head_of(Q), k = head_of(K), v = head_of(V), dout = head_of(dO);
  const auto fwd = flash_attention_cuda<bf16>(q, k, v, causal);
  auto O = whole(N_q, bf16(nan));
  copy_convert<bf16, bf16, 3>(fwd.O.cview(), head_of(O));
  auto L = Tensor<float, 2>::strided({B, N_q}, {2 * N_q, 2}, nan);
  copy_convert<float, float, 2>(fwd.L.cview(), L.view());
  auto dQ = whole(N_q, bf16(nan)), dK = whole(N_k, bf16(nan)), dV = whole(N_k, bf16(nan));
  auto dQ_accum = whole(N_q, nan);
  auto D_rows = Tensor<float, 2>::strided({B, N_q}, {2 * N_q, 2}, nan);

  cuda::DeviceTensor<bf16, 3> dev_Q(Q), dev_K(K), dev_V(V), dev_O(O), dev_dO(dO);
  const cuda::DeviceTensor<float, 2> dev_L(L);
  cuda::DeviceTensor<bf16, 3> dev_dQ(dQ), dev_dK(dK), dev_dV(dV);
  cuda::DeviceTensor<float, 3> dev_dQ_accum(dQ_accum);
  cuda::DeviceTensor<float, 2> dev_D_rows(D_rows);
  const auto dev_head = [&]<class E>(cuda::DeviceTensor<E, 3>& t, index_t N) {
    return TensorView<E, 3>(t.data() + head * D, {B, N, D}, t.view().strides());
  };
  backward(
      make_flash_bwd_args<bf16>(dev_head(dev_Q, N_q), dev_head(dev_K, N_k), dev_head(dev_V, N_k), dev_head(dev_O, N_q),
                                dev_L.view(), dev_head(dev_dO, N_q), dev_D_rows.view(), dev_head(dev_dQ, N_q),
                                dev_head(dev_dQ_accum, N_q), dev_head(dev_dK, N_k), dev_head(dev_dV, N_k), causal),
      nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  dev_dQ.download_to(dQ);
  dev_dK.download_to(dK);
  dev_dV.download_to(dV);
  dev_dQ_accum.download_to(dQ_accum);
  dev_D_rows.download_to(D_rows);

  FlashGradients<bf16> g{Tensor<bf16, 3>({B, N_q, D}), Tensor<bf16, 3>({B, N_k, D}), Tensor<bf16, 3>({B, N_k, D})};
  copy_convert<bf16, bf16, 3>(head_of(dQ), g.dQ.view());
  copy_convert<bf16, bf16, 3>(head_of(dK), g.dK.view());
  copy_convert<bf16, bf16, 3>(head_of(dV), g.dV.view());
  require_close(
      compare_gradients<bf16>(g, reference_attention_backward<bf16>(q, k, v, dout, causal), "head 1 of (B, N, 3, D)"));
  CHECK(written_outside(dQ.storage(), heads * D, head * D, D) == 0);
  CHECK(written_outside(dK.storage(), heads * D, head * D, D) == 0);
  CHECK(written_outside(dV.storage(), heads * D, head * D, D) == 0);
  CHECK(written_outside(dQ_accum.storage(), heads * D, head * D, D) == 0);
  CHECK(written_outside(D_rows.storage(), 2, 0, 1) == 0);
}

// Batch element 1 of every tensor starts 8 GiB + 256 bytes after its element 0: 2^31 + 64
// float32 elements, 2^32 + 128 bf16 elements, so a 32-bit offset would wrap. Rather than one
// such buffer per tensor, the eleven tensors share one arena: batch element b of tensor t lives
// at byte b * batch_bytes + t * slot_bytes. Skipped (marked) without ~9.6 GB of free memory.
inline void check_backward_batch_stride_past_2_31(CudaBwdLaunchFn backward, bool causal) {
  const index_t B = 2, N_q = 64, N_k = 48, D = 64;
  constexpr std::size_t batch_bytes = ((std::size_t{1} << 31) + 64) * sizeof(float);
  const std::size_t slot_bytes = static_cast<std::size_t>(N_q * D) * sizeof(float);  // the largest per-batch tensor
  constexpr int slots = 11;
  const std::size_t arena_bytes = batch_bytes + slots * slot_bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  FA2_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < arena_bytes + (std::size_t{1} << 30)) {
    mark_skipped("needs ~9.6 GB of free GPU memory");
    return;
  }
  cuda::DeviceBuffer<std::byte> arena(arena_bytes);
  int next_slot = 0;
  // A (B, N, ...) view of the next slot, with the arena's batch stride, and its host twin's
  // batches copied in.
  const auto place = [&]<class E, int Rank>(const Tensor<E, Rank>& host) {
    std::byte* const at = arena.data() + static_cast<std::size_t>(next_slot++) * slot_bytes;
    Extents<Rank> strides = contiguous_strides<Rank>(host.shape());
    strides[0] = static_cast<index_t>(batch_bytes / sizeof(E));
    const std::size_t per_batch = static_cast<std::size_t>(host.numel() / B) * sizeof(E);
    for (index_t b = 0; b < B; ++b) {
      FA2_CUDA_CHECK(cudaMemcpy(at + static_cast<std::size_t>(b) * batch_bytes,
                                host.storage().data() + static_cast<std::size_t>(b * host.strides()[0]), per_batch,
                                cudaMemcpyHostToDevice));
    }
    return TensorView<E, Rank>(reinterpret_cast<E*>(at), host.shape(), strides);
  };
  const auto fetch = [&]<class E, int Rank>(TensorView<E, Rank> dev, Tensor<E, Rank>& host) {
    const std::size_t per_batch = static_cast<std::size_t>(host.numel() / B) * sizeof(E);
    for (index_t b = 0; b < B; ++b) {
      FA2_CUDA_CHECK(
          cudaMemcpy(host.storage().data() + static_cast<std::size_t>(b * host.strides()[0]),
                     reinterpret_cast<const std::byte*>(dev.data()) + static_cast<std::size_t>(b) * batch_bytes,
                     per_batch, cudaMemcpyDeviceToHost));
    }
  };

  Rng rng(fresh_seed());
  INFO("seed ", rng.seed(), " causal ", causal);
  const BwdInputs<bf16> in(FlashShape{B, N_q, N_k, D}, rng);
  const auto fwd = flash_attention_cuda<bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
  auto grads = poisoned_gradients<bf16>(in.Q.shape(), in.K.shape());
  auto work = poisoned_workspace(in.Q.shape());
  const auto Q = place(in.Q), K = place(in.K), V = place(in.V), O = place(fwd.O), dO = place(in.dO);
  const auto L = place(fwd.L), D_rows = place(work.D_rows);
  const auto dQ_accum = place(work.dQ_accum);
  const auto dQ = place(grads.dQ), dK = place(grads.dK), dV = place(grads.dV);
  REQUIRE(next_slot == slots);
  backward(make_flash_bwd_args<bf16>(Q, K, V, O, L, dO, D_rows, dQ, dQ_accum, dK, dV, causal), nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  fetch(dQ, grads.dQ);
  fetch(dK, grads.dK);
  fetch(dV, grads.dV);

  require_close(compare_gradients<bf16>(
      grads, reference_attention_backward<bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), in.dO.cview(), causal),
      "batch stride 2^31 + 64"));
}

}  // namespace fa2::testing
