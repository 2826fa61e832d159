// doctest helpers shared by every step's test suite (test code only).
//
//   FA2_CHECK_CLOSE(actual_view, expected_view, tol, "O");   // prints the worst element
//   fa2::testing::mark_skipped("no GPU: ...");               // the binary then exits 77
//
// Exit code 77 is what ctest's SKIP_RETURN_CODE expects: a test case that could not run
// here (no GPU) shows up as "Skipped" with its reason, never as "Passed".
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "common/compare.hpp"

namespace fa2::testing {

// Records that the current test case could not run, and why (printed by the test).
void mark_skipped(const std::string& reason);
int skipped_count();

// The checkout's top folder, for tests that read committed files (figures, results, READMEs) by
// their place in it. Compiled into one file of fa2_testing (source_dir.cpp), so that the path
// does not enter every test's compile command, where it would keep a compiler cache from sharing
// objects between checkouts (a starter kit, the grader's copies).
const char* source_dir();

}  // namespace fa2::testing

#define FA2_CHECK_CLOSE(actual, expected, tol, what)                                                  \
  do {                                                                                                \
    const ::fa2::CloseReport fa2_report_ = ::fa2::compare_close((actual), (expected), (tol), (what)); \
    CHECK_MESSAGE(fa2_report_.ok, fa2_report_.summary());                                             \
  } while (0)
