#include "common/attention_args.hpp"

#include <cmath>
#include <string>

namespace fa2 {

std::string to_string(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "float32";
    case DType::bfloat16:
      return "bfloat16";
    case DType::float16:
      return "float16";
  }
  return "an unknown dtype (" + std::to_string(static_cast<int>(dtype)) + ")";
}

float softmax_scale(const FlashFwdArgs& a) {
  return a.scale.value_or(1.0f / std::sqrt(static_cast<float>(a.q_shape[2])));
}

float softmax_scale(const FlashVarlenArgs& a) {
  return a.scale.value_or(1.0f / std::sqrt(static_cast<float>(a.q_shape[2])));
}

}  // namespace fa2
