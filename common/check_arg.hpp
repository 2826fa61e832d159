// Argument validation that names the argument and what is allowed, e.g.
//   head_dim: got 48, allowed 16, 32, 64 or 128
// Every public entry point validates its inputs with these before touching memory.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace fa2 {

// Throws std::invalid_argument("<argument>: <message>") when `ok` is false.
inline void require_arg(bool ok, const std::string& argument, const std::string& message) {
  if (!ok) throw std::invalid_argument(argument + ": " + message);
}

// "got 48, allowed <allowed>"
template <class V>
std::string got_allowed(const V& got, const std::string& allowed) {
  std::ostringstream s;
  s << "got " << got << ", allowed " << allowed;
  return s.str();
}

}  // namespace fa2
