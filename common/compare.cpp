// CloseReport::summary(): the message a failing comparison prints.
#include "common/compare.hpp"

#include <cstdio>

namespace fa2 {

std::string CloseReport::summary() const {
  char buf[512];
  const char* name = what.empty() ? "tensor" : what.c_str();
  if (checked == 0 && !ok) {
    std::snprintf(buf, sizeof buf, "%s: cannot compare, %s", name, worst_index.c_str());
    return buf;
  }
  if (ok) {
    std::snprintf(buf, sizeof buf, "%s: all %lld elements close (max |err| %.3g, atol %.1e, rtol %.1e)", name,
                  static_cast<long long>(checked), max_abs_error, tol.atol, tol.rtol);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%s: %lld of %lld elements outside atol %.1e + rtol %.1e * |expected|; worst at %s: "
                "actual %.6g, expected %.6g (|err| %.3g, allowed %.3g); max |err| %.3g",
                name, static_cast<long long>(mismatched), static_cast<long long>(checked), tol.atol, tol.rtol,
                worst_index.c_str(), worst_actual, worst_expected, std::fabs(worst_actual - worst_expected),
                tol.atol + tol.rtol * std::fabs(worst_expected), max_abs_error);
  return buf;
}

}  // namespace fa2
