// Which keys a query sees. Two masks combine: the causal mask, top-left aligned as torch's
// is_causal (query q sees key k when k <= q, also when N_q != N_k), and a sliding window (local
// attention), where query q sees key k only when q - left <= k <= q + right, -1 leaving that side
// unbounded. Window{} sees everything; Window{-1, 0} alone is the causal mask.
//
// With a window bounded on the left, a query can see no key at all (q - left > N_k - 1, when
// N_q > N_k). Such a row's softmax has nothing to normalise: every kernel and reference here
// gives it O = 0 and L = +inf, FlashAttention's convention, so that the backward's
// P = exp(S - L) is 0 for the row and its gradients are 0.
#pragma once

#include "common/numeric.hpp"

namespace fa2 {

struct Window {
  index_t left = -1;   // keys before the query it sees: q - left <= k; -1 for all
  index_t right = -1;  // keys after it: k <= q + right; -1 for all
  constexpr bool bounded() const { return left >= 0 || right >= 0; }
  friend constexpr bool operator==(const Window&, const Window&) = default;
};

// The window as the kernels take it: a side without a bound gets 2^40, past every key and query
// (and past the zero-padded keys of a last tile), so that q - left <= k <= q + right holds for all
// of them and the same code serves calls with and without a window.
inline constexpr index_t kUnboundedWindow = index_t{1} << 40;
constexpr Window kernel_window(Window window) {
  return {window.left < 0 ? kUnboundedWindow : window.left, window.right < 0 ? kUnboundedWindow : window.right};
}

constexpr bool sees(bool causal, Window window, index_t q, index_t k) {
  return (!causal || k <= q) && (window.left < 0 || k >= q - window.left) &&
         (window.right < 0 || k <= q + window.right);
}

}  // namespace fa2
