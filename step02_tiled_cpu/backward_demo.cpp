// Step 2 backward demo: follows one key tile of the tiled backward through the query tiles it
// meets (P's row sums, D_i, the growth of dK_j and dV_j), then prints the max errors of dQ, dK
// and dV against the float64 reference.
//   cmake --build --preset default --target step02_backward_demo && build/default/step02_tiled_cpu/step02_backward_demo
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/cli.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/reference_backward.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"
#include "step02_tiled_cpu/tiled_backward.hpp"

namespace {

using fa2::index_t;

constexpr index_t kN = 22, kD = 8;  // Q, K, V and dO are (1, kN, kD)
constexpr index_t kKeyStart = 8;    // the key tile we follow: [8, 16)
const fa2::tiled::TileOptions kOptions{.block_q = 6, .block_k = 8, .causal = true};

// One block of lines per query tile that key tile [kKeyStart, kKeyStart + B_k) meets.
void print_key_tile(const fa2::Tensor<double, 3>& Q, const fa2::Tensor<double, 3>& K, const fa2::Tensor<double, 3>& V,
                    const fa2::Tensor<double, 3>& dO) {
  const auto [O, L] = fa2::tiled::tiled_attention_forward<double>(Q.cview(), K.cview(), V.cview(), kOptions);
  fa2::Tensor<double, 2> P_total({1, kN});  // each row's P summed over every key tile
  double dK_norm = 0.0, dV_norm = 0.0;      // |dK_j| and |dV_j| before the query tile
  const auto trace = [&](const fa2::tiled::QueryTileStep<double>& step) {
    const auto tile_rows = step.P_ij.rows();
    for (Eigen::Index r = 0; r < tile_rows; ++r) P_total(0, step.q_start + r) += step.P_ij.row(r).sum();
    if (step.k_start != kKeyStart) return;  // another key tile

    index_t masked = 0;  // key after query: P is exactly 0 there
    for (Eigen::Index r = 0; r < tile_rows; ++r) {
      for (Eigen::Index c = 0; c < step.P_ij.cols(); ++c) masked += (step.k_start + c > step.q_start + r) ? 1 : 0;
    }
    std::printf("\nquery tile [%ld, %ld): %ld of %ld scores masked\n", static_cast<long>(step.q_start),
                static_cast<long>(step.q_start + tile_rows), static_cast<long>(masked),
                static_cast<long>(step.P_ij.size()));
    std::printf("  query q      ");
    for (Eigen::Index r = 0; r < tile_rows; ++r) std::printf(" %7ld", static_cast<long>(step.q_start + r));
    std::printf("\n  rowsum P_ij  ");
    for (Eigen::Index r = 0; r < tile_rows; ++r) std::printf(" %7.4f", step.P_ij.row(r).sum());
    std::printf("\n  D_i          ");
    for (Eigen::Index r = 0; r < tile_rows; ++r) std::printf(" %7.4f", step.D_i(r));
    std::printf("\n  |dK_j| %.4f -> %.4f    |dV_j| %.4f -> %.4f\n", dK_norm, step.dK_j.norm(), dV_norm,
                step.dV_j.norm());
    dK_norm = step.dK_j.norm();
    dV_norm = step.dV_j.norm();
  };
  fa2::tiled::tiled_attention_backward<double>(Q.cview(), K.cview(), V.cview(), O.cview(), L.cview(), dO.cview(),
                                               kOptions, trace);

  double worst = 0.0;
  for (index_t q = 0; q < kN; ++q) worst = std::max(worst, std::fabs(P_total(0, q) - 1.0));
  std::printf("\nSummed over all key tiles, every row of P = exp(S - L) is a full softmax:\n");
  std::printf("max |rowsum(P) - 1| over the %ld rows = %.1e (no division by l needed).\n", static_cast<long>(kN),
              worst);
}

// Max |error| of dQ, dK and dV against the float64 reference, for inputs converted to T.
template <class T>
void print_errors(const fa2::Tensor<double, 3>& Q, const fa2::Tensor<double, 3>& K, const fa2::Tensor<double, 3>& V,
                  const fa2::Tensor<double, 3>& dO) {
  const auto q = fa2::converted<T, double, 3>(Q.cview());
  const auto k = fa2::converted<T, double, 3>(K.cview());
  const auto v = fa2::converted<T, double, 3>(V.cview());
  const auto dout = fa2::converted<T, double, 3>(dO.cview());
  const auto [O, L] = fa2::tiled::tiled_attention_forward<T>(q.cview(), k.cview(), v.cview(), kOptions);
  const auto grad = fa2::tiled::tiled_attention_backward<T>(q.cview(), k.cview(), v.cview(), O.cview(), L.cview(),
                                                            dout.cview(), kOptions);
  const auto ref = fa2::reference_attention_backward<T>(q.cview(), k.cview(), v.cview(), dout.cview(), true);
  const auto dQ = fa2::compare_close(grad.dQ.cview(), ref.dQ.cview(), {});
  const auto dK = fa2::compare_close(grad.dK.cview(), ref.dK.cview(), {});
  const auto dV = fa2::compare_close(grad.dV.cview(), ref.dV.cview(), {});
  std::printf("  %-8s  %8.1e  %8.1e  %8.1e\n", fa2::dtype_name<T>(), dQ.max_abs_error, dK.max_abs_error,
              dV.max_abs_error);
}

int demo() {
  fa2::Rng rng(2024);  // fixed, so that the README shows the same numbers
  const auto Q = fa2::random_normal<double, 3>({1, kN, kD}, rng);
  const auto K = fa2::random_normal<double, 3>({1, kN, kD}, rng);
  const auto V = fa2::random_normal<double, 3>({1, kN, kD}, rng);
  const auto dO = fa2::random_normal<double, 3>({1, kN, kD}, rng);

  std::printf("Q, K, V and dO (1, 22, 8), float64, causal; tiles B_q = 6, B_k = 8 (the last ones short).\n");
  std::printf("O and L come from the tiled forward; D_i = rowsum(dO_i * O_i) is computed once, first.\n\n");
  std::printf("We follow key tile [8, 16) of the outer loop: its dK_j and dV_j stay put while it meets\n");
  std::printf("the query tiles. Query tile [0, 6) is skipped: all its queries come before key 8.\n");
  std::printf("rowsum P_ij is the share of row q's probability that falls on keys 8..15.\n");
  print_key_tile(Q, K, V, dO);

  const auto ref = fa2::reference_attention_backward<double>(Q.cview(), K.cview(), V.cview(), dO.cview(), true);
  const auto largest = [](const fa2::Tensor<double, 3>& t) {
    double m = 0.0;
    for (const double x : t.storage()) m = std::max(m, std::fabs(x));
    return m;
  };
  std::printf("\nMax |error| against common/reference_backward.hpp (float64), same tiles:\n");
  std::printf("  dtype           dQ        dK        dV\n");
  print_errors<double>(Q, K, V, dO);
  print_errors<float>(Q, K, V, dO);
  print_errors<fa2::bf16>(Q, K, V, dO);
  std::printf("  (largest |entry| of the reference: dQ %.2f, dK %.2f, dV %.2f)\n", largest(ref.dQ), largest(ref.dK),
              largest(ref.dV));
  std::printf("(bfloat16: float32 tiles, O from the bf16 forward, gradients rounded to bfloat16 at the end.)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli("step02_backward_demo",
                       "Step 2 backward: follows one key tile of the tiled backward through the query tiles it\n"
                       "meets (P's row sums, D_i, the growth of dK_j and dV_j), then prints the max errors of\n"
                       "dQ, dK and dV against the float64 reference.");
  return cli.run(argc, argv, demo);
}
