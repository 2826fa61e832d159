// The backward's test matrix, shared by the host suite (test_flash_bwd_host.cpp) and the GPU
// suite (test_flash_bwd_gpu.cu): fresh random inputs, O and L from the float64 reference forward
// (rounded as a forward would store them), the backward under test, and dQ, dK, dV against the
// float64 reference (common/reference_backward.hpp). The backward is tested on its own: a bug in
// a forward kernel cannot fail it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/reference_backward.hpp"
#include "common/testing.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

namespace fa2::testing {

// Whether two tensors of one shape hold the same bits, element for element (their storage
// compared byte for byte): the check of every "same bits on every run" test.
template <class T>
bool same_bits(const Tensor<T, 3>& x, const Tensor<T, 3>& y) {
  return std::memcmp(x.storage().data(), y.storage().data(), x.storage().size() * sizeof(T)) == 0;
}

template <class T>
using FlashBwdRunner = std::function<FlashGradients<T>(
    TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, TensorView<const T, 3> O,
    TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal)>;

// A forward that gives O and L, and the backward under test, on the host or on the GPU
// (gpu_passes in flash_bwd_test_support_cuda.hpp).
template <class T>
struct FlashPasses {
  FlashRunner<T> forward;
  FlashBwdRunner<T> backward;
};

// O and L as a forward stores them, from the float64 reference: O rounded to T, L to float32.
template <class T>
FlashOutputs<T> reference_outputs(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                  bool causal, std::optional<double> scale = std::nullopt, Window window = {}) {
  const auto ref = reference_attention_gqa<T>(Q, K, V, causal, scale, window);
  FlashOutputs<T> out{Tensor<T, 3>(ref.O.shape()), Tensor<float, 2>(ref.L.shape())};
  copy_convert<T, double, 3>(ref.O.cview(), out.O.view());
  copy_convert<float, double, 2>(ref.L.cview(), out.L.view());
  return out;
}

template <class T>
FlashRunner<T> reference_forward(Window window = {}) {
  return [window](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, bool causal) {
    return reference_outputs<T>(Q, K, V, causal, std::nullopt, window);
  };
}

template <class T>
FlashPasses<T> host_passes(Window window = {}) {
  return {reference_forward<T>(window),
          [window](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                   TensorView<const T, 3> O, TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal) {
            return flash_attention_backward_host<T>(Q, K, V, O, L, dO, causal, std::nullopt, false, window);
          }};
}

// Tolerances of a gradient: atol = atol_of_scale * scale and rtol, per dtype, where `scale` is
// the largest entry of the three reference gradients (gradient_scale). Why not each gradient's
// own largest entry: an entry of dQ or dK is a sum of terms P * (dP - D_i) * K (or * Q) in which
// dP and D_i nearly cancel, so an entry, even a whole gradient, can be far smaller than the terms
// it is made of, and its rounding error follows the terms. With a single key, for instance,
// dQ = dK = 0 exactly, yet dP and D_i are each of the size of dO * V. The three gradients share
// that size (dV = P^T dO has no cancellation).
//  - float32: 1e-2. The products run in TF32, as tl.dot's default: each operand keeps 11
//    significant bits (2^-11 relative), and a gradient goes through two products in a row
//    (S, then dS K), so errors of a few 2^-11 of the largest terms are expected.
//  - bfloat16: 3e-2. The inputs are exact in bf16, but P and dS are rounded to bf16 (2^-9)
//    before their products, O was rounded to bf16 by the forward and enters every dS through
//    D_i, and the gradients themselves are rounded to bf16 at the end.
//  - float16: 1e-2, as float32: the same roundings as bfloat16's, each up to 2^-11 relative (11
//    significant bits), the size of TF32's.
// rtol (1e-2, 2e-2) adds room for the largest entries. Worst errors seen over the whole matrix
// (2026-11-30), as a fraction of the scale: float32 1.7e-3 on the host, 9e-4 on an H200;
// bfloat16 4.8e-3 and 4.5e-3. A wrong formula (dS without D_i, a missing scale, dQ not summed
// over key tiles) is off by a tenth of the scale or more. FA2_MEASURE=1 in the environment
// prints each comparison's worst errors as such fractions: that is how these were measured.
// The GPU adds the key tiles' shares of dQ with float32 atomics in an order that changes from
// run to run; that reorders float32 additions (2^-24 each), far below the TF32 and bf16 budgets,
// so the same tolerances hold there (two runs differ by ~2e-7 of the scale).
struct GradientTolerance {
  double atol_of_scale;
  double rtol;
};

template <class T>
constexpr GradientTolerance gradient_tolerance() {
  return std::is_same_v<T, bf16> ? GradientTolerance{3e-2, 2e-2} : GradientTolerance{1e-2, 1e-2};
}

inline double max_abs(TensorView<const double, 3> t) {
  double m = 0.0;
  for_each_index<3>(t.shape(), [&](const Extents<3>& i) { m = std::max(m, std::fabs(t.at(i))); });
  return m;
}

inline double gradient_scale(const AttentionGradients& ref) {
  return std::max({max_abs(ref.dQ.cview()), max_abs(ref.dK.cview()), max_abs(ref.dV.cview())});
}

struct BwdCheck {
  CloseReport dQ, dK, dV;
  bool ok() const { return dQ.ok && dK.ok && dV.ok; }
};

// dQ, dK, dV against the expected gradients (the reference, or another path's in float64).
template <class T>
BwdCheck compare_gradients(const FlashGradients<T>& actual, const AttentionGradients& expected,
                           const std::string& where, GradientTolerance tol = gradient_tolerance<T>()) {
  const Tolerance t{tol.atol_of_scale * gradient_scale(expected), tol.rtol};
  BwdCheck c{compare_close(actual.dQ.cview(), expected.dQ.cview(), t, where + ": dQ"),
             compare_close(actual.dK.cview(), expected.dK.cview(), t, where + ": dK"),
             compare_close(actual.dV.cview(), expected.dV.cview(), t, where + ": dV")};
  if (std::getenv("FA2_MEASURE") != nullptr) {  // the worst errors as fractions of the scale
    const double s = gradient_scale(expected);
    std::fprintf(stderr, "FA2_MEASURE %s: dQ %.2g dK %.2g dV %.2g of scale %.3g\n", where.c_str(),
                 c.dQ.max_abs_error / s, c.dK.max_abs_error / s, c.dV.max_abs_error / s, s);
  }
  return c;
}

// Widens gradients to float64, to compare two kernel paths with compare_gradients.
template <class T>
AttentionGradients widened(const FlashGradients<T>& g) {
  return {converted<double, T, 3>(g.dQ.cview()), converted<double, T, 3>(g.dK.cview()),
          converted<double, T, 3>(g.dV.cview())};
}

// The float64 reference gradients; with fewer batch elements in K and V than in Q (grouped-query
// attention), those of K and V repeated over the group (repeat_kv), then dK and dV summed over
// the copies of each element: every query head of a group adds to its kv head's gradients.
template <class T>
AttentionGradients reference_gradients_gqa(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                           TensorView<const T, 3> dO, bool causal,
                                           std::optional<double> scale = std::nullopt, Window window = {}) {
  const index_t group = Q.shape()[0] / K.shape()[0];
  if (group == 1) return reference_attention_backward<T>(Q, K, V, dO, causal, scale, window);
  const auto K_all = repeat_kv<T>(K, group), V_all = repeat_kv<T>(V, group);
  auto all = reference_attention_backward<T>(Q, K_all.cview(), V_all.cview(), dO, causal, scale, window);
  const auto summed = [&](const Tensor<double, 3>& g) {
    Tensor<double, 3> out(K.shape(), 0.0);
    const auto o = out.view();
    const auto in = g.cview();
    for_each_index<3>(in.shape(), [&](const Extents<3>& i) { o.at({i[0] / group, i[1], i[2]}) += in.at(i); });
    return out;
  };
  return {std::move(all.dQ), summed(all.dK), summed(all.dV)};
}

// Q, K, V, dO drawn from N(0, 1) (K and V with B / group batch elements); Q and K multiplied by qk_scale, which
// multiplies the scores by its square (qk_scale = 5 with 1/sqrt(D) scaling gives scores of about +-25).
template <class T>
struct BwdInputs {
  Tensor<T, 3> Q, K, V, dO;
  BwdInputs(const FlashShape& s, Rng& rng, double qk_scale = 1.0)
      : Q(random_normal<T, 3>({s.B, s.N_q, s.D}, rng, 0.0, qk_scale)),
        K(random_normal<T, 3>({s.B_kv(), s.N_k, s.D}, rng, 0.0, qk_scale)),
        V(random_normal<T, 3>({s.B_kv(), s.N_k, s.D}, rng)),
        dO(random_normal<T, 3>({s.B, s.N_q, s.D}, rng)) {}
};

// The passes' gradients on `in`: the forward gives O and L, the backward dQ, dK, dV from them.
template <class T>
auto backward_of(const FlashPasses<T>& passes, const BwdInputs<T>& in, bool causal) {
  const auto fwd = passes.forward(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
  return passes.backward(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(), fwd.L.cview(), in.dO.cview(), causal);
}

// Each gradient compared with the reference. With a window, the passes must apply it too
// (host_passes(window), gpu_passes(..., window)).
template <class T>
BwdCheck check_backward(const FlashPasses<T>& passes, const BwdInputs<T>& in, bool causal, const std::string& where,
                        GradientTolerance tol = gradient_tolerance<T>(), Window window = {}) {
  return compare_gradients<T>(
      backward_of<T>(passes, in, causal),
      reference_gradients_gqa<T>(in.Q.cview(), in.K.cview(), in.V.cview(), in.dO.cview(), causal, std::nullopt, window),
      where, tol);
}

// One problem: fresh inputs of `shape`, their float64 gradients and where they came from (the seed
// is in every message). The reference costs far more than a kernel: a test that checks several
// backwards on one shape solves it once and compares each with check_solved_backward.
template <class T>
struct SolvedBwdProblem {
  BwdInputs<T> in;
  AttentionGradients reference;
  std::string where;
};

template <class T>
SolvedBwdProblem<T> solve_backward_problem(const FlashShape& shape, bool causal, double qk_scale = 1.0,
                                           Window window = {}) {
  Rng rng(fresh_seed());
  BwdInputs<T> in(shape, rng, qk_scale);
  AttentionGradients reference =
      reference_gradients_gqa<T>(in.Q.cview(), in.K.cview(), in.V.cview(), in.dO.cview(), causal, std::nullopt, window);
  std::string where = std::string(dtype_name<T>()) + " " + shape.name() + (causal ? " causal" : " non-causal") +
                      window_name(window) + " seed " + std::to_string(rng.seed());
  return {std::move(in), std::move(reference), std::move(where)};
}

// The passes' gradients on a solved problem against its reference.
template <class T>
BwdCheck check_solved_backward(const FlashPasses<T>& passes, const SolvedBwdProblem<T>& p, bool causal,
                               GradientTolerance tol = gradient_tolerance<T>()) {
  return compare_gradients<T>(backward_of<T>(passes, p.in, causal), p.reference, p.where, tol);
}

// Runs the passes on fresh inputs of `shape` and compares.
template <class T>
BwdCheck run_backward_and_compare(const FlashPasses<T>& passes, const FlashShape& shape, bool causal,
                                  double qk_scale = 1.0, GradientTolerance tol = gradient_tolerance<T>(),
                                  Window window = {}) {
  return check_solved_backward<T>(passes, solve_backward_problem<T>(shape, causal, qk_scale, window), causal, tol);
}

// Scores of about +-25 (Q and K of standard deviation 5): P is close to one-hot, and its errors
// grow with the scores. In float32 the TF32 operands of S = Q K^T are rounded to 2^-11, so a
// score of 25 moves by ~1e-2 and P = exp(S - L) by ~1% against the exact reference. In both dtypes
// dP - D_i cancels almost completely in a one-hot row (O is nearly the one V row that dP uses),
// so the rounding of O, P and dS weighs more than with spread-out rows. Seen (2026-11-30, 25 runs
// on the host, one on an H200): 1.9e-2 of the scale in float32, 1.4e-2 in bf16.
inline constexpr GradientTolerance kLargeScoreTolerance{6e-2, 2e-2};

// The backward's counterpart of skips_unseen_key_tiles: a key tile must skip the query tiles whose
// windows miss all of its keys. With window (0, 0) over N queries and keys, key k is seen by query
// k alone, so NaN in Q and dO from query `first_unseen` on (a multiple of every kernel's tiles)
// must leave dK and dV of the keys before it, and dQ of the queries before it, finite: a key tile
// that computed a NaN query tile would multiply its masked weights, 0, by NaN in dS. O and L are
// the reference's on the clean inputs. Returns whether every such row is finite.
template <class T>
bool skips_unseen_query_tiles(const FlashBwdRunner<T>& backward, index_t N, index_t D, index_t first_unseen) {
  Rng rng(fresh_seed());
  const FlashShape shape{2, N, N, D};
  BwdInputs<T> in(shape, rng);
  const Window window{0, 0};
  const auto fwd = reference_outputs<T>(in.Q.cview(), in.K.cview(), in.V.cview(), false, std::nullopt, window);
  const T nan = convert<T>(std::numeric_limits<float>::quiet_NaN());
  for_each_index<3>(in.Q.shape(), [&](const Extents<3>& i) {
    if (i[1] >= first_unseen) in.Q.view().at(i) = in.dO.view().at(i) = nan;
  });
  const auto g = backward(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(), fwd.L.cview(), in.dO.cview(), false);
  bool finite = true;
  for (const Tensor<T, 3>* t : {&g.dQ, &g.dK, &g.dV}) {
    for_each_index<3>(t->shape(), [&](const Extents<3>& i) {
      if (i[1] < first_unseen && !std::isfinite(convert<double>(t->cview().at(i)))) finite = false;
    });
  }
  return finite;
}

inline void require_close(const BwdCheck& c) {
  CHECK_MESSAGE(c.dQ.ok, c.dQ.summary());
  CHECK_MESSAGE(c.dK.ok, c.dK.summary());
  CHECK_MESSAGE(c.dV.ok, c.dV.summary());
}

// float32 with allow_tf32 = false (3xTF32 products), `precise`, against the same backward in TF32,
// `tf32` (both fed O and L of the float64 reference):
//  - spread-out rows: the gradients within kFloat32GradientTolerance of the float64 reference,
//    which TF32 misses (its errors are ~1e-3 of the scale);
//  - one key: P = 1, so dS = P (dP - D_i) is 0 and so are the exact dQ and dK; what a kernel
//    returns is its rounding of dP = dO V^T against D_i = rowsum(dO * O), which TF32 makes
//    ~1e-3 of the scale and 3xTF32 ~1e-7.
inline constexpr GradientTolerance kFloat32GradientTolerance{5e-5, 5e-5};

inline void check_float32_gradients(const FlashBwdRunner<float>& precise, const FlashBwdRunner<float>& tf32) {
  const auto forward = reference_forward<float>();
  for (const FlashShape shape : {FlashShape{2, 100, 100, 64}, {1, 37, 53, 32}, {1, 200, 96, 128}}) {
    for (bool causal : {false, true}) {
      require_close(run_backward_and_compare<float>({forward, precise}, shape, causal, 1.0, kFloat32GradientTolerance));
    }
  }
  CHECK_FALSE(
      run_backward_and_compare<float>({forward, tf32}, {2, 100, 100, 64}, false, 1.0, kFloat32GradientTolerance).ok());

  Rng rng(fresh_seed());
  INFO("one key, seed ", rng.seed());
  const BwdInputs<float> in(FlashShape{2, 40, 1, 64}, rng);
  const auto fwd = forward(in.Q.cview(), in.K.cview(), in.V.cview(), false);
  const auto largest_dQ = [&](const FlashBwdRunner<float>& run) {
    const auto g = run(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(), fwd.L.cview(), in.dO.cview(), false);
    double m = 0.0;
    for (const float x : g.dQ.storage()) m = std::max(m, std::fabs(static_cast<double>(x)));
    return m;
  };
  const auto ref = reference_attention_backward<float>(in.Q.cview(), in.K.cview(), in.V.cview(), in.dO.cview(), false);
  const double scale = gradient_scale(ref);  // dV's: dQ and dK are 0
  const double precise_dQ = largest_dQ(precise) / scale, tf32_dQ = largest_dQ(tf32) / scale;
  if (std::getenv("FA2_MEASURE") != nullptr) {
    std::fprintf(stderr, "FA2_MEASURE one key: largest |dQ| 3xTF32 %.2g, TF32 %.2g of scale %.3g\n", precise_dQ,
                 tf32_dQ, scale);
  }
  CHECK(precise_dQ <= 1e-5);
  CHECK(tf32_dQ > 10 * precise_dQ);
}

// The article's shapes, causal and not: causal also where N_q != N_k (top-left mask), unlike the
// forward's matrix, because the backward's skipping of query tiles depends on it.
template <class T>
void check_backward_matrix(const FlashPasses<T>& passes) {
  for (const auto& shape : article_shapes()) {
    for (bool causal : {false, true}) require_close(run_backward_and_compare<T>(passes, shape, causal));
  }
}

}  // namespace fa2::testing
