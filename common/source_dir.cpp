// fa2::testing::source_dir(): the checkout's top folder, set by common/CMakeLists.txt on this one
// file (testing.hpp says why not on every test).
#include "common/testing.hpp"

namespace fa2::testing {

const char* source_dir() {
  return FA2_SOURCE_DIR;
}

}  // namespace fa2::testing
