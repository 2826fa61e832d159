// viewer_bug_trace: records one program of one of step 6's buggy twins on the host path, like
// step05_demo --trace does for the fixed kernel, and writes it for the trace viewer. Bug 2's note
// says, from both runs, how much the padded keys added to l_i in the last key tile.
//   build/cpu-only/step06_tests_bugs/viewer_bug_trace --variant=bug2 --trace=bug2.json
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "common/cli.hpp"
#include "common/svg_canvas.hpp"
#include "common/trace.hpp"
#include "common/trace_json.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_trace.hpp"
#include "step06_tests_bugs/variants.hpp"

namespace {

using fa2::variants::Variant;

// The state after the last key tile: the last RowState of a trace.
const fa2::trace::RowState& last_state(const fa2::trace::Document& doc) {
  const fa2::trace::RowState* last = nullptr;
  for (const auto& e : doc.events) {
    if (const auto* s = std::get_if<fa2::trace::RowState>(&e)) last = s;
  }
  if (last == nullptr) throw std::runtime_error("the trace holds no state: the kernel never called note_state");
  return *last;
}

int run(Variant variant, const std::string& file) {
  const fa2::TracedProblem problem;  // the article's (2, 100, 100, 64), non-causal: where bug 2 shows
  const fa2::TracedProgram program;  // the last query tile of batch 0
  const std::string name = variant == Variant::bug1 ? "bug1" : (variant == Variant::bug2 ? "bug2" : "original");
  const std::string kernel = variant == Variant::bug1   ? "step 6's bug-1 twin (casts thrown away)"
                             : variant == Variant::bug2 ? "step 6's bug-2 twin (no k_pos < N_KEYS mask)"
                                                        : "step 6's original kernel (both bugs)";
  auto doc = fa2::trace_flash_program(fa2::variants::host_launcher(variant), problem, program, kernel,
                                      "viewer_bug_trace --variant=" + name + " --trace");
  if (variant == Variant::bug1) {
    doc.notes.emplace_back(
        "Bug 1 (the casts thrown away) changes nothing in float32: every number here is the fixed kernel's "
        "(step05_noncausal.json). Its bfloat16 build does not compile.");
  } else {
    // The same program of the fixed kernel, for the one number that tells bug 2's story.
    const auto fixed = fa2::trace_flash_program(&fa2::flash_fwd_host, problem, program, "fixed", "");
    const auto& bug = last_state(doc);
    const auto& ok = last_state(fixed);
    const std::int64_t padded = fa2::cdiv<std::int64_t>(problem.n_keys, 16) * 16 - problem.n_keys;
    doc.notes.emplace_back(
        "No k_pos < N_KEYS mask: the " + std::to_string(padded) +
        " zero keys padding the last key tile score exactly 0 and join the softmax. After it, row " +
        std::to_string(bug.first_row) + " has l_i = " + fa2::svg::fixed(bug.l[0], 4) + " against " +
        fa2::svg::fixed(ok.l[0], 4) + " in the fixed kernel: " + std::to_string(padded) +
        " * exp(0 - m_i) = " + fa2::svg::fixed(static_cast<double>(padded) * std::exp(-bug.m[0]), 4) + " more.");
  }
  fa2::cli::write_file(file, fa2::trace::to_json(doc));
  std::printf("Recorded %s: %zu events.\nwrote %s\n", doc.title.c_str(), doc.events.size(), file.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Variant variant = Variant::bug2;
  std::string file;
  fa2::cli::Parser cli("viewer_bug_trace",
                       "Records program (6, 0) of one of step 6's buggy kernels on the host path, on the article's\n"
                       "(2, 100, 100, 64), float32, non-causal (seed 2024), and writes the trace as JSON for the\n"
                       "trace viewer (common/viewer/trace_viewer.html).");
  cli.choice("--variant", variant, {{"original", Variant::original}, {"bug1", Variant::bug1}, {"bug2", Variant::bug2}},
             "which twin (step06_tests_bugs/kernels/)")
      .text("--trace", file, "FILE", "where to write the trace (JSON); required");
  return cli.run(argc, argv, [&] {
    if (file.empty()) throw fa2::cli::UsageError("--trace", "missing: where should the trace go?");
    return run(variant, file);
  });
}
