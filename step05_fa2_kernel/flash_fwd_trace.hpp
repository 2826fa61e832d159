// Records what one program of a FlashAttention-2 forward does on the host path, for the trace
// viewer (common/viewer/trace_viewer.html) and step 5's figure: its loads and stores and the
// running state after each key tile, on float32 inputs drawn from a fixed seed.
//   auto doc = fa2::trace_flash_program(&fa2::flash_fwd_host, {.causal = true}, {}, "step05", "step05_demo --trace");
//   fa2::cli::write_file("step05.json", fa2::trace::to_json(doc));
#pragma once

#include <cstdint>
#include <string>

#include "common/numeric.hpp"
#include "common/trace_json.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2 {

struct TracedProblem {
  index_t batch = 2, n_queries = 100, n_keys = 100, head_dim = 64;  // the article's (2, 100, 100, 64)
  bool causal = false;
  std::uint64_t seed = 2024;  // fixed, so that a trace is the same file on every run
};

// Which program: (query tile, batch element), as program_id(0) and program_id(1) see it.
struct TracedProgram {
  index_t query_tile = -1;  // -1: the last query tile, the one whose rows hang over N_QUERIES
  index_t batch = 0;
};

// The query tiles of a launch with step 5's tiles (TileSizes<>, 16 rows).
index_t traced_query_tiles(const TracedProblem& problem);

// Runs `launch` (flash_fwd_host, or a step06 twin's host launcher) once and records program
// `program`; `kernel` names the kernel in the title, `source` is the command that asked for it.
// Throws std::invalid_argument when the program is not in the launch's grid.
trace::Document trace_flash_program(HostLaunchFn launch, const TracedProblem& problem, TracedProgram program,
                                    const std::string& kernel, const std::string& source);

}  // namespace fa2
