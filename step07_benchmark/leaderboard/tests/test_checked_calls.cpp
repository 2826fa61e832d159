// Tests of the leaderboard's checker (checked_calls.hpp) on the host path, with entries that are
// not a student's kernel: the float64 reference rounded into O and L (honest), and the same with
// a known cheat around it. ctest --preset cpu-only -L leaderboard
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bf16.hpp"
#include "common/reference.hpp"
#include "common/tensor.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step07_benchmark/leaderboard/checked_calls.hpp"
#include "step07_benchmark/leaderboard/entries.hpp"

namespace {

using fa2::bf16;
using fa2::Extents;
using fa2::FlashFwdArgs;
using fa2::index_t;
using fa2::TensorView;
using namespace fa2::leaderboard;

// An honest entry: attention from the float64 reference (softmax scaled by `scale_factor` /
// sqrt(D); 1 is right), rounded into the call's O and L. It writes the rows args.o_shape names.
template <class T>
void reference_forward(const FlashFwdArgs& a, double scale_factor) {
  const TensorView<const T, 3> Q(static_cast<const T*>(a.q), a.q_shape, a.q_strides);
  const TensorView<const T, 3> K(static_cast<const T*>(a.k), a.k_shape, a.k_strides);
  const TensorView<const T, 3> V(static_cast<const T*>(a.v), a.v_shape, a.v_strides);
  const double scale = scale_factor / std::sqrt(static_cast<double>(a.q_shape[2]));
  const fa2::AttentionReference ref = fa2::reference_attention<T>(Q, K, V, a.causal, scale);
  const TensorView<T, 3> O(static_cast<T*>(a.o), a.o_shape, a.o_strides);
  const TensorView<float, 2> L(a.l, a.l_shape, a.l_strides);
  fa2::for_each_index<3>(a.o_shape, [&](const Extents<3>& i) { O.at(i) = fa2::convert<T>(ref.O.view().at(i)); });
  fa2::for_each_index<2>(a.l_shape, [&](const Extents<2>& i) { L.at(i) = static_cast<float>(ref.L.view().at(i)); });
}

template <class T>
HostEntry honest_entry() {
  return [](const FlashFwdArgs& a) { reference_forward<T>(a, 1.0); };
}

Shape small_shape(bool causal, fa2::DType dtype = fa2::DType::bfloat16) {
  return Shape{fa2::bench::Problem{2, 3, 40, 16, causal, fa2::bench::Pass::forward}, dtype};
}

Protocol small_protocol(int timed_calls = 4) {
  Protocol p;
  p.warmup_calls = 1;
  p.timed_calls = timed_calls;
  p.sample_rows = 24;
  p.tol = {2e-2, 2e-2};
  p.seed = 20261203;
  return p;
}

}  // namespace

TEST_SUITE("leaderboard") {
  TEST_CASE_TEMPLATE("an honest entry is accepted, with every call checked and every timed call timed", T, float,
                     bf16) {
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const Shape shape = small_shape(causal, fa2::dtype_of<T>());
      const Protocol protocol = small_protocol();
      const CheckedRun run = run_checked_calls<T>(shape, protocol, host_timed_call<T>(honest_entry<T>(), causal));
      CHECK_MESSAGE(run.accepted, run.reason);
      CHECK(run.reason.empty());
      CHECK(run.calls_checked == protocol.warmup_calls + protocol.timed_calls);
      REQUIRE(run.timed_ms.size() == static_cast<std::size_t>(protocol.timed_calls));
      for (const double ms : run.timed_ms) CHECK(ms > 0.0);
    }
  }

  TEST_CASE("every call gets new inputs and outputs that hold only the NaN poison") {
    const Shape shape = small_shape(false);
    const Protocol protocol = small_protocol();
    std::set<std::vector<std::uint16_t>> inputs_seen;
    int fully_poisoned = 0, calls = 0;
    const TimedCall<bf16> honest = host_timed_call<bf16>(honest_entry<bf16>(), false);
    const TimedCall<bf16> watching = [&](CallBuffers<bf16>& call) {
      ++calls;
      std::vector<std::uint16_t> q_bits;
      for (const bf16 x : call.Q.storage()) q_bits.push_back(x.bits);
      inputs_seen.insert(q_bits);
      bool poisoned = true;
      for (const bf16 x : call.O.storage()) poisoned = poisoned && x.bits == poison_value<bf16>().bits;
      for (const float x : call.L.storage()) poisoned = poisoned && std::isnan(x);
      fully_poisoned += poisoned ? 1 : 0;
      return honest(call);
    };
    const CheckedRun run = run_checked_calls<bf16>(shape, protocol, watching);
    CHECK_MESSAGE(run.accepted, run.reason);
    CHECK(calls == protocol.warmup_calls + protocol.timed_calls);
    CHECK(inputs_seen.size() == static_cast<std::size_t>(calls));  // no two calls saw the same Q
    CHECK(fully_poisoned == calls);
  }

  TEST_CASE("an entry that replays the first call's output in later calls is rejected as a cached output") {
    const Shape shape = small_shape(true);
    const Protocol protocol = small_protocol();
    const HostEntry replaying = with_self_test(honest_entry<bf16>(), SelfTest::replay);
    const CheckedRun run = run_checked_calls<bf16>(shape, protocol, host_timed_call<bf16>(replaying, true));
    CHECK_FALSE(run.accepted);
    CHECK(run.calls_checked == 2);  // call 0 computed; call 1, the first replay, is rejected
    CHECK(run.timed_ms.empty());
    INFO(run.reason);
    CHECK(run.reason.find("call 1: ") == 0);
    CHECK(run.reason.find("240 of 240 rows of O and L are bit for bit those of call 0") != std::string::npos);
    CHECK(run.reason.find("returned a cached output") != std::string::npos);
  }

  TEST_CASE("a cached row is caught even when the float64 sample would miss it: every row is compared") {
    const Shape shape = small_shape(false);
    Protocol protocol = small_protocol();
    protocol.sample_rows = 1;
    // Caches one row only, the last of the last head, and computes all the others.
    struct Cached {
      std::vector<bf16> o;
      float l = 0.0f;
    };
    auto cached = std::make_shared<Cached>();
    const HostEntry partly_cached = [cached](const FlashFwdArgs& a) {
      reference_forward<bf16>(a, 1.0);
      const index_t D = a.o_shape[2];
      bf16* last_row = static_cast<bf16*>(a.o) + (a.o_shape[0] * a.o_shape[1] - 1) * D;
      float* last_l = a.l + a.l_shape[0] * a.l_shape[1] - 1;
      if (cached->o.empty()) {
        cached->o.assign(last_row, last_row + D);
        cached->l = *last_l;
        return;
      }
      std::copy(cached->o.begin(), cached->o.end(), last_row);
      *last_l = cached->l;
    };
    const CheckedRun run = run_checked_calls<bf16>(shape, protocol, host_timed_call<bf16>(partly_cached, false));
    CHECK_FALSE(run.accepted);
    INFO(run.reason);
    CHECK(run.reason.find("call 1: 1 of 240 rows of O and L are bit for bit those of call 0") == 0);
  }

  TEST_CASE("an entry that leaves rows unwritten is rejected, naming the first row") {
    const Shape shape = small_shape(false);
    const HostEntry lazy = with_self_test(honest_entry<bf16>(), SelfTest::unwritten);
    const CheckedRun run = run_checked_calls<bf16>(shape, small_protocol(), host_timed_call<bf16>(lazy, false));
    CHECK_FALSE(run.accepted);
    CHECK(run.calls_checked == 1);
    INFO(run.reason);
    CHECK(run.reason.find("call 0: ") == 0);
    // 6 heads, each with its last row unwritten: 16 elements of O and one of L per row.
    CHECK(run.reason.find("102 elements of O and L in 6 of 240 rows still hold the NaN poison") != std::string::npos);
    CHECK(run.reason.find("first: batch 0, head 0, query 39, not written") != std::string::npos);
  }

  TEST_CASE("an entry whose numbers are wrong is rejected by the float64 check, naming the worst element") {
    const Shape shape = small_shape(true);
    const HostEntry off = [](const FlashFwdArgs& a) { reference_forward<bf16>(a, 1.5); };  // a wrong scale
    const CheckedRun run = run_checked_calls<bf16>(shape, small_protocol(), host_timed_call<bf16>(off, true));
    CHECK_FALSE(run.accepted);
    INFO(run.reason);
    CHECK(run.reason.find("call 0: ") == 0);
    CHECK(run.reason.find("sampled rows differ from the float64 reference (atol 0.02, rtol 0.02); worst: ") !=
          std::string::npos);
  }

  TEST_CASE("an entry that throws is rejected with its message") {
    const HostEntry failing = [](const FlashFwdArgs&) { throw std::logic_error("TODO(step05): not written yet"); };
    const CheckedRun run =
        run_checked_calls<bf16>(small_shape(false), small_protocol(), host_timed_call<bf16>(failing, false));
    CHECK_FALSE(run.accepted);
    CHECK(run.calls_checked == 0);
    CHECK(run.reason == "call 0: the entry failed: TODO(step05): not written yet");
  }

  TEST_CASE("the rows checked against float64 are drawn anew for every call") {
    const auto a = sampled_rows(10000, 16, 7, 0);
    const auto b = sampled_rows(10000, 16, 7, 1);
    CHECK(a.size() == 16);
    CHECK(std::set<index_t>(a.begin(), a.end()).size() == 16);
    CHECK(a != b);
    CHECK(a == sampled_rows(10000, 16, 7, 0));  // the seed replays a run
    CHECK(sampled_rows(5, 16, 7, 0) == std::vector<index_t>{0, 1, 2, 3, 4});
  }

  TEST_CASE("a path that returns no time is a bug of the path, not a rejection of the entry") {
    const TimedCall<bf16> untimed = [](CallBuffers<bf16>&) { return 0.0; };
    CHECK_THROWS_WITH_AS(run_checked_calls<bf16>(small_shape(false), small_protocol(), untimed),
                         doctest::Contains("a path must return the positive time"), std::runtime_error);
  }
}
