// Argument checks for the step05 backward: the forward's checks of what the two passes share
// (Q, K, V, O, L, scale), then every tensor only the backward has, each named in the message.
//   ctest -L backward   (the "validation+backward" suite of tests/test_flash_bwd_host.cpp)
#include <string>

#include "common/check_arg.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"

namespace fa2 {

namespace {

// The backward's own tensors: the shape they must have, then the layout rules of every tensor.
void check_tensor(const std::string& name, const void* data, const Extents<3>& shape, const Extents<3>& strides,
                  const Extents<3>& expected_shape, const std::string& expected_from) {
  require_arg(data != nullptr, name, "null pointer");
  require_arg(shape == expected_shape, name + ".shape",
              "got " + to_string<3>(shape) + ", must equal " + expected_from + " " + to_string<3>(expected_shape));
  check_tensor_layout(name, data, strides);
}

}  // namespace

void validate(const FlashBwdArgs& a) {
  validate(static_cast<const FlashFwdArgs&>(a));  // dtype, Q, K, V, O, L, head dim, batch, scale
  check_tensor("dO", a.do_, a.do_shape, a.do_strides, a.o_shape, "O.shape");

  const index_t B = a.q_shape[0], N_q = a.q_shape[1];
  require_arg(a.d_rows != nullptr, "D_rows", "null pointer");
  require_arg(a.d_rows_shape == Extents<2>{B, N_q}, "D_rows.shape",
              "got " + to_string<2>(a.d_rows_shape) + ", must be (batch, N_q) = " + to_string<2>(Extents<2>{B, N_q}));
  require_arg(a.d_rows_strides[0] >= 0 && a.d_rows_strides[1] >= 0, "D_rows.strides",
              "got " + to_string<2>(a.d_rows_strides) + ", strides must be >= 0");

  check_tensor("dQ_accum", a.dq_accum, a.dq_accum_shape, a.dq_accum_strides, a.q_shape, "Q.shape");
  check_tensor("dQ", a.dq, a.dq_shape, a.dq_strides, a.q_shape, "Q.shape");
  check_tensor("dK", a.dk, a.dk_shape, a.dk_strides, a.k_shape, "K.shape");
  check_tensor("dV", a.dv, a.dv_shape, a.dv_strides, a.v_shape, "V.shape");
}

}  // namespace fa2
