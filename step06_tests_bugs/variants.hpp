// The kernel as first written and its two bugs, as launchable variants.
//
//   original  both bugs: the casts of P, O and L thrown away, and no mask for padded keys
//   bug1      only the discarded casts (float32 only: its bfloat16 build does not compile)
//   bug2      only the missing k_pos < N_KEYS mask (float32 and bfloat16)
//   fixed     step05's kernel
//
// Each variant's kernel is a complete file in kernels/ that differs from step05's kernel
// exactly by the lines in kernels/<variant>.patch (a ctest keeps it that way).
#pragma once

#include <string>

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::variants {

enum class Variant { fixed, original, bug1, bug2 };

inline std::string name(Variant v) {
  switch (v) {
    case Variant::fixed:
      return "fixed (step05)";
    case Variant::original:
      return "original (bugs 1 and 2)";
    case Variant::bug1:
      return "bug 1 only";
    case Variant::bug2:
      return "bug 2 only";
  }
  return "?";
}

// Whether a variant has a build for this dtype (bug 1's bfloat16 build fails to compile).
inline bool builds_for(Variant v, DType dtype) {
  return dtype == DType::float32 || v == Variant::fixed || v == Variant::bug2;
}

// Host path (the kernel body run by run_on_host), one function per variant.
void original_host(const FlashFwdArgs& args);
void bug1_host(const FlashFwdArgs& args);
void bug2_host(const FlashFwdArgs& args);

inline HostLaunchFn host_launcher(Variant v) {
  switch (v) {
    case Variant::original:
      return &original_host;
    case Variant::bug1:
      return &bug1_host;
    case Variant::bug2:
      return &bug2_host;
    case Variant::fixed:
      break;
  }
  return &flash_fwd_host;
}

}  // namespace fa2::variants
