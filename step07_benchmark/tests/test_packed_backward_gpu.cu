// The sm90 path's packed backward (v6b's packed twins, planned by plan_packed_backward) against the
// gradients of attention written out in float64 here, sequence by sequence, with the masks aligned
// bottom-right: training-sized sequences of several query and key tiles with ragged ends, one row,
// none, queries above and below their keys, every mask and window, 1 to 6 query heads per kv head,
// both head dims and 16-bit dtypes, deterministic gradients (their bits checked over two runs), and
// rows longer than their heads. dQ, dK and dV start as NaN; the input rows no sequence owns are NaN
// too and must not reach a gradient. The argument checks run without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bf16.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "common/testing.hpp"
#include "step07_benchmark/kernels/device/split_kv.hpp"  // bottom_right_keys
#include "step07_benchmark/kernels/product/flash_attention.hpp"

namespace {

using fa2::cuda::DeviceBuffer;

struct Sequence {
  int n_q = 0, n_k = 0;
};

struct BackwardCase {
  int head_dim = 64;
  int heads = 4, kv_heads = 1;
  std::vector<Sequence> sequences;
  fa2::Window window{};  // bottom-right
  bool deterministic = false;
  int row_pad = 0;  // elements after each row of every tensor (a slice of a wider projection)
};

std::string describe(const BackwardCase& c) {
  std::string s = "D " + std::to_string(c.head_dim) + ", H " + std::to_string(c.heads) + "/" +
                  std::to_string(c.kv_heads) + ", window (" + std::to_string(c.window.left) + ", " +
                  std::to_string(c.window.right) + ")" + (c.deterministic ? ", deterministic" : "") + ", sequences";
  for (const Sequence& q : c.sequences) s += " (" + std::to_string(q.n_q) + ", " + std::to_string(q.n_k) + ")";
  return s;
}

// Row-major (rows, heads, D) values with row_pad elements after each row.
struct Packed {
  int rows = 0, heads = 0, D = 0, pad = 0;
  std::size_t row() const { return static_cast<std::size_t>(heads * D + pad); }
  std::size_t at(int r, int h, int d) const {
    return static_cast<std::size_t>(r) * row() + static_cast<std::size_t>(h * D + d);
  }
  std::size_t size() const { return static_cast<std::size_t>(rows) * row(); }
};

// Runs one case in element type T: the float64 gradients, then the plan (twice when deterministic).
template <class T>
void run_case(const BackwardCase& c, std::mt19937& rng) {
  INFO(describe(c));
  const int D = c.head_dim, H = c.heads, H_kv = c.kv_heads, group = H / H_kv;
  const int batch = static_cast<int>(c.sequences.size());
  std::vector<std::int32_t> cu_q = {0}, cu_k = {0};
  int max_q = 0, max_k = 0;
  for (const Sequence& s : c.sequences) {
    cu_q.push_back(cu_q.back() + s.n_q);
    cu_k.push_back(cu_k.back() + s.n_k);
    max_q = std::max(max_q, s.n_q);
    max_k = std::max(max_k, s.n_k);
  }
  const int spare = 3;  // rows past the last sequence, in q and in k
  const Packed qs{cu_q.back() + spare, H, D, c.row_pad}, ks{cu_k.back() + spare, H_kv, D, c.row_pad};

  std::normal_distribution<float> normal(0.0f, 1.0f);
  const T nan = T(std::numeric_limits<float>::quiet_NaN());
  // Every element NaN, then the owned rows' heads drawn: the padding and the spare rows stay NaN.
  const auto draw = [&](const Packed& layout, int owned_rows) {
    std::vector<T> x(layout.size(), nan);
    for (int r = 0; r < owned_rows; ++r)
      for (int h = 0; h < layout.heads; ++h)
        for (int d = 0; d < D; ++d) x[layout.at(r, h, d)] = T(normal(rng));
    return x;
  };
  const std::vector<T> q = draw(qs, cu_q.back()), dout = draw(qs, cu_q.back());
  const std::vector<T> k = draw(ks, cu_k.back()), v = draw(ks, cu_k.back());

  // float64: each query's bottom-right span of keys, P, O and L; then D_i, dS and the gradients.
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> dq_ref(qs.size(), 0.0), dk_ref(ks.size(), 0.0), dv_ref(ks.size(), 0.0);
  std::vector<T> o(qs.size(), nan);
  std::vector<float> lse(static_cast<std::size_t>(H) * qs.rows, std::numeric_limits<float>::quiet_NaN());
  const auto f = [](T x) { return static_cast<double>(float(x)); };
  std::vector<double> p, o_ref(static_cast<std::size_t>(D));
  for (int b = 0; b < batch; ++b) {
    const int n_q = c.sequences[static_cast<std::size_t>(b)].n_q, n_k = c.sequences[static_cast<std::size_t>(b)].n_k;
    const int q0 = cu_q[static_cast<std::size_t>(b)], k0 = cu_k[static_cast<std::size_t>(b)];
    for (int i = 0; i < n_q; ++i) {
      const fa2::flash::KeySpan span =
          fa2::flash::bottom_right_keys(i, n_q, n_k, static_cast<int>(c.window.left), static_cast<int>(c.window.right));
      for (int h = 0; h < H; ++h) {
        const int hk = h / group;
        double m = -std::numeric_limits<double>::infinity(), l = 0.0;
        p.assign(static_cast<std::size_t>(span.count()), 0.0);
        for (int j = 0; j < span.count(); ++j) {
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += f(q[qs.at(q0 + i, h, d)]) * f(k[ks.at(k0 + span.first + j, hk, d)]);
          p[static_cast<std::size_t>(j)] = s * scale;
          m = std::max(m, s * scale);
        }
        for (double& x : p) l += (x = std::exp(x - m));
        for (double& x : p) x /= l;
        std::fill(o_ref.begin(), o_ref.end(), 0.0);
        for (int j = 0; j < span.count(); ++j)
          for (int d = 0; d < D; ++d)
            o_ref[static_cast<std::size_t>(d)] +=
                p[static_cast<std::size_t>(j)] * f(v[ks.at(k0 + span.first + j, hk, d)]);
        lse[static_cast<std::size_t>(h) * qs.rows + q0 + i] =
            span.count() > 0 ? static_cast<float>(m + std::log(l)) : std::numeric_limits<float>::infinity();
        double d_i = 0.0;
        for (int d = 0; d < D; ++d) {
          o[qs.at(q0 + i, h, d)] = T(static_cast<float>(o_ref[static_cast<std::size_t>(d)]));
          d_i += f(dout[qs.at(q0 + i, h, d)]) * o_ref[static_cast<std::size_t>(d)];
        }
        for (int j = 0; j < span.count(); ++j) {
          const int kr = k0 + span.first + j;
          double dp = 0.0;
          for (int d = 0; d < D; ++d) dp += f(dout[qs.at(q0 + i, h, d)]) * f(v[ks.at(kr, hk, d)]);
          const double pj = p[static_cast<std::size_t>(j)], ds = pj * (dp - d_i);
          for (int d = 0; d < D; ++d) {
            dq_ref[qs.at(q0 + i, h, d)] += ds * f(k[ks.at(kr, hk, d)]) * scale;
            dk_ref[ks.at(kr, hk, d)] += ds * f(q[qs.at(q0 + i, h, d)]) * scale;
            dv_ref[ks.at(kr, hk, d)] += pj * f(dout[qs.at(q0 + i, h, d)]);
          }
        }
      }
    }
  }

  DeviceBuffer<T> d_q(q.size()), d_k(k.size()), d_v(v.size()), d_o(o.size()), d_do(dout.size());
  d_q.upload(q), d_k.upload(k), d_v.upload(v), d_o.upload(o), d_do.upload(dout);
  DeviceBuffer<float> d_l(lse.size()), d_rows(static_cast<std::size_t>(H) * qs.rows),
      d_accum(static_cast<std::size_t>(qs.rows) * H * D);
  d_l.upload(lse);
  DeviceBuffer<T> d_dq(q.size()), d_dk(k.size()), d_dv(v.size());
  DeviceBuffer<std::int32_t> d_cu_q(cu_q.size()), d_cu_k(cu_k.size());
  d_cu_q.upload(cu_q), d_cu_k.upload(cu_k);

  fa2::FlashVarlenBwdArgs a;
  a.dtype = fa2::dtype_of<T>();
  const fa2::Extents<3> q_strides{static_cast<fa2::index_t>(qs.row()), D, 1},
      k_strides{static_cast<fa2::index_t>(ks.row()), D, 1};
  a.q = d_q.data(), a.q_shape = {qs.rows, H, D}, a.q_strides = q_strides;
  a.k = d_k.data(), a.k_shape = {ks.rows, H_kv, D}, a.k_strides = k_strides;
  a.v = d_v.data(), a.v_shape = a.k_shape, a.v_strides = k_strides;
  a.o = d_o.data(), a.o_shape = a.q_shape, a.o_strides = q_strides;
  a.l = d_l.data(), a.l_shape = {H, qs.rows}, a.l_strides = {qs.rows, 1};
  a.do_ = d_do.data(), a.do_shape = a.q_shape, a.do_strides = q_strides;
  a.dq = d_dq.data(), a.dq_shape = a.q_shape, a.dq_strides = q_strides;
  a.dk = d_dk.data(), a.dk_shape = a.k_shape, a.dk_strides = k_strides;
  a.dv = d_dv.data(), a.dv_shape = a.k_shape, a.dv_strides = k_strides;
  a.d_rows = d_rows.data(), a.dq_accum = d_accum.data();
  a.batch = batch;
  a.cu_seq_q = d_cu_q.data(), a.cu_seq_k = d_cu_k.data();
  a.cu_seq_q_host = cu_q.data(), a.cu_seq_k_host = cu_k.data();
  a.max_q = max_q, a.max_k = max_k;
  a.window = c.window;
  a.deterministic = c.deterministic;
  fa2::flash::PackedBackwardPlan plan = fa2::flash::plan_packed_backward(a);
  REQUIRE_MESSAGE(plan.runs(), plan.refused);
  DeviceBuffer<unsigned char> schedule(static_cast<std::size_t>(plan.schedule_bytes));
  DeviceBuffer<std::int32_t> semaphores(
      c.deterministic ? static_cast<std::size_t>(fa2::packed_dq_semaphore_count(a.q_shape, batch)) : 0);
  plan.args.schedule = schedule.data();
  if (c.deterministic) {
    CHECK_THROWS_WITH_AS(fa2::flash::run(plan), doctest::Contains("dq_semaphores:"), std::invalid_argument);
    plan.args.dq_semaphores = semaphores.data();
  }

  const auto run = [&] {
    for (DeviceBuffer<T>* g : {&d_dq, &d_dk, &d_dv}) g->fill_bytes(0xFF);  // NaN in both 16-bit types
    d_rows.fill_bytes(0xFF), d_accum.fill_bytes(0xFF);
    fa2::flash::run(plan);
    FA2_CUDA_CHECK(cudaDeviceSynchronize());
  };
  run();
  const std::vector<T> dq = d_dq.download(), dk = d_dk.download(), dv = d_dv.download();

  // Owned rows against float64 (atol a fraction of the tensor's largest gradient, as step 5's
  // tests); dQ's rows past the last sequence 0 (the conversion writes every row); dK's and dV's
  // left alone there; every row's padding left alone.
  const double atol_of_scale = std::is_same_v<T, fa2::bf16> ? 3e-2 : 1e-2,
               rtol = std::is_same_v<T, fa2::bf16> ? 2e-2 : 1e-2;
  const auto check = [&](const char* name, const std::vector<T>& got, const std::vector<double>& want,
                         const Packed& layout, int owned_rows, bool spare_zero) {
    double scale_of = 0.0;
    for (int r = 0; r < owned_rows; ++r)
      for (int h = 0; h < layout.heads; ++h)
        for (int d = 0; d < D; ++d) scale_of = std::max(scale_of, std::abs(want[layout.at(r, h, d)]));
    const double atol = atol_of_scale * std::max(scale_of, 1e-3);
    int bad = 0, touched = 0;
    double worst = 0.0;
    for (int r = 0; r < layout.rows; ++r) {
      for (int h = 0; h < layout.heads; ++h) {
        for (int d = 0; d < D; ++d) {
          const double g = float(got[layout.at(r, h, d)]);
          if (r < owned_rows) {
            const double err = std::abs(g - want[layout.at(r, h, d)]);  // NaN fails below
            if (!(err <= atol + rtol * std::abs(want[layout.at(r, h, d)]))) ++bad;
            if (err == err) worst = std::max(worst, err);
          } else if (spare_zero ? g != 0.0 : !std::isnan(g)) {
            ++touched;
          }
        }
      }
      for (std::size_t e = static_cast<std::size_t>(layout.heads * D); e < layout.row(); ++e) {
        if (!std::isnan(float(got[static_cast<std::size_t>(r) * layout.row() + e]))) ++touched;
      }
    }
    INFO(name, ": worst |error| ", worst, " (atol ", atol, ")");
    CHECK(bad == 0);
    CHECK_MESSAGE(touched == 0, name, ": rows no sequence holds and the padding");
  };
  check("dQ", dq, dq_ref, qs, cu_q.back(), true);
  check("dK", dk, dk_ref, ks, cu_k.back(), false);
  check("dV", dv, dv_ref, ks, cu_k.back(), false);
  if (c.deterministic) {  // the same bits again
    run();
    const std::vector<T> dq2 = d_dq.download(), dk2 = d_dk.download(), dv2 = d_dv.download();
    const auto same_bits = [](const std::vector<T>& x, const std::vector<T>& y) {
      return std::equal(x.begin(), x.end(), y.begin(), [](T a, T b) { return a.bits == b.bits; });
    };
    CHECK(same_bits(dq, dq2));
    CHECK(same_bits(dk, dk2));
    CHECK(same_bits(dv, dv2));
  }
}

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("GPU: v6b's packed backward gives float64's dQ, dK and dV for every mask, group and head dim") {
    FA2_SKIP_WITHOUT_GPU();
    const std::string why_not = fa2::flash::sm90_unavailable();
    if (!why_not.empty()) {
      MESSAGE("skipped: " << why_not);
      return;
    }
    std::mt19937 rng(20261206);
    // Square sequences (the causal mask runs the causal kernel), then queries and keys that differ
    // (bottom-right alignment runs the windowed twin), with sequences without queries or keys.
    const std::vector<Sequence> square = {{300, 300}, {1, 1}, {0, 0}, {129, 129}, {520, 520}, {64, 64}, {127, 127}};
    const std::vector<Sequence> ragged = {{200, 450}, {450, 200}, {3, 0}, {0, 50}, {1, 333}, {130, 1}, {256, 256}};
    const std::vector<fa2::Window> windows = {{-1, -1}, {-1, 0}, {40, 0}, {3, 2}, {100, 150}};
    for (const int D : {64, 128}) {
      for (const auto& [heads, kv_heads] : {std::pair{4, 4}, std::pair{6, 1}}) {
        for (const fa2::Window w : windows) {
          for (const auto* sequences : {&square, &ragged}) {
            run_case<fa2::bf16>(BackwardCase{D, heads, kv_heads, *sequences, w}, rng);
          }
        }
      }
    }
  }

  // A shorter case, for the sanitizers too (scripts/gpu_session.sh decode).
  TEST_CASE("GPU: v6b's packed backward in float16, deterministic, and with strided rows") {
    FA2_SKIP_WITHOUT_GPU();
    const std::string why_not = fa2::flash::sm90_unavailable();
    if (!why_not.empty()) {
      MESSAGE("skipped: " << why_not);
      return;
    }
    std::mt19937 rng(7);
    const std::vector<Sequence> square = {{200, 200}, {1, 1}, {0, 0}, {129, 129}, {64, 64}};
    const std::vector<Sequence> ragged = {{100, 260}, {260, 100}, {3, 0}, {0, 50}, {130, 1}, {128, 128}};
    for (const int D : {64, 128}) {
      // float16, a group of 4, rows longer than their heads; deterministic gradients, whose turns
      // follow each sequence's own key tiles (and, bottom-right with more queries than keys, a
      // window that ends before its query's own key).
      run_case<fa2::fp16>(BackwardCase{D, 8, 2, ragged, {-1, 0}, false, 8}, rng);
      run_case<fa2::bf16>(BackwardCase{D, 8, 2, square, {-1, 0}, true}, rng);
      run_case<fa2::bf16>(BackwardCase{D, 8, 2, ragged, {40, 0}, true}, rng);
      run_case<fa2::fp16>(BackwardCase{D, 4, 4, ragged, {-1, -1}, true, 8}, rng);
    }
  }

  TEST_CASE("the packed backward's plan refuses bad arguments, naming them (no GPU needed)") {
    alignas(16) static std::uint16_t storage[64 * 8];
    alignas(16) static float rows[64];
    static std::int32_t cu[3] = {0, 1, 2};
    fa2::FlashVarlenBwdArgs a;
    a.o = a.dq = a.dk = a.dv = storage;
    a.q = a.k = a.v = a.do_ = storage;
    a.l = a.d_rows = a.dq_accum = rows;
    a.q_shape = {2, 4, 64}, a.q_strides = {256, 64, 1};
    a.k_shape = {2, 2, 64}, a.k_strides = {128, 64, 1};
    a.v_shape = a.dk_shape = a.dv_shape = a.k_shape;
    a.v_strides = a.dk_strides = a.dv_strides = a.k_strides;
    a.o_shape = a.do_shape = a.dq_shape = a.q_shape;
    a.o_strides = a.do_strides = a.dq_strides = a.q_strides;
    a.l_shape = {4, 2}, a.l_strides = {2, 1};
    a.batch = 2, a.cu_seq_q = a.cu_seq_k = a.cu_seq_q_host = a.cu_seq_k_host = cu, a.max_q = 1, a.max_k = 1;
    const auto refused = [](fa2::FlashVarlenBwdArgs bad) { return fa2::flash::plan_packed_backward(bad).refused; };
    // Well-formed arguments are refused only for want of an sm_90 GPU and build, and then say so.
    const std::string good = refused(a);
    CHECK((good.empty() || good.rfind("v6:", 0) == 0));
    fa2::FlashVarlenBwdArgs bad = a;
    bad.do_ = nullptr;
    CHECK(refused(bad).rfind("dout, dq, dk, dv:", 0) == 0);
    bad = a, bad.dq_accum = nullptr;
    CHECK(refused(bad).rfind("d_rows, dq_accum:", 0) == 0);
    bad = a, bad.dk_shape[0] = 3;
    CHECK(refused(bad).rfind("dk:", 0) == 0);
    bad = a, bad.dv_strides[0] = 124;
    CHECK(refused(bad).rfind("dv:", 0) == 0);
    static std::int32_t used[2] = {1, 1};
    bad = a, bad.seqused_k = bad.seqused_k_host = used;
    CHECK(refused(bad).rfind("seqused_k:", 0) == 0);
    bad = a, bad.q_shape[2] = bad.o_shape[2] = bad.do_shape[2] = bad.dq_shape[2] = 32;
    CHECK(refused(bad).rfind("head_dim:", 0) == 0);
    static std::int32_t past_end[3] = {0, 1, 3};
    bad = a, bad.cu_seq_k_host = past_end;
    CHECK(refused(bad).rfind("cu_seq_k:", 0) == 0);
  }
}
