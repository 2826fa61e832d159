// tl.dot on the GPU, with WMMA (the warp-level tensor-core API): bf16 and fp16 operands use the
// 16x16x16 shape of their type, float32 operands the 16x16x8 TF32 shape; all accumulate in fp32.
// Each warp computes whole 16x16 blocks of the result; the block's fragments go through the
// DotStaging shared memory to reach the row layout the rest of the kernel uses.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "step03_tile_pointer/program_device.cuh"
#include "step05_fa2_kernel/tile_dot.hpp"

namespace fa2 {
namespace detail {

namespace wmma = nvcuda::wmma;

// The WMMA fragment types for an element type: bf16 -> (16x16x16, __nv_bfloat16), fp16 ->
// (16x16x16, __half), float -> (16x16x8, tf32).
template <class T>
struct Wmma;
template <class T, class CudaT>
struct Wmma16 {
  static constexpr int K = 16;
  using Input = CudaT;
  template <class Use, class Layout>
  using Fragment = wmma::fragment<Use, 16, 16, 16, CudaT, Layout>;
  static __device__ const Input* ptr(const T* p) { return reinterpret_cast<const Input*>(p); }
  template <class F>
  static __device__ void round(F&) {}
};
template <>
struct Wmma<bf16> : Wmma16<bf16, __nv_bfloat16> {};
template <>
struct Wmma<fp16> : Wmma16<fp16, __half> {};
template <>
struct Wmma<float> {
  static constexpr int K = 8;
  using Input = float;
  template <class Use, class Layout>
  using Fragment = wmma::fragment<Use, 16, 16, 8, wmma::precision::tf32, Layout>;
  static __device__ const Input* ptr(const float* p) { return p; }
  template <class F>
  static __device__ void round(F& f) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = wmma::__float_to_tf32(f.x[i]);
  }
};

template <class T>
using AccumulatorFor = wmma::fragment<wmma::accumulator, 16, 16, Wmma<T>::K, float>;

// acc += a b for one pair of fragments of TA. float32 operands under tf32x3 (InputPrecision): each
// split into big = tf32(x) and small = tf32(x - big) in place, then three products, the small
// terms first so that they are added while acc is still small; otherwise rounded to TF32 and one
// product. 16-bit operands: one product, exact.
template <class TA, class Acc, class FragA, class FragB>
__device__ void multiply_add(InputPrecision precision, Acc& acc, FragA& a, FragB& b) {
  if constexpr (std::is_same_v<TA, float>) {
    if (precision == InputPrecision::tf32x3) {
      FragA a_small;
      FragB b_small;
      for (int i = 0; i < a.num_elements; ++i) {
        const float big = wmma::__float_to_tf32(a.x[i]);
        a_small.x[i] = wmma::__float_to_tf32(a.x[i] - big);
        a.x[i] = big;
      }
      for (int i = 0; i < b.num_elements; ++i) {
        const float big = wmma::__float_to_tf32(b.x[i]);
        b_small.x[i] = wmma::__float_to_tf32(b.x[i] - big);
        b.x[i] = big;
      }
      wmma::mma_sync(acc, a_small, b, acc);
      wmma::mma_sync(acc, a, b_small, acc);
      wmma::mma_sync(acc, a, b, acc);
      return;
    }
  }
  Wmma<TA>::round(a);
  Wmma<TA>::round(b);
  wmma::mma_sync(acc, a, b, acc);
}

// Copies a row-major shared Tile into this thread's share of a register tile.
template <class T, class L, class TileT>
__device__ void read_fragment(int rank, const TileT& tile, Frag<T, L>& out) {
  FA2_UNROLL
  for (int i = 0; i < L::rows_per_thread; ++i) {
    FA2_UNROLL
    for (int j = 0; j < L::cols_per_thread; ++j) {
      if (L::owns(rank, i)) out.v[i][j] = tile.at(L::row(rank, i), L::col(rank, j));
    }
  }
}
template <class T, class L, class TileT>
__device__ void write_fragment(int rank, const Frag<T, L>& in, TileT& tile) {
  FA2_UNROLL
  for (int i = 0; i < L::rows_per_thread; ++i) {
    FA2_UNROLL
    for (int j = 0; j < L::cols_per_thread; ++j) {
      if (L::owns(rank, i)) tile.at(L::row(rank, i), L::col(rank, j)) = in.v[i][j];
    }
  }
}

}  // namespace detail

// S = A B^T, A (M, K) and B (N, K) row-major in shared memory.
template <int NT, class TA, class TB, int M, int N, int K, int PA, int PB, class T, int D>
__device__ Frag<float, RowLayout<M, N, NT>> dot_abt(const DeviceProgram<NT>& prog, const Tile<TA, Block<M, K>, PA>& A,
                                                    const Tile<TB, Block<N, K>, PB>& B, DotStaging<T, M, N, D>& stage) {
  check_dot_operands<TA, TB>();
  static_assert(M % 16 == 0 && N % 16 == 0 && K % 16 == 0, "tensor-core tiles are multiples of 16");
  using W = detail::Wmma<TA>;
  namespace wmma = detail::wmma;
  constexpr int blocks_n = N / 16;
  for (int blk = prog.warp_id(); blk < (M / 16) * blocks_n; blk += NT / 32) {
    const int bm = blk / blocks_n, bn = blk % blocks_n;
    detail::AccumulatorFor<TA> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += W::K) {
      typename W::template Fragment<wmma::matrix_a, wmma::row_major> a;
      typename W::template Fragment<wmma::matrix_b, wmma::col_major> b;  // B^T, read from row-major B
      wmma::load_matrix_sync(a, W::ptr(&A.at(bm * 16, k)), Tile<TA, Block<M, K>, PA>::ld);
      wmma::load_matrix_sync(b, W::ptr(&B.at(bn * 16, k)), Tile<TB, Block<N, K>, PB>::ld);
      detail::multiply_add<TA>(prog.input_precision(), acc, a, b);
    }
    wmma::store_matrix_sync(&stage.S.at(bm * 16, bn * 16), acc, decltype(stage.S)::ld, wmma::mem_row_major);
  }
  prog.sync();
  Frag<float, RowLayout<M, N, NT>> S;
  detail::read_fragment(prog.thread_rank(), stage.S, S);
  return S;
}

// acc + A B, A (M, K) in registers, B (K, N) row-major in shared memory.
template <int NT, class TA, class TB, int M, int K, int N, int PB, class T, int D>
__device__ Frag<float, RowLayout<M, N, NT>> dot(const DeviceProgram<NT>& prog, const Frag<TA, RowLayout<M, K, NT>>& A,
                                                const Tile<TB, Block<K, N>, PB>& B,
                                                const Frag<float, RowLayout<M, N, NT>>& acc,
                                                DotStaging<T, M, K, D>& stage) {
  check_dot_operands<TA, TB>();
  static_assert(!std::is_same_v<TA, TB> || (std::is_same_v<TA, T> && N == D),
                "the staging area was sized for another product");
  static_assert(M % 16 == 0 && N % 16 == 0 && K % 16 == 0, "tensor-core tiles are multiples of 16");
  using W = detail::Wmma<TA>;
  namespace wmma = detail::wmma;
  detail::write_fragment(prog.thread_rank(), A, stage.P);
  detail::write_fragment(prog.thread_rank(), acc, stage.O);
  prog.sync();
  constexpr int blocks_n = N / 16;
  for (int blk = prog.warp_id(); blk < (M / 16) * blocks_n; blk += NT / 32) {
    const int bm = blk / blocks_n, bn = blk % blocks_n;
    detail::AccumulatorFor<TA> c;
    wmma::load_matrix_sync(c, &stage.O.at(bm * 16, bn * 16), decltype(stage.O)::ld, wmma::mem_row_major);
    for (int k = 0; k < K; k += W::K) {
      typename W::template Fragment<wmma::matrix_a, wmma::row_major> a;
      typename W::template Fragment<wmma::matrix_b, wmma::row_major> b;
      wmma::load_matrix_sync(a, W::ptr(&stage.P.at(bm * 16, k)), decltype(stage.P)::ld);
      wmma::load_matrix_sync(b, W::ptr(&B.at(k, bn * 16)), Tile<TB, Block<K, N>, PB>::ld);
      detail::multiply_add<TA>(prog.input_precision(), c, a, b);
    }
    wmma::store_matrix_sync(&stage.O.at(bm * 16, bn * 16), c, decltype(stage.O)::ld, wmma::mem_row_major);
  }
  prog.sync();
  Frag<float, RowLayout<M, N, NT>> out;
  detail::read_fragment(prog.thread_rank(), stage.O, out);
  return out;
}

// acc + A^T B, A (M, K) in registers, B (M, N) row-major in shared memory, result (K, N). A is
// staged row-major and read as a column-major matrix_a: that is A^T, with no copy.
template <int NT, class TA, class TB, int M, int K, int N, int PB, class T>
__device__ Frag<float, RowLayout<K, N, NT>> dot_atb(const DeviceProgram<NT>& prog,
                                                    const Frag<TA, RowLayout<M, K, NT>>& A,
                                                    const Tile<TB, Block<M, N>, PB>& B,
                                                    const Frag<float, RowLayout<K, N, NT>>& acc,
                                                    DotAtbStaging<T, M, K, N>& stage) {
  check_dot_operands<TA, TB>();
  static_assert(std::is_same_v<TA, T>, "the staging area was made for another element type");
  static_assert(M % 16 == 0 && N % 16 == 0 && K % 16 == 0, "tensor-core tiles are multiples of 16");
  using W = detail::Wmma<TA>;
  namespace wmma = detail::wmma;
  detail::write_fragment(prog.thread_rank(), A, stage.A);
  detail::write_fragment(prog.thread_rank(), acc, stage.C);
  prog.sync();
  constexpr int blocks_n = N / 16;
  for (int blk = prog.warp_id(); blk < (K / 16) * blocks_n; blk += NT / 32) {
    const int bk = blk / blocks_n, bn = blk % blocks_n;
    detail::AccumulatorFor<TA> c;
    wmma::load_matrix_sync(c, &stage.C.at(bk * 16, bn * 16), decltype(stage.C)::ld, wmma::mem_row_major);
    for (int m = 0; m < M; m += W::K) {
      // Rows bk*16.. of A^T, columns m..: A's rows m.., columns bk*16.., read column-major.
      typename W::template Fragment<wmma::matrix_a, wmma::col_major> a;
      typename W::template Fragment<wmma::matrix_b, wmma::row_major> b;
      wmma::load_matrix_sync(a, W::ptr(&stage.A.at(m, bk * 16)), decltype(stage.A)::ld);
      wmma::load_matrix_sync(b, W::ptr(&B.at(m, bn * 16)), Tile<TB, Block<M, N>, PB>::ld);
      detail::multiply_add<TA>(prog.input_precision(), c, a, b);
    }
    wmma::store_matrix_sync(&stage.C.at(bk * 16, bn * 16), c, decltype(stage.C)::ld, wmma::mem_row_major);
  }
  prog.sync();
  Frag<float, RowLayout<K, N, NT>> out;
  detail::read_fragment(prog.thread_rank(), stage.C, out);
  return out;
}

}  // namespace fa2
