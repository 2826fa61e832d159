// fresh_seed(): a new seed per run unless FA2_SEED pins one.
#include "common/random.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace fa2 {

std::uint64_t fresh_seed() {
  if (const char* env = std::getenv("FA2_SEED"); env != nullptr && *env != '\0') {
    try {
      return std::stoull(env);
    } catch (const std::exception&) {
      throw std::invalid_argument(std::string("FA2_SEED must be a non-negative integer, got '") + env + "'");
    }
  }
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace fa2
