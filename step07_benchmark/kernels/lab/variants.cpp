// The variants table (variants.hpp), one KernelVariant per row of variants.def. What exists only in
// a build with CUDA (the GPU launchers, the product's argument checks) is there only then
// (FA2_VARIANTS_WITH_CUDA), and the ablations' launchers only with the lab
// (FA2_VARIANTS_WITH_ABLATIONS); both are set by step07's CMakeLists.txt.
#include "step07_benchmark/kernels/lab/variants.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "step07_benchmark/kernels/lab/ladder/ladder.hpp"
#include "step07_benchmark/kernels/lab/step05_tiles.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"  // fa2::flash::Path (CUDA-free)
#include "step07_benchmark/kernels/product/rows.hpp"

#if FA2_VARIANTS_WITH_CUDA
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#define FA2_GPU_ONLY(fn) (fn)
#else
#define FA2_GPU_ONLY(fn) nullptr
#endif
#if FA2_VARIANTS_WITH_ABLATIONS
#include "step07_benchmark/kernels/lab/lab.hpp"
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

#if FA2_VARIANTS_WITH_CUDA
// The product restricted to one path (the rows "v5", "v6", "v6b") or not ("fast").
template <flash::Path P>
void forward_on(const FlashFwdArgs& args, ::CUstream_st* stream) {
  flash::run(flash::plan_forward(args, P), stream);
}
template <flash::Path P>
void backward_on(const FlashBwdArgs& args, ::CUstream_st* stream) {
  flash::run(flash::plan_backward(args, P), stream);
}
template <flash::Path P>
std::string refusal_on(const FlashFwdArgs& args) {
  return flash::plan_forward(args, P).refused;
}
#endif

// A row of v5, v5b, v6 or v6b (the lab's or the product's): its path, "sm80" or "sm90", in the
// benchmark's family column.
KernelVariant ablation_row(std::string key, std::string label, std::string adds, std::vector<int> head_dims,
                           flash::Family family) {
  KernelVariant v{key,
                  std::move(label),
                  std::move(adds),
                  flash::is_sm90(family) ? "sm90" : "sm80",
                  std::move(head_dims),
                  {DType::bfloat16, DType::float16}};
  v.ablation = true;
  const bool backward = flash::is_backward(family);
  v.passes = backward ? "backward" : "forward";
#if FA2_VARIANTS_WITH_CUDA
  v.refuses = flash::is_sm90(family) ? &refusal_on<flash::Path::sm90> : &refusal_on<flash::Path::sm80>;
#endif
#if FA2_VARIANTS_WITH_ABLATIONS
  if (backward) {
    v.cuda_backward = lab::backward_launcher(key);
  } else {
    v.cuda = lab::forward_launcher(key);
  }
#endif
  return v;
}

// A row of the product's table (product/kernels.def), with the words the lab's table gives it.
KernelVariant product_config_row(std::string key, std::string label, std::string adds) {
  using enum flash::Family;
  for (const flash::Family family : {sm80_forward, sm80_backward, sm90_forward, sm90_backward}) {
    const flash::GeneratedRow* row = nullptr;
    const auto find = [&](const auto& table) {
      for (const flash::GeneratedRow& r : table) {
        if (r.key == key) row = &r;
      }
    };
    switch (family) {
      case sm80_forward:
        find(flash::ProductRows::sm80_forward);
        break;
      case sm80_backward:
        find(flash::ProductRows::sm80_backward);
        break;
      case sm90_forward:
        find(flash::ProductRows::sm90_forward);
        break;
      case sm90_backward:
        find(flash::ProductRows::sm90_backward);
        break;
    }
    if (row != nullptr) {
      return ablation_row(std::move(key), std::move(label), std::move(adds),
                          std::vector<int>(row->head_dims.dims, row->head_dims.dims + row->head_dims.count), family);
    }
  }
  throw std::logic_error("lab/variants.def: FA2_PRODUCT(\"" + key + "\") names no row of product/kernels.def");
}

// A row of the product (flash_attention.hpp) on one path or on the best.
KernelVariant product_row(std::string key, std::string label, std::string adds, std::string family,
                          std::vector<int> head_dims, std::string passes, flash::Path path) {
  KernelVariant v{std::move(key),    std::move(label),     std::move(adds),
                  std::move(family), std::move(head_dims), {DType::bfloat16, DType::float16}};
#if FA2_VARIANTS_WITH_CUDA
  using enum flash::Path;
  if (passes.find("forward") != std::string::npos) {
    v.cuda = path == sm80 ? &forward_on<sm80> : path == sm90 ? &forward_on<sm90> : &forward_on<best>;
  }
  if (passes.find("backward") != std::string::npos) {
    v.cuda_backward = path == sm80 ? &backward_on<sm80> : path == sm90 ? &backward_on<sm90> : &backward_on<best>;
  }
  v.refuses = path == sm90 ? &refusal_on<sm90> : &refusal_on<sm80>;
  if (path == best) {
    v.chooses = &product_forward_choice;
    v.chooses_backward = &product_backward_choice;
  }
#else
  (void)path;
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
#define FA2_V5(key, label, adds, head_dims, ...) \
  ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, flash::Family::sm80_forward),
#define FA2_V5B(key, label, adds, head_dims, ...) \
  ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, flash::Family::sm80_backward),
#define FA2_V6(key, label, adds, head_dims, ...) \
  ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, flash::Family::sm90_forward),
#define FA2_V6B(key, label, adds, head_dims, ...) \
  ablation_row(key, label, adds, {FA2_UNPAREN head_dims}, flash::Family::sm90_backward),
#define FA2_PRODUCT(key, label, adds) product_config_row(key, label, adds),
#define FA2_TUNED(key, label, adds, family, head_dims, passes, entry) \
  product_row(key, label, adds, family, {FA2_UNPAREN head_dims}, passes, flash::Path::entry),
#include "step07_benchmark/kernels/lab/variants.def"
#undef FA2_UNPAREN
  };
  return table;
}

#if FA2_VARIANTS_WITH_CUDA
std::string product_forward_choice(const FlashFwdArgs& args) {
  const flash::ForwardPlan plan = flash::plan_forward(args);
  const std::string& why_not_v6 = plan.runs() ? plan.sm90_refused : plan.refused;
  return why_not_v6.empty() ? "v6" : "v5 (" + why_not_v6 + ")";
}

std::string product_backward_choice(const FlashBwdArgs& args) {
  const flash::BackwardPlan plan = flash::plan_backward(args);
  if (!plan.runs()) return "none (" + plan.refused + ")";
  return plan.sm90_refused.empty() ? std::string("v6b") : "v5 (" + plan.sm90_refused + ")";
}
#endif

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
