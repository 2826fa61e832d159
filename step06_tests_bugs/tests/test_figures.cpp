// step06_figures' tests: the committed figures (figures/*.svg, which the ctest
// step06_figures_match_the_committed_ones keeps equal to what the program draws) say what the
// kernels do: rerun on the figures' seed, the bug-2, bug-1 and fixed kernels give the numbers the
// figures carry, bug 2's L follows log(exp(L) + n), and bug 1's bf16 refusal is the library's own.
//   ctest --test-dir build/<preset> -L step06 -L figures
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/tensor.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"
#include "step06_tests_bugs/variants.hpp"

namespace {

using Attrs = std::map<std::string, std::string>;
using fa2::index_t;
using fa2::variants::Variant;

std::string read_source(const std::string& relative) {
  const std::string path = std::string(fa2::testing::source_dir()) + "/" + relative;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The attributes of every element of a committed figure that carries `key`.
std::vector<Attrs> elements_with(const std::string& figure, const std::string& key) {
  const std::string doc = read_source("step06_tests_bugs/figures/" + figure);
  static const std::regex tag_re(R"(<(rect|circle|polyline|text)\s([^>]*)>)");
  static const std::regex attr_re(R"re(([-A-Za-z0-9_:]+)="([^"]*)")re");
  std::vector<Attrs> out;
  for (std::sregex_iterator t(doc.begin(), doc.end(), tag_re), end; t != end; ++t) {
    Attrs a;
    const std::string body = (*t)[2].str();
    for (std::sregex_iterator m(body.begin(), body.end(), attr_re); m != end; ++m) a[(*m)[1].str()] = (*m)[2].str();
    if (a.count(key)) out.push_back(a);
  }
  return out;
}

double num(const Attrs& a, const std::string& key) {
  REQUIRE_MESSAGE(a.count(key), "an element lacks " << key);
  return std::stod(a.at(key));
}
index_t whole(const Attrs& a, const std::string& key) {
  return static_cast<index_t>(std::stoll(a.at(key)));
}

// The figures' problem: (2, 100, 100, 64), float32, not causal, inputs N(0, 1) from their seed.
constexpr index_t kB = 2, kN = 100, kD = 64;

struct Rerun {
  fa2::AttentionReference ref;
  fa2::FlashOutputs<float> bug1, bug2, fixed;
};

Rerun rerun_on_the_figures_seed() {
  const auto seeds = elements_with("bug2_padded_keys.svg", "data-seed");
  REQUIRE(seeds.size() == 1);
  fa2::Rng rng(static_cast<std::uint64_t>(std::stoull(seeds[0].at("data-seed"))));
  const auto Q = fa2::random_normal<float, 3>({kB, kN, kD}, rng);
  const auto K = fa2::random_normal<float, 3>({kB, kN, kD}, rng);
  const auto V = fa2::random_normal<float, 3>({kB, kN, kD}, rng);
  const auto run = [&](Variant v) {
    return fa2::run_with_host_tensors<float>(fa2::variants::host_launcher(v), Q.cview(), K.cview(), V.cview(), false);
  };
  return {fa2::reference_attention<float>(Q.cview(), K.cview(), V.cview(), false), run(Variant::bug1),
          run(Variant::bug2), run(Variant::fixed)};
}

bool outside(double got, double want, fa2::Tolerance tol) {
  return std::fabs(got - want) > tol.atol + tol.rtol * std::fabs(want);
}

// Counts the O elements of one map cell that are outside the tolerance, and those that differ
// from the fixed kernel's.
void check_block(const Attrs& cell, const fa2::FlashOutputs<float>& out, const Rerun& r) {
  const auto tol = fa2::testing::flash_tolerance<float>();
  const index_t b = whole(cell, "data-batch"), q0 = whole(cell, "data-q0"), q1 = whole(cell, "data-q1"),
                d0 = whole(cell, "data-d0");
  const index_t d1 = d0 + whole(cell, "data-elements") / (q1 - q0);
  index_t n_outside = 0, n_differ = 0;
  for (index_t q = q0; q < q1; ++q) {
    for (index_t d = d0; d < d1; ++d) {
      n_outside += outside(out.O(b, q, d), r.ref.O(b, q, d), tol) ? 1 : 0;
      n_differ += out.O(b, q, d) != r.fixed.O(b, q, d) ? 1 : 0;
    }
  }
  INFO("batch ", b, ", query rows ", q0, "-", q1 - 1, ", head dims from ", d0);
  CHECK(whole(cell, "data-outside") == n_outside);
  CHECK(whole(cell, "data-differ-from-fixed") == n_differ);
}

}  // namespace

TEST_SUITE("figures") {
  TEST_CASE("step 6's bug-2 figure: every row's L is log(exp(L) + n), n the zero keys padding the last key tile") {
    const index_t k_tile = fa2::TileSizes<>::k_tile;
    const index_t n = (k_tile - kN % k_tile) % k_tile;
    CHECK(n == 12);
    const auto models = elements_with("bug2_padded_keys.svg", "data-n-padded");
    REQUIRE(models.size() == kB);  // one model curve per batch element
    for (const auto& m : models) CHECK(whole(m, "data-n-padded") == n);
    const auto rows = elements_with("bug2_padded_keys.svg", "data-l-kernel");
    REQUIRE(rows.size() == kB * kN);
    const auto tol = fa2::testing::flash_tolerance<float>();
    for (const auto& a : rows) {
      const double L = num(a, "data-l-ref"), L_bug = num(a, "data-l-kernel");
      INFO("batch ", a.at("data-batch"), ", query ", a.at("data-query"));
      // The kernel's own float32 error on L is a few 1e-4; the phantom keys move L by 0.04 or more.
      CHECK(std::fabs(L_bug - std::log(std::exp(L) + static_cast<double>(n))) < 1e-3);
      CHECK(a.at("data-outside") == (outside(L_bug, L, tol) ? "true" : "false"));
      CHECK_FALSE(outside(num(a, "data-l-fixed"), L, tol));
    }
  }

  TEST_CASE("step 6's figures carry what the kernels compute on the figures' seed") {
    const Rerun r = rerun_on_the_figures_seed();
    for (const auto& a : elements_with("bug2_padded_keys.svg", "data-l-kernel")) {
      const index_t b = whole(a, "data-batch"), q = whole(a, "data-query");
      INFO("batch ", b, ", query ", q);
      // Printed with 6 decimals.
      CHECK(std::fabs(num(a, "data-l-ref") - r.ref.L(b, q)) <= 1e-6);
      CHECK(std::fabs(num(a, "data-l-kernel") - static_cast<double>(r.bug2.L(b, q))) <= 1e-6);
      CHECK(std::fabs(num(a, "data-l-fixed") - static_cast<double>(r.fixed.L(b, q))) <= 1e-6);
    }
    int cells = 0;
    for (const auto& cell : elements_with("bug2_padded_keys.svg", "data-outside")) {
      if (cell.count("data-kernel") && cell.at("data-kernel") == "bug2" && cell.count("data-q0")) {
        check_block(cell, r.bug2, r);
        ++cells;
      }
    }
    for (const auto& cell : elements_with("bug1_discarded_casts.svg", "data-q0")) {
      check_block(cell, r.bug1, r);
      ++cells;
    }
    CHECK(cells == 2 * 2 * 7 * 8);  // two maps of (batch, query tile) x 8 blocks of head dims
  }

  TEST_CASE("step 6's bug-1 figure: float32 bit for bit the fixed kernel, bf16 refused as the library refuses it") {
    const Rerun r = rerun_on_the_figures_seed();
    for (index_t b = 0; b < kB; ++b) {
      for (index_t q = 0; q < kN; ++q) {
        CHECK(r.bug1.L(b, q) == r.fixed.L(b, q));
        for (index_t d = 0; d < kD; ++d) CHECK(r.bug1.O(b, q, d) == r.fixed.O(b, q, d));
      }
    }
    const auto cells = elements_with("bug1_discarded_casts.svg", "data-q0");
    CHECK(cells.size() == 2 * 7 * 8);
    for (const auto& cell : cells) {
      CHECK(cell.at("data-outside") == "0");
      CHECK(cell.at("data-differ-from-fixed") == "0");
    }
    const auto box = elements_with("bug1_discarded_casts.svg", "data-built");
    REQUIRE(box.size() == 1);
    CHECK(box[0].at("data-built") ==
          (fa2::variants::builds_for(Variant::bug1, fa2::DType::bfloat16) ? "true" : "false"));
    std::string refusal = "bug1_host ran on bf16";
    try {
      const fa2::Tensor<fa2::bf16, 3> t(fa2::Extents<3>{1, 16, kD});
      (void)fa2::run_with_host_tensors<fa2::bf16>(fa2::variants::host_launcher(Variant::bug1), t.cview(), t.cview(),
                                                  t.cview(), false);
    } catch (const std::invalid_argument& e) {
      refusal = e.what();
    }
    const auto shown = elements_with("bug1_discarded_casts.svg", "data-refusal");
    REQUIRE(shown.size() == 1);
    CHECK(shown[0].at("data-refusal") == refusal);
    // The compiler's words the figure quotes are the static assertion of step 5's dot().
    CHECK(read_source("step05_fa2_kernel/tile_dot.hpp")
              .find("dot: both operands must have the same element type (here "
                    "they differ)") != std::string::npos);
  }
}
