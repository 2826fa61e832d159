// Argument checks for the step05 kernel: everything the launch relies on is verified here,
// before any memory is touched, with a message naming the argument and what is allowed.
#include <cmath>
#include <string>

#include "common/check_arg.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2 {

namespace {

// The grid is (cdiv(N_q, Q_TILE), batch); CUDA caps a grid's y dimension at 65535.
constexpr index_t kMaxBatch = 65535;

void check_tensor(const char* name, const void* data, const Extents<3>& shape, const Extents<3>& strides) {
  check_tensor_layout(name, data, strides);
  require_arg(shape[0] >= 1 && shape[1] >= 1 && shape[2] >= 1, std::string(name) + ".shape",
              "got " + to_string<3>(shape) + ", every length must be at least 1 (batch, seq, head_dim)");
}

}  // namespace

void check_tensor_layout(const std::string& name, const void* data, const Extents<3>& strides) {
  require_arg(data != nullptr, name, "null pointer");
  require_arg(strides[2] == 1, name + ".stride(2)",
              got_allowed(strides[2], "1: the head dim must be contiguous (call .contiguous() on a view that is not)"));
  require_arg(strides[0] >= 0 && strides[1] >= 0, name + ".strides",
              "got " + to_string<3>(strides) + ", strides must be >= 0");
}

void validate(const FlashFwdArgs& a) {
  require_arg(a.dtype == DType::float32 || a.dtype == DType::bfloat16 || a.dtype == DType::float16, "dtype",
              "allowed float32, bfloat16 or float16");
  check_tensor("Q", a.q, a.q_shape, a.q_strides);
  check_tensor("K", a.k, a.k_shape, a.k_strides);
  check_tensor("V", a.v, a.v_shape, a.v_strides);
  check_tensor("O", a.o, a.o_shape, a.o_strides);

  const index_t B = a.q_shape[0], N_q = a.q_shape[1], D = a.q_shape[2], N_k = a.k_shape[1];
  require_arg(D == 16 || D == 32 || D == 64 || D == 128, "head_dim", got_allowed(D, "16, 32, 64 or 128"));
  require_arg(B <= kMaxBatch, "batch", got_allowed(B, "at most 65535 (the launch grid's y dimension)"));
  // Grouped-query attention: K and V may hold fewer batch elements (heads) than Q, one for
  // every B / B_kv consecutive query batch elements.
  require_arg(a.k_shape[2] == D && B % a.k_shape[0] == 0, "K.shape",
              "got " + to_string<3>(a.k_shape) + ", its head dim must match Q " + to_string<3>(a.q_shape) +
                  " and its batch divide Q's (" + std::to_string(B) + ": equal, or grouped-query attention)");
  require_arg(a.v_shape == a.k_shape, "V.shape",
              "got " + to_string<3>(a.v_shape) + ", must equal K.shape " + to_string<3>(a.k_shape));
  require_arg(a.o_shape == a.q_shape, "O.shape",
              "got " + to_string<3>(a.o_shape) + ", must equal Q.shape " + to_string<3>(a.q_shape));

  require_arg(a.l != nullptr, "L", "null pointer");
  require_arg(a.l_shape == Extents<2>{B, N_q}, "L.shape",
              "got " + to_string<2>(a.l_shape) + ", must be (batch, N_q) = " + to_string<2>(Extents<2>{B, N_q}));
  require_arg(a.l_strides[0] >= 0 && a.l_strides[1] >= 0, "L.strides",
              "got " + to_string<2>(a.l_strides) + ", strides must be >= 0");
  if (a.scale) {
    require_arg(std::isfinite(*a.scale), "scale", "must be a finite number");
  }
  require_arg(a.window.left >= -1, "window.left", got_allowed(a.window.left, "-1 (no bound) or a count of keys >= 0"));
  require_arg(a.window.right >= -1, "window.right",
              got_allowed(a.window.right, "-1 (no bound) or a count of keys >= 0"));
  (void)N_k;
}

}  // namespace fa2
