#include "core/stack_guard.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tilefuse {
namespace {

// The running thread's stack: its lowest usable address and the address
// below which check_stack throws (lowest + the reserve). Read at the first
// check on each thread (`floor` starts above every address, so the first
// check takes the slow path); UINTPTR_MAX in `lowest` (and 0 in `floor`)
// when the bounds cannot be read: then nothing is checked. A plain
// thread_local, so the check is a load and a compare.
struct Bounds {
  uintptr_t lowest = 0;
  uintptr_t floor = UINTPTR_MAX;
};
thread_local Bounds bounds;

void read_bounds() {
  bounds.lowest = UINTPTR_MAX;
  bounds.floor = 0;
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
  constexpr uintptr_t kMaxCounted = uintptr_t{1} << 30;
  bounds.lowest = std::max(low, here > kMaxCounted ? here - kMaxCounted : uintptr_t{0});
  bounds.floor = bounds.lowest + std::min(kStackReserve, size / 4);
}

}  // namespace

size_t stack_left() {
  if (bounds.lowest == 0) read_bounds();
  if (bounds.lowest == UINTPTR_MAX) return std::numeric_limits<size_t>::max();
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return here > bounds.lowest ? here - bounds.lowest : 0;
}

void check_stack(const char* what, SourceLoc loc) {
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (here > bounds.floor) [[likely]]
    return;
  if (bounds.lowest == 0) {  // first call on this thread
    read_bounds();
    if (here > bounds.floor) return;
  }
  if (bounds.lowest == UINTPTR_MAX) return;
  throw ProgramTooLarge(std::string("program too large: ") + what +
                            " is nested too deeply for the stack; split long chains of "
                            "statements or expressions into several programs",
                        loc);
}

}  // namespace tilefuse
