// Step 1: the softmax of one row, three ways (naive three-pass, unguarded, online), and the
// (m, l) state that lets the online version read a row in blocks and merge the results.
//   Tests: cmake --build --preset default --target step01_tests && ctest --preset default -L step01
//   Demo:  build/default/step01_online_softmax/step01_demo
//
// Every function takes a vector (an Eigen column or row, e.g. M.row(3)); the *_rowwise
// versions apply it to every row of a matrix. Scores are finite numbers or -inf, where -inf
// is a masked score. Conventions for the corner cases, shared by every function here:
//   * a row with no unmasked score (empty, or all -inf) has logsumexp -inf and softmax 0s:
//     there is no probability mass to spread, so we return none rather than 0/0 = NaN;
//   * a NaN or +inf score makes the result NaN. Such inputs are outside the contract, and
//     the NaN makes the problem visible instead of hiding it.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <stdexcept>

#include "common/check_arg.hpp"
#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below

namespace fa2::online {

template <std::floating_point T>
inline constexpr T minus_inf = -std::numeric_limits<T>::infinity();

// The running statistics of a softmax over the scores seen so far:
//   m = the largest score,   l = the sum of exp(score - m).
// Before the first unmasked score the state is "empty": m = -inf and l = 0. Afterwards m
// is finite and l >= 1, because the maximum itself contributes exp(m - m) = 1.
template <std::floating_point T = double>
struct OnlineSoftmaxState {
  T m = minus_inf<T>;  // running maximum m
  T l = T{0};          // running sum l, measured relative to m

  bool empty() const { return m == minus_inf<T>; }

  // log(sum of exp(score)) over the scores seen so far. Empty: -inf + log(0) = -inf.
  T logsumexp() const { return m + std::log(l); }

  // Folds one score x into (m, l) and returns the rescale factor alpha = exp(m_old - m_new)
  // that the old l was multiplied by: 1 while the maximum stays, below 1 when it grows,
  // and exactly 0 for the first unmasked score, because exp(-inf) is exactly 0.
  T update(T x) {
    // BEGIN SOLUTION step01 standard: the whole update, a masked score (-inf) included uses(x)
    if (x == minus_inf<T>) return T{1};  // a masked score adds exp(-inf) = 0: nothing moves
    // BEGIN SOLUTION step01: the online update, grow m to cover x, rescale l by exp(m_old - m_new), add exp(x - m_new)
    const T m_new = std::max(m, x);
    const T alpha = std::exp(m - m_new);  // re-expresses the old sum relative to m_new
    l = alpha * l + std::exp(x - m_new);
    m = m_new;
    return alpha;
    // END SOLUTION step01
    // END SOLUTION step01 standard
  }

  // The state of two blocks read one after the other, from the state of each block.
  // Both sums are moved to the larger maximum, then added. The result is exactly the same
  // in either argument order, and the same up to rounding however a row is split and
  // grouped: that freedom is what lets a row be read block by block, in any split.
  static OnlineSoftmaxState combine(const OnlineSoftmaxState& a, const OnlineSoftmaxState& b) {
    // BEGIN SOLUTION step01 standard: the whole combine, empty states included uses(a, b)
    if (a.empty()) return b;  // also the case of two empty states: the result stays empty
    if (b.empty()) return a;
    // BEGIN SOLUTION step01: combine two partial states, both sums moved to the larger maximum
    const T m_ab = std::max(a.m, b.m);
    return {m_ab, a.l * std::exp(a.m - m_ab) + b.l * std::exp(b.m - m_ab)};
    // END SOLUTION step01
    // END SOLUTION step01 standard
  }
};

namespace detail {
template <class Derived>
using scalar_of = typename Derived::Scalar;

template <class Derived>
constexpr void require_vector() {
  static_assert(Derived::IsVectorAtCompileTime,
                "these functions take one row (a vector); use the *_rowwise versions for a matrix");
}
}  // namespace detail

// ---- One row -----------------------------------------------------------------------------

// The textbook "safe" softmax: three passes over the row (max, sum, normalise).
template <class Derived>
Eigen::VectorX<detail::scalar_of<Derived>> naive_softmax(const Eigen::MatrixBase<Derived>& x) {
  detail::require_vector<Derived>();
  using T = detail::scalar_of<Derived>;
  const Eigen::Index n = x.size();
  T row_max = minus_inf<T>;  // pass 1: the maximum
  for (Eigen::Index i = 0; i < n; ++i) row_max = std::max(row_max, x(i));
  if (row_max == minus_inf<T>) return Eigen::VectorX<T>::Zero(n);  // nothing unmasked
  T sum = T{0};  // pass 2: the sum, with every exponent <= 0 so nothing overflows
  for (Eigen::Index i = 0; i < n; ++i) sum += std::exp(x(i) - row_max);
  Eigen::VectorX<T> p(n);  // pass 3: normalise
  for (Eigen::Index i = 0; i < n; ++i) p(i) = std::exp(x(i) - row_max) / sum;
  return p;
}

// exp(x) / sum(exp(x)) without subtracting the maximum. Only here to show why the others
// subtract it: exp overflows to inf above ~88.7 (float) or ~709.8 (double) and underflows
// to 0 below ~-103 / ~-745, and inf/inf or 0/0 is NaN.
template <class Derived>
Eigen::VectorX<detail::scalar_of<Derived>> unguarded_softmax(const Eigen::MatrixBase<Derived>& x) {
  detail::require_vector<Derived>();
  using T = detail::scalar_of<Derived>;
  const Eigen::Index n = x.size();
  T sum = T{0};
  for (Eigen::Index i = 0; i < n; ++i) sum += std::exp(x(i));
  Eigen::VectorX<T> p(n);
  for (Eigen::Index i = 0; i < n; ++i) p(i) = std::exp(x(i)) / sum;
  return p;
}

// The single pass of the online softmax: (m, l) of the whole row.
template <class Derived>
OnlineSoftmaxState<detail::scalar_of<Derived>> online_state(const Eigen::MatrixBase<Derived>& x) {
  detail::require_vector<Derived>();
  OnlineSoftmaxState<detail::scalar_of<Derived>> state;
  for (Eigen::Index i = 0; i < x.size(); ++i) state.update(x(i));
  return state;
}

// The same (m, l), computed block by block: each block of `block_size` scores (the last one
// may be shorter) gets its own state, and the states are combined from left to right.
template <class Derived>
OnlineSoftmaxState<detail::scalar_of<Derived>> online_state_blocked(const Eigen::MatrixBase<Derived>& x,
                                                                    Eigen::Index block_size) {
  detail::require_vector<Derived>();
  using State = OnlineSoftmaxState<detail::scalar_of<Derived>>;
  require_arg(block_size >= 1, "block_size", got_allowed(block_size, "any integer >= 1"));
  State total;
  for (Eigen::Index start = 0; start < x.size(); start += block_size) {
    const Eigen::Index len = std::min(block_size, x.size() - start);
    total = State::combine(total, online_state(x.segment(start, len)));
  }
  return total;
}

// Softmax from the online state: one pass for (m, l), then exp(x - m) / l per element.
// (FlashAttention never materialises these probabilities; step02 multiplies them into V.)
template <class Derived>
Eigen::VectorX<detail::scalar_of<Derived>> online_softmax(const Eigen::MatrixBase<Derived>& x) {
  detail::require_vector<Derived>();
  using T = detail::scalar_of<Derived>;
  const auto state = online_state(x);
  const Eigen::Index n = x.size();
  if (state.empty()) return Eigen::VectorX<T>::Zero(n);  // exp(-inf - -inf) would be NaN
  Eigen::VectorX<T> p(n);
  for (Eigen::Index i = 0; i < n; ++i) p(i) = std::exp(x(i) - state.m) / state.l;
  return p;
}

// L = m + log(l) = log(sum of exp(x)), without overflow.
template <class Derived>
detail::scalar_of<Derived> logsumexp(const Eigen::MatrixBase<Derived>& x) {
  return online_state(x).logsumexp();
}

// ---- Every row of a matrix ---------------------------------------------------------------

template <class Derived>
Eigen::MatrixX<detail::scalar_of<Derived>> naive_softmax_rowwise(const Eigen::MatrixBase<Derived>& X) {
  Eigen::MatrixX<detail::scalar_of<Derived>> P(X.rows(), X.cols());
  for (Eigen::Index r = 0; r < X.rows(); ++r) P.row(r) = naive_softmax(X.row(r)).transpose();
  return P;
}

template <class Derived>
Eigen::MatrixX<detail::scalar_of<Derived>> online_softmax_rowwise(const Eigen::MatrixBase<Derived>& X) {
  Eigen::MatrixX<detail::scalar_of<Derived>> P(X.rows(), X.cols());
  for (Eigen::Index r = 0; r < X.rows(); ++r) P.row(r) = online_softmax(X.row(r)).transpose();
  return P;
}

template <class Derived>
Eigen::VectorX<detail::scalar_of<Derived>> logsumexp_rowwise(const Eigen::MatrixBase<Derived>& X) {
  Eigen::VectorX<detail::scalar_of<Derived>> L(X.rows());
  for (Eigen::Index r = 0; r < X.rows(); ++r) L(r) = logsumexp(X.row(r));
  return L;
}

}  // namespace fa2::online
