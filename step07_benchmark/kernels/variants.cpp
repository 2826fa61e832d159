// The variants table (variants.hpp), one KernelVariant per row of variants.def. What exists only in
// a build with CUDA (the GPU launchers, the product's argument checks) is there only then
// (FA2_VARIANTS_WITH_CUDA), and the ablations' launchers only with the lab
// (FA2_VARIANTS_WITH_ABLATIONS); both are set by step07's CMakeLists.txt.
#include "step07_benchmark/kernels/variants.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "step07_benchmark/kernels/ladder/ladder.hpp"
#include "step07_benchmark/kernels/step05_tiles.hpp"

#if FA2_VARIANTS_WITH_CUDA
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step07_benchmark/kernels/fast/flash_attention.hpp"
#define FA2_GPU_ONLY(fn) (fn)
#else
#define FA2_GPU_ONLY(fn) nullptr
#endif
#if FA2_VARIANTS_WITH_ABLATIONS
#include "step07_benchmark/kernels/fast/fa2_lab.hpp"
#endif

namespace fa2::variants {

bool KernelVariant::builds(DType dtype, int head_dim) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end() &&
         std::find(head_dims.begin(), head_dims.end(), head_dim) != head_dims.end();
}

bool ablations_built() {
#if FA2_VARIANTS_WITH_ABLATIONS
  return true;
#else
  return false;
#endif
}

std::string not_built_reason(const KernelVariant& v) {
  if (!v.ablation || ablations_built()) return {};
  return v.key +
         " is an ablation: its kernels are in the lab library, which this build leaves out (configure with "
         "-DFA2_BUILD_ABLATIONS=ON, as the sm90 preset does)";
}

namespace {

KernelVariant kernel_row(std::string key, std::string label, std::string adds, std::string family,
                         std::vector<int> head_dims, std::vector<DType> dtypes, std::string passes, HostLaunchFn host,
                         CudaLaunchFn cuda, HostBwdLaunchFn host_backward, CudaBwdLaunchFn cuda_backward) {
  KernelVariant v{std::move(key),    std::move(label),     std::move(adds),
                  std::move(family), std::move(head_dims), std::move(dtypes)};
  v.host = host;
  v.cuda = cuda;
  v.host_backward = host_backward;
  v.cuda_backward = cuda_backward;
  v.passes = std::move(passes);
  return v;
}

// A row of the lab: v5's forward ("fast" family) or v6's ("hopper"), or v5's backward ("fast") or
// v6b ("hopper").
enum class Kind { v5, v5b, v6, v6b };

KernelVariant ablation_row(std::string key, std::string label, std::string adds, std::vector<int> head_dims,
                           Kind kind) {
  KernelVariant v{key,
                  std::move(label),
                  std::move(adds),
                  kind == Kind::v6 || kind == Kind::v6b ? "hopper" : "fast",
                  std::move(head_dims),
                  {DType::bfloat16, DType::float16}};
  v.ablation = true;
  const bool backward = kind == Kind::v5b || kind == Kind::v6b;
  v.passes = backward ? "backward" : "forward";
#if FA2_VARIANTS_WITH_CUDA
  if (kind == Kind::v5) v.refuses = &fast::unsupported_reason;
  if (kind == Kind::v6 || kind == Kind::v6b) v.refuses = &fast::hopper_unsupported_reason;
#endif
#if FA2_VARIANTS_WITH_ABLATIONS
  if (backward) {
    v.cuda_backward = fast::lab::backward_launcher(key);
  } else {
    v.cuda = fast::lab::forward_launcher(key);
  }
#endif
  return v;
}

// A row of the product (flash_attention.hpp): its tuned v5, its tuned v6 (forward) or v6b
// (backward), or "fast".
enum class Entry { v5, v6, v6b, best };

KernelVariant product_row(std::string key, std::string label, std::string adds, std::string family,
                          std::vector<int> head_dims, std::string passes, Entry entry) {
  KernelVariant v{std::move(key),    std::move(label),     std::move(adds),
                  std::move(family), std::move(head_dims), {DType::bfloat16, DType::float16}};
#if FA2_VARIANTS_WITH_CUDA
  v.cuda = entry == Entry::v5    ? &fast::flash_fwd_fast
           : entry == Entry::v6  ? &fast::flash_fwd_hopper
           : entry == Entry::v6b ? nullptr
                                 : &fast::flash_fwd_best;
  if (entry == Entry::v6 || entry == Entry::v6b) {
    v.refuses = &fast::hopper_unsupported_reason;
  } else {
    v.refuses = &fast::unsupported_reason;
  }
  if (passes.find("backward") != std::string::npos) {
    v.cuda_backward = entry == Entry::v6b  ? &fast::flash_bwd_hopper
                      : entry == Entry::v5 ? &fast::flash_bwd_v5
                                           : &fast::flash_bwd_fast;
  }
  if (entry == Entry::best) {
    v.chooses = &fast::best_forward;
    v.chooses_backward = &fast::best_backward;
  }
#else
  (void)entry;
#endif
  v.passes = std::move(passes);
  return v;
}

}  // namespace

const std::vector<KernelVariant>& kernel_variants() {
  using enum DType;
  static const std::vector<KernelVariant> table = {
#define FA2_UNPAREN(...) __VA_ARGS__
#define FA2_KERNEL(key, label, adds, family, head_dims, dtypes, passes, host, cuda, host_backward, cuda_backward) \
  kernel_row(key, label, adds, family, {FA2_UNPAREN head_dims}, {FA2_UNPAREN dtypes}, passes, host,               \
             FA2_GPU_ONLY(cuda), host_backward, FA2_GPU_ONLY(cuda_backward)),
#define FA2_V5(key, label, adds, head_dims, ...) ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, Kind::v5),
#define FA2_V5B(key, label, adds, head_dims, ...) ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, Kind::v5b),
#define FA2_V6(key, label, adds, head_dims, ...) ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, Kind::v6),
#define FA2_V6B(key, label, adds, head_dims, ...) ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, Kind::v6b),
#define FA2_TUNED(key, label, adds, family, head_dims, passes, entry) \
  product_row(key, label, adds, family, {FA2_UNPAREN head_dims}, passes, Entry::entry),
#include "step07_benchmark/kernels/variants.def"
#undef FA2_UNPAREN
  };
  return table;
}

const KernelVariant& kernel_variant(std::string_view key) {
  const auto& table = kernel_variants();
  const auto it = std::find_if(table.begin(), table.end(), [&](const KernelVariant& v) { return v.key == key; });
  if (it != table.end()) return *it;
  std::string keys;
  for (const auto& v : table) keys += (keys.empty() ? "" : ", ") + v.key;
  throw std::invalid_argument("variant: no kernel has the key '" + std::string(key) + "'; the keys are " + keys);
}

std::string variants_markdown() {
  std::string out =
      "| key | name | what it adds | head dims | dtypes | runs on | passes |\n|---|---|---|---|---|---|---|\n";
  for (const auto& v : kernel_variants()) {
    std::string dims, dtypes;
    for (int d : v.head_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    for (DType t : v.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + to_string(t);
    out += "| `" + v.key + "` | " + v.label + " | " + v.adds + " | " + dims + " | " + dtypes + " | " +
           (v.host != nullptr ? "host, GPU" : "GPU") + " | " + v.passes + " |\n";
  }
  return out;
}

}  // namespace fa2::variants
