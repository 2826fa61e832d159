// Step 6 demo: the story of the two bugs on the host path. The assignment's harness passes
// the kernel as first written; the article's full test file does not, and says where.
//   build/default/step06_tests_bugs/step06_demo
#include <cmath>
#include <cstdio>
#include <string>

#include "common/cli.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "step06_tests_bugs/variants.hpp"

namespace {

using fa2::index_t;
using fa2::variants::Variant;

struct Outcome {
  bool ok;
  double o_err, l_err;
};

Outcome run_case(Variant v, index_t B, index_t N_q, index_t N_k, index_t D, bool causal, double tol, fa2::Rng& rng) {
  const auto Q = fa2::random_normal<float, 3>({B, N_q, D}, rng), K = fa2::random_normal<float, 3>({B, N_k, D}, rng),
             V = fa2::random_normal<float, 3>({B, N_k, D}, rng);
  const auto out =
      fa2::run_with_host_tensors<float>(fa2::variants::host_launcher(v), Q.cview(), K.cview(), V.cview(), causal);
  const auto ref = fa2::reference_attention<float>(Q.cview(), K.cview(), V.cview(), causal);
  const auto o = fa2::compare_close(out.O.cview(), ref.O.cview(), fa2::Tolerance{tol, tol});
  const auto l = fa2::compare_close(out.L.cview(), ref.L.cview(), fa2::Tolerance{tol, tol});
  return {o.ok && l.ok, o.max_abs_error, l.max_abs_error};
}

int demo() {
  fa2::Rng rng(fa2::fresh_seed());
  std::printf("1. The assignment's harness: (4, 128, 128, 64), float32, atol = rtol = 1e-2\n");
  const auto h = run_case(Variant::original, 4, 128, 128, 64, false, 1e-2, rng);
  std::printf("   kernel as first written (both bugs): %s   max|O err| %.1e   max|L err| %.1e\n\n",
              h.ok ? "PASS" : "FAIL", h.o_err, h.l_err);

  std::printf("2. The article's test file, float32 (bf16 of this kernel does not even compile: bug 1)\n");
  std::printf("   %-20s %-10s %-9s %-9s   why\n", "(B, N_q, N_k, D)", "causal", "original", "fixed");
  const index_t shapes[][4] = {
      {4, 128, 128, 64}, {2, 1024, 1024, 64}, {2, 100, 100, 64}, {1, 37, 53, 32}, {1, 200, 96, 128}};
  for (const auto& s : shapes) {
    for (bool causal : {false, true}) {
      if (causal && s[1] != s[2]) continue;
      const auto bug = run_case(Variant::original, s[0], s[1], s[2], s[3], causal, 1e-2, rng);
      const auto fix = run_case(Variant::fixed, s[0], s[1], s[2], s[3], causal, 1e-2, rng);
      const bool padded = s[2] % 16 != 0;
      const char* why = !padded ? "N_k fills whole 16-key tiles"
                                : (causal ? "the causal mask hides the padding" : "padded keys vote");
      const std::string shape = "(" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " + std::to_string(s[2]) +
                                ", " + std::to_string(s[3]) + ")";
      std::printf("   %-20s %-10s %-9s %-9s   %s\n", shape.c_str(), causal ? "yes" : "no", bug.ok ? "pass" : "FAIL",
                  fix.ok ? "pass" : "FAIL", why);
    }
  }

  std::printf(
      "\n3. Bug 2, explained: 100 keys in tiles of 16 leave 12 zero keys in the last tile. Each scores\n"
      "   exactly 0 and adds exp(0 - m) to the softmax sum, so L_bug = log(exp(L) + 12):\n");
  const auto Q = fa2::random_normal<float, 3>({1, 100, 64}, rng), K = fa2::random_normal<float, 3>({1, 100, 64}, rng),
             V = fa2::random_normal<float, 3>({1, 100, 64}, rng);
  const auto bug = fa2::run_with_host_tensors<float>(fa2::variants::host_launcher(Variant::bug2), Q.cview(), K.cview(),
                                                     V.cview(), false);
  const auto ref = fa2::reference_attention<float>(Q.cview(), K.cview(), V.cview(), false);
  for (index_t q : {0, 1, 2}) {
    std::printf("   query %ld: L = %.4f   L_bug = %.4f   log(exp(L) + 12) = %.4f\n", static_cast<long>(q), ref.L(0, q),
                static_cast<double>(bug.L(0, q)), std::log(std::exp(ref.L(0, q)) + 12.0));
  }
  std::printf(
      "\nBug 1 is a compile-time story: `ctest --preset default -L bug1 --output-on-failure -V` shows the\n"
      "dtype error of the bf16 build and the [[nodiscard]] diagnostic of the float32 build.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli(
      "step06_demo",
      "Step 6: the story of the two bugs on the host path. The assignment's harness passes the kernel\n"
      "as first written; the article's full test file does not, and says where.");
  return cli.run(argc, argv, demo);
}
