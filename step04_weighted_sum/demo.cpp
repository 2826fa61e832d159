// Step 4 demo: weighted_sum_fwd on the article's example (x = 0..49 as 5 x 10, weight = 1..10,
// tiles 2 x 4). Program 2's loop, step by step, then every row's total from both styles, on
// the host and, when there is one, on the GPU.
//   cmake --build --preset default --target step04_demo && build/default/step04_weighted_sum/step04_demo
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#if FA2_STEP04_WITH_CUDA
#include "common/cuda/gpu.hpp"
#include "step04_weighted_sum/weighted_sum_cuda.hpp"
#endif

namespace {

using namespace fa2;  // NOLINT(google-build-using-namespace): reads like the kernel

constexpr index_t NUM_ROWS = 5, D = 10;
constexpr int ROWS_TILE_SIZE = 2, D_TILE_SIZE = 4;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "[a, b, c]" from f(i), i < n.
template <class F>
std::string list(int n, F f) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += f(i) + (i + 1 < n ? ", " : "]");
  return s;
}
template <class F>
std::string grid(int rows, int cols, F f) {
  return list(rows, [&](int r) { return list(cols, [&](int c) { return f(r, c); }); });
}
std::string tf(bool b) {
  return b ? "T" : "F";
}

// Program 2 of the tile-pointer body, replayed with step03's calls so every intermediate can be
// printed. The pointer-maths body computes the same addresses and masks by hand.
void trace_program(const float* x, const float* weight, int row_tile_idx) {
  const HostProgram prog(Coord<3>{row_tile_idx, 0, 0}, nullptr, 0);
  using L = RowLayoutFor<HostProgram, ROWS_TILE_SIZE, D_TILE_SIZE>;
  const index_t first_row = row_tile_idx * ROWS_TILE_SIZE;  // this program's rows start here
  // x is row-major here, (NUM_ROWS, D) with strides (D, 1); weight is contiguous.
  using XBlock = Block<ROWS_TILE_SIZE, D_TILE_SIZE>;  // (ROWS_TILE_SIZE, D_TILE_SIZE)
  using WeightBlock = Block<D_TILE_SIZE>;             // (D_TILE_SIZE,)
  auto weight_ptr = make_tile_ptr<WeightBlock>(weight, {D}, {1}, {0}, Order<0>{});
  auto x_ptr = make_tile_ptr<XBlock>(x, {NUM_ROWS, D}, {D, 1}, {first_row, 0}, Order<1, 0>{});
  const index_t row0 = x_ptr.offsets()[0];
  std::printf("Program %d: rows %s, row_mask %s\n", row_tile_idx,
              list(ROWS_TILE_SIZE, [&](int r) { return fmt(static_cast<double>(row0 + r)); }).c_str(),
              list(ROWS_TILE_SIZE, [&](int r) { return tf(row0 + r < NUM_ROWS); }).c_str());
  auto running = RowVec<float, L>::filled(0.0f);  // the program's totals so far
  for (index_t i = 0; i < cdiv<index_t>(D, D_TILE_SIZE); ++i) {
    const index_t col0 = x_ptr.offsets()[1];
    Frag<float, L> row;
    ColVec<float, L> w;
    // BEGIN SOLUTION step04: the same two loads as your tile-pointer body uses(prog, x_ptr, weight_ptr, row, w)
    load(prog, x_ptr, row, boundary_check<0, 1>, Padding::zero);
    load(prog, weight_ptr, w, boundary_check<0>, Padding::zero);
    // END SOLUTION step04
    const auto partial = row_sum(prog, row * w);
    running = running + partial;
    std::printf("  step %lld  cols %s  col_mask %s\n", static_cast<long long>(i),
                list(D_TILE_SIZE, [&](int c) { return fmt(static_cast<double>(col0 + c)); }).c_str(),
                list(D_TILE_SIZE, [&](int c) { return tf(col0 + c < D); }).c_str());
    std::printf("          addresses x + %s  mask %s\n",
                grid(ROWS_TILE_SIZE, D_TILE_SIZE,
                     [&](int r, int c) {
                       return fmt(static_cast<double>(x_ptr.element_offset({r, c})));
                     })
                    .c_str(),
                grid(ROWS_TILE_SIZE, D_TILE_SIZE, [&](int r, int c) {
                  return tf(x_ptr.in_bounds({r, c}, boundary_check<0, 1>));
                }).c_str());
    std::printf("          row %s  weight %s\n",
                grid(ROWS_TILE_SIZE, D_TILE_SIZE, [&](int r, int c) { return fmt(row.v[r][c]); }).c_str(),
                list(D_TILE_SIZE, [&](int c) { return fmt(w.v[c]); }).c_str());
    std::printf("          row_sum(row * weight) %s  ->  output %s\n",
                list(ROWS_TILE_SIZE, [&](int r) { return fmt(partial.v[r]); }).c_str(),
                list(ROWS_TILE_SIZE, [&](int r) { return fmt(running.v[r]); }).c_str());
    // BEGIN SOLUTION step04: the same two advances as your tile-pointer body
    x_ptr = x_ptr.advance({0, D_TILE_SIZE});
    weight_ptr = weight_ptr.advance({D_TILE_SIZE});
    // END SOLUTION step04
  }
  for (int r = 0; r < ROWS_TILE_SIZE; ++r) {
    if (row0 + r < NUM_ROWS) {
      std::printf("  store: output[%lld] = %s\n", static_cast<long long>(row0 + r), fmt(running.v[r]).c_str());
    } else {
      std::printf("  store: row %lld is masked (F), output is not written there\n", static_cast<long long>(row0 + r));
    }
  }
}

void print_totals(const char* what, const Tensor<float, 1>& out) {
  std::printf("  %-22s %s\n", what, list(static_cast<int>(out.size(0)), [&](int r) { return fmt(out(r)); }).c_str());
}

int demo() {
  Tensor<float, 2> x(Extents<2>{NUM_ROWS, D});
  Tensor<float, 1> weight(Extents<1>{D});
  for (index_t r = 0; r < NUM_ROWS; ++r)
    for (index_t c = 0; c < D; ++c) x(r, c) = static_cast<float>(r * D + c);  // memory slot k holds k
  for (index_t c = 0; c < D; ++c) weight(c) = static_cast<float>(c + 1);

  std::printf("weighted_sum_fwd: output[r] = sum over c of x[r, c] * weight[c]\n");
  std::printf("x = 0..49 as %lld x %lld (strides (%lld, 1)), weight = 1..10, tiles %d x %d\n",
              static_cast<long long>(NUM_ROWS), static_cast<long long>(D), static_cast<long long>(D), ROWS_TILE_SIZE,
              D_TILE_SIZE);
  std::printf("grid = cdiv(%lld, %d) = %d programs, each looping cdiv(%lld, %d) = %lld times\n\n",
              static_cast<long long>(NUM_ROWS), ROWS_TILE_SIZE, weighted_sum_programs(NUM_ROWS, ROWS_TILE_SIZE),
              static_cast<long long>(D), D_TILE_SIZE, static_cast<long long>(cdiv<index_t>(D, D_TILE_SIZE)));
  trace_program(x.cview().data(), weight.cview().data(), 2);

  std::printf("\nEvery row (row r should be 550 r + 330):\n");
  for (const auto style : {WeightedSumStyle::pointer_math, WeightedSumStyle::tile_pointer}) {
    const auto out = weighted_sum_host<ROWS_TILE_SIZE, D_TILE_SIZE, float>(style, x.cview(), weight.cview());
    print_totals((std::string(to_string(style)) + ", host").c_str(), out);
  }
#if FA2_STEP04_WITH_CUDA
  const auto& gpu = cuda::gpu_status();
  if (gpu.available) {
    for (const auto style : {WeightedSumStyle::pointer_math, WeightedSumStyle::tile_pointer}) {
      const auto out = weighted_sum_cuda<ROWS_TILE_SIZE, D_TILE_SIZE, float>(style, x.cview(), weight.cview());
      print_totals((std::string(to_string(style)) + ", GPU").c_str(), out);
    }
    std::printf("  (GPU: %s, one thread block of 128 threads per program)\n", gpu.name.c_str());
  } else {
    std::printf("  GPU: not run (%s)\n", gpu.reason.c_str());
  }
#else
  std::printf("  GPU: not built (configure with CUDA to run the same bodies on a GPU)\n");
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli("step04_demo",
                       "Step 4: weighted_sum_fwd on the article's example (x = 0..49 as 5 x 10, weight = 1..10, tiles\n"
                       "2 x 4): program 2's loop step by step, then every row's total from both styles, on the host\n"
                       "and, when there is one, on the GPU.");
  return cli.run(argc, argv, demo);
}
