// The benchmark's table of every kernel of step 7, read from the rows of lab/variants.def (the
// product's configurations with their options from product/kernels.def): step05's kernel, variant 1
// (its larger tiles), the ladder (v2-v4), the sm80 configurations (v5.1-v5.17, v5b.1-v5b.13), the
// sm90 ones (v6.1-v6.19, v6b.1-v6b.8), then the product on one path (v6, v6b, v5) and on both
// ("fast", what users get: the sm90 path where it runs, the sm80 path elsewhere).
// The benchmark registers every row that has a launcher in this build, the tests run every row on
// its paths, and step07's README shows the table that variants_markdown() prints (a test keeps
// the two equal). The ablations (v5.x, v5b.x, v6.x) have launchers only in a build with
// FA2_BUILD_ABLATIONS (the lab library); their rows are in the table either way.
//
//   for (const auto& v : fa2::variants::kernel_variants()) if (v.host) v.host(args);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::variants {

struct KernelVariant {
  std::string key;     // names CSV rows, table columns and --impl: "v5.4"
  std::string label;   // a few words after the key: "w4x2"
  std::string adds;    // what it changes in the variant it builds on
  std::string family;  // "ours" (step05's kernel), "ladder" (v2-v4), "sm80" (v5), "sm90" (v6), "product" (fast)
  std::vector<int> head_dims;
  std::vector<DType> dtypes;
  HostLaunchFn host = nullptr;  // the host path, for the kernels that have one
  CudaLaunchFn cuda = nullptr;  // the GPU launcher; null in a build without CUDA (or without the lab) and in v5b.*
  // "" when the kernel can run these arguments, otherwise why not (e.g. the fast kernel's
  // 16-byte alignment); null: validate() says everything.
  std::string (*refuses)(const FlashFwdArgs&) = nullptr;
  // Its backward pass, when it has one (step05's kernel, v5 and v5b.*): on the host and on the
  // GPU (the GPU launcher null in a build without CUDA).
  HostBwdLaunchFn host_backward = nullptr;
  CudaBwdLaunchFn cuda_backward = nullptr;
  // The passes it has, in every build (its launchers are null without CUDA): "forward",
  // "backward" (the fast backward's sweep: no forward launcher) or "forward, backward".
  std::string passes = "forward";
  // For a row that picks one of several kernels at run time ("fast"): which one these arguments
  // get and why (the benchmark prints it); null for the others.
  std::string (*chooses)(const FlashFwdArgs&) = nullptr;
  std::string (*chooses_backward)(const FlashBwdArgs&) = nullptr;  // the same for its backward
  // An ablation (v5.x, v5b.x, v6.x): its launchers are the lab's, null in a build without it.
  bool ablation = false;

  std::string name() const { return key + " " + label; }
  bool builds(DType dtype, int head_dim) const;
};

// The step05 kernel's key: the reference every other kernel's output is compared to.
inline constexpr const char* kStep05Key = "ours16";

const std::vector<KernelVariant>& kernel_variants();

// Whether this build has the lab (FA2_BUILD_ABLATIONS with CUDA): the ablations' launchers.
bool ablations_built();
// Why an ablation row has no launcher in this build ("" when it has, or is no ablation).
std::string not_built_reason(const KernelVariant& v);

// The row with this key; std::invalid_argument naming the keys there are when none has it.
const KernelVariant& kernel_variant(std::string_view key);

// Which kernel the product runs for these arguments, in the chapter's names: "v6", or "v5 (<why
// not v6>)"; for the backward "v6b" or "v5 (<why not v6b>)" (builds with CUDA).
std::string product_forward_choice(const FlashFwdArgs& args);
std::string product_backward_choice(const FlashBwdArgs& args);

// The table as step07's README shows it (Markdown): key, name, what it adds, head dims, paths.
std::string variants_markdown();

}  // namespace fa2::variants
