// The product's decoding kernel (kernels/sm80/decode.cuh, planned by plan_varlen_forward), and the
// sm90 path's packed forward (v6's packed twins, planned by plan_packed_forward) on longer sequences,
// against attention written out in float64 here. The decoding kernel's cases: packed sequences of 0 to 16 queries
// against 0 to thousands of keys, the keys packed (with seqused_k shorter than the packing) or in a paged cache whose
// pages are shuffled, grouped-query attention of 1 to 8 query heads per kv head, the causal mask and windows aligned
// bottom-right, every head dim and both 16-bit dtypes, one part or many (with more parts than tiles of keys). The
// outputs start as NaN: every row a sequence owns must be written, and the rows past the last sequence must not be; the
// input rows no sequence owns are NaN too, and must not reach an output. The argument checks run without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/bf16.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "common/testing.hpp"
#include "step07_benchmark/kernels/device/split_kv.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"

namespace {

using fa2::cuda::DeviceBuffer;

struct Sequence {
  int n_q = 0;
  int n_k = 0;    // its rows of the packed keys
  int used = -1;  // seqused_k: its first `used` keys take part (-1: all n_k)
  int keys() const { return used >= 0 ? used : n_k; }
};

struct DecodeCase {
  int head_dim = 64;
  int heads = 4, kv_heads = 1;
  std::vector<Sequence> sequences;
  fa2::Window window{};  // bottom-right
  int page_size = 0;     // 0: packed keys
  int splits = 0;        // 0: the plan's choice
  bool seqused = false;  // pass seqused_k
  int row_pad = 0;       // elements after each row of q, o, k and v (a slice of a wider projection)
  bool packed = false;   // the sm90 path's packed forward (plan_packed_forward), not the decoding kernel
};

std::string describe(const DecodeCase& c) {
  std::string s = std::string(c.packed ? "packed v6, " : "decoding, ") + "D " + std::to_string(c.head_dim) + ", H " +
                  std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + ", window (" +
                  std::to_string(c.window.left) + ", " + std::to_string(c.window.right) + "), " +
                  (c.page_size > 0 ? "pages of " + std::to_string(c.page_size) : std::string("packed")) + ", splits " +
                  std::to_string(c.splits) + ", sequences";
  for (const Sequence& q : c.sequences) s += " (" + std::to_string(q.n_q) + ", " + std::to_string(q.keys()) + ")";
  return s;
}

// Runs one case in element type T against float64: O, L, the rows left alone and the plan's parts.
template <class T>
void run_case(const DecodeCase& c, std::mt19937& rng) {
  INFO(describe(c));
  const int D = c.head_dim, H = c.heads, H_kv = c.kv_heads, group = H / H_kv;
  const int batch = static_cast<int>(c.sequences.size());
  std::vector<std::int32_t> cu_q = {0}, cu_k = {0}, used;
  int max_q = 0, max_k = 0;
  for (const Sequence& s : c.sequences) {
    cu_q.push_back(cu_q.back() + s.n_q);
    cu_k.push_back(cu_k.back() + s.n_k);
    used.push_back(s.keys());
    max_q = std::max(max_q, s.n_q);
    max_k = std::max(max_k, c.page_size > 0 ? s.keys() : s.n_k);
  }
  const int spare = 3;  // rows of q past the last sequence: never written
  const int T_q = cu_q.back() + spare;

  // Keys: packed rows, or pages in a shuffled order with a spare one.
  std::vector<std::int32_t> table;
  int pages_per_seq = 0, key_rows = cu_k.back() + 1;
  if (c.page_size > 0) {
    for (const int u : used) pages_per_seq = std::max(pages_per_seq, (u + c.page_size - 1) / c.page_size);
    pages_per_seq = std::max(pages_per_seq, 1);
    const int pages = batch * pages_per_seq + 1;
    std::vector<std::int32_t> order(static_cast<std::size_t>(pages));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    table.assign(order.begin(), order.begin() + batch * pages_per_seq);
    key_rows = pages * c.page_size;
  }
  // The row of key t of sequence b.
  const auto key_row = [&](int b, int t) -> std::size_t {
    if (c.page_size > 0) {
      return static_cast<std::size_t>(table[static_cast<std::size_t>(b * pages_per_seq + t / c.page_size)]) *
                 static_cast<std::size_t>(c.page_size) +
             static_cast<std::size_t>(t % c.page_size);
    }
    return static_cast<std::size_t>(cu_k[static_cast<std::size_t>(b)] + t);
  };

  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto draw = [&](std::size_t n) {
    std::vector<T> x(n);
    for (T& e : x) e = T(normal(rng));
    return x;
  };
  // Rows of q, o, k and v are row_pad elements longer than their heads: the kernel must read them
  // through the strides (a packed QKV projection's slices, an interleaved cache).
  const std::size_t q_row = static_cast<std::size_t>(H * D + c.row_pad),
                    kv_row = static_cast<std::size_t>(H_kv * D + c.row_pad);
  std::vector<T> q = draw(static_cast<std::size_t>(T_q) * q_row);
  std::vector<T> k = draw(static_cast<std::size_t>(key_rows) * kv_row);
  std::vector<T> v = draw(static_cast<std::size_t>(key_rows) * kv_row);
  // Rows no sequence owns are NaN: the query rows past the last sequence, and the key and value rows
  // past each sequence's used keys (seqused_k), in a page's unused tail and in the spare page or
  // row. A kernel that reads one into a tile (even to multiply it by a probability of 0) turns its
  // output into NaN.
  const T nan = T(std::numeric_limits<float>::quiet_NaN());
  std::fill(q.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(cu_q.back()) * q_row), q.end(), nan);
  std::vector<bool> owned(static_cast<std::size_t>(key_rows), false);
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < used[static_cast<std::size_t>(b)]; ++t) owned[key_row(b, t)] = true;
  }
  for (std::size_t r = 0; r < owned.size(); ++r) {
    if (owned[r]) continue;
    std::fill_n(k.begin() + static_cast<std::ptrdiff_t>(r * kv_row), kv_row, nan);
    std::fill_n(v.begin() + static_cast<std::ptrdiff_t>(r * kv_row), kv_row, nan);
  }

  DeviceBuffer<T> dq(q.size()), dk(k.size()), dv(v.size()), dout(q.size());
  dq.upload(q), dk.upload(k), dv.upload(v);
  DeviceBuffer<float> dl(static_cast<std::size_t>(H) * T_q);
  dout.fill_bytes(0xFF);  // NaN in both 16-bit types
  dl.fill_bytes(0xFF);
  DeviceBuffer<std::int32_t> d_cu_q(cu_q.size()), d_cu_k(cu_k.size()), d_used(used.size()), d_table(table.size());
  d_cu_q.upload(cu_q), d_cu_k.upload(cu_k), d_used.upload(used);
  if (!table.empty()) d_table.upload(table);

  fa2::FlashVarlenArgs a;
  a.dtype = fa2::dtype_of<T>();
  a.q = dq.data(), a.q_shape = {T_q, H, D}, a.q_strides = {static_cast<fa2::index_t>(q_row), D, 1};
  a.k = dk.data(), a.k_shape = {key_rows, H_kv, D}, a.k_strides = {static_cast<fa2::index_t>(kv_row), D, 1};
  a.v = dv.data(), a.v_shape = a.k_shape, a.v_strides = a.k_strides;
  a.o = dout.data(), a.o_shape = a.q_shape, a.o_strides = a.q_strides;
  a.l = dl.data(), a.l_shape = {H, T_q}, a.l_strides = {T_q, 1};
  a.batch = batch;
  a.cu_seq_q = d_cu_q.data();
  a.max_q = max_q, a.max_k = max_k;
  if (c.page_size > 0) {
    a.block_table = d_table.data(), a.block_table_stride = pages_per_seq, a.page_size = c.page_size;
    a.seqused_k = d_used.data();
  } else {
    a.cu_seq_k = d_cu_k.data();
    if (c.seqused) a.seqused_k = d_used.data();
  }
  a.window = c.window;
  a.num_splits = c.splits;
  int splits = 1;
  DeviceBuffer<float> partial;
  DeviceBuffer<unsigned char> schedule;
  if (c.packed) {
    a.cu_seq_q_host = cu_q.data(), a.cu_seq_k_host = cu_k.data();
    if (c.seqused) a.seqused_k_host = used.data();
    fa2::flash::PackedPlan plan = fa2::flash::plan_packed_forward(a);
    REQUIRE_MESSAGE(plan.runs(), plan.refused);
    schedule = DeviceBuffer<unsigned char>(static_cast<std::size_t>(plan.schedule_bytes));
    plan.args.schedule = schedule.data();
    fa2::flash::run(plan);
  } else {
    fa2::flash::VarlenPlan plan = fa2::flash::plan_varlen_forward(a);
    REQUIRE_MESSAGE(plan.runs(), plan.refused);
    if (c.splits > 0) CHECK(plan.splits == c.splits);
    splits = plan.splits;
    partial = DeviceBuffer<float>(static_cast<std::size_t>(plan.partial_floats));
    if (plan.partial_floats > 0) {
      partial.fill_bytes(0xFF);
      plan.args.partial = partial.data();
    }
    fa2::flash::run(plan);
  }
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<T> out = dout.download();
  const std::vector<float> lse = dl.download();

  // float64, query by query: the keys of its bottom-right span, softmax, weighted sum.
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  int bad_o = 0, bad_l = 0, unwritten = 0;
  double worst = 0.0;
  std::vector<double> p, o_ref(static_cast<std::size_t>(D));
  for (int b = 0; b < batch; ++b) {
    const int n_q = c.sequences[static_cast<std::size_t>(b)].n_q, n_k = used[static_cast<std::size_t>(b)];
    for (int i = 0; i < n_q; ++i) {
      const fa2::flash::KeySpan span =
          fa2::flash::bottom_right_keys(i, n_q, n_k, static_cast<int>(c.window.left), static_cast<int>(c.window.right));
      const int t = cu_q[static_cast<std::size_t>(b)] + i;
      for (int h = 0; h < H; ++h) {
        const int hk = h / group;
        const T* qr = &q[static_cast<std::size_t>(t) * q_row + static_cast<std::size_t>(h * D)];
        double m = -std::numeric_limits<double>::infinity(), l = 0.0;
        p.assign(static_cast<std::size_t>(span.count()), 0.0);
        for (int j = 0; j < span.count(); ++j) {
          const T* kr = &k[key_row(b, span.first + j) * kv_row + static_cast<std::size_t>(hk * D)];
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += static_cast<double>(float(qr[d])) * static_cast<double>(float(kr[d]));
          p[static_cast<std::size_t>(j)] = s * scale;
          m = std::max(m, s * scale);
        }
        std::fill(o_ref.begin(), o_ref.end(), 0.0);
        for (int j = 0; j < span.count(); ++j) {
          const double e = std::exp(p[static_cast<std::size_t>(j)] - m);
          l += e;
          const T* vr = &v[key_row(b, span.first + j) * kv_row + static_cast<std::size_t>(hk * D)];
          for (int d = 0; d < D; ++d) o_ref[static_cast<std::size_t>(d)] += e * static_cast<double>(float(vr[d]));
        }
        const double l_ref = span.count() > 0 ? m + std::log(l) : std::numeric_limits<double>::infinity();
        const float l_got = lse[static_cast<std::size_t>(h) * T_q + t];
        if (std::isinf(l_ref) ? l_got != INFINITY : !(std::abs(l_got - l_ref) <= 1e-3 * (1.0 + std::abs(l_ref))))
          ++bad_l;
        for (int d = 0; d < D; ++d) {
          const double want = span.count() > 0 ? o_ref[static_cast<std::size_t>(d)] / l : 0.0;
          const double got = float(out[static_cast<std::size_t>(t) * q_row + static_cast<std::size_t>(h * D + d)]);
          const double err = std::abs(got - want);  // NaN (unwritten) fails the comparison below
          if (!(err <= 2e-2 + 1e-2 * std::abs(want))) ++bad_o;
          if (err == err) worst = std::max(worst, err);
        }
      }
    }
  }
  for (int t = cu_q.back(); t < T_q; ++t) {
    for (int h = 0; h < H; ++h) {
      if (!std::isnan(lse[static_cast<std::size_t>(h) * T_q + t])) ++unwritten;
      for (int d = 0; d < D; ++d) {
        if (!std::isnan(float(out[static_cast<std::size_t>(t) * q_row + static_cast<std::size_t>(h * D + d)]))) {
          ++unwritten;
        }
      }
    }
  }
  for (int t = 0; t < T_q; ++t) {  // the padding after each row of o is not o's
    for (std::size_t e = static_cast<std::size_t>(H * D); e < q_row; ++e) {
      if (!std::isnan(float(out[static_cast<std::size_t>(t) * q_row + e]))) ++unwritten;
    }
  }
  INFO("worst |O - reference| ", worst, ", ", splits, " parts");
  CHECK(bad_o == 0);
  CHECK(bad_l == 0);
  CHECK_MESSAGE(unwritten == 0, "rows past cu_seq_q[batch], and o's padding, must be left as they were");
}

// Decoding-like sequences: one query against a long cache, a few drafted ones, none, a cache
// shorter than its queries (the causal bound leaves the first ones without a key), an empty cache.
std::vector<Sequence> decoding_sequences() {
  return {{1, 1000}, {16, 300}, {3, 0}, {0, 50}, {5, 3}, {1, 1}, {7, 2100}, {2, 17}};
}

// Two sequences of one query and one key each, H 4/2, D 64, in host memory: arguments the plans
// accept but for the GPU, for the refusal tests to spoil one field at a time.
fa2::FlashVarlenArgs well_formed_args() {
  fa2::FlashVarlenArgs a;
  alignas(16) static std::uint16_t storage[64 * 8];
  static float l[64];
  static std::int32_t cu[3] = {0, 1, 2};
  a.q = a.k = a.v = storage, a.o = storage, a.l = l;
  a.q_shape = {2, 4, 64}, a.q_strides = {256, 64, 1};
  a.k_shape = {2, 2, 64}, a.k_strides = {128, 64, 1};
  a.v_shape = a.k_shape, a.v_strides = a.k_strides;
  a.o_shape = a.q_shape, a.o_strides = a.q_strides;
  a.l_shape = {4, 2}, a.l_strides = {2, 1};
  a.batch = 2, a.cu_seq_q = cu, a.cu_seq_k = cu, a.max_q = 1, a.max_k = 1;
  return a;
}

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("GPU: the decoding kernel gives float64's O and L, packed and paged, every group, window and part count") {
    FA2_SKIP_WITHOUT_GPU();
    std::mt19937 rng(20261205);
    const std::vector<fa2::Window> windows = {{-1, -1}, {-1, 0}, {40, 0}, {3, 2}};
    for (const int D : {32, 64, 128}) {
      for (const auto& [heads, kv_heads] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{8, 1}}) {
        for (const fa2::Window w : windows) {
          // (page size, parts): packed and paged (16, not a power of two, 256), the plan's choice,
          // one part, a few, and more parts than tiles of keys.
          for (const auto& [page_size, splits] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{0, 3}, std::pair{16, 3},
                                                  std::pair{48, 64}, std::pair{256, 0}}) {
            DecodeCase c{D, heads, kv_heads, decoding_sequences(), w, page_size, splits, false};
            run_case<fa2::bf16>(c, rng);
          }
        }
      }
    }
  }

  TEST_CASE("GPU: the decoding kernel in float16, with seqused_k shorter, 16 x 8 rows, and strided rows") {
    FA2_SKIP_WITHOUT_GPU();
    std::mt19937 rng(7);
    for (const int D : {64, 128}) {
      // seqused_k: only the first keys of each sequence's packed rows take part.
      DecodeCase c{D, 8, 2, {{1, 900, 700}, {16, 40, 40}, {4, 30, 0}, {2, 600, 1}}, {-1, 0}, 0, 0, true};
      run_case<fa2::fp16>(c, rng);
      run_case<fa2::bf16>(c, rng);
      // 16 queries of 8 query heads per kv head: 128 rows, eight blocks of 16 per (sequence, kv head).
      DecodeCase wide{D, 32, 4, {{16, 5000}, {9, 129}}, {-1, 0}, 64, 0, false};
      run_case<fa2::bf16>(wide, rng);
      wide.window = {100, 0};
      run_case<fa2::fp16>(wide, rng);
      // Rows 8 elements longer than their heads in q, o, k and v, packed and paged.
      DecodeCase strided{D, 8, 2, decoding_sequences(), {-1, 0}, 0, 3, false, 8};
      run_case<fa2::bf16>(strided, rng);
      strided.page_size = 32;
      run_case<fa2::bf16>(strided, rng);
    }
  }

  // The packed forward of the sm90 path: training-sized sequences (several query tiles of 128 and key
  // tiles of 128, ragged ends, one row, none) in one launch.
  TEST_CASE("GPU: v6's packed forward gives float64's O and L for every mask, group and head dim") {
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
      for (const auto& [heads, kv_heads] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{6, 1}}) {
        for (const fa2::Window w : windows) {
          for (const auto* sequences : {&square, &ragged}) {
            DecodeCase c{D, heads, kv_heads, *sequences, w, 0, 0, false, 0, true};
            run_case<fa2::bf16>(c, rng);
          }
        }
      }
      // float16; seqused_k shorter than the packed rows (the rows past it are NaN); strided rows.
      DecodeCase used{D,    8, 2,   {{300, 900, 300}, {40, 40, 40}, {17, 30, 0}, {130, 600, 77}}, {-1, 0}, 0, 0,
                      true, 0, true};
      run_case<fa2::fp16>(used, rng);
      used.window = {-1, -1};
      run_case<fa2::bf16>(used, rng);
      DecodeCase strided{D, 8, 2, ragged, {-1, 0}, 0, 0, false, 8, true};
      run_case<fa2::fp16>(strided, rng);
      strided.sequences = square;
      run_case<fa2::bf16>(strided, rng);
    }
  }

  // The plan reads no value of the index arrays (a caller that checks none avoids a copy to the
  // host): the kernel bounds each sequence by the tensors (split_kv.hpp's decode_sequence and
  // decode_page). Index arrays of random values, most breaking the rules, packed and paged, one part
  // and many: the words before and after out, lse and the parts' workspace stay as they were, and
  // no launch fails (compute-sanitizer's memcheck runs this case for the reads).
  TEST_CASE("GPU: the decoding kernel stays inside its tensors whatever the index arrays hold") {
    FA2_SKIP_WITHOUT_GPU();
    std::mt19937 rng(31);
    constexpr int D = 64, H = 8, H_kv = 2, T_q = 20, key_rows = 480, batch = 6, page_size = 16;
    constexpr std::size_t guard = 4096;  // elements (floats) each side
    const std::size_t q_elems = std::size_t{T_q} * H * D, kv_elems = std::size_t{key_rows} * H_kv * D;
    DeviceBuffer<fa2::bf16> q(q_elems), k(kv_elems), v(kv_elems), out(q_elems + 2 * guard);
    q.fill_bytes(0x3c), k.fill_bytes(0x3c), v.fill_bytes(0x3c);
    DeviceBuffer<float> lse(std::size_t{H} * T_q + 2 * guard);
    auto values = std::uniform_int_distribution<std::int32_t>(-600, 600);
    for (int trial = 0; trial < 24; ++trial) {
      const bool paged = trial % 2 == 1;
      std::vector<std::int32_t> cu_q(batch + 1), cu_k(batch + 1), used(batch), table(std::size_t{batch} * 8);
      for (auto* array : {&cu_q, &cu_k, &used, &table}) {
        for (std::int32_t& x : *array) x = trial % 3 == 0 ? values(rng) * 3000000 : values(rng);
      }
      DeviceBuffer<std::int32_t> d_cu_q(cu_q.size()), d_cu_k(cu_k.size()), d_used(used.size()), d_table(table.size());
      d_cu_q.upload(cu_q), d_cu_k.upload(cu_k), d_used.upload(used), d_table.upload(table);
      out.fill_bytes(0xFF), lse.fill_bytes(0xFF);
      fa2::FlashVarlenArgs a;
      a.dtype = fa2::DType::bfloat16;
      a.q = q.data(), a.q_shape = {T_q, H, D}, a.q_strides = {H * D, D, 1};
      a.k = k.data(), a.v = v.data(), a.k_shape = {key_rows, H_kv, D}, a.k_strides = {H_kv * D, D, 1};
      a.v_shape = a.k_shape, a.v_strides = a.k_strides;
      a.o = out.data() + guard, a.o_shape = a.q_shape, a.o_strides = a.q_strides;
      a.l = lse.data() + guard, a.l_shape = {H, T_q}, a.l_strides = {T_q, 1};
      a.batch = batch, a.cu_seq_q = d_cu_q.data();
      // max_k as large as the plan takes: 2^29 keys packed, what a block_table row holds paged.
      a.max_q = 1 + trial % 16, a.max_k = paged ? 8 * page_size : (trial % 4 == 0 ? 1 << 29 : 300);
      if (paged) {
        a.block_table = d_table.data(), a.block_table_stride = 8, a.page_size = page_size;
        a.seqused_k = d_used.data();
      } else {
        a.cu_seq_k = d_cu_k.data();
        if (trial % 4 == 2) a.seqused_k = d_used.data();
      }
      a.window = trial % 5 == 0 ? fa2::Window{7, 0} : fa2::Window{-1, 0};
      a.num_splits = trial % 3 == 1 ? 5 : 0;
      fa2::flash::VarlenPlan plan = fa2::flash::plan_varlen_forward(a);
      REQUIRE_MESSAGE(plan.runs(), plan.refused);
      DeviceBuffer<float> partial(static_cast<std::size_t>(plan.partial_floats) + 2 * guard);
      partial.fill_bytes(0xFF);
      if (plan.partial_floats > 0) plan.args.partial = partial.data() + guard;
      fa2::flash::run(plan);
      FA2_CUDA_CHECK(cudaDeviceSynchronize());
      INFO("trial ", trial, paged ? ", paged" : ", packed", ", ", plan.splits, " parts");
      const auto untouched = [&](const auto& words, std::size_t inside) {
        const auto host = words.download();
        int changed = 0;
        for (std::size_t i = 0; i < guard; ++i) {
          changed += !std::isnan(float(host[i])) + !std::isnan(float(host[guard + inside + i]));
        }
        return changed;
      };
      CHECK(untouched(out, q_elems) == 0);
      CHECK(untouched(lse, std::size_t{H} * T_q) == 0);
      CHECK(untouched(partial, static_cast<std::size_t>(plan.partial_floats)) == 0);
    }
  }

  TEST_CASE("the decoding plan refuses bad arguments, naming them (no GPU needed)") {
    fa2::FlashVarlenArgs a = well_formed_args();
    const auto refused = [](fa2::FlashVarlenArgs bad) { return fa2::flash::plan_varlen_forward(bad).refused; };
    fa2::FlashVarlenArgs bad = a;
    bad.dtype = fa2::DType::float32;
    CHECK(refused(bad).rfind("dtype:", 0) == 0);
    bad = a, bad.q_shape[2] = bad.o_shape[2] = 48;
    CHECK(refused(bad).rfind("head_dim:", 0) == 0);
    bad = a, bad.k_shape[1] = bad.v_shape[1] = 3;
    CHECK(refused(bad).rfind("k:", 0) == 0);
    bad = a, bad.cu_seq_k = nullptr;
    CHECK(refused(bad).rfind("cu_seq_k:", 0) == 0);
    bad = a, bad.page_size = 16;
    CHECK(refused(bad).rfind("block_table:", 0) == 0);
    bad = a, bad.q_strides[0] = 252;
    CHECK(refused(bad).rfind("layout:", 0) == 0);
    bad = a, bad.window = {-2, 0};
    CHECK(refused(bad).rfind("window:", 0) == 0);
    bad = a, bad.num_splits = -1;
    CHECK(refused(bad).rfind("num_splits:", 0) == 0);
    bad = a, bad.scale = -1.0f;
    CHECK(refused(bad).rfind("scale:", 0) == 0);
    bad = a, bad.l_shape = {2, 4};
    CHECK(refused(bad).rfind("l:", 0) == 0);
  }

  TEST_CASE("the packed plan refuses bad arguments and lengths, naming them (no GPU needed)") {
    fa2::FlashVarlenArgs a = well_formed_args();
    a.cu_seq_q_host = a.cu_seq_q, a.cu_seq_k_host = a.cu_seq_k;
    const auto refused = [](fa2::FlashVarlenArgs bad) { return fa2::flash::plan_packed_forward(bad).refused; };
    // Well-formed arguments are refused only for want of an sm_90 GPU and build, and then say so.
    const std::string good = refused(a);
    CHECK((good.empty() || good.rfind("v6:", 0) == 0));
    fa2::FlashVarlenArgs bad = a;
    bad.q_shape[2] = bad.o_shape[2] = 32;
    CHECK(refused(bad).rfind("head_dim:", 0) == 0);
    bad = a, bad.cu_seq_q_host = nullptr;
    CHECK(refused(bad).rfind("cu_seq_q, cu_seq_k:", 0) == 0);
    static std::int32_t past_end[3] = {0, 1, 3};
    bad = a, bad.cu_seq_q_host = past_end;
    CHECK(refused(bad).rfind("cu_seq_q:", 0) == 0);
    bad = a, bad.cu_seq_k_host = past_end;
    CHECK(refused(bad).rfind("cu_seq_k:", 0) == 0);
    static std::int32_t too_many[2] = {1, 2};
    bad = a, bad.seqused_k = too_many, bad.seqused_k_host = too_many;
    CHECK(refused(bad).rfind("seqused_k:", 0) == 0);
    bad = a, bad.max_q = 0;
    CHECK(refused(bad).rfind("max_q:", 0) == 0);
    bad = a, bad.page_size = 16;
    CHECK(refused(bad).rfind("block_table:", 0) == 0);
    bad = a, bad.dtype = fa2::DType::float32;
    CHECK(refused(bad).rfind("dtype:", 0) == 0);
  }
}
