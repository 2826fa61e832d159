// fa2::todo("TODO(step05): ..."): what the starter kit (scripts/make_starter_kit.sh) puts where a
// solution region was. It fails loudly: on the host it throws fa2::NotImplemented carrying
// the message; in device code it prints the message and traps the kernel.
#pragma once

#include <stdexcept>
#include <string>

#include "common/host_device.hpp"

#if defined(__CUDACC__)
#include <cstdio>
#endif

namespace fa2 {

class NotImplemented : public std::logic_error {
 public:
  explicit NotImplemented(const std::string& what) : std::logic_error(what) {}
};

// The extra arguments are the region's inputs, named so that they do not trigger
// unused-variable warnings while the region is still a TODO.
template <class... Unused>
[[noreturn]] FA2_HOST_DEVICE inline void todo(const char* message, const Unused&...) {
#if FA2_DEVICE_PASS
  printf("%s\n", message);
  __trap();
  __builtin_unreachable();
#else
  throw NotImplemented(message);
#endif
}

}  // namespace fa2
