// Step 2 demo: follows one query row through the key tiles of the tiled forward (m, l and
// the rescale factor alpha per tile), then prints the max error against the reference;
// --trace=FILE also writes every (query tile, key tile) step as JSON for the trace viewer.
//   cmake --build --preset default --target step02_demo && build/default/step02_tiled_cpu/step02_demo [--trace=FILE]
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/trace.hpp"
#include "common/trace_json.hpp"
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

// The whole tiled loop of batch element 0 as a trace (common/trace_json.hpp): per (query tile, key
// tile) step, which scores count, then m, l and alpha of every row of the query tile.
void write_trace(const std::string& file, const fa2::Tensor<double, 3>& Q, const fa2::Tensor<double, 3>& K,
                 const fa2::Tensor<double, 3>& V, const fa2::tiled::TileOptions& options) {
  fa2::trace::Document doc;
  const auto record = [&](const fa2::tiled::KeyTileStep<double>& step) {
    if (step.batch != 0) return;
    fa2::trace::KeyTile tile{step.batch, step.q_start, step.k_start, step.S_ij.rows(), step.S_ij.cols(), {}};
    for (index_t r = 0; r < step.S_ij.rows(); ++r) {
      std::string row;
      for (index_t c = 0; c < step.S_ij.cols(); ++c) row += std::isinf(step.S_ij(r, c)) ? '0' : '1';
      tile.mask.push_back(row);
    }
    doc.events.emplace_back(std::move(tile));
    const auto values = [](const Eigen::VectorX<double>& v) { return std::vector<double>(v.begin(), v.end()); };
    doc.events.emplace_back(fa2::trace::RowState{step.k_start / options.block_k, step.q_start, values(step.m_new),
                                                 values(step.l_new), values(step.alpha)});
  };
  fa2::tiled::tiled_attention_forward<double>(Q.cview(), K.cview(), V.cview(), options, record);

  const index_t Nq = Q.size(1), Nk = K.size(1);
  doc.title = std::string("step 2's tiled forward on the CPU: (1, 20, 37, 8) float64, ") +
              (options.causal ? "causal" : "non-causal");
  doc.source = std::string("step02_demo --trace") + (options.causal ? " --trace-causal" : "");
  doc.view = "attention";
  doc.problem = {{"batch", Q.size(0)},        {"n_queries", Nq},          {"n_keys", Nk},
                 {"head_dim", Q.size(2)},     {"causal", options.causal}, {"dtype", std::string("float64")},
                 {"seed", std::int64_t{2024}}};
  doc.tiles = {{"q_tile", options.block_q},
               {"k_tile", options.block_k},
               {"n_query_tiles", fa2::cdiv(Nq, options.block_q)},
               {"n_key_tiles", fa2::cdiv(Nk, options.block_k)}};
  doc.program = {{"batch", std::int64_t{0}}};  // no query_tile: the outer loop visits them all, one after another
  doc.notes = {"The outer loop walks the query tiles one after another; on a GPU each is its own program (step 5).",
               "The last tiles are shorter, not padded: 20 queries in tiles of 8, 37 keys in tiles of 16."};
  if (options.causal) {
    doc.notes.emplace_back("Causal: the key loop stops after the tile's last query; scores of later keys are -inf.");
  }
  fa2::cli::write_file(file, fa2::trace::to_json(doc));
  std::printf("\nwrote %s: %zu events (open common/viewer/trace_viewer.html and load it)\n", file.c_str(),
              doc.events.size());
}

int demo(const std::string& trace_file, bool trace_causal) {
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
  if (!trace_file.empty()) {
    auto traced = options;
    traced.causal = trace_causal;
    write_trace(trace_file, Q, K, V, traced);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace_file;
  bool trace_causal = false;
  fa2::cli::Parser cli("step02_demo",
                       "Step 2: follows one query row through the key tiles of the tiled forward (m, l and the\n"
                       "rescale factor alpha per tile), then prints the max error against the float64 reference.\n"
                       "With --trace it also writes every (query tile, key tile) step of the same problem as JSON,\n"
                       "with m, l and alpha of each row, for the trace viewer (common/viewer/trace_viewer.html).");
  cli.text("--trace", trace_file, "FILE", "write the tiled loop's trace to FILE (JSON)")
      .flag("--trace-causal", trace_causal, "trace the causal forward (default non-causal)");
  return cli.run(argc, argv, [&] {
    if (trace_causal && trace_file.empty()) throw fa2::cli::UsageError("--trace-causal", "needs --trace=FILE");
    return demo(trace_file, trace_causal);
  });
}
