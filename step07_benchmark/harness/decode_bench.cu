// step07_decode_bench: the decoding kernel (kernels/sm80/decode.cuh) in several configurations,
// in GB/s of K and V beside a device-to-device copy timed in the same run. One query per sequence
// against a packed cache (or paged, --page-size), H query heads over H_kv kv heads, bf16. Each
// configuration's output is compared with the product's first: a configuration that disagrees is
// reported, not timed. Rounds rotate the configurations' order.
//
//   step07_decode_bench [--points=1x131072,8x32768,64x16384,128x4096] [--heads=32] [--kv-heads=8]
//                       [--d=128] [--page-size=0] [--rounds=3] [--csv=FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "step07_benchmark/harness/bench_device.hpp"
#include "step07_benchmark/harness/timing.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/sm80/decode_launch.cuh"

namespace {

using fa2::cuda::DeviceBuffer;
using fa2::flash::DecodeConfig;

struct Point {
  int batch = 1, cache = 1;
};

struct Options {
  std::vector<Point> points = {{1, 131072}, {8, 32768}, {64, 16384}, {128, 4096}};
  int heads = 32, kv_heads = 8, d = 128, page_size = 0, rounds = 3;
  std::string csv;
};

// "1x131072,8x32768": the (batch, cache length) points of --points.
std::vector<Point> parse_points(std::string_view flag, const std::string& text) {
  std::vector<Point> points;
  for (const std::string& item : fa2::cli::split_list(text)) {
    const std::size_t x = item.find('x');
    if (x == std::string::npos) throw fa2::cli::UsageError(std::string(flag), "'" + item + "' is not BxCACHE");
    points.push_back({fa2::cli::parse_integer<int>(flag, item.substr(0, x), 1, 1 << 20),
                      fa2::cli::parse_integer<int>(flag, item.substr(x + 1), 1, 1 << 30)});
  }
  return points;
}

// One configuration: its name and how it runs a plan (the product: fa2::flash::run).
struct Config {
  std::string name;
  std::function<int(const fa2::FlashVarlenArgs&)> splits;  // its number of parts for these arguments
  std::function<void(const fa2::flash::VarlenPlan&)> launch;
};

template <class Cfg>
Config lab_config(const std::string& name) {
  return {name,
          [](const fa2::FlashVarlenArgs& a) { return fa2::flash::decode_splits<Cfg>(a, fa2::flash::current_device()); },
          [](const fa2::flash::VarlenPlan& plan) { fa2::flash::launch_decode<Cfg>(plan, nullptr); }};
}

template <int D>
std::vector<Config> configs() {
  std::vector<Config> c;
  c.push_back({"product", [](const fa2::FlashVarlenArgs& a) { return fa2::flash::plan_varlen_forward(a).splits; },
               [](const fa2::flash::VarlenPlan& plan) { fa2::flash::run(plan); }});
  c.push_back(lab_config<DecodeConfig<D, 4, 3, 16, false>>("4 warps, 3 stages, a key per lane"));
  c.push_back(lab_config<DecodeConfig<D, 4, 2>>("4 warps, 2 stages"));
  c.push_back(lab_config<DecodeConfig<D, 4, 3>>("4 warps, 3 stages"));
  c.push_back(lab_config<DecodeConfig<D, 4, 4>>("4 warps, 4 stages"));
  c.push_back(lab_config<DecodeConfig<D, 8, 2>>("8 warps, 2 stages"));
  c.push_back(lab_config<DecodeConfig<D, 8, 3>>("8 warps, 3 stages"));
  c.push_back(lab_config<DecodeConfig<D, 4, 2, 32>>("4 warps, 2 stages of 32 keys"));
  c.push_back(lab_config<DecodeConfig<D, 4, 3, 32>>("4 warps, 3 stages of 32 keys"));
  return c;
}

struct Row {
  Point point;
  std::string config;
  int splits = 0;
  double ms = 0.0;
};

}  // namespace

namespace {

int run_bench(const Options& o) {
  if (o.heads % o.kv_heads != 0) throw fa2::cli::UsageError("--kv-heads", "must divide --heads");
  const std::vector<Config> all = o.d == 64 ? configs<64>() : configs<128>();
  fa2::bench::L2Flusher flusher(fa2::bench::l2_flush_bytes(fa2::flash::current_device().ordinal));
  fa2::bench::TimingBudget budget;
  budget.rep_ms = 200.0;

  // The copy: 1 GiB each way.
  const std::size_t copy_bytes = std::size_t{1} << 30;
  DeviceBuffer<unsigned char> from(copy_bytes), to(copy_bytes);
  from.fill_bytes(1);
  const auto copy = fa2::bench::do_bench(
      [&] { FA2_CUDA_CHECK(cudaMemcpyAsync(to.data(), from.data(), copy_bytes, cudaMemcpyDeviceToDevice)); }, nullptr,
      flusher, budget);
  const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / (copy.ms.median * 1e-3) / 1e9;
  std::printf("device-to-device copy: %.0f GB/s (read + write), median of %zu\n", copy_gbs, copy.ms.count);

  std::vector<Row> rows;
  std::mt19937 rng(0);
  for (const Point& pt : o.points) {
    const int B = pt.batch, N = pt.cache, H = o.heads, H_kv = o.kv_heads, D = o.d;
    const std::size_t kv_rows = static_cast<std::size_t>(B) * static_cast<std::size_t>(N);
    DeviceBuffer<fa2::bf16> q(static_cast<std::size_t>(B) * H * D), k(kv_rows * H_kv * D), v(kv_rows * H_kv * D);
    DeviceBuffer<fa2::bf16> out(q.size()), reference(q.size());
    DeviceBuffer<float> lse(static_cast<std::size_t>(B) * H);
    fa2::bench::fill_normal_bf16(q.data(), q.size(), 1, nullptr);
    fa2::bench::fill_normal_bf16(k.data(), k.size(), 2, nullptr);
    fa2::bench::fill_normal_bf16(v.data(), v.size(), 3, nullptr);
    std::vector<std::int32_t> cu_q(static_cast<std::size_t>(B) + 1), cu_k(static_cast<std::size_t>(B) + 1);
    for (int b = 0; b <= B; ++b) {
      cu_q[static_cast<std::size_t>(b)] = b;
      cu_k[static_cast<std::size_t>(b)] = b * N;
    }
    std::vector<std::int32_t> used(static_cast<std::size_t>(B), N), table;
    int pages_per_seq = 0;
    if (o.page_size > 0) {  // the packed rows read as pages, in a shuffled order
      if (N % o.page_size != 0) throw fa2::cli::UsageError("--page-size", "must divide every cache length");
      pages_per_seq = N / o.page_size;
      table.resize(static_cast<std::size_t>(B) * static_cast<std::size_t>(pages_per_seq));
      std::iota(table.begin(), table.end(), 0);
      std::shuffle(table.begin(), table.end(), rng);
    }
    DeviceBuffer<std::int32_t> d_cu_q(cu_q.size()), d_cu_k(cu_k.size()), d_used(used.size()), d_table(table.size());
    d_cu_q.upload(cu_q), d_cu_k.upload(cu_k), d_used.upload(used);
    if (!table.empty()) d_table.upload(table);

    fa2::FlashVarlenArgs a;
    a.q = q.data(), a.q_shape = {B, H, D}, a.q_strides = {H * D, D, 1};
    a.k = k.data(), a.k_shape = {static_cast<fa2::index_t>(kv_rows), H_kv, D}, a.k_strides = {H_kv * D, D, 1};
    a.v = v.data(), a.v_shape = a.k_shape, a.v_strides = a.k_strides;
    a.o = out.data(), a.o_shape = a.q_shape, a.o_strides = a.q_strides;
    a.l = lse.data(), a.l_shape = {H, B}, a.l_strides = {B, 1};
    a.batch = B, a.cu_seq_q = d_cu_q.data(), a.max_q = 1, a.max_k = N;
    if (o.page_size > 0) {
      a.page_size = o.page_size, a.block_table = d_table.data(), a.block_table_stride = pages_per_seq;
      a.seqused_k = d_used.data();
    } else {
      a.cu_seq_k = d_cu_k.data();
    }
    a.window = {-1, 0};

    std::vector<std::size_t> order(all.size());
    std::iota(order.begin(), order.end(), 0);
    for (int round = 0; round < o.rounds; ++round) {
      std::rotate(order.begin(), order.begin() + round % static_cast<int>(order.size()), order.end());
      for (const std::size_t i : order) {
        const Config& c = all[i];
        fa2::flash::VarlenPlan plan = fa2::flash::plan_varlen_forward(a);
        if (!plan.runs()) throw std::invalid_argument(plan.refused);
        plan.splits = c.splits(a);
        plan.partial_floats = fa2::flash::decode_partial_floats(a, plan.splits);
        DeviceBuffer<float> partial(static_cast<std::size_t>(plan.partial_floats));
        plan.args.partial = partial.data();
        out.fill_bytes(0xFF);
        c.launch(plan);
        FA2_CUDA_CHECK(cudaDeviceSynchronize());
        if (i == 0 && round == 0) {
          FA2_CUDA_CHECK(cudaMemcpy(reference.data(), out.data(), out.bytes(), cudaMemcpyDeviceToDevice));
        }
        const auto cmp = fa2::bench::compare_bf16(out.data(), reference.data(), out.size(), 1e-2, 1e-2, nullptr);
        if (!cmp.ok()) {
          std::printf("%dx%d %s: %llu of %llu elements differ from the product's: not timed\n", B, N, c.name.c_str(),
                      static_cast<unsigned long long>(cmp.mismatched), static_cast<unsigned long long>(cmp.checked));
          continue;
        }
        const auto t = fa2::bench::do_bench([&] { c.launch(plan); }, nullptr, flusher, budget);
        rows.push_back({pt, c.name, plan.splits, t.ms.median});
      }
    }
  }

  std::printf("\nOne query per sequence, H %d/%d, D %d, bf16, %s; ms: median over %d rounds\n", o.heads, o.kv_heads,
              o.d, o.page_size > 0 ? ("pages of " + std::to_string(o.page_size)).c_str() : "packed cache", o.rounds);
  std::printf("| B | cache | config | parts | ms | GB/s of K and V | of the copy |\n|---|---|---|---|---|---|---|\n");
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw std::runtime_error("cannot open " + o.csv);
    csv << "B,cache,heads,kv_heads,d,page_size,config,parts,ms,gbs,copy_gbs\n";
  }
  for (const Point& pt : o.points) {
    const double kv_bytes = 2.0 * pt.batch * static_cast<double>(pt.cache) * o.kv_heads * o.d * 2.0;
    for (const Config& c : all) {
      std::vector<double> ms;
      int parts = 0;
      for (const Row& r : rows) {
        if (r.point.batch == pt.batch && r.point.cache == pt.cache && r.config == c.name) {
          ms.push_back(r.ms);
          parts = r.splits;
        }
      }
      if (ms.empty()) continue;
      std::sort(ms.begin(), ms.end());
      const double med = ms[(ms.size() - 1) / 2], gbs = kv_bytes / (med * 1e-3) / 1e9;
      std::printf("| %d | %d | %s | %d | %.3f | %.0f | %.2f |\n", pt.batch, pt.cache, c.name.c_str(), parts, med, gbs,
                  gbs / copy_gbs);
      if (csv) {
        for (const double m : ms) {
          csv << pt.batch << ',' << pt.cache << ',' << o.heads << ',' << o.kv_heads << ',' << o.d << ',' << o.page_size
              << ",\"" << c.name << "\"," << parts << ',' << m << ',' << kv_bytes / (m * 1e-3) / 1e9 << ',' << copy_gbs
              << '\n';
        }
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  fa2::cli::Parser cli("step07_decode_bench",
                       "Times the decoding kernel (kernels/sm80/decode.cuh) in several configurations, one query\n"
                       "per sequence against a packed or paged cache, bf16, in GB/s of K and V beside a\n"
                       "device-to-device copy timed in the same run.");
  cli.custom("--points", "BxCACHE,...", "the (batch, cache) points (default 1x131072,8x32768,64x16384,128x4096)",
             [&](std::string_view flag, const std::string& text) { o.points = parse_points(flag, text); })
      .integer("--heads", o.heads, 1, 1024, "query heads")
      .integer("--kv-heads", o.kv_heads, 1, 1024, "kv heads; they divide the query heads")
      .choice("--d", o.d, {{"64", 64}, {"128", 128}}, "the head dim")
      .integer("--page-size", o.page_size, 0, 1 << 20, "keys per page of a paged cache; 0: packed")
      .integer("--rounds", o.rounds, 1, 1000, "rounds, the configurations' order rotated in each")
      .text("--csv", o.csv, "FILE", "also write every round's times here");
  return cli.run(argc, argv, [&] { return run_bench(o); });
}
