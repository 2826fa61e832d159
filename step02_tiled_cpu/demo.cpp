// Step 2 demo: follows one query row through the key tiles of the tiled forward (m, l and
// the rescale factor alpha per tile), then prints the max error against the reference.
//   cmake --build --preset default --target step02_demo && build/default/step02_tiled_cpu/step02_demo
#include <cmath>
#include <cstdio>

#include "common/cli.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"

namespace {

using fa2::index_t;

constexpr index_t kRow = 17;  // the query row we follow

// Prints one line per key tile for query row kRow.
void print_steps(const fa2::Tensor<double, 3>& Q, const fa2::Tensor<double, 3>& K, const fa2::Tensor<double, 3>& V,
                 const fa2::tiled::TileOptions& options) {
  std::printf("  key tile    tile max     m_old     m_new  alpha        l_new\n");
  const auto trace = [](const fa2::tiled::KeyTileStep<double>& step) {
    const index_t r = kRow - step.q_start;
    if (r < 0 || r >= step.m_new.size()) return;  // another query tile
    const auto keys = step.S_ij.cols();
    std::printf("  [%2ld, %2ld)  %9.4f %9.4f %9.4f  %-8.6g %10.6f\n", static_cast<long>(step.k_start),
                static_cast<long>(step.k_start + keys), step.S_ij.row(r).maxCoeff(), step.m_old(r), step.m_new(r),
                step.alpha(r), step.l_new(r));
  };
  fa2::tiled::tiled_attention_forward<double>(Q.cview(), K.cview(), V.cview(), options, trace);
}

// Max |error| of O and L against the float64 reference, for inputs converted to T.
template <class T>
void print_errors(const fa2::Tensor<double, 3>& Q, const fa2::Tensor<double, 3>& K, const fa2::Tensor<double, 3>& V,
                  bool causal) {
  const auto q = fa2::converted<T, double, 3>(Q.cview());
  const auto k = fa2::converted<T, double, 3>(K.cview());
  const auto v = fa2::converted<T, double, 3>(V.cview());
  const auto out = fa2::tiled::tiled_attention_forward<T>(q.cview(), k.cview(), v.cview(), {.causal = causal});
  const auto ref = fa2::reference_attention<T>(q.cview(), k.cview(), v.cview(), causal);
  const auto O = fa2::compare_close(out.O.cview(), ref.O.cview(), {});
  const auto L = fa2::compare_close(out.L.cview(), ref.L.cview(), {});
  std::printf("  %-8s  %-10s  %8.1e  %8.1e\n", fa2::dtype_name<T>(), causal ? "causal" : "non-causal", O.max_abs_error,
              L.max_abs_error);
}

int demo() {
  fa2::Rng rng(2024);  // fixed, so that the README shows the same numbers
  const index_t B = 1, Nq = 20, Nk = 37, D = 8;
  const auto Q = fa2::random_normal<double, 3>({B, Nq, D}, rng);
  const auto K = fa2::random_normal<double, 3>({B, Nk, D}, rng);
  const auto V = fa2::random_normal<double, 3>({B, Nk, D}, rng);
  const fa2::tiled::TileOptions options{.block_q = 8, .block_k = 16};

  std::printf("Q (1, 20, 8), K and V (1, 37, 8), float64; tiles B_q = 8, B_k = 16.\n");
  std::printf("Neither length is a multiple of its tile: the last tiles are short.\n");
  std::printf("Query row %ld is in the query tile [16, 20). After each key tile:\n\n", static_cast<long>(kRow));
  std::printf("Non-causal: every key tile is visited.\n");
  print_steps(Q, K, V, options);
  std::printf("\nCausal (row %ld sees keys 0..%ld): the loop stops after key 19, the\n", static_cast<long>(kRow),
              static_cast<long>(kRow));
  std::printf("tile's last query; keys 18 and 19 are masked to -inf inside the last tile.\n");
  auto causal = options;
  causal.causal = true;
  print_steps(Q, K, V, causal);

  const auto out = fa2::tiled::tiled_attention_forward<double>(Q.cview(), K.cview(), V.cview(), causal);
  const auto ref = fa2::reference_attention<double>(Q.cview(), K.cview(), V.cview(), true);
  std::printf("\nRow %ld, causal: L = m + log(l) = %.12f, reference %.12f\n", static_cast<long>(kRow), out.L(0, kRow),
              ref.L(0, kRow));

  std::printf("\nMax |error| against common/reference.hpp (float64), default 16 x 16 tiles:\n");
  std::printf("  dtype     mask               O         L\n");
  for (const bool is_causal : {false, true}) {
    print_errors<double>(Q, K, V, is_causal);
    print_errors<float>(Q, K, V, is_causal);
    print_errors<fa2::bf16>(Q, K, V, is_causal);
  }
  std::printf("(bfloat16 tiles are computed in float32; O is rounded to bfloat16 once, at the end.)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli("step02_demo",
                       "Step 2: follows one query row through the key tiles of the tiled forward (m, l and the\n"
                       "rescale factor alpha per tile), then prints the max error against the float64 reference.");
  return cli.run(argc, argv, demo);
}
