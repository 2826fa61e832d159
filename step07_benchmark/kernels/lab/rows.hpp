// The lab's table (variants.def) as constexpr data in the product's shape (product/rows.hpp): the
// rows of v5, v5b, v6 and v6b that are not the product's, per family. CUDA-free.
#pragma once

#include "step07_benchmark/kernels/product/rows.hpp"

namespace fa2::lab {

#define FA2_UNPAREN(...) __VA_ARGS__

struct LabRows {
  static constexpr bool kProduct = false;
  static constexpr flash::GeneratedRow sm80_forward[] = {
#define FA2_V5(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/lab/variants.def"
  };
  static constexpr flash::GeneratedRow sm80_backward[] = {
#define FA2_V5B(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/lab/variants.def"
  };
  static constexpr flash::GeneratedRow sm90_forward[] = {
#define FA2_V6(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/lab/variants.def"
  };
  static constexpr flash::GeneratedRow sm90_backward[] = {
#define FA2_V6B(key, label, adds, head_dims, ...) {key, {FA2_UNPAREN head_dims}},
#include "step07_benchmark/kernels/lab/variants.def"
  };
};

#undef FA2_UNPAREN

namespace detail {
// A key names one row of one table.
template <flash::Family F>
constexpr bool keys_apart() {
  for (const flash::GeneratedRow& r : flash::rows<LabRows, F>()) {
    if (flash::row_index<flash::ProductRows, F>(r.key) >= 0) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::keys_apart<flash::Family::sm80_forward>() && detail::keys_apart<flash::Family::sm80_backward>() &&
                  detail::keys_apart<flash::Family::sm90_forward>() &&
                  detail::keys_apart<flash::Family::sm90_backward>(),
              "lab/variants.def: a row has the key of a product row (product/kernels.def); name it with FA2_PRODUCT");

}  // namespace fa2::lab
