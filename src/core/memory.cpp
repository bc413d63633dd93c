#include "core/memory.h"

#include <fmt/format.h>

namespace tilefuse {
namespace {
thread_local const AllocationPurpose* innermost = nullptr;
}  // namespace

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  if (v == static_cast<double>(static_cast<int64_t>(v))) return fmt::format("{} {}", v, kUnits[u]);
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

AllocationPurpose::AllocationPurpose(std::string what) : what_(std::move(what)), outer_(innermost) {
  innermost = this;
}

AllocationPurpose::~AllocationPurpose() {
  innermost = outer_;
}

const std::string& AllocationPurpose::current() {
  static const std::string kNone;
  return innermost ? innermost->what_ : kNone;
}

void throw_out_of_host_memory(int64_t bytes, const std::string& what) {
  const std::string& purpose = AllocationPurpose::current();
  throw OutOfHostMemory(fmt::format("out of host memory: cannot allocate {}{} for {}",
                                    format_bytes(bytes), what.empty() ? "" : " (" + what + ")",
                                    purpose.empty() ? "a tensor" : purpose));
}

}  // namespace tilefuse
