// Step 1 demo: the online softmax reads a short row once, printing m, l and the rescale
// factor after each score, then compares with the three-pass softmax and shows an overflow.
//   cmake --build --preset default --target step01_demo && build/default/step01_online_softmax/step01_demo
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common/cli.hpp"
#include "step01_online_softmax/online_softmax.hpp"

namespace {

std::string format_row(const Eigen::VectorXd& v, const char* fmt) {
  std::string s = "[";
  char buf[32];
  for (Eigen::Index i = 0; i < v.size(); ++i) {
    if (std::isnan(v(i))) {
      std::snprintf(buf, sizeof buf, "nan");  // glibc would print inf/inf as "-nan"
    } else {
      std::snprintf(buf, sizeof buf, fmt, v(i));
    }
    s += buf;
    s += (i + 1 < v.size()) ? ", " : "]";
  }
  return s;
}

int demo() {
  using fa2::online::OnlineSoftmaxState;
  const double inf = std::numeric_limits<double>::infinity();
  const Eigen::VectorXd x{{1.0, 3.0, 2.0, 5.0, -inf, 4.0}};

  std::printf("Row x = %s, read once from left to right.\n", format_row(x, "%g").c_str());
  std::printf("alpha = exp(m_old - m_new) is the factor applied to the old l.\n\n");
  std::printf("   i     x_i     m          l   alpha\n");
  OnlineSoftmaxState<double> state;  // m = -inf, l = 0
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const bool first = state.empty() && x(i) != -inf;
    const double m_old = state.m;
    const double alpha = state.update(x(i));
    const char* note = first             ? "first score: exp(-inf - m) = 0, not NaN"
                       : x(i) == -inf    ? "masked: adds exp(-inf) = 0"
                       : state.m > m_old ? "max grew: old l rescaled"
                                         : "";
    char line[128];
    std::snprintf(line, sizeof line, "  %2ld  %6g  %4g  %9.6f  %-9.6g %s", static_cast<long>(i), x(i), state.m, state.l,
                  alpha, note);
    std::string text = line;
    text.erase(text.find_last_not_of(' ') + 1);
    std::printf("%s\n", text.c_str());
  }
  std::printf("\nL = m + log(l) = %.6f\n\n", state.logsumexp());

  const Eigen::VectorXd online = fa2::online::online_softmax(x);
  const Eigen::VectorXd naive = fa2::online::naive_softmax(x);
  std::printf("   i   online p_i    naive p_i    |diff|\n");
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    std::printf("  %2ld  %11.8f  %11.8f  %8.1e\n", static_cast<long>(i), online(i), naive(i),
                std::fabs(online(i) - naive(i)));
  }

  const auto left = fa2::online::online_state(x.head(3));
  const auto right = fa2::online::online_state(x.tail(3));
  const auto both = OnlineSoftmaxState<double>::combine(left, right);
  std::printf("\nSplit %s + %s, each read on its own, then combined:\n", format_row(x.head(3), "%g").c_str(),
              format_row(x.tail(3), "%g").c_str());
  std::printf("  (m, l) = (%g, %.6f) and (%g, %.6f) -> (%g, %.6f), one pass gave (%g, %.6f)\n\n", left.m, left.l,
              right.m, right.l, both.m, both.l, state.m, state.l);

  const Eigen::VectorXd big{{1000.0, 999.0, 998.0}};
  std::printf("Row %s: exp(1000) overflows a double.\n", format_row(big, "%g").c_str());
  std::printf("  unguarded exp(x) / sum: %s\n", format_row(fa2::online::unguarded_softmax(big), "%g").c_str());
  std::printf("  online softmax:         %s\n", format_row(fa2::online::online_softmax(big), "%.6f").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli("step01_demo",
                       "Step 1: the online softmax reads a short row once, printing m, l and the rescale factor after\n"
                       "each score, then compares it with the three-pass softmax and shows an overflow.");
  return cli.run(argc, argv, demo);
}
