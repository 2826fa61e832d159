// The test matrix shared by step05's host and GPU suites and by step06: the article's shapes,
// the tolerances per dtype, and one function that runs a kernel on fresh random inputs and
// checks O and L against the float64 reference.
#pragma once

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/testing.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

TYPE_TO_STRING(fa2::bf16);

namespace fa2::testing {

// B is Q's batch; K and V have B / group batch elements (grouped-query attention when group > 1).
struct FlashShape {
  index_t B, N_q, N_k, D;
  index_t group = 1;
  std::string name() const {
    return "(" + std::to_string(B) + " " + std::to_string(N_q) + " " + std::to_string(N_k) + " " + std::to_string(D) +
           ")" + (group > 1 ? " group " + std::to_string(group) : "");
  }
  index_t B_kv() const { return B / group; }
};

// Grouped-query attention, written out for the references: K or V with each batch element
// repeated `group` times in a row, so that batch element b of Q meets element b / group of the
// original (what PyTorch's scaled_dot_product_attention does with enable_gqa=True).
template <class T>
Tensor<T, 3> repeat_kv(TensorView<const T, 3> t, index_t group) {
  Tensor<T, 3> out(Extents<3>{t.shape()[0] * group, t.shape()[1], t.shape()[2]});
  const auto o = out.view();
  for_each_index<3>(o.shape(), [&](const Extents<3>& i) { o.at(i) = t.at({i[0] / group, i[1], i[2]}); });
  return out;
}

// The float64 reference forward, K and V repeated over the group when they have fewer batch
// elements than Q.
template <class T>
AttentionReference reference_attention_gqa(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                           bool causal, std::optional<double> scale = std::nullopt,
                                           Window window = {}) {
  const index_t group = Q.shape()[0] / K.shape()[0];
  if (group == 1) return reference_attention<T>(Q, K, V, causal, scale, window);
  const auto K_all = repeat_kv<T>(K, group), V_all = repeat_kv<T>(V, group);
  return reference_attention<T>(Q, K_all.cview(), V_all.cview(), causal, scale, window);
}

// The shapes of the article's test file: the assignment's shape, a long one, ragged last
// tiles on both axes, ragged and non-square, and a head dim of 128.
inline const std::vector<FlashShape>& article_shapes() {
  static const std::vector<FlashShape> shapes = {
      {4, 128, 128, 64}, {2, 1024, 1024, 64}, {2, 100, 100, 64}, {1, 37, 53, 32}, {1, 200, 96, 128}};
  return shapes;
}

// Tolerances (atol = rtol), the article's:
//  - float32: 1e-2, because the products run in TF32 (10 mantissa bits, relative rounding
//    2^-11 per operand), like tl.dot's default; measured errors are ~1e-3.
//  - bfloat16: 2e-2, because the inputs, P before the second product and O itself are
//    rounded to 8 significant bits (2^-9 relative); measured errors are ~5e-3.
//  - float16: 1e-2, as float32: its 11 significant bits round P and O by up to 2^-11 relative, what
//    TF32 does to float32's operands; the inputs are exact.
template <class T>
constexpr Tolerance flash_tolerance() {
  return std::is_same_v<T, bf16> ? Tolerance{2e-2, 2e-2} : Tolerance{1e-2, 1e-2};
}

template <class T>
using FlashRunner =
    std::function<FlashOutputs<T>(TensorView<const T, 3>, TensorView<const T, 3>, TensorView<const T, 3>, bool)>;

// Runs any launcher with flash_fwd_host's signature on host tensors (step05, step06's
// variants, step07's ladder). The GPU twin is gpu_runner in flash_test_support_cuda.hpp.
template <class T>
FlashRunner<T> host_runner(HostLaunchFn launch) {
  return [launch](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, bool causal) {
    return run_with_host_tensors<T>(launch, Q, K, V, causal);
  };
}

// A launcher with flash_fwd_host's signature run with a sliding window.
template <class T>
FlashRunner<T> window_runner(HostLaunchFn launch, Window window) {
  return [launch, window](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, bool causal) {
    return run_with_host_tensors<T>(launch, Q, K, V, causal, std::nullopt, window);
  };
}

// " window (left, right)" for messages, empty without one.
inline std::string window_name(Window w) {
  return w.bounded() ? " window (" + std::to_string(w.left) + ", " + std::to_string(w.right) + ")" : "";
}

// The windows the tests run: each side alone, both, zero on both sides (each query sees its own
// key only), one key to the left, and a bound past every key.
inline const std::vector<Window>& test_windows() {
  static const std::vector<Window> windows = {{16, -1}, {-1, 7}, {3, 20}, {0, 0}, {1, 0}, {40, 40}, {5000, -1}};
  return windows;
}

// Key tiles wholly outside every query's window must be skipped, not loaded and masked: with
// queries 0 .. N_q - 1 and window (0, 0), no query sees a key from N_q on, so NaN in K and V
// there (from `first_unseen` on, rounded up to a whole tile of any kernel here) must leave O and L
// as they were. A kernel that computed such a tile would multiply its masked weights, 0, by NaN.
// Returns whether `run` gives the same bits with and without the NaN.
template <class T>
bool skips_unseen_key_tiles(const FlashRunner<T>& run, index_t N_q, index_t N_k, index_t D, index_t first_unseen) {
  Rng rng(fresh_seed());
  const auto Q = random_normal<T, 3>({2, N_q, D}, rng);
  const auto K = random_normal<T, 3>({2, N_k, D}, rng), V = random_normal<T, 3>({2, N_k, D}, rng);
  auto K_nan = Tensor<T, 3>(K.shape()), V_nan = Tensor<T, 3>(V.shape());
  copy_convert<T, T, 3>(K.cview(), K_nan.view());
  copy_convert<T, T, 3>(V.cview(), V_nan.view());
  const T nan = convert<T>(std::numeric_limits<float>::quiet_NaN());
  for_each_index<3>(K.shape(), [&](const Extents<3>& i) {
    if (i[1] >= first_unseen) K_nan.view().at(i) = V_nan.view().at(i) = nan;
  });
  const auto clean = run(Q.cview(), K.cview(), V.cview(), false);
  const auto poisoned = run(Q.cview(), K_nan.cview(), V_nan.cview(), false);
  const auto same = [](const auto& a, const auto& b) {
    return std::memcmp(a.storage().data(), b.storage().data(), a.storage().size() * sizeof(a.storage()[0])) == 0;
  };
  return same(clean.O, poisoned.O) && same(clean.L, poisoned.L);
}

// Whether a kernel built for `head_dims` takes head dim D (an empty list takes every one).
inline bool takes_head_dim(const std::vector<int>& head_dims, index_t D) {
  return head_dims.empty() || std::find(head_dims.begin(), head_dims.end(), static_cast<int>(D)) != head_dims.end();
}

// Result of one comparison, for tests that expect a failure (step06).
struct FlashCheck {
  CloseReport O, L;
  bool ok() const { return O.ok && L.ok; }
};

// Runs `run` on fresh N(0, 1) inputs of `shape` and compares against the reference (with `window`,
// which `run` must apply too: window_runner).
template <class T>
FlashCheck run_and_compare(const FlashRunner<T>& run, const FlashShape& shape, bool causal,
                           Tolerance tol = flash_tolerance<T>(), Window window = {}) {
  Rng rng(fresh_seed());
  const auto Q = random_normal<T, 3>({shape.B, shape.N_q, shape.D}, rng);
  const auto K = random_normal<T, 3>({shape.B_kv(), shape.N_k, shape.D}, rng);
  const auto V = random_normal<T, 3>({shape.B_kv(), shape.N_k, shape.D}, rng);
  const auto out = run(Q.cview(), K.cview(), V.cview(), causal);
  const auto ref = reference_attention_gqa<T>(Q.cview(), K.cview(), V.cview(), causal, std::nullopt, window);
  FlashCheck c{compare_close(out.O.cview(), ref.O.cview(), tol, "O"),
               compare_close(out.L.cview(), ref.L.cview(), tol, "L")};
  const std::string where = std::string(dtype_name<T>()) + " " + shape.name() + (causal ? " causal" : " non-causal") +
                            window_name(window) + " seed " + std::to_string(rng.seed()) + ": ";
  c.O.what = where + "O";
  c.L.what = where + "L";
  return c;
}

// float32 with allow_tf32 = false (3xTF32 products): O and L within kFloat32Tolerance of the
// float64 reference on three of the article's shapes, causal and not; `tf32`, the same launcher
// with TF32 products, misses that tolerance, so the check measures what the flag changes. TF32
// rounds each operand by up to 2^-11 relative (errors of ~1e-3 in O); 3xTF32 leaves ~2^-22 per product,
// and the float32 softmax and sums bring O and L to ~1e-6 (FA2_MEASURE=1 prints the errors).
inline constexpr Tolerance kFloat32Tolerance{2e-5, 2e-5};

inline void check_float32_products(const FlashRunner<float>& precise, const FlashRunner<float>& tf32) {
  for (const FlashShape shape : {FlashShape{2, 100, 100, 64}, {1, 37, 53, 32}, {1, 200, 96, 128}}) {
    for (bool causal : {false, true}) {
      const auto c = run_and_compare<float>(precise, shape, causal, kFloat32Tolerance);
      if (std::getenv("FA2_MEASURE") != nullptr) {
        std::fprintf(stderr, "FA2_MEASURE 3xTF32 %s: largest error O %.2g L %.2g\n", shape.name().c_str(),
                     c.O.max_abs_error, c.L.max_abs_error);
      }
      CHECK_MESSAGE(c.O.ok, c.O.summary());
      CHECK_MESSAGE(c.L.ok, c.L.summary());
    }
  }
  const auto c = run_and_compare<float>(tf32, {2, 100, 100, 64}, false, kFloat32Tolerance);
  const std::string why = "TF32 products met the float32 tolerance: " + c.O.summary();
  CHECK_MESSAGE(!c.O.ok, why);
}

// The article's matrix for one dtype: every shape, non-causal, and causal for square shapes
// (only the shapes whose head dim the kernel is built for, when `head_dims` is given).
template <class T>
void check_article_matrix(const FlashRunner<T>& run, const std::vector<int>& head_dims = {}) {
  for (const auto& shape : article_shapes()) {
    if (!takes_head_dim(head_dims, shape.D)) continue;
    for (bool causal : {false, true}) {
      if (causal && shape.N_q != shape.N_k) continue;  // the article keeps causal cases square
      const auto c = run_and_compare<T>(run, shape, causal);
      CHECK_MESSAGE(c.O.ok, c.O.summary());
      CHECK_MESSAGE(c.L.ok, c.L.summary());
    }
  }
}

}  // namespace fa2::testing
