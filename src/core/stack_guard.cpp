#include "core/stack_guard.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tilefuse {
namespace {

// The lowest address the running thread's stack may grow to, plus the
// reserve; 0 when unknown. Read once per thread.
struct StackLimit {
  uintptr_t lowest = 0;  // the stack's end
  uintptr_t floor = 0;   // throw below this address
  bool known = false;
  StackLimit() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* addr = nullptr;
    size_t size = 0;
    const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0 && addr != nullptr && size > 0;
    pthread_attr_destroy(&attr);
    if (!ok) return;
    // glibc reports the main thread's stack from RLIMIT_STACK; under
    // `ulimit -s unlimited` that is a huge size of which only part can be
    // mapped: count at most 1 GiB below the current frame.
    const auto low = reinterpret_cast<uintptr_t>(addr);
    const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    lowest = std::max(low, here > (uintptr_t{1} << 30) ? here - (uintptr_t{1} << 30)
                                                                       : uintptr_t{0});
    const size_t reserve = std::min(kStackReserve, size / 4);
    floor = lowest + reserve;
    known = true;
  }
};

const StackLimit& limit() {
  thread_local const StackLimit l;
  return l;
}

}  // namespace

size_t stack_left() {
  const StackLimit& l = limit();
  if (!l.known) return std::numeric_limits<size_t>::max();
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return here > l.lowest ? here - l.lowest : 0;
}

void check_stack(const char* what, SourceLoc loc) {
  const StackLimit& l = limit();
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (!l.known || here > l.floor) return;
  throw ProgramTooLarge(std::string("program too large: ") + what +
                            " is nested too deeply for the stack; split long chains of "
                            "statements or expressions into several programs",
                        loc);
}

}  // namespace tilefuse
