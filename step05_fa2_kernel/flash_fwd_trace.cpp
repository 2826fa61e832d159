// One program of the FlashAttention-2 forward, recorded on the host (flash_fwd_trace.hpp).
// Used by step05_demo --trace, step05_figures and the viewer's bug traces (common/viewer/).
#include "step05_fa2_kernel/flash_fwd_trace.hpp"

#include <stdexcept>
#include <variant>

#include "common/random.hpp"
#include "common/tensor.hpp"
#include "common/trace.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"

namespace fa2 {
namespace {

template <class T, int Rank>
void name_tensor(trace::Recorder& recorder, const Tensor<T, Rank>& t, const std::string& name) {
  recorder.name_memory(t.cview().data(), static_cast<std::size_t>(t.numel()) * sizeof(T), name);
}

// The block shape of the first recorded load of `tensor` along axis 0, or 0.
std::int64_t tile_rows(const std::vector<trace::Event>& events, const std::string& tensor) {
  for (const auto& e : events) {
    const auto* a = std::get_if<trace::TileAccess>(&e);
    if (a != nullptr && a->tensor == tensor && !a->block.empty()) return a->block[0];
  }
  return 0;
}

std::string shape_text(const TracedProblem& p) {
  return "(" + std::to_string(p.batch) + ", " + std::to_string(p.n_queries) + ", " + std::to_string(p.n_keys) + ", " +
         std::to_string(p.head_dim) + ")";
}

}  // namespace

index_t traced_query_tiles(const TracedProblem& problem) {
  return cdiv<index_t>(problem.n_queries, TileSizes<>::q_tile);
}

trace::Document trace_flash_program(HostLaunchFn launch, const TracedProblem& problem, TracedProgram program,
                                    const std::string& kernel, const std::string& source) {
  const index_t query_tiles = traced_query_tiles(problem);
  if (program.query_tile < 0) program.query_tile = query_tiles - 1;
  if (program.query_tile >= query_tiles || program.batch < 0 || program.batch >= problem.batch) {
    throw std::invalid_argument("program (" + std::to_string(program.query_tile) + ", " +
                                std::to_string(program.batch) + ") is not in the grid of " + shape_text(problem) +
                                ": query tiles 0.." + std::to_string(query_tiles - 1) + ", batch 0.." +
                                std::to_string(problem.batch - 1));
  }
  Rng rng(problem.seed);
  const auto Q = random_normal<float, 3>({problem.batch, problem.n_queries, problem.head_dim}, rng);
  const auto K = random_normal<float, 3>({problem.batch, problem.n_keys, problem.head_dim}, rng);
  const auto V = random_normal<float, 3>({problem.batch, problem.n_keys, problem.head_dim}, rng);
  auto out = poisoned_outputs<float>(Q.shape());

  trace::Recorder recorder;
  name_tensor(recorder, Q, "Q");
  name_tensor(recorder, K, "K");
  name_tensor(recorder, V, "V");
  name_tensor(recorder, out.O, "O");
  name_tensor(recorder, out.L, "L");
  {
    const trace::Recording on(recorder, {program.query_tile, program.batch, 0});
    launch(make_flash_args<float>(Q.cview(), K.cview(), V.cview(), out.O.view(), out.L.view(), problem.causal));
  }

  trace::Document doc;
  doc.events = std::move(recorder.events());
  const std::int64_t q_tile = tile_rows(doc.events, "Q"), k_tile = tile_rows(doc.events, "K");
  if (q_tile == 0 || k_tile == 0) {
    throw std::logic_error(kernel + " loaded no Q or K tile through a tile pointer in program (" +
                           std::to_string(program.query_tile) + ", " + std::to_string(program.batch) + ")");
  }
  // note_state knows the key tile, not which query rows it holds: that is the program's.
  for (auto& e : doc.events) {
    if (auto* s = std::get_if<trace::RowState>(&e)) s->first_row = program.query_tile * q_tile;
  }
  doc.title = kernel + ": program (" + std::to_string(program.query_tile) + ", " + std::to_string(program.batch) +
              ") of " + shape_text(problem) + " float32, " + (problem.causal ? "causal" : "non-causal");
  doc.source = source;
  doc.view = "attention";
  doc.problem = {{"batch", problem.batch},
                 {"n_queries", problem.n_queries},
                 {"n_keys", problem.n_keys},
                 {"head_dim", problem.head_dim},
                 {"causal", problem.causal},
                 {"dtype", std::string("float32")},
                 {"seed", static_cast<std::int64_t>(problem.seed)}};
  doc.tiles = {{"q_tile", q_tile},
               {"k_tile", k_tile},
               {"n_query_tiles", cdiv<std::int64_t>(problem.n_queries, q_tile)},
               {"n_key_tiles", cdiv<std::int64_t>(problem.n_keys, k_tile)}};
  doc.program = {{"query_tile", program.query_tile}, {"batch", program.batch}};

  const std::int64_t q0 = program.query_tile * q_tile, q_end = q0 + q_tile;
  const std::int64_t last_k0 = (cdiv<std::int64_t>(problem.n_keys, k_tile) - 1) * k_tile;
  doc.notes.push_back("Q_i, query rows " + std::to_string(q0) + ".." + std::to_string(q_end - 1) +
                      ", is loaded into shared memory once; K_j and V_j, once per key tile.");
  if (q_end > problem.n_queries) {
    doc.notes.push_back("Rows " + std::to_string(problem.n_queries) + ".." + std::to_string(q_end - 1) +
                        " lie past N_QUERIES = " + std::to_string(problem.n_queries) +
                        ": zero-padded queries whose state is computed but never stored.");
  }
  if (problem.n_keys % k_tile != 0) {
    doc.notes.push_back("The last key tile, keys " + std::to_string(last_k0) + ".." +
                        std::to_string(last_k0 + k_tile - 1) + ", has " +
                        std::to_string(last_k0 + k_tile - problem.n_keys) +
                        " rows past N_KEYS = " + std::to_string(problem.n_keys) + ", padded with zeros (its mask).");
  }
  if (problem.causal) {
    doc.notes.push_back("Causal: every key tile is still loaded; keys after a query are masked inside S_ij.");
  }
  return doc;
}

}  // namespace fa2
