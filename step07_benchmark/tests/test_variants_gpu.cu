// Every row of the variants table on the GPU, against the float64 reference: step05's kernel at
// larger tiles, the ladder (v2-v4, float32 and bf16), the fast kernel's configurations (v5, bf16),
// v6 on Hopper (skipped, with the reason, on other GPUs or in a build without sm_90a) and the
// fast backwards (v5b.*, v6b.*: dQ, dK, dV, also with deterministic gradients). The ablations (v5.x, v5b.x, v6.x) run
// when the lab is built (FA2_BUILD_ABLATIONS), and are named as not run otherwise. A variant that fails here is wrong,
// whatever its speed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "common/testing.hpp"
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_test_support_cuda.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"

using fa2::testing::gpu_runner;
using fa2::variants::kernel_variants;

namespace {

// The current GPU's SM count (the sm90 backward's plan asks for two blocks per SM).
int sm_count() {
  int device = 0, count = 0;
  FA2_CUDA_CHECK(cudaGetDevice(&device));
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// The product's forward on the sm80 path, checks first (what kernel="fast" runs without sm_90).
void run_sm80_forward(const fa2::FlashFwdArgs& args) {
  fa2::flash::run(fa2::flash::plan_forward(args, fa2::flash::Path::sm80));
}

// Shapes beyond the article's: causal with N_q != N_k (both ways), lengths that are not
// multiples of the 64 and 128 tiles, a single query, one key, and every supported head dim.
const std::vector<fa2::testing::FlashShape>& extra_shapes() {
  static const std::vector<fa2::testing::FlashShape> shapes = {{1, 130, 70, 64}, {1, 70, 130, 64}, {2, 1000, 1000, 64},
                                                               {1, 1, 333, 128}, {3, 257, 1, 32},  {2, 300, 300, 128},
                                                               {1, 129, 129, 32}};
  return shapes;
}

// O and L of `run` against the float64 reference on `shape`, causal and not.
void check_extra_shape(const fa2::testing::FlashRunner<fa2::bf16>& run, const fa2::testing::FlashShape& shape) {
  for (bool causal : {false, true}) {
    const auto c = fa2::testing::run_and_compare<fa2::bf16>(run, shape, causal);
    CHECK_MESSAGE(c.O.ok, c.O.summary());
    CHECK_MESSAGE(c.L.ok, c.L.summary());
  }
}

void check_extra(const fa2::testing::FlashRunner<fa2::bf16>& run, const std::vector<int>& head_dims = {}) {
  for (const auto& shape : extra_shapes()) {
    if (fa2::testing::takes_head_dim(head_dims, shape.D)) check_extra_shape(run, shape);
  }
}

// Whether the row is among those FA2_TEST_ROWS names (a comma-separated list of keys, such as
// "v6b.9,v6b.10"); every row when it is unset or empty.
bool row_selected(std::string_view key) {
  const char* rows = std::getenv("FA2_TEST_ROWS");
  if (rows == nullptr) return true;
  std::string_view list(rows);
  if (list.empty()) return true;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (list.substr(0, comma) == key) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

// Whether this build has the row's kernels (an ablation needs the lab) and this GPU can run its
// forward (v6 needs sm_90a code and an sm_90 device). Says why not, once per row, when it cannot.
bool runs_here(const fa2::variants::KernelVariant& v) {
  if (!row_selected(v.key)) {
    MESSAGE(v.key, " not run: not among FA2_TEST_ROWS");
    return false;
  }
  if (const std::string why = fa2::variants::not_built_reason(v); !why.empty()) {
    MESSAGE(v.key, " not run: ", why);
    return false;
  }
  if (v.family != "sm90") return true;
  const std::string why = fa2::flash::sm90_unavailable();
  if (why.empty()) return true;
  MESSAGE(v.key, " not run: ", why);
  return false;
}

// Whether a row of v5 or v6 (or a tuned entry over them) takes a sliding window: every one but v6's
// rows that load with cp.async (v6.1 to v6.5) or compute with three warpgroups, whose windowed
// twins are not built (sm90/config.cuh, TAKES_WINDOW).
bool takes_window(std::string_view key) {
  static constexpr std::string_view refusing[] = {"v6.1", "v6.2",  "v6.3",  "v6.4",  "v6.5",
                                                  "v6.8", "v6.12", "v6.16", "v6.20", "v6.23"};
  return std::find(std::begin(refusing), std::end(refusing), key) == std::end(refusing);
}

// Whether a fast backward takes a sliding window at (head dim, mask): every row does (v5's and
// v6b's windowed twins), but the tuned v6b, the sm90 path alone, only where kernels.def picks one
// of its rows for windows.
bool backward_takes_window(const fa2::variants::KernelVariant& v, long long head_dim, bool causal) {
  return v.key != "v6b" || fa2::flash::has_window_picks<fa2::flash::Family::sm90_backward>(head_dim, causal);
}

// The tuned forward and every v6 configuration that runs here: the layout checks below.
std::vector<const fa2::variants::KernelVariant*> layout_checked_forwards() {
  std::vector<const fa2::variants::KernelVariant*> out;
  for (const auto& v : kernel_variants()) {
    if (v.cuda != nullptr && (v.key == "v5" || v.key == "fast" || v.family == "sm90") && runs_here(v)) {
      out.push_back(&v);
    }
  }
  return out;
}

// The rows with a GPU backward other than step05's (which has its own suite, -L backward).
std::vector<const fa2::variants::KernelVariant*> fast_backwards() {
  std::vector<const fa2::variants::KernelVariant*> out;
  for (const auto& v : kernel_variants()) {
    if (v.family != "ours" && v.passes != "forward" && runs_here(v) && v.cuda_backward != nullptr) out.push_back(&v);
  }
  return out;
}

// The backward under test (backward_given_parts) with FlashBwdArgs::dkv_partial given, poisoned
// with NaN so that a part read before it is written shows: v6b then spreads each group of query
// heads over several blocks where few kv heads leave it short of blocks.
fa2::CudaBwdLaunchFn backward_given_parts = nullptr;
void with_group_parts(const fa2::FlashBwdArgs& args, ::CUstream_st* stream) {
  fa2::FlashBwdArgs a = args;
  // The product's plan sizes the workspace for this GPU (0 where the sm90 backward would not split).
  const auto count = static_cast<std::size_t>(fa2::flash::plan_backward(a, fa2::flash::Path::sm90).dkv_partial_floats);
  fa2::cuda::DeviceBuffer<float> parts(count);
  if (count > 0) FA2_CUDA_CHECK(cudaMemsetAsync(parts.data(), 0xFF, parts.bytes(), stream));
  a.dkv_partial = parts.data();
  backward_given_parts(a, stream);
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream));  // the parts must outlive the launch
}

// The backwards a test case checks on one shape share its inputs and float64 gradients
// (flash_bwd_test_support.hpp's solve_backward_problem): the reference costs far more than they do.
template <class T>
const fa2::testing::SolvedBwdProblem<T>& solved_problem(const fa2::testing::FlashShape& shape, bool causal,
                                                        double qk_scale) {
  using Key = std::tuple<fa2::index_t, fa2::index_t, fa2::index_t, fa2::index_t, fa2::index_t, bool, double>;
  static std::map<Key, std::unique_ptr<fa2::testing::SolvedBwdProblem<T>>> solved;
  const Key key{shape.B, shape.N_q, shape.N_k, shape.D, shape.group, causal, qk_scale};
  if (const auto it = solved.find(key); it != solved.end()) return *it->second;
  if (solved.size() >= 64) solved.clear();  // a few hundred MB at most
  auto problem = std::make_unique<fa2::testing::SolvedBwdProblem<T>>(
      fa2::testing::solve_backward_problem<T>(shape, causal, qk_scale));
  return *solved.emplace(key, std::move(problem)).first->second;
}

// dQ, dK, dV of `backward` against the float64 reference on `shape`, causal and not.
template <class T = fa2::bf16>
void check_backward_shape(fa2::CudaBwdLaunchFn backward, const fa2::testing::FlashShape& shape, double qk_scale = 1.0,
                          fa2::testing::GradientTolerance tol = fa2::testing::gradient_tolerance<T>(),
                          bool deterministic = false) {
  const auto passes = fa2::testing::gpu_passes<T>(backward, deterministic);
  for (bool causal : {false, true}) {
    fa2::testing::require_close(
        fa2::testing::check_solved_backward<T>(passes, solved_problem<T>(shape, causal, qk_scale), causal, tol));
  }
}

// Blocks that spin for a while, on a stream of their own: the SMs a backward launched meanwhile
// finds taken or free differ from run to run, and so does the order its blocks start in.
__global__ void keep_busy(long long cycles) {
  const long long start = clock64();
  const long long mine = cycles * (1 + blockIdx.x % 5);
  while (clock64() - start < mine) {
  }
}

}  // namespace

TEST_SUITE("gpu+variants") {
  TEST_CASE_TEMPLATE("GPU: every variant passes the article's test file in the dtypes it is built for", T, float,
                     fa2::bf16, fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if (std::find(v.dtypes.begin(), v.dtypes.end(), fa2::dtype_of<T>()) == v.dtypes.end() || !runs_here(v) ||
          v.cuda == nullptr)
        continue;
      INFO(v.name());
      fa2::testing::check_article_matrix<T>(gpu_runner<T>(v.cuda), v.head_dims);
    }
  }

  TEST_CASE("GPU: every variant takes grouped-query K and V: groups of 1, 2, 4 and 8 query heads per kv head") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if (v.family == "ours" || !runs_here(v) || v.cuda == nullptr) continue;  // step05's: its own GPU tests
      INFO(v.name());
      for (const int D : {32, 64, 128}) {
        if (!fa2::testing::takes_head_dim(v.head_dims, D)) continue;
        for (const fa2::index_t group : {1, 2, 4, 8}) {
          check_extra_shape(gpu_runner<fa2::bf16>(v.cuda), {16, 300, 257, D, group});
        }
      }
    }
  }

  TEST_CASE("GPU: every v5 row, v6's rows of two TMA warpgroups and the fast forward take a sliding window") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if ((v.family != "sm80" && v.family != "sm90" && v.key != "fast") || !runs_here(v) || v.cuda == nullptr) {
        continue;
      }
      INFO(v.name());
      if (!takes_window(v.key)) {
        fa2::Tensor<fa2::bf16, 3> x(fa2::Extents<3>{1, 64, 64});
        CHECK_THROWS_WITH_AS(gpu_runner<fa2::bf16>(v.cuda, fa2::Window{8, 0})(x.cview(), x.cview(), x.cview(), false),
                             doctest::Contains("takes no sliding window"), std::invalid_argument);
        continue;
      }
      for (const fa2::Window window : fa2::testing::test_windows()) {
        for (const int D : {32, 64, 128}) {
          if (!fa2::testing::takes_head_dim(v.head_dims, D)) continue;
          for (const fa2::testing::FlashShape shape :
               {fa2::testing::FlashShape{2, 300, 257, D}, {1, 257, 300, D}, {4, 130, 130, D, 2}}) {
            for (bool causal : {false, true}) {
              const auto c =
                  fa2::testing::run_and_compare<fa2::bf16>(gpu_runner<fa2::bf16>(v.cuda, window), shape, causal,
                                                           fa2::testing::flash_tolerance<fa2::bf16>(), window);
              CHECK_MESSAGE(c.O.ok, c.O.summary());
              CHECK_MESSAGE(c.L.ok, c.L.summary());
            }
          }
        }
      }
      // 20 queries with window (0, 0) see keys 0 to 19: the tiles from key 128 on are never read.
      CHECK(fa2::testing::skips_unseen_key_tiles<fa2::bf16>(gpu_runner<fa2::bf16>(v.cuda, fa2::Window{0, 0}), 20, 1024,
                                                            64, 128));
    }
    // On a Hopper GPU the fast forward runs v6 with a window, a row of its own picks.
    fa2::Tensor<fa2::bf16, 3> x(fa2::Extents<3>{1, 64, 64});
    fa2::Tensor<float, 2> l(fa2::Extents<2>{1, 64});
    auto args = fa2::make_flash_args<fa2::bf16>(x.cview(), x.cview(), x.cview(), x.view(), l.view(), false);
    args.window = {8, 0};
    if (fa2::flash::sm90_unavailable().empty()) {
      CHECK(fa2::flash::plan_forward(args, fa2::flash::Path::sm90).refused.empty());
      CHECK(fa2::variants::product_forward_choice(args) == "v6");
      for (const bool causal : {false, true}) {
        args.causal = causal;
        for (const int D : {64, 128}) {
          args.q_shape[2] = args.k_shape[2] = args.v_shape[2] = D;
          CHECK(takes_window(fa2::flash::plan_forward(args).kernel));
        }
      }
    }
  }

  TEST_CASE("GPU: every bf16 variant handles causal N_q != N_k, ragged tiles and odd lengths") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if (v.family == "ours" || !runs_here(v) || v.cuda == nullptr) continue;  // step05's: its own GPU tests
      INFO(v.name());
      check_extra(gpu_runner<fa2::bf16>(v.cuda), v.head_dims);
    }
  }
}

TEST_SUITE("gpu+variants") {
  TEST_CASE("GPU: the tuned forward and v6 read and write a head of a (B, N, H, D) tensor through its strides") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : layout_checked_forwards()) {
      INFO(v->name());
      for (const int D : v->head_dims) {
        if (D < 64) continue;
        for (bool causal : {false, true}) fa2::testing::check_forward_head_view(v->cuda, causal, D);
      }
    }
  }

  TEST_CASE("GPU: the tuned forward and v6 address batch strides past 2^31 elements in 64 bits") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : layout_checked_forwards()) {
      INFO(v->name());
      const int D = *std::max_element(v->head_dims.begin(), v->head_dims.end());
      for (bool causal : {false, true}) fa2::testing::check_forward_batch_stride_past_2_31(v->cuda, causal, D);
    }
  }

  TEST_CASE("GPU: v6 and the fast forward are right when a block computes many query tiles") {
    // More (query tile, head) items than the H200 has SMs: a persistent block takes several, so
    // its K/V ring, its barriers' phases, Q's reload and O's store run on from one to the next.
    // Ragged on both sides, N_q != N_k.
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : layout_checked_forwards()) {
      INFO(v->name());
      for (const int D : v->head_dims) {
        if (D < 64) continue;
        check_extra_shape(gpu_runner<fa2::bf16>(v->cuda), {140, 130, 100, D});
      }
    }
  }

  TEST_CASE("GPU: the fast forward runs v6 where it can and v5 elsewhere, and says which and why") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::Tensor<fa2::bf16, 3> x32({1, 8, 32}), x64({1, 8, 64});
    fa2::Tensor<float, 2> l({1, 8});
    const auto args = [&](fa2::Tensor<fa2::bf16, 3>& x) {
      return fa2::make_flash_args<fa2::bf16>(x.cview(), x.cview(), x.cview(), x.view(), l.view(), true);
    };
    const std::string why_not_v6 = fa2::flash::sm90_unavailable();
    if (why_not_v6.empty()) {
      CHECK(fa2::variants::product_forward_choice(args(x64)) == "v6");
    } else {
      CHECK(fa2::variants::product_forward_choice(args(x64)) == "v5 (" + why_not_v6 + ")");
    }
    CHECK(fa2::variants::product_forward_choice(args(x32)) == "v5 (head_dim: v6 takes 64 or 128)");
  }

  TEST_CASE("GPU: the fast backward runs v6b where it can and v5's elsewhere, and says which and why") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::Tensor<fa2::bf16, 3> x32({1, 8, 32}), x64({1, 8, 64});
    fa2::Tensor<float, 2> rows({1, 8});
    fa2::Tensor<float, 3> acc32({1, 8, 32}), acc64({1, 8, 64});
    const auto args = [&](fa2::Tensor<fa2::bf16, 3>& x, fa2::Tensor<float, 3>& acc) {
      return fa2::make_flash_bwd_args<fa2::bf16>(x.cview(), x.cview(), x.cview(), x.cview(), rows.cview(), x.cview(),
                                                 rows.view(), x.view(), acc.view(), x.view(), x.view(), true);
    };
    const std::string why_not_v6 = fa2::flash::sm90_unavailable();
    const auto plan = fa2::flash::plan_backward(args(x64, acc64));
    REQUIRE(plan.runs());
    if (why_not_v6.empty()) {
      CHECK(fa2::variants::product_backward_choice(args(x64, acc64)) == "v6b");
      CHECK(plan.kernel.starts_with("v6b."));
    } else {
      CHECK(fa2::variants::product_backward_choice(args(x64, acc64)) ==
            "v5 (v6b needs what v6 needs; " + why_not_v6 + ")");
      CHECK(plan.kernel.starts_with("v5b."));
    }
    CHECK(fa2::variants::product_backward_choice(args(x32, acc32)) == "v5 (head_dim: v6b takes 64 or 128)");
    CHECK(fa2::flash::plan_backward(args(x64, acc64), fa2::flash::Path::sm80).kernel.starts_with("v5b."));
  }

  TEST_CASE("GPU: every fast backward gives the float64 reference's gradients on the article's shapes") {
    FA2_SKIP_WITHOUT_GPU();
    REQUIRE_FALSE(fast_backwards().empty());
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto& shape : fa2::testing::article_shapes()) {
        if (fa2::testing::takes_head_dim(v->head_dims, shape.D)) check_backward_shape(v->cuda_backward, shape);
      }
    }
  }

  TEST_CASE("GPU: every fast backward handles N_q != N_k both ways, ragged tiles, one query or one key") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto D : v->head_dims) {
        for (const fa2::testing::FlashShape shape : {fa2::testing::FlashShape{2, 37, 53, D},
                                                     {1, 100, 30, D},
                                                     {3, 1, 1, D},
                                                     {1, 20, 300, D},
                                                     {1, 300, 20, D},
                                                     {2, 257, 129, D},
                                                     {1, 1, 200, D},
                                                     {1, 200, 1, D}}) {
          check_backward_shape(v->cuda_backward, shape);
        }
      }
    }
  }

  TEST_CASE("GPU: every fast backward sums dK and dV over each group of query heads (1, 2, 4, 8), also deterministic") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto D : v->head_dims) {
        for (const fa2::index_t group : {1, 2, 4, 8}) {
          for (bool deterministic : {false, true}) {
            check_backward_shape(v->cuda_backward, {16, 300, 257, D, group}, 1.0,
                                 fa2::testing::gradient_tolerance<fa2::bf16>(), deterministic);
          }
        }
      }
    }
  }

  TEST_CASE("GPU: given the workspace, every fast backward spreads groups over blocks and sums them right") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      backward_given_parts = v->cuda_backward;
      for (const auto D : v->head_dims) {
        // (B x H, N_q, N_k, D, group): v6b takes 8 parts of 1 head, 16 of 2, 4 of 1 and 6 of 1.
        for (const fa2::testing::FlashShape shape : {fa2::testing::FlashShape{16, 300, 257, D, 8},
                                                     {32, 17, 2500, D, 32},
                                                     {4, 33, 1000, D, 4},
                                                     {6, 257, 129, D, 6}}) {
          REQUIRE(fa2::flash::backward_group_splits({shape.B, shape.N_q, D}, {shape.B_kv(), shape.N_k, D},
                                                    2LL * sm_count()) > 1);
          for (bool deterministic : {false, true}) {
            check_backward_shape(with_group_parts, shape, 1.0, fa2::testing::gradient_tolerance<fa2::bf16>(),
                                 deterministic);
          }
        }
      }
    }
  }

  TEST_CASE(
      "GPU: every fast backward takes a sliding window, also deterministic, and skips the query tiles it misses") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const fa2::Window window : fa2::testing::test_windows()) {
        for (const auto D : v->head_dims) {
          for (const fa2::testing::FlashShape shape :
               {fa2::testing::FlashShape{2, 300, 257, D}, {1, 257, 300, D}, {4, 130, 130, D, 2}}) {
            for (bool causal : {false, true}) {
              if (!backward_takes_window(*v, D, causal)) {
                CHECK_THROWS_WITH(fa2::testing::run_backward_and_compare<fa2::bf16>(
                                      fa2::testing::gpu_passes<fa2::bf16>(v->cuda_backward, false, window), shape,
                                      causal, 1.0, fa2::testing::gradient_tolerance<fa2::bf16>(), window),
                                  doctest::Contains("no pick for a sliding window"));
                continue;
              }
              for (bool deterministic : {false, true}) {
                fa2::testing::require_close(fa2::testing::run_backward_and_compare<fa2::bf16>(
                    fa2::testing::gpu_passes<fa2::bf16>(v->cuda_backward, deterministic, window), shape, causal, 1.0,
                    fa2::testing::gradient_tolerance<fa2::bf16>(), window));
              }
            }
          }
        }
      }
      // Window (0, 0) over 1024 queries and keys: the key tiles before key 512 must not read the
      // query tiles from 512 on, whose Q and dO are NaN.
      for (const auto D : v->head_dims) {
        if (!backward_takes_window(*v, D, false)) continue;
        for (bool deterministic : {false, true}) {
          CHECK(fa2::testing::skips_unseen_query_tiles<fa2::bf16>(
              fa2::testing::gpu_passes<fa2::bf16>(v->cuda_backward, deterministic, fa2::Window{0, 0}).backward, 1024, D,
              512));
        }
      }
    }
  }

  TEST_CASE("GPU: fp16 as bf16: every fast forward and backward on ragged shapes, groups, windows, deterministic") {
    FA2_SKIP_WITHOUT_GPU();
    using fa2::fp16;
    for (const auto& v : kernel_variants()) {
      // step05's rows have their own GPU tests; the ablations run fp16 in the article's test file above.
      if (v.family == "ours" || v.ablation || !runs_here(v) || v.cuda == nullptr) continue;
      if (std::find(v.dtypes.begin(), v.dtypes.end(), fa2::DType::float16) == v.dtypes.end()) continue;
      INFO(v.name());
      for (const auto D : v.head_dims) {
        for (const fa2::testing::FlashShape shape :
             {fa2::testing::FlashShape{2, 300, 257, D}, {1, 1, 333, D}, {3, 257, 1, D}, {16, 200, 130, D, 4}}) {
          for (bool causal : {false, true}) {
            const auto c = fa2::testing::run_and_compare<fp16>(gpu_runner<fp16>(v.cuda), shape, causal);
            CHECK_MESSAGE(c.O.ok, c.O.summary());
            CHECK_MESSAGE(c.L.ok, c.L.summary());
          }
        }
        if (takes_window(v.key)) {
          const fa2::Window window{40, 3};
          const auto c = fa2::testing::run_and_compare<fp16>(gpu_runner<fp16>(v.cuda, window), {2, 300, 257, D}, false,
                                                             fa2::testing::flash_tolerance<fp16>(), window);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
    for (const auto* v : fast_backwards()) {
      if (v->ablation) continue;
      INFO(v->name());
      for (const auto D : v->head_dims) {
        for (const fa2::testing::FlashShape shape :
             {fa2::testing::FlashShape{2, 37, 53, D}, {1, 300, 20, D}, {1, 1, 200, D}, {16, 300, 257, D, 4}}) {
          for (bool deterministic : {false, true}) {
            check_backward_shape<fp16>(v->cuda_backward, shape, 1.0, fa2::testing::gradient_tolerance<fp16>(),
                                       deterministic);
          }
        }
        if (!backward_takes_window(*v, D, true)) continue;
        const fa2::Window window{40, 3};
        fa2::testing::require_close(fa2::testing::run_backward_and_compare<fp16>(
            fa2::testing::gpu_passes<fp16>(v->cuda_backward, false, window), {2, 300, 257, D}, true, 1.0,
            fa2::testing::gradient_tolerance<fp16>(), window));
      }
    }
  }

  TEST_CASE("GPU: every fast backward keeps scores of about +-25 finite and close to the reference") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto D : v->head_dims) {
        check_backward_shape(v->cuda_backward, {2, 300, 300, D}, 5.0, fa2::testing::kLargeScoreTolerance);
      }
    }
  }

  TEST_CASE("GPU: every fast backward reads and writes a head of a (B, N, H, D) tensor through its strides") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto D : v->head_dims) {
        for (bool causal : {false, true})
          fa2::testing::check_backward_head_view(v->cuda_backward, causal, static_cast<fa2::index_t>(D));
      }
    }
  }

  TEST_CASE("GPU: the tuned fast backward addresses batch strides past 2^31 elements in 64 bits") {
    FA2_SKIP_WITHOUT_GPU();
    for (bool causal : {false, true})
      fa2::testing::check_backward_batch_stride_past_2_31(&fa2::flash::backward, causal);
  }

  TEST_CASE("GPU: every fast backward, deterministic, gives the reference's gradients on ragged and unequal lengths") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto D : v->head_dims) {
        for (const fa2::testing::FlashShape shape : {fa2::testing::FlashShape{2, 37, 53, D},
                                                     {1, 300, 20, D},
                                                     {1, 20, 300, D},
                                                     {2, 700, 650, D},
                                                     {1, 1, 200, D}}) {
          check_backward_shape(v->cuda_backward, shape, 1.0, fa2::testing::gradient_tolerance<fa2::bf16>(), true);
        }
      }
    }
  }

  TEST_CASE("GPU: deterministic gradients are the same bits on every run, also beside work on another stream") {
    FA2_SKIP_WITHOUT_GPU();
    struct Backward {
      const char* name;
      fa2::CudaBwdLaunchFn launch;
    };
    std::vector<Backward> backwards = {{"step05", &fa2::flash_bwd_cuda},
                                       {"v5", fa2::variants::kernel_variant("v5").cuda_backward},
                                       {"fast", &fa2::flash::backward}};
    if (const std::string why = fa2::flash::sm90_unavailable(); why.empty()) {
      backwards.push_back({"v6b", fa2::variants::kernel_variant("v6b").cuda_backward});
    } else {
      MESSAGE("v6b not run: ", why);
    }
    cudaStream_t side = nullptr;
    FA2_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const auto& [D, group] : {std::pair<fa2::index_t, fa2::index_t>{64, 1}, {128, 1}, {64, 4}, {128, 4}}) {
      for (bool causal : {false, true}) {
        // 8 key tiles of 128 (v6b) or 16 of 64 (v5) add into every query tile; step05's 63 key
        // tiles of 16 run one launch each. With groups of 4, each key tile adds into 4 query heads.
        const fa2::testing::BwdInputs<fa2::bf16> in(fa2::testing::FlashShape{4, 1000, 1000, D, group}, rng);
        const auto fwd = fa2::testing::reference_outputs<fa2::bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
        for (const auto& b : backwards) {
          INFO(b.name, " D ", D, " group ", group, " causal ", causal);
          const auto run = [&] {
            return fa2::run_backward_with_device_tensors<fa2::bf16>(b.launch, in.Q.cview(), in.K.cview(), in.V.cview(),
                                                                    fwd.O.cview(), fwd.L.cview(), in.dO.cview(), causal,
                                                                    std::nullopt, true);
          };
          const auto first = run();
          for (int r = 1; r <= 5; ++r) {
            // 20 to 100 blocks spinning for a few milliseconds, queued just before the backward.
            keep_busy<<<20 * r, 128, 0, side>>>(2'000'000LL * r);
            FA2_CUDA_CHECK(cudaGetLastError());
            const auto again = run();
            CHECK_MESSAGE(fa2::testing::same_bits(first.dQ, again.dQ), "dQ, run ", r + 1);
            CHECK_MESSAGE(fa2::testing::same_bits(first.dK, again.dK), "dK, run ", r + 1);
            CHECK_MESSAGE(fa2::testing::same_bits(first.dV, again.dV), "dV, run ", r + 1);
          }
        }
      }
    }
    FA2_CUDA_CHECK(cudaStreamSynchronize(side));
    FA2_CUDA_CHECK(cudaStreamDestroy(side));
  }

  TEST_CASE("GPU: the fast backward's dK and dV are the same bits on every run, dQ moves only by its atomics") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<fa2::bf16> in(fa2::testing::FlashShape{4, 1024, 1024, 64}, rng);
    const auto fwd = fa2::flash_attention_cuda<fa2::bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), false);
    const auto run = [&] {
      return fa2::run_backward_with_device_tensors<fa2::bf16>(&fa2::flash::backward, in.Q.cview(), in.K.cview(),
                                                              in.V.cview(), fwd.O.cview(), fwd.L.cview(), in.dO.cview(),
                                                              false);
    };
    const auto a = run(), b = run();
    CHECK(fa2::testing::same_bits(a.dK, b.dK));  // one block owns each key row: a fixed order of additions
    CHECK(fa2::testing::same_bits(a.dV, b.dV));
    // dQ: 8 key tiles' float32 shares, added in any order, then rounded to bf16: at most one
    // bf16 step (2^-8 relative) apart.
    const auto c = fa2::testing::compare_gradients<fa2::bf16>(a, fa2::testing::widened(b), "run 1 vs run 2",
                                                              fa2::testing::GradientTolerance{1e-3, 8e-3});
    CHECK_MESSAGE(c.dQ.ok, c.dQ.summary());
  }
}

TEST_SUITE("gpu+sanitizer") {
  // Small shapes for compute-sanitizer: every fast backward, ragged, causal and not, with and
  // without deterministic gradients.
  TEST_CASE("GPU: fast backwards on small ragged shapes") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto* v : fast_backwards()) {
      INFO(v->name());
      for (const auto D : v->head_dims) {
        for (bool deterministic : {false, true}) {
          check_backward_shape(v->cuda_backward, {2, 70, 130, D}, 1.0, fa2::testing::gradient_tolerance<fa2::bf16>(),
                               deterministic);
          check_backward_shape(v->cuda_backward, {4, 70, 130, D, 2}, 1.0, fa2::testing::gradient_tolerance<fa2::bf16>(),
                               deterministic);
          check_backward_shape<fa2::fp16>(v->cuda_backward, {2, 70, 130, D}, 1.0,
                                          fa2::testing::gradient_tolerance<fa2::fp16>(), deterministic);
        }
      }
    }
  }
}

TEST_SUITE("gpu+sanitizer") {
  // Small enough for compute-sanitizer's memcheck and racecheck: every fast configuration on
  // a few ragged shapes, causal and not; the last has more query tiles than the H200 has SMs, so
  // persistent blocks take several.
  TEST_CASE("GPU: fast configurations on small ragged shapes") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if ((v.family != "sm80" && v.family != "sm90" && v.family != "product") || !runs_here(v) || v.cuda == nullptr)
        continue;
      INFO(v.name());
      for (const fa2::testing::FlashShape shape : {fa2::testing::FlashShape{1, 130, 70, 64},
                                                   {1, 65, 129, 128},
                                                   {2, 33, 33, 32},
                                                   {140, 65, 70, 64},
                                                   {8, 65, 70, 64, 4},
                                                   {4, 65, 129, 128, 2}}) {
        if (!fa2::testing::takes_head_dim(v.head_dims, shape.D)) continue;
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<fa2::bf16>(gpu_runner<fa2::bf16>(v.cuda), shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
        if (shape.B == 1 || shape.group == 2) {  // the fp16 twins on two of the shapes
          const auto c = fa2::testing::run_and_compare<fa2::fp16>(gpu_runner<fa2::fp16>(v.cuda), shape, true);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
        if (shape.B == 1 && takes_window(v.key)) {  // the windowed twins; (0, 0) leaves queries past N_k no key
          for (const fa2::Window window : {fa2::Window{0, 0}, fa2::Window{40, 3}}) {
            const auto c = fa2::testing::run_and_compare<fa2::bf16>(gpu_runner<fa2::bf16>(v.cuda, window), shape, false,
                                                                    fa2::testing::flash_tolerance<fa2::bf16>(), window);
            CHECK_MESSAGE(c.O.ok, c.O.summary());
            CHECK_MESSAGE(c.L.ok, c.L.summary());
          }
        }
      }
    }
  }
}

TEST_SUITE("variants") {
  TEST_CASE("the fast kernel refuses what it does not support instead of computing it wrong") {
    // Runs without a GPU: the checks come before any CUDA call.
    fa2::Tensor<float, 3> q({1, 8, 64});
    fa2::Tensor<float, 2> l({1, 8});
    auto a = fa2::make_flash_args<float>(q.cview(), q.cview(), q.cview(), q.view(), l.view(), false);
    CHECK_THROWS_WITH_AS(run_sm80_forward(a), doctest::Contains("takes bfloat16 or float16"), std::invalid_argument);
    fa2::Tensor<fa2::bf16, 3> h({1, 8, 16});
    fa2::Tensor<float, 2> lh({1, 8});
    auto b = fa2::make_flash_args<fa2::bf16>(h.cview(), h.cview(), h.cview(), h.view(), lh.view(), false);
    CHECK_THROWS_WITH_AS(run_sm80_forward(b), doctest::Contains("32, 64 or 128"), std::invalid_argument);
    fa2::Tensor<fa2::bf16, 3> h64({1, 8, 64});
    auto c =
        fa2::make_flash_args<fa2::bf16>(h64.cview(), h64.cview(), h64.cview(), h64.view(), lh.view(), false, -1.0f);
    CHECK_THROWS_WITH_AS(run_sm80_forward(c), doctest::Contains("positive"), std::invalid_argument);
    // The plan says the same without throwing, and names no kernel.
    const fa2::flash::ForwardPlan plan = fa2::flash::plan_forward(b);
    CHECK_FALSE(plan.runs());
    CHECK(plan.refused == "head_dim: the fast kernel takes 32, 64 or 128");
    CHECK_FALSE(static_cast<bool>(plan.launch));
  }

  TEST_CASE("a configuration built for head dim 64 only refuses 128 rather than launching nothing") {
    const auto& v51 = fa2::variants::kernel_variant("v5.1");
    if (const std::string why = fa2::variants::not_built_reason(v51); !why.empty()) {
      fa2::testing::mark_skipped(why);
      return;
    }
    // Runs without a GPU: the checks come before any CUDA call.
    fa2::Tensor<fa2::bf16, 3> h128({1, 8, 128});
    fa2::Tensor<float, 2> lh({1, 8});
    auto d = fa2::make_flash_args<fa2::bf16>(h128.cview(), h128.cview(), h128.cview(), h128.view(), lh.view(), false);
    CHECK_THROWS_WITH_AS(v51.cuda(d, nullptr), doctest::Contains("v5.1 is built for head dims 64, got 128"),
                         std::invalid_argument);
  }

  TEST_CASE("v6 refuses what it does not support, naming the argument") {
    // Runs without a GPU: the argument checks come before the question of the device. The
    // product's tuned v6, and its configurations when the lab is built.
    fa2::Tensor<fa2::bf16, 3> h32({1, 8, 32});
    fa2::Tensor<float, 2> l({1, 8});
    auto a = fa2::make_flash_args<fa2::bf16>(h32.cview(), h32.cview(), h32.cview(), h32.view(), l.view(), false);
    fa2::Tensor<float, 3> f({1, 8, 64});
    auto b = fa2::make_flash_args<float>(f.cview(), f.cview(), f.cview(), f.view(), l.view(), false);
    for (const char* key : {"v6", "v6.1", "v6.2"}) {
      const auto& v = fa2::variants::kernel_variant(key);
      if (v.cuda == nullptr) {
        MESSAGE(key, " not checked: ", fa2::variants::not_built_reason(v));
        continue;
      }
      INFO(key);
      CHECK_THROWS_WITH_AS(v.cuda(a, nullptr), doctest::Contains("head_dim: v6 takes 64 or 128"),
                           std::invalid_argument);
      CHECK_THROWS_WITH_AS(v.cuda(b, nullptr), doctest::Contains("takes bfloat16 or float16"), std::invalid_argument);
    }
    CHECK(fa2::flash::plan_forward(a, fa2::flash::Path::sm90).refused == "head_dim: v6 takes 64 or 128");
  }

  TEST_CASE("the fast backward refuses what it does not support, naming the argument") {
    // Runs without a GPU: the checks come before any CUDA call.
    const auto args = [](fa2::Tensor<fa2::bf16, 3>& x, fa2::Tensor<fa2::bf16, 3>& g, fa2::Tensor<float, 2>& rows,
                         fa2::Tensor<float, 3>& acc) {
      return fa2::make_flash_bwd_args<fa2::bf16>(x.cview(), x.cview(), x.cview(), x.cview(), rows.cview(), x.cview(),
                                                 rows.view(), g.view(), acc.view(), g.view(), g.view(), false);
    };
    fa2::Tensor<fa2::bf16, 3> x16({1, 8, 16}), g16({1, 8, 16});
    fa2::Tensor<float, 2> rows({1, 8});
    fa2::Tensor<float, 3> acc16({1, 8, 16});
    CHECK_THROWS_WITH_AS(fa2::flash::backward(args(x16, g16, rows, acc16)), doctest::Contains("32, 64 or 128"),
                         std::invalid_argument);
    // dK rows of 65 elements: not 16-byte aligned.
    fa2::Tensor<fa2::bf16, 3> x({1, 8, 64});
    auto g = fa2::Tensor<fa2::bf16, 3>::strided({1, 8, 64}, {8 * 65, 65, 1});
    fa2::Tensor<float, 3> acc({1, 8, 64});
    fa2::Tensor<fa2::bf16, 3> g_ok({1, 8, 64});
    auto a = args(x, g_ok, rows, acc);
    a.dk = g.view().data(), a.dk_strides = g.strides();
    CHECK_THROWS_WITH_AS(fa2::flash::backward(a), doctest::Contains("dK: the fast backward needs 16-byte aligned"),
                         std::invalid_argument);
    // More key tiles than a grid dimension holds: refused before any launch. The views point at
    // no memory; nothing reads them.
    {
      const fa2::index_t too_many_keys = 65535 * 128 + 1;
      auto* fake = reinterpret_cast<fa2::bf16*>(std::uintptr_t{1} << 20);
      const fa2::TensorView<fa2::bf16, 3> q_view(fake, {1, 8, 64}), k_view(fake, {1, too_many_keys, 64});
      auto big = fa2::make_flash_bwd_args<fa2::bf16>(q_view, k_view, k_view, q_view, rows.cview(), q_view, rows.view(),
                                                     q_view, acc.view(), k_view, k_view, false);
      CHECK_THROWS_WITH_AS(fa2::flash::backward(big), doctest::Contains("needs more than 65535 key tiles"),
                           std::invalid_argument);
    }
    // Deterministic gradients without the counters they take turns on.
    a = args(x, g_ok, rows, acc);
    a.deterministic = true;
    CHECK_THROWS_WITH_AS(fa2::flash::backward(a),
                         doctest::Contains("dq_semaphores: deterministic gradients on the fast backward need"),
                         std::invalid_argument);
    // A workspace for the parts of a group spread over blocks that is not 16-byte aligned.
    a = args(x, g_ok, rows, acc);
    a.dkv_partial = acc.view().data() + 1;
    CHECK_THROWS_WITH_AS(fa2::flash::backward(a),
                         doctest::Contains("dkv_partial: the fast backward needs it 16-byte aligned"),
                         std::invalid_argument);
    // A bad shape is validate()'s: named as for every backward.
    a = args(x, g_ok, rows, acc);
    a.do_shape = {1, 9, 64};
    CHECK_THROWS_WITH_AS(fa2::flash::backward(a), doctest::Contains("dO.shape"), std::invalid_argument);
  }
}
