// The stories step06's tests tell, written once and told twice: on the host path
// (test_bugs_host.cpp, in CI) and on the GPU (test_bugs_gpu.cu). A story takes a function that
// turns a Variant into a runner (host tensors in, O and L out).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "step05_fa2_kernel/tests/flash_test_support.hpp"
#include "step06_tests_bugs/variants.hpp"

namespace fa2::testing {

using variants::Variant;

template <class T>
using RunnerFor = std::function<FlashRunner<T>(Variant)>;

// What the article's test file expects of each variant: bug 2 shows up only when the last
// key tile is padded (N_k not a multiple of 16) and the causal mask does not already hide
// the padded keys (with square causal shapes every padded key lies after every query).
inline bool expected_to_pass(Variant v, const FlashShape& shape, bool causal) {
  const bool has_bug2 = v == Variant::original || v == Variant::bug2;
  return !(has_bug2 && !causal && shape.N_k % 16 != 0);
}

// The assignment's harness: one shape, float32, atol = rtol = 1e-2, not causal.
inline void assignment_harness_passes(const RunnerFor<float>& runner_for, Variant v) {
  const auto c = run_and_compare<float>(runner_for(v), {4, 128, 128, 64}, false, Tolerance{1e-2, 1e-2});
  MESSAGE("assignment harness on the " << variants::name(v) << " kernel: " << c.O.summary());
  CHECK_MESSAGE(c.O.ok, c.O.summary());
  CHECK_MESSAGE(c.L.ok, c.L.summary());
}

// The article's whole test file, with the outcome each variant should have.
template <class T>
void article_test_file(const RunnerFor<T>& runner_for, Variant v) {
  for (const auto& shape : article_shapes()) {
    for (bool causal : {false, true}) {
      if (causal && shape.N_q != shape.N_k) continue;
      const auto c = run_and_compare<T>(runner_for(v), shape, causal);
      const bool expect = expected_to_pass(v, shape, causal);
      CHECK_MESSAGE(c.ok() == expect, (expect ? "expected to pass: " : "expected to FAIL: ")
                                          << c.O.summary() << " | " << c.L.summary());
    }
  }
}

// Bug 2, caught: on ragged key lengths the buggy kernel is far outside the tolerance while
// the fixed kernel, on the same inputs, is inside it.
template <class T>
void padded_keys_vote(const RunnerFor<T>& runner_for, const FlashShape& shape) {
  Rng rng(fresh_seed());
  INFO("seed ", rng.seed());
  const auto Q = random_normal<T, 3>({shape.B, shape.N_q, shape.D}, rng);
  const auto K = random_normal<T, 3>({shape.B, shape.N_k, shape.D}, rng);
  const auto V = random_normal<T, 3>({shape.B, shape.N_k, shape.D}, rng);
  const auto ref = reference_attention<T>(Q.cview(), K.cview(), V.cview(), false);
  const Tolerance tol = flash_tolerance<T>();
  const auto buggy = runner_for(Variant::bug2)(Q.cview(), K.cview(), V.cview(), false);
  const auto fixed = runner_for(Variant::fixed)(Q.cview(), K.cview(), V.cview(), false);
  const auto bug_L = compare_close(buggy.L.cview(), ref.L.cview(), tol, "L (bug 2)");
  const auto bug_O = compare_close(buggy.O.cview(), ref.O.cview(), tol, "O (bug 2)");
  const auto fixed_L = compare_close(fixed.L.cview(), ref.L.cview(), tol, "L (fixed)");
  const auto fixed_O = compare_close(fixed.O.cview(), ref.O.cview(), tol, "O (fixed)");
  MESSAGE(std::string(dtype_name<T>()) << " " << shape.name() << ", tolerance atol = rtol = " << tol.atol
                                       << ": bug 2 max |O err| " << bug_O.max_abs_error << ", max |L err| "
                                       << bug_L.max_abs_error << " (" << bug_O.mismatched << " of " << bug_O.checked
                                       << " O elements outside); fixed max |O err| " << fixed_O.max_abs_error
                                       << ", max |L err| " << fixed_L.max_abs_error);
  // Far outside: the bug fails the comparison, by at least three times the absolute
  // tolerance somewhere, while the fixed kernel stays inside it.
  const bool bug_passes = bug_O.ok && bug_L.ok;
  CHECK_FALSE(bug_passes);
  CHECK(std::max(bug_O.max_abs_error, bug_L.max_abs_error) > 3 * tol.atol);
  CHECK_MESSAGE(fixed_O.ok, fixed_O.summary());
  CHECK_MESSAGE(fixed_L.ok, fixed_L.summary());
}

// Bug 2, explained: the buggy output is exactly attention over the real keys plus n padded
// keys with score 0 and value 0. Each padded key adds exp(0) = 1 to the softmax sum, so
//   L_bug = log(exp(L) + n)      O_bug = O * exp(L) / (exp(L) + n).
inline void padded_keys_are_zero_score_zero_value_keys(const RunnerFor<float>& runner_for) {
  const FlashShape shape{2, 100, 100, 64};
  const index_t n_padded = 16 - shape.N_k % 16;  // 12 phantom keys in the last tile
  Rng rng(fresh_seed());
  INFO("seed ", rng.seed());
  const auto Q = random_normal<float, 3>({shape.B, shape.N_q, shape.D}, rng);
  const auto K = random_normal<float, 3>({shape.B, shape.N_k, shape.D}, rng);
  const auto V = random_normal<float, 3>({shape.B, shape.N_k, shape.D}, rng);
  const auto ref = reference_attention<float>(Q.cview(), K.cview(), V.cview(), false);
  const auto buggy = runner_for(Variant::bug2)(Q.cview(), K.cview(), V.cview(), false);
  Tensor<double, 2> L_model(ref.L.shape());
  Tensor<double, 3> O_model(ref.O.shape());
  for (index_t b = 0; b < shape.B; ++b) {
    for (index_t q = 0; q < shape.N_q; ++q) {
      const double sum = std::exp(ref.L(b, q));
      L_model(b, q) = std::log(sum + static_cast<double>(n_padded));
      for (index_t d = 0; d < shape.D; ++d)
        O_model(b, q, d) = ref.O(b, q, d) * sum / (sum + static_cast<double>(n_padded));
    }
  }
  FA2_CHECK_CLOSE(buggy.L.cview(), L_model.cview(), flash_tolerance<float>(), "L (bug 2 vs the phantom-key model)");
  FA2_CHECK_CLOSE(buggy.O.cview(), O_model.cview(), flash_tolerance<float>(), "O (bug 2 vs the phantom-key model)");
}

// Why the harness missed bug 2: when N_k is a multiple of 16 there is no padding, and the
// buggy and fixed kernels compute the same numbers.
inline void whole_tiles_hide_bug2(const RunnerFor<float>& runner_for, Tolerance agreement) {
  for (const FlashShape shape : {FlashShape{4, 128, 128, 64}, FlashShape{1, 200, 96, 128}}) {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto Q = random_normal<float, 3>({shape.B, shape.N_q, shape.D}, rng);
    const auto K = random_normal<float, 3>({shape.B, shape.N_k, shape.D}, rng);
    const auto V = random_normal<float, 3>({shape.B, shape.N_k, shape.D}, rng);
    const auto buggy = runner_for(Variant::bug2)(Q.cview(), K.cview(), V.cview(), false);
    const auto fixed = runner_for(Variant::fixed)(Q.cview(), K.cview(), V.cview(), false);
    FA2_CHECK_CLOSE(buggy.O.cview(), fixed.O.cview(), agreement, "O (bug 2 vs fixed, " + shape.name() + ")");
    FA2_CHECK_CLOSE(buggy.L.cview(), fixed.L.cview(), agreement, "L (bug 2 vs fixed, " + shape.name() + ")");
  }
}

// And why a causal test would have missed it too: with N_q == N_k, every padded key index is
// >= N_k > q for every real query q, so the causal mask already removes them.
inline void causal_square_hides_bug2(const RunnerFor<float>& runner_for) {
  const auto c = run_and_compare<float>(runner_for(Variant::bug2), {2, 100, 100, 64}, true);
  CHECK_MESSAGE(c.O.ok, c.O.summary());
  CHECK_MESSAGE(c.L.ok, c.L.summary());
}

}  // namespace fa2::testing
