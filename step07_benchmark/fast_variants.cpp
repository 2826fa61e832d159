// Registration point for fast kernels: one line per kernel, nothing else to change. Every entry
// is checked against the step05 kernel (full output) and float64 (sampled rows) before it is
// timed, so a wrong kernel shows up as FAIL, never as a number.
//
//   #include "step07_benchmark/kernels/fa2_fast.hpp"   // void flash_fwd_fast(const FlashFwdArgs&, cudaStream_t)
//   out.push_back(flash_implementation("v5 fast: register-resident mma.sync", "v5", &fa2::fast::flash_fwd_fast,
//                                      "fast", {}, &fa2::fast::unsupported_reason));
//
// The two optional arguments narrow what it takes: from the Problem alone, e.g.
//   [](const Problem& p) { return p.D == 64 ? std::string() : std::string("head dim 64 only"); }
// or from the real FlashFwdArgs (asked once before the check run). Keys are short and unique
// (they name CSV rows, table columns and --impl); the target that builds the kernels goes into
// target_link_libraries(fa2_step07_runner ...) in step07_benchmark/CMakeLists.txt.
#include "step07_benchmark/fast_variants.hpp"

#include <algorithm>
#include <string>

#include "step07_benchmark/kernels/fa2_fast.hpp"
#include "step07_benchmark/kernels/ladder.hpp"
#include "step07_benchmark/kernels/ladder_cuda.hpp"

namespace fa2::bench {

std::vector<Implementation> fast_variant_implementations() {
  std::vector<Implementation> out;
  // v2-v4: step05's design at 64x64 tiles (v1), one fix at a time.
  const auto& ladder = ladder::ladder_variants();
  const auto& launchers = ladder::ladder_cuda_launchers();
  for (std::size_t i = 0; i < ladder.size(); ++i) {
    out.push_back(flash_implementation(ladder[i].name + ": " + ladder[i].description, ladder[i].key, launchers[i], "ladder"));
  }
  // v5: the register-resident mma.sync kernel, its ablation steps and tile shapes, then the tuned one.
  int n = 0;
  for (const auto& v : fast::fast_variants()) {
    const std::vector<int> dims = v.head_dims;
    const auto built_for = [dims](const Problem& p) {
      return std::find(dims.begin(), dims.end(), static_cast<int>(p.D)) != dims.end()
                 ? std::string()
                 : "head dim " + std::to_string(p.D) + " (this configuration is built for other head dims)";
    };
    out.push_back(flash_implementation(v.name + ": " + v.description, "v5." + std::to_string(++n), v.launch, "fast",
                                       built_for, &fast::unsupported_reason));
  }
  out.push_back(flash_implementation("v5 fast: the tuned configuration", "v5", &fast::flash_fwd_fast, "fast", {},
                                     &fast::unsupported_reason));
  return out;
}

}  // namespace fa2::bench
