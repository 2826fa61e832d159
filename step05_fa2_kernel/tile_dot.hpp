// tl.dot for the kernel: the two matrix products of attention, on register and shared tiles.
//
//   S = dot_abt(prog, Q_i, K_j, stage)        Q_i (M, K) and K_j (N, K) in shared memory -> (M, N) fp32
//   O = dot(prog, P, V_j, acc, stage)          acc + P V; P (M, K) in registers, V_j (K, N) shared
//   dV = dot_atb(prog, P, dO_i, acc, stage)    acc + P^T dO; P (M, K) in registers, dO_i (M, N) shared
//                                              -> (K, N) fp32 (the backward's dV_j and dK_j)
//
// Like tl.dot, both operands must have one element type (float or bf16) and the result is
// accumulated in float32. float32 operands are rounded to TF32 first, which is what the
// tensor cores multiply (and what tl.dot does by default on Ampere and newer), so the host
// interpreter here computes the same products as the GPU version in tile_dot_device.cuh.
//
// On the GPU, tensor-core results live in warp-wide fragments whose layout differs from
// the row layout the softmax wants, so they travel through shared memory: DotStaging is that
// shared memory, and each product has barriers of its own (tile_dot_device.cuh). The host
// versions below compute the same values without the staging, and tell the host's race checks
// (step03's program.hpp) which warp reads which operand elements and where the barriers are, so
// that a kernel that reads a tile before the barrier after its load fails on the host too.
//
// The GPU versions come with this header when nvcc compiles it (end of file).
#pragma once

#include <type_traits>

#include "common/bf16.hpp"
#include "common/numeric.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile.hpp"

namespace fa2 {

// Shared-memory rows are padded by 8 elements: without it, a row of 64 bf16 (128 bytes) or
// 16/64 floats starts on the same banks as the rows above it, and the tensor cores' loads and
// the row-layout reads of the same column collide up to 8 ways (ncu counted 1.2e9 bank
// conflicts at N = 4096 before the padding). 8 bf16 shift each row by 16 bytes, 8 floats by
// 32: consecutive rows land on different banks.
inline constexpr int kSmemPad = 8;

template <class T, int M, int N, int D>
struct DotStaging {
  Tile<float, Block<M, N>, kSmemPad> S;  // scores on their way from the tensor cores to the registers
  Tile<T, Block<M, N>, kSmemPad> P;      // probabilities on their way to the tensor cores
  Tile<float, Block<M, D>, kSmemPad> O;  // the output accumulator, both ways
};

// The staging of dot_atb (the backward's A^T B): A on its way to the tensor cores, and the
// (K, N) accumulator both ways. Separate from DotStaging because its accumulator has the shape
// of the key tile (dK_j, dV_j), not of the query tile.
template <class T, int M, int K, int N>
struct DotAtbStaging {
  Tile<T, Block<M, K>, kSmemPad> A;      // P or dS, (M, K), read transposed by the tensor cores
  Tile<float, Block<K, N>, kSmemPad> C;  // the accumulator, (K, N)
};

template <class TA, class TB>
constexpr void check_dot_operands() {
  static_assert(std::is_same_v<TA, TB>,
                "dot: both operands must have the same element type (here they differ). Cast one with "
                ".to<T>() and keep the result, as tl.dot also requires");
  static_assert(std::is_same_v<TA, float> || is_16_bit_float_v<TA>, "dot: operands must be float, bf16 or fp16");
}

namespace detail {
// One product as the tensor cores compute it: bf16 and fp16 operands exactly; float32 operands
// rounded to TF32, or under tf32x3 split into TF32 parts, big*big + big*small + small*big (the GPU
// adds the three in another order: float32 rounding apart, the same numbers). Two type
// parameters, so that operands of two types reach check_dot_operands' message and no other error.
template <class TA, class TB>
inline float tensor_core_product(InputPrecision precision, TA a, TB b) {
  if constexpr (std::is_same_v<TA, float> && std::is_same_v<TB, float>) {
    const float a_big = round_to_tf32(a), b_big = round_to_tf32(b);
    if (precision == InputPrecision::tf32x3) {
      const float a_small = round_to_tf32(a - a_big), b_small = round_to_tf32(b - b_big);
      return a_small * b_big + a_big * b_small + a_big * b_big;
    }
    return a_big * b_big;
  } else {
    return static_cast<float>(a) * static_cast<float>(b);
  }
}
}  // namespace detail

// ---- host interpreter versions ------------------------------------------------------------------
namespace detail {
// The GPU's share-out of a product's operand reads: each 16 x 16 block (bm, bn) of the result
// is computed by warp (bm * blocks_n + bn) % warps, which reads rows bm*16.. of A (all of K)
// and, through `b_element`, the 16 columns bn*16.. of B. The first thread of the warp stands
// for the warp.
template <int M, int N, int K, class TileA, class TileB, class BElement>
void note_product_reads(const HostProgram& prog, const TileA* A, const TileB& B, BElement b_element) {
  const int warps = prog.simulated_threads() >= 32 ? prog.simulated_threads() / 32 : 1;
  constexpr int blocks_n = N / 16 > 0 ? N / 16 : 1;
  for (int bm = 0; bm * 16 < M; ++bm) {
    for (int bn = 0; bn < blocks_n; ++bn) {
      const int thread = ((bm * blocks_n + bn) % warps) * 32;
      for (int k = 0; k < K; ++k) {
        if (A != nullptr) {
          for (int m = bm * 16; m < bm * 16 + 16 && m < M; ++m) prog.note_read(thread, *A, &A->at(m, k));
        }
        for (int n = bn * 16; n < bn * 16 + 16 && n < N; ++n) prog.note_read(thread, B, b_element(n, k));
      }
    }
  }
}
}  // namespace detail

// S = A B^T. On the GPU: the warps read A and B, then one barrier before the scores are shared.
template <class TA, class TB, int M, int N, int K, int PA, int PB, class Stage>
Frag<float, RowLayout<M, N, 1>> dot_abt(const HostProgram& prog, const Tile<TA, Block<M, K>, PA>& A,
                                        const Tile<TB, Block<N, K>, PB>& B, Stage&) {
  check_dot_operands<TA, TB>();
  detail::note_product_reads<M, N, K>(prog, &A, B, [&](int n, int k) { return &B.at(n, k); });
  Frag<float, RowLayout<M, N, 1>> S;
  const InputPrecision precision = prog.input_precision();
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += detail::tensor_core_product(precision, A.at(m, k), B.at(n, k));
      S.v[m][n] = acc;
    }
  }
  prog.sync();
  return S;
}

// acc + A B. On the GPU: P and acc go to shared memory, a barrier, the warps read them and B,
// a barrier before the result is shared.
template <class TA, class TB, int M, int K, int N, int PB, class Stage>
Frag<float, RowLayout<M, N, 1>> dot(const HostProgram& prog, const Frag<TA, RowLayout<M, K, 1>>& A,
                                    const Tile<TB, Block<K, N>, PB>& B, const Frag<float, RowLayout<M, N, 1>>& acc,
                                    Stage&) {
  check_dot_operands<TA, TB>();
  prog.sync();
  detail::note_product_reads<M, N, K>(prog, static_cast<const Tile<TB, Block<K, N>, PB>*>(nullptr), B,
                                      [&](int n, int k) { return &B.at(k, n); });
  Frag<float, RowLayout<M, N, 1>> out;
  const InputPrecision precision = prog.input_precision();
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      float sum = 0.0f;
      for (int k = 0; k < K; ++k) sum += detail::tensor_core_product(precision, A.v[m][k], B.at(k, n));
      out.v[m][n] = acc.v[m][n] + sum;
    }
  }
  prog.sync();
  return out;
}

// acc + A^T B, the backward's dV_j += P^T dO_i and dK_j += dS^T Q_i: A (M, K) in registers,
// B (M, N) in shared memory, the result (K, N), summed over the M rows they share. On the GPU
// as dot: A and acc go to shared memory, a barrier, the warps read them and B, a barrier before
// the result is shared. Result block (bk, bn) is computed by one warp, which reads columns
// bn*16.. of every row of B.
template <class TA, class TB, int M, int K, int N, int PB, class Stage>
Frag<float, RowLayout<K, N, 1>> dot_atb(const HostProgram& prog, const Frag<TA, RowLayout<M, K, 1>>& A,
                                        const Tile<TB, Block<M, N>, PB>& B, const Frag<float, RowLayout<K, N, 1>>& acc,
                                        Stage&) {
  check_dot_operands<TA, TB>();
  prog.sync();
  detail::note_product_reads<K, N, M>(prog, static_cast<const Tile<TB, Block<M, N>, PB>*>(nullptr), B,
                                      [&](int n, int m) { return &B.at(m, n); });
  Frag<float, RowLayout<K, N, 1>> out;
  const InputPrecision precision = prog.input_precision();
  for (int row = 0; row < K; ++row) {
    for (int col = 0; col < N; ++col) {
      float A_t_B = 0.0f;  // column `row` of A against column `col` of B
      for (int m = 0; m < M; ++m) A_t_B += detail::tensor_core_product(precision, A.v[m][row], B.at(m, col));
      out.v[row][col] = acc.v[row][col] + A_t_B;
    }
  }
  prog.sync();
  return out;
}

}  // namespace fa2

#if defined(__CUDACC__)
#include "step05_fa2_kernel/tile_dot_device.cuh"  // the same products on the GPU's tensor cores
#endif
