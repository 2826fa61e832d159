// The main() of every test binary: doctest, plus exit code 77 when test cases were
// skipped (no GPU) and nothing failed, so that ctest reports them as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include "common/testing.hpp"

#include <cstdio>

namespace fa2::testing {
namespace {
int g_skipped = 0;
}

void mark_skipped(const std::string& reason) {
  ++g_skipped;
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
}

int skipped_count() {
  return g_skipped;
}

}  // namespace fa2::testing

int main(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  if (fa2::testing::skipped_count() > 0) {
    std::printf("%d test case(s) skipped (see SKIPPED lines above); exit code 77 tells ctest so.\n",
                fa2::testing::skipped_count());
    return 77;
  }
  return 0;
}
