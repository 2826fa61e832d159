// Every row of the variants table that has a host path (step05's kernel and the ladder v2-v4),
// in CI: each must pass step06's full test matrix (the article's test file) before the benchmark
// may time it, plus the cases the ladder's changes touch (causal shapes with N_q != N_k, every
// head dim, ragged tiles). Also: the table itself, the tuned entries' picks, which rows have
// launchers in this build, and step07's README showing the table unchanged.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "step05_fa2_kernel/tests/flash_test_support.hpp"
#include "step07_benchmark/kernels/lab/rows.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"

using fa2::testing::host_runner;
using fa2::variants::kernel_variants;

TEST_SUITE("variants") {
  TEST_CASE_TEMPLATE("every variant with a host path passes the article's test file there", T, float, fa2::bf16) {
    for (const auto& v : kernel_variants()) {
      if (v.host == nullptr || v.family == "ours" || !v.builds(fa2::dtype_of<T>(), 64))
        continue;  // step05: its own tests
      INFO(v.name());
      fa2::testing::check_article_matrix<T>(host_runner<T>(v.host), v.head_dims);
    }
  }

  TEST_CASE("the ladder handles causal N_q != N_k and ragged tiles on the host path") {
    for (const auto& v : kernel_variants()) {
      if (v.host == nullptr || v.family != "ladder") continue;
      INFO(v.name());
      for (const fa2::testing::FlashShape shape :
           {fa2::testing::FlashShape{1, 130, 70, 64}, {1, 70, 130, 32}, {2, 65, 65, 128}, {1, 3, 200, 16}}) {
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<float>(host_runner<float>(v.host), shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }

  TEST_CASE("step 5's tile variants take a sliding window on the host path, and the ladder refuses one naming it") {
    for (const auto& v : kernel_variants()) {
      if (v.host == nullptr) continue;
      INFO(v.name());
      const fa2::Window window{9, 3};
      if (v.family == "ours") {
        const auto c =
            fa2::testing::run_and_compare<float>(fa2::testing::window_runner<float>(v.host, window), {2, 70, 45, 64},
                                                 true, fa2::testing::flash_tolerance<float>(), window);
        CHECK_MESSAGE(c.O.ok, c.O.summary());
        CHECK_MESSAGE(c.L.ok, c.L.summary());
      } else {
        CHECK_THROWS_WITH_AS(fa2::testing::window_runner<float>(v.host, window)(
                                 fa2::Tensor<float, 3>(fa2::Extents<3>{1, 16, 64}).cview(),
                                 fa2::Tensor<float, 3>(fa2::Extents<3>{1, 16, 64}).cview(),
                                 fa2::Tensor<float, 3>(fa2::Extents<3>{1, 16, 64}).cview(), false),
                             doctest::Contains("window: "), std::invalid_argument);
      }
    }
  }

  TEST_CASE("v6b spreads a group of query heads over blocks only where few kv heads leave it short of blocks") {
    using fa2::flash::backward_group_splits, fa2::flash::dkv_partial_count;
    // Q and K batch elements (B x H and B x H_kv), N, D; the blocks the plan asks for on a GPU of
    // 132 SMs (an H100 or H200), and on one of 48.
    constexpr long long kBlocks = 2 * 132;
    CHECK(backward_group_splits({64, 4096, 128}, {64, 4096, 128}, kBlocks) == 1);  // multi-head: no group
    CHECK(backward_group_splits({64, 4096, 128}, {16, 4096, 128}, kBlocks) == 1);  // H_kv = 8, B = 2: 512 blocks
    CHECK(backward_group_splits({64, 4096, 128}, {2, 4096, 128}, kBlocks) == 8);   // multi-query: 64 blocks -> 512
    CHECK(backward_group_splits({64, 8192, 128}, {2, 8192, 128}, kBlocks) == 4);   // 128 blocks -> 512
    CHECK(backward_group_splits({64, 8192, 128}, {2, 8192, 128}, 2 * 48) == 1);    // 128 blocks fill 48 SMs
    CHECK(backward_group_splits({16, 300, 64}, {2, 257, 64}, kBlocks) == 8);       // 6 blocks: one head per block
    CHECK(backward_group_splits({6, 257, 64}, {1, 129, 64}, kBlocks) == 6);        // a group of 6: 1, 2, 3 or 6 parts
    CHECK(dkv_partial_count({16, 4096, 128}, 1) == 0);
    CHECK(dkv_partial_count({2, 4096, 128}, 8) == 2 * 2 * 8 * 4096 * 128);
    for (const long long min_blocks : {2LL * 48, kBlocks}) {
      for (const fa2::index_t group : {1, 2, 3, 4, 6, 8, 12, 32}) {
        for (const fa2::index_t kv_batch : {1, 2, 3, 5, 16, 300}) {
          for (const fa2::index_t N_k : {1, 127, 128, 129, 1000, 4096, 8192, 40000}) {
            INFO("group ", group, ", ", kv_batch, " K batch elements, N_k ", N_k, ", ", min_blocks, " blocks");
            const fa2::Extents<3> q{kv_batch * group, 100, 64}, k{kv_batch, N_k, 64};
            const fa2::index_t splits = backward_group_splits(q, k, min_blocks);
            const fa2::index_t blocks = kv_batch * ((N_k + 127) / 128);
            CHECK(group % splits == 0);
            CHECK((blocks * splits >= min_blocks || splits == group));  // enough blocks, or all there is
            for (fa2::index_t fewer = 1; fewer < splits; ++fewer) {     // and no fewer parts would do
              if (group % fewer == 0) CHECK(blocks * fewer < min_blocks);
            }
            CHECK(dkv_partial_count(k, static_cast<int>(splits)) ==
                  (splits > 1 ? 2 * kv_batch * splits * N_k * 64 : 0));
          }
        }
      }
    }
  }

  TEST_CASE("the variants table has unique keys, step05's kernel first, and the tuned v5 last") {
    const auto& table = kernel_variants();
    REQUIRE(table.size() >= 2);
    std::set<std::string> keys;
    for (const auto& v : table) {
      INFO(v.key);
      CHECK(keys.insert(v.key).second);
      CHECK(v.key.find_first_of(" ,\"") == std::string::npos);
      CHECK_FALSE(v.head_dims.empty());
      CHECK_FALSE(v.dtypes.empty());
      CHECK_FALSE(v.adds.empty());
    }
    CHECK(table.front().key == fa2::variants::kStep05Key);
    CHECK(table.back().key == "fast");
    CHECK(&fa2::variants::kernel_variant("v5.4") == &table[10]);
    CHECK_THROWS_WITH_AS(fa2::variants::kernel_variant("v9"), doctest::Contains("the keys are ours16"),
                         std::invalid_argument);
  }

  TEST_CASE("the ablations have launchers exactly when the lab is built, and say why not otherwise") {
    for (const auto& v : kernel_variants()) {
      INFO(v.key);
      const bool generated = v.key.starts_with("v5.") || v.key.starts_with("v5b.") || v.key.starts_with("v6.") ||
                             v.key.starts_with("v6b.");
      const bool has_launcher = v.cuda != nullptr || v.cuda_backward != nullptr;
      CHECK(v.ablation == generated);
      if (!v.ablation) {
        CHECK(fa2::variants::not_built_reason(v).empty());
      } else if (fa2::variants::ablations_built()) {
        CHECK(has_launcher);
        CHECK(fa2::variants::not_built_reason(v).empty());
      } else {
        CHECK_FALSE(has_launcher);
        CHECK_MESSAGE(fa2::variants::not_built_reason(v).find("FA2_BUILD_ABLATIONS") != std::string::npos,
                      fa2::variants::not_built_reason(v));
      }
    }
  }

  TEST_CASE("the product's plans run the rows their picks in kernels.def name") {
    using fa2::flash::Family, fa2::flash::Part, fa2::flash::ProductRows, fa2::lab::LabRows;
    const auto pick = [](Family f, int head_dim, bool causal, long long query_rows, bool window = false) {
      return fa2::flash::picked_row_key(f, head_dim, causal, window, query_rows);
    };
    // The sm90 forward: v6.11, except where another configuration won every round: at head dim 64
    // without a mask v6.17 on [2^15, 2^16) query rows and v6.20 from 2^16; with it v6.17 on
    // [2^16, 2^17) and v6.20 from 2^17; at 128 v6.11, and v6.25 without a mask from 2^19. With a
    // window, v6.17 at 64 and v6.11 at 128.
    CHECK(pick(Family::sm90_forward, 64, false, (1 << 15) - 1) == "v6.11");
    CHECK(pick(Family::sm90_forward, 64, false, 1 << 15) == "v6.17");
    CHECK(pick(Family::sm90_forward, 64, false, (1 << 16) - 1) == "v6.17");
    CHECK(pick(Family::sm90_forward, 64, false, 1 << 16) == "v6.20");
    CHECK(pick(Family::sm90_forward, 64, false, 1 << 19) == "v6.20");
    CHECK(pick(Family::sm90_forward, 64, true, (1 << 16) - 1) == "v6.11");
    CHECK(pick(Family::sm90_forward, 64, true, 1 << 16) == "v6.17");
    CHECK(pick(Family::sm90_forward, 64, true, (1 << 17) - 1) == "v6.17");
    CHECK(pick(Family::sm90_forward, 64, true, 1 << 17) == "v6.20");
    CHECK(pick(Family::sm90_forward, 64, true, 1 << 19) == "v6.20");
    CHECK(pick(Family::sm90_forward, 128, false, (1 << 19) - 1) == "v6.11");
    CHECK(pick(Family::sm90_forward, 128, false, 1 << 19) == "v6.25");
    CHECK(pick(Family::sm90_forward, 128, false, 1 << 20) == "v6.25");
    CHECK(pick(Family::sm90_forward, 128, false, 1 << 20, true) == "v6.11");
    CHECK(pick(Family::sm90_forward, 128, true, 1 << 20) == "v6.11");
    CHECK(pick(Family::sm90_forward, 64, false, 1 << 19, true) == "v6.17");
    CHECK(pick(Family::sm90_forward, 128, true, 0, true) == "v6.11");
    CHECK(pick(Family::sm90_forward, 32, false, 0).empty());
    // The sm80 path: v5.4 and v5.11 up to head dim 64, v5.8 and v5.14 at 128, with a window too;
    // the backward v5b.11, v5b.7 at 128.
    CHECK(pick(Family::sm80_forward, 32, false, 0) == "v5.4");
    CHECK(pick(Family::sm80_forward, 64, true, 0) == "v5.11");
    CHECK(pick(Family::sm80_forward, 64, true, 0, true) == "v5.11");
    CHECK(pick(Family::sm80_forward, 128, false, 0) == "v5.8");
    CHECK(pick(Family::sm80_forward, 128, true, 0) == "v5.14");
    CHECK(pick(Family::sm80_backward, 32, true, 0) == "v5b.11");
    CHECK(pick(Family::sm80_backward, 128, false, 0, true) == "v5b.7");
    // The sm90 backward: the dQ writer warp with 128-query steps at head dim 64 (causal with the
    // masked steps apart), at head dim 128 with 64, both with joint turns and head by head on long
    // calls when deterministic, and head by head by default where the query side overflows the L2
    // (v6b.16); at head dim 128 without a mask the same with 80-query steps (v6b.20). With a
    // window, the windowed twins of v6b.18 at head dim 64 and of v6b.8 at 128.
    CHECK(pick(Family::sm90_backward, 64, false, 0) == "v6b.16");
    CHECK(pick(Family::sm90_backward, 64, false, 1 << 20) == "v6b.16");
    CHECK(pick(Family::sm90_backward, 64, true, 0) == "v6b.16");
    CHECK(pick(Family::sm90_backward, 64, true, 1 << 20) == "v6b.16");
    CHECK(pick(Family::sm90_backward, 64, false, 0, true) == "v6b.18");
    CHECK(pick(Family::sm90_backward, 128, false, 0) == "v6b.20");
    CHECK(pick(Family::sm90_backward, 128, false, 1 << 20) == "v6b.20");
    CHECK(pick(Family::sm90_backward, 128, true, 1 << 20) == "v6b.16");
    CHECK(pick(Family::sm90_backward, 128, false, 1 << 20, true) == "v6b.8");
    CHECK(pick(Family::sm90_backward, 64, true, 0, true) == "v6b.18");
    CHECK(pick(Family::sm90_backward, 32, false, 0).empty());
    // The product compiles its rows where the picks name them; the lab compiles them at the other
    // head dims they list, and its own rows at theirs.
    const int v5_4 = fa2::flash::row_index<ProductRows, Family::sm80_forward>("v5.4");
    REQUIRE(v5_4 >= 0);
    CHECK(fa2::flash::held<ProductRows, Family::sm80_forward>(Part::product, v5_4, 32, false));
    CHECK_FALSE(fa2::flash::held<ProductRows, Family::sm80_forward>(Part::lab, v5_4, 32, false));
    CHECK(fa2::flash::held<ProductRows, Family::sm80_forward>(Part::lab, v5_4, 64, true));
    CHECK_FALSE(fa2::flash::held<ProductRows, Family::sm80_forward>(Part::product, v5_4, 64, true));
    const int v5_1 = fa2::flash::row_index<LabRows, Family::sm80_forward>("v5.1");
    REQUIRE(v5_1 >= 0);
    CHECK(fa2::flash::held<LabRows, Family::sm80_forward>(Part::lab, v5_1, 64, false));
    CHECK_FALSE(fa2::flash::held<LabRows, Family::sm80_forward>(Part::lab, v5_1, 128, false));
    CHECK_FALSE(fa2::flash::held<LabRows, Family::sm80_forward>(Part::product, v5_1, 64, false));
    // A configuration is a row of one table only.
    CHECK(fa2::flash::row_index<LabRows, Family::sm80_forward>("v5.4") == -1);
    CHECK(fa2::flash::row_index<ProductRows, Family::sm80_forward>("v5.1") == -1);
  }

  TEST_CASE("step07's README shows the variants table exactly as the code has it") {
    std::ifstream in(std::string(fa2::testing::source_dir()) + "/step07_benchmark/README.md");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string readme = text.str();
    const std::string begin = "<!-- variants table: generated by step07_bench --variants -->\n";
    const std::string end = "<!-- end of variants table -->";
    const auto b = readme.find(begin), e = readme.find(end);
    REQUIRE_MESSAGE(b != std::string::npos, "README.md lacks the line " << begin);
    REQUIRE(e != std::string::npos);
    const std::string shown = readme.substr(b + begin.size(), e - b - begin.size());
    CHECK_MESSAGE(shown == fa2::variants::variants_markdown(),
                  "step07's README table is out of date; replace it with the output of step07_bench --variants:\n"
                      << fa2::variants::variants_markdown());
  }
}
